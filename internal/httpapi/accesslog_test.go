package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// writes records each Write the buffer makes on the underlying writer.
type writes struct {
	mu    sync.Mutex
	calls [][]byte
	fail  error
}

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail != nil {
		return 0, w.fail
	}
	w.calls = append(w.calls, bytes.Clone(p))
	return len(p), nil
}

func (w *writes) snapshot() (n int, all string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.calls), string(bytes.Join(w.calls, nil))
}

// Lines written by many goroutines reach the writer whole, in few writes:
// held until Flush (the interval is an hour), each line once.
func TestLineBufferHoldsLinesWholeUntilFlush(t *testing.T) {
	var out writes
	b := NewLineBuffer(&out, time.Hour)
	defer b.Close()
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := range each {
				if _, err := fmt.Fprintf(b, "line %d-%d\n", g, i); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n, _ := out.snapshot(); n != 0 {
		t.Fatalf("%d writes before Flush, want the lines held", n)
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	n, all := out.snapshot()
	if n != 1 {
		t.Fatalf("%d writes for %d lines, want 1", n, writers*each)
	}
	lines := strings.Split(strings.TrimSuffix(all, "\n"), "\n")
	seen := map[string]bool{}
	for _, l := range lines {
		seen[l] = true
	}
	for g := range writers {
		for i := range each {
			if !seen[fmt.Sprintf("line %d-%d", g, i)] {
				t.Fatalf("line %d-%d missing or torn; got %d lines", g, i, len(lines))
			}
		}
	}
	if len(lines) != writers*each {
		t.Fatalf("%d lines, want %d", len(lines), writers*each)
	}
}

// Without Flush the lines are written by the interval's timer, by a full
// buffer, and at Close; after Close a line is written at once; a line
// bigger than the buffer is written whole.
func TestLineBufferWritesOnItsOwn(t *testing.T) {
	var out writes
	b := NewLineBuffer(&out, 10*time.Millisecond)
	_, _ = b.Write([]byte("tick\n"))
	for range 1000 {
		if _, all := out.snapshot(); all == "tick\n" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, all := out.snapshot(); all != "tick\n" {
		t.Fatalf("after waiting: %q, want the line written by the timer", all)
	}
	b.Close()

	out = writes{}
	b = NewLineBuffer(&out, time.Hour)
	line := strings.Repeat("x", 1000) + "\n"
	for range accessLogBuffer / len(line) {
		_, _ = b.Write([]byte(line))
	}
	if n, _ := out.snapshot(); n != 0 {
		t.Fatalf("%d writes before the buffer filled", n)
	}
	_, _ = b.Write([]byte(line))
	if n, all := out.snapshot(); n != 1 || len(all) != accessLogBuffer/len(line)*len(line) {
		t.Fatalf("full buffer: %d writes of %d bytes, want 1 of the lines before the last", n, len(all))
	}
	big := strings.Repeat("y", 2*accessLogBuffer) + "\n"
	_, _ = b.Write([]byte(big))
	if n, all := out.snapshot(); n != 3 || !strings.HasSuffix(all, line+big) {
		t.Fatalf("a line bigger than the buffer: %d writes, want the held line then it whole", n)
	}
	_, _ = b.Write([]byte("last\n"))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, all := out.snapshot(); !strings.HasSuffix(all, "last\n") {
		t.Fatal("Close did not write the held line")
	}
	_, _ = b.Write([]byte("after\n"))
	if _, all := out.snapshot(); !strings.HasSuffix(all, "after\n") {
		t.Fatal("a line after Close was held")
	}
}

// A failing writer is reported to the next caller, not swallowed.
func TestLineBufferReportsAWriteError(t *testing.T) {
	out := writes{fail: errors.New("disk full")}
	b := NewLineBuffer(&out, time.Hour)
	defer b.Close()
	_, _ = b.Write([]byte("a\n"))
	if err := b.Flush(); err == nil || err.Error() != "disk full" {
		t.Fatalf("Flush = %v, want disk full", err)
	}
}

// InstrumentTo writes the access line to the access logger and what the
// handler logs to the other one.
func TestInstrumentToSplitsAccessLinesFromTheRest(t *testing.T) {
	var logs, access bytes.Buffer
	h := InstrumentTo(slog.New(slog.NewJSONHandler(&logs, nil)), slog.New(slog.NewJSONHandler(&access, nil)), "/r", nil,
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			Logger(r.Context()).Error("handler failed")
			w.WriteHeader(http.StatusTeapot)
		}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/r", nil))
	if !strings.Contains(logs.String(), `"msg":"handler failed"`) || strings.Contains(logs.String(), `"msg":"request"`) {
		t.Fatalf("log: %s", logs.String())
	}
	if !strings.Contains(access.String(), `"msg":"request"`) || !strings.Contains(access.String(), `"status":418`) || strings.Contains(access.String(), "handler failed") {
		t.Fatalf("access log: %s", access.String())
	}
}

// fakeTimers records the timers a LineBuffer arms and fires them by hand.
type fakeTimers struct {
	armed []time.Duration
	fire  []func()
}

func (f *fakeTimers) after(d time.Duration, fn func()) stopper {
	f.armed = append(f.armed, d)
	f.fire = append(f.fire, fn)
	return fakeStop{}
}

type fakeStop struct{}

func (fakeStop) Stop() bool { return true }

// An idle buffer arms no timer (an idle node is not woken every interval by
// its access log); the first held line arms one for the interval, later lines
// ride with it, and its firing writes them all in one write.
func TestLineBufferArmsATimerOnlyWhileHoldingLines(t *testing.T) {
	var out writes
	var timers fakeTimers
	b := newLineBuffer(&out, 100*time.Millisecond, timers.after)
	if len(timers.armed) != 0 {
		t.Fatalf("%d timers armed by an idle buffer, want none", len(timers.armed))
	}
	for i := range 3 {
		_, _ = fmt.Fprintf(b, "line %d\n", i)
	}
	if len(timers.armed) != 1 || timers.armed[0] != 100*time.Millisecond {
		t.Fatalf("timers armed for three held lines: %v, want one of the interval", timers.armed)
	}
	timers.fire[0]()
	if n, all := out.snapshot(); n != 1 || all != "line 0\nline 1\nline 2\n" {
		t.Fatalf("after the timer: %d writes %q, want the three lines in one", n, all)
	}
	if len(timers.armed) != 1 {
		t.Fatalf("%d timers armed once the buffer was empty again, want still 1", len(timers.armed))
	}
	_, _ = b.Write([]byte("later\n"))
	if len(timers.armed) != 2 {
		t.Fatalf("a line after the write armed %d timers in all, want 2", len(timers.armed))
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, all := out.snapshot(); !strings.HasSuffix(all, "later\n") {
		t.Fatal("Close did not write the held line")
	}
	_, _ = b.Write([]byte("after\n"))
	if len(timers.armed) != 2 {
		t.Fatal("a line after Close armed a timer")
	}
}
