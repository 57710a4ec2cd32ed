package webhooks

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// goroutineLog notes which goroutine appends each outcome (the attempt's).
type goroutineLog struct {
	events.Store
	mu  sync.Mutex
	ids map[string]bool
}

func (g *goroutineLog) Append(ctx context.Context, stream string, expected events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	if len(evs) > 0 && evs[0].Type == (catalog.DeliveryAttempted{}).EventType() {
		buf := make([]byte, 64)
		id, _, _ := strings.Cut(strings.TrimPrefix(string(buf[:runtime.Stack(buf, false)]), "goroutine "), " ")
		g.mu.Lock()
		g.ids[id] = true
		g.mu.Unlock()
	}
	return g.Store.Append(ctx, stream, expected, evs...)
}

// attemptGoroutines counts the goroutines that run or wait for attempts.
func attemptGoroutines() int {
	buf := make([]byte, 1<<20)
	return bytes.Count(buf[:runtime.Stack(buf, true)], []byte("webhooks.(*sendLoop).runAttempts("))
}

// Deliveries sent one after another are attempted on goroutines the
// sender keeps (an attempt's goroutine has grown its stack already), each
// delivered and recorded once, and those goroutines end when the sender
// stops.
func TestSenderReusesAttemptGoroutinesAndEndsThem(t *testing.T) {
	f := newKnownFixture(t, true)
	log := &goroutineLog{Store: f.d.Store, ids: map[string]bool{}}
	f.d.Store = log
	f.d.Workers, f.d.Deliveries, f.d.Claims = 4, &dueSchedule{}, &claimAll{held: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = f.d.RunSender(ctx) }()
	until := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not happen within 10 s", what)
			}
		}
	}
	until("the sender's start", func() bool {
		f.d.handover.mu.Lock()
		defer f.d.handover.mu.Unlock()
		return f.d.handover.on
	})
	const n = 30
	for i := range n {
		id := "d" + string(rune('a'+i/26)) + string(rune('a'+i%26))
		f.create(t, id)
		until(id+"'s outcome and release", func() bool {
			return len(f.outcomes(t, id)) == 2 && !f.d.isAttempting(id)
		})
	}
	if got := f.rcv.posts(); len(got) != n || f.rcv.badSig != 0 {
		t.Fatalf("receiver got %d POSTs (%d badly signed), want %d", len(got), f.rcv.badSig, n)
	}
	log.mu.Lock()
	used := len(log.ids)
	log.mu.Unlock()
	if used > n/3 {
		t.Fatalf("%d attempts one after another ran on %d goroutines: they are not reused", n, used)
	}
	if attemptGoroutines() == 0 {
		t.Fatal("no goroutine waits for the next attempt")
	}
	cancel()
	<-stopped
	// A goroutine that has signalled its end is still in the stack dump
	// until it returns, so its end is waited for, not sampled once.
	until("the attempt goroutines' end after the sender's", func() bool { return attemptGoroutines() == 0 })
}
