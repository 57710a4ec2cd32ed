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
// every interval, and at Close, so that a busy node spends one system call
// on many access lines instead of one per request (≈ 10 µs of a Postgres
// snapshot read's ≈ 150, measured with scripts/bench.sh). A kill -9
// loses at most the lines of the last interval; audit records never pass
// through it (they are events). Each Write is kept whole.
type LineBuffer struct {
	mu   sync.Mutex
	w    io.Writer
	buf  []byte
	err  error
	stop chan struct{}
	done chan struct{}
}

// NewLineBuffer starts a LineBuffer over w that writes what it holds at
// least every interval (which must be positive).
func NewLineBuffer(w io.Writer, interval time.Duration) *LineBuffer {
	b := &LineBuffer{w: w, buf: make([]byte, 0, accessLogBuffer), stop: make(chan struct{}), done: make(chan struct{})}
	go b.tick(interval)
	return b
}

func (b *LineBuffer) tick(interval time.Duration) {
	defer close(b.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			_ = b.Flush()
		case <-b.stop:
			return
		}
	}
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
	return len(p), b.takeErr()
}

// Flush writes what the buffer holds now.
func (b *LineBuffer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked()
	return b.takeErr()
}

// Close stops the periodic writes and writes what is held; lines written
// after Close are written through at once.
func (b *LineBuffer) Close() error {
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
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
