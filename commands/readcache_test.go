package commands

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
)

// gatedReads counts ReadStream calls and, while a gate is set, holds each
// read's answer (already read from the store) until the gate opens: a read
// that started before an append, still under way after it.
type gatedReads struct {
	events.Store
	reads   atomic.Int64
	mu      sync.Mutex
	gate    chan struct{}
	started chan struct{} // one signal per gated read
}

func (g *gatedReads) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]events.Recorded, error) {
	g.reads.Add(1)
	recs, err := g.Store.ReadStream(ctx, stream, from, limit)
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		g.started <- struct{}{}
		<-gate
	}
	return recs, err
}

// countEvents is a readCache state: how many events were applied.
func countEvents(n *int, _ events.Envelope) { *n++ }

func appendItemEvent(t *testing.T, s streams, stream string) {
	t.Helper()
	p, err := s.reg.Encode(catalog.BenefitItemStatusChanged{BenefitItemID: 1, Status: ItemActive}, events.Metadata{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.store.Append(ctx, stream, events.Any(), p); err != nil {
		t.Fatal(err)
	}
}

// TestReadCacheCallerArrivingDuringAReadSeesLaterEvents: a caller that
// arrives while a read that started before an append is under way does
// not take that read's answer (it would miss the append): it waits for the
// next read, which every caller arriving meanwhile shares, so n callers
// cost two reads, not n.
func TestReadCacheCallerArrivingDuringAReadSeesLaterEvents(t *testing.T) {
	store := &gatedReads{Store: memory.New(), started: make(chan struct{}, 1)}
	s := streams{store, catalog.Registry()}
	const stream = "test-readcache-1"
	appendItemEvent(t, s, stream)
	var c readCache[int]

	gate := make(chan struct{})
	store.gate = gate
	first := make(chan int)
	go func() {
		n, err := c.read(ctx, s, stream, countEvents)
		if err != nil {
			t.Error(err)
		}
		first <- n
	}()
	<-store.started // the first read has its answer: one event
	store.mu.Lock()
	store.gate = nil
	store.mu.Unlock()
	appendItemEvent(t, s, stream)

	const later = 20
	got := make(chan int, later)
	for range later {
		go func() {
			n, err := c.read(ctx, s, stream, countEvents)
			if err != nil {
				t.Error(err)
			}
			got <- n
		}()
	}
	// Give the later callers time to arrive while the first read is held
	// (they queue behind it), then let it answer.
	e := c.entry(stream)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		e.mu.Lock()
		queued := e.queued != nil
		e.mu.Unlock()
		if queued {
			break
		}
	}
	time.Sleep(50 * time.Millisecond)
	close(gate)
	if n := <-first; n != 1 {
		t.Fatalf("first read: %d events, want 1", n)
	}
	for range later {
		if n := <-got; n != 2 {
			t.Fatalf("a caller that arrived after the second append saw %d events", n)
		}
	}
	if r := store.reads.Load(); r > 1+later/2 {
		t.Fatalf("%d store reads for %d callers: callers did not share reads", r, 1+later)
	}
}

// TestReadCacheSeesEveryEarlierAppend: under concurrent readers and an
// appender, every read sees at least the events whose append returned
// before the read was called, and each reader's counts never go back.
func TestReadCacheSeesEveryEarlierAppend(t *testing.T) {
	store := &gatedReads{Store: memory.New()}
	s := streams{store, catalog.Registry()}
	const stream = "test-readcache-2"
	var c readCache[int]
	var appended atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				before := int(appended.Load())
				n, err := c.read(ctx, s, stream, countEvents)
				if err != nil {
					t.Error(err)
					return
				}
				if n < before || n < last {
					t.Errorf("read %d events; %d were appended before the call, %d seen before", n, before, last)
					return
				}
				last = n
			}
		}()
	}
	for range 300 {
		appendItemEvent(t, s, stream)
		appended.Add(1)
	}
	close(stop)
	wg.Wait()
	if n, err := c.read(ctx, s, stream, countEvents); err != nil || n != 300 {
		t.Fatalf("final read: %d, %v", n, err)
	}
}
