package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/webhooks"
)

// memCheckpoints is a forward-only checkpoint like relay's.
type memCheckpoints struct {
	mu  sync.Mutex
	pos events.Position
}

func (c *memCheckpoints) Load(context.Context) (events.Position, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pos, nil
}

func (c *memCheckpoints) Save(_ context.Context, pos events.Position) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pos.Less(pos) {
		c.pos = pos
	}
	return nil
}

func (c *memCheckpoints) get() events.Position {
	p, _ := c.Load(context.Background())
	return p
}

func appendN(t *testing.T, s events.Store, n int) []events.Position {
	t.Helper()
	var out []events.Position
	head, err := s.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := int(head.Commit); i < int(head.Commit)+n; i++ {
		res, err := s.Append(context.Background(), fmt.Sprint("s-", i%7), events.Any(), events.Proposed{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), Type: "t", Data: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res.Position)
	}
	return out
}

// RunBatches hands every event over once, in log order, in batches no
// larger than Batch, and checkpoints what it finished; a restart resumes
// from the checkpoint rather than from From.
func TestRunBatchesDeliversInOrderAndResumesFromItsCheckpoint(t *testing.T) {
	store := memory.New()
	defer store.Close()
	pos := appendN(t, store, 100)
	cps := &memCheckpoints{}
	fromCalls := 0
	src := webhooks.StoreSource{Store: store, Checkpoints: cps, Batch: 8, From: func(context.Context) (events.Position, error) {
		fromCalls++
		return events.Position{}, nil
	}}
	var got []events.Position
	ctx, cancel := context.WithCancel(context.Background())
	err := src.RunBatches(ctx, func(_ context.Context, recs []events.Recorded) error {
		if len(recs) == 0 || len(recs) > 8 {
			t.Errorf("batch of %d", len(recs))
		}
		for _, r := range recs {
			got = append(got, r.Position)
		}
		if len(got) == 100 {
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 100 {
		t.Fatalf("%d events handed over, want 100", len(got))
	}
	for i := range got {
		if got[i] != pos[i] {
			t.Fatalf("event %d at %s, want %s", i, got[i], pos[i])
		}
	}
	if cps.get() != pos[99] {
		t.Fatalf("checkpoint %s after a clean stop, want %s", cps.get(), pos[99])
	}
	// A restart sees only what came after the checkpoint.
	more := appendN(t, store, 3)
	var again []events.Position
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	err = src.RunBatches(ctx, func(_ context.Context, recs []events.Recorded) error {
		for _, r := range recs {
			again = append(again, r.Position)
		}
		if len(again) >= 3 {
			cancel()
		}
		return nil
	})
	if err != nil || len(again) != 3 || again[0] != more[0] || fromCalls != 1 {
		t.Fatalf("resumed with %v (err %v, From called %d times), want %v", again, err, fromCalls, more)
	}
}

// A batch whose handling fails is never checkpointed: the restart hands it over again.
func TestRunBatchesRedoesAFailedBatch(t *testing.T) {
	store := memory.New()
	defer store.Close()
	pos := appendN(t, store, 20)
	cps := &memCheckpoints{}
	src := webhooks.StoreSource{Store: store, Checkpoints: cps, Batch: 4, From: func(context.Context) (events.Position, error) { return events.Position{}, nil }}
	boom := errors.New("store down")
	seen := 0
	err := src.RunBatches(context.Background(), func(_ context.Context, recs []events.Recorded) error {
		for _, r := range recs {
			if r.Position == pos[10] {
				return boom
			}
		}
		seen += len(recs)
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want %v", err, boom)
	}
	if !cps.get().Less(pos[10]) {
		t.Fatalf("checkpoint %s covers the failed event at %s", cps.get(), pos[10])
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var redo []events.Position
	deadline := time.AfterFunc(30*time.Second, cancel)
	defer deadline.Stop()
	_ = src.RunBatches(ctx, func(_ context.Context, recs []events.Recorded) error {
		for _, r := range recs {
			redo = append(redo, r.Position)
			if r.Position == pos[19] {
				cancel()
			}
		}
		return nil
	})
	found := false
	for _, p := range redo {
		found = found || p == pos[10]
	}
	if !found || redo[len(redo)-1] != pos[19] {
		t.Fatalf("restart handed over %v; it must include %s and reach %s", redo, pos[10], pos[19])
	}
}
