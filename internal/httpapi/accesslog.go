package httpapi

import (
	"io"
	"sync"
	"time"
)

// accessLogBuffer is how many bytes of access lines LineBuffer holds
// before it writes them: about 200 lines, one write system call instead of
// one per request.
const accessLogBuffer = 32 << 10

// LineBuffer is the access log's writer: lines written to it are handed to
// the underlying writer in one write when its buffer fills, at the latest
// interval after the first line it holds, and at Close, so that a busy node
// spends one system call on many access lines instead of one per request
// (≈ 10 µs of a Postgres snapshot read's ≈ 150, measured with
// scripts/bench.sh). A kill -9 loses at most the lines of the last
// interval; audit records never pass through it (they are events). Each
// Write is kept whole. The timer is armed by the line that finds the buffer
// empty, so an idle node (no requests) is never woken by its access log.
type LineBuffer struct {
	mu       sync.Mutex
	w        io.Writer
	buf      []byte
	err      error
	interval time.Duration
	after    func(time.Duration, func()) stopper
	timer    stopper // armed while lines are held, nil otherwise
	closed   bool
}

// stopper is the part of *time.Timer a LineBuffer uses.
type stopper interface{ Stop() bool }

// NewLineBuffer returns a LineBuffer over w that writes what it holds at
// most interval (which must be positive) after the first line held.
func NewLineBuffer(w io.Writer, interval time.Duration) *LineBuffer {
	return newLineBuffer(w, interval, func(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) })
}

// newLineBuffer is NewLineBuffer with the interval's timer made by after.
func newLineBuffer(w io.Writer, interval time.Duration, after func(time.Duration, func()) stopper) *LineBuffer {
	return &LineBuffer{w: w, buf: make([]byte, 0, accessLogBuffer), interval: interval, after: after}
}

// due writes what is held when the interval since the first held line ends.
func (b *LineBuffer) due() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.timer = nil
	b.flushLocked()
}

// Write holds p to be written with the lines around it; a p that does not
// fit in what is left of the buffer first sends what is held, and one
// larger than the whole buffer is written through. It reports the error of
// an earlier write the caller has not seen yet, so a failing log is noticed.
func (b *LineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf)+len(p) > cap(b.buf) {
		b.flushLocked()
		if len(p) > cap(b.buf) {
			if _, err := b.w.Write(p); err != nil {
				return 0, err
			}
			return len(p), b.takeErr()
		}
	}
	b.buf = append(b.buf, p...)
	if b.timer == nil && !b.closed {
		b.timer = b.after(b.interval, b.due)
	}
	return len(p), b.takeErr()
}

// Flush writes what the buffer holds now.
func (b *LineBuffer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
	return b.takeErr()
}

// Close stops the interval's timer and writes what is held; lines written
// after Close are written through at once.
func (b *LineBuffer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	b.flushLocked()
	b.buf = b.buf[:0:0] // nothing fits any more: every later Write goes through
	return b.takeErr()
}

func (b *LineBuffer) flushLocked() {
	if len(b.buf) == 0 {
		return
	}
	if _, err := b.w.Write(b.buf); err != nil && b.err == nil {
		b.err = err
	}
	b.buf = b.buf[:0]
}

func (b *LineBuffer) takeErr() error {
	err := b.err
	b.err = nil
	return err
}
