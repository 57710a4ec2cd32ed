package subscribe_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/lease"
	leasemem "github.com/healthtech/partner-open-platform/internal/lease/memory"
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

// runBatches runs a pipeline with handle as the commit of each batch
// (prepare only copies it), so the tests below see what a store-fed
// pipeline commits, batch by batch, in order.
func runBatches(ctx context.Context, src subscribe.StoreSource, handle func(context.Context, []events.Recorded) error) error {
	prepare := func(_ context.Context, recs []events.Recorded) ([]events.Recorded, error) {
		return append([]events.Recorded(nil), recs...), nil
	}
	commit := func(ctx context.Context, batches [][]events.Recorded) error {
		for _, b := range batches {
			if err := handle(ctx, b); err != nil {
				return err
			}
		}
		return nil
	}
	return pipeline(src, prepare, commit).Run(ctx)
}

// pipeline is a pipeline named "test" over src.
func pipeline[P any](src subscribe.Source, prepare func(context.Context, []events.Recorded) (P, error), commit func(context.Context, []P) error) subscribe.Pipeline[P] {
	return subscribe.Pipeline[P]{Name: "test", Source: src, Prepare: prepare, Commit: commit}
}

// A pipeline hands every event over once, in log order, in batches no
// larger than Batch, and checkpoints what it committed; a restart resumes
// from the checkpoint rather than from From.
func TestPipelineDeliversInOrderAndResumesFromItsCheckpoint(t *testing.T) {
	store := memory.New()
	defer store.Close()
	pos := appendN(t, store, 100)
	cps := &memCheckpoints{}
	fromCalls := 0
	src := subscribe.StoreSource{Store: store, Checkpoints: cps, Batch: 8, From: func(context.Context) (events.Position, error) {
		fromCalls++
		return events.Position{}, nil
	}}
	var got []events.Position
	ctx, cancel := context.WithCancel(context.Background())
	err := runBatches(ctx, src, func(_ context.Context, recs []events.Recorded) error {
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
	err = runBatches(ctx, src, func(_ context.Context, recs []events.Recorded) error {
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

// A batch whose commit fails is never checkpointed: the restart hands it over again.
func TestPipelineRedoesAFailedBatch(t *testing.T) {
	store := memory.New()
	defer store.Close()
	pos := appendN(t, store, 20)
	cps := &memCheckpoints{}
	src := subscribe.StoreSource{Store: store, Checkpoints: cps, Batch: 4, From: func(context.Context) (events.Position, error) { return events.Position{}, nil }}
	boom := errors.New("store down")
	seen := 0
	err := runBatches(context.Background(), src, func(_ context.Context, recs []events.Recorded) error {
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
	_ = runBatches(ctx, src, func(_ context.Context, recs []events.Recorded) error {
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

// pipelineRun drives the pipeline over a log of 20 events in batches of at
// most 3; the commit of the batch holding pos[10] (the held batch) calls
// held once every later event was prepared, and returns what held returns.
// It reports the batches committed, in call order, and the pipeline's error.
func pipelineRun(t *testing.T, ctx context.Context, cancel context.CancelFunc, held func() error) (pos []events.Position, committed [][]events.Position, cps *memCheckpoints, err error) {
	t.Helper()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	pos = appendN(t, store, 20)
	cps = &memCheckpoints{}
	src := subscribe.StoreSource{Store: store, Checkpoints: cps, Batch: 3, From: func(context.Context) (events.Position, error) { return events.Position{}, nil }}
	allPrepared, heldStarted := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	prepare := func(ctx context.Context, recs []events.Recorded) ([]events.Position, error) {
		if pos[10].Less(recs[0].Position) {
			// Batches after the held one are prepared only once its commit
			// began, so that commit cannot take them along.
			select {
			case <-heldStarted:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		var out []events.Position
		for _, r := range recs {
			out = append(out, r.Position)
			if r.Position == pos[19] {
				close(allPrepared)
			}
		}
		return out, nil
	}
	commit := func(ctx context.Context, batches [][]events.Position) error {
		all := slices.Concat(batches...)
		mu.Lock()
		committed = append(committed, all)
		mu.Unlock()
		if slices.Contains(all, pos[10]) {
			close(heldStarted)
			select {
			case <-allPrepared: // the later batches were prepared while this one commits
			case <-ctx.Done():
				return ctx.Err()
			}
			if err := held(); err != nil {
				return err
			}
		}
		if slices.Contains(all, pos[19]) {
			cancel() // everything committed: a clean stop
		}
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- pipeline(src, prepare, commit).Run(ctx) }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("the pipeline did not end")
	}
	mu.Lock()
	defer mu.Unlock()
	return pos, committed, cps, err
}

// commitsInOrder fails unless the committed batches hold each event at
// most once, in log order, ending with end.
func commitsInOrder(t *testing.T, pos []events.Position, committed [][]events.Position, end int) {
	t.Helper()
	got := slices.Concat(committed...)
	if len(got) != end+1 {
		t.Fatalf("committed %v, want pos[0..%d] once each", got, end)
	}
	for i := range got {
		if got[i] != pos[i] {
			t.Fatalf("commit %d is %s, want %s (log order)", i, got[i], pos[i])
		}
	}
}

// A commit that fails after later batches were prepared stops the pipeline:
// nothing after it is committed and the checkpoint stays before it, so a
// restart redoes it and everything after it.
func TestPipelineNeverCheckpointsPastAFailedCommit(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	boom := errors.New("store down")
	pos, committed, cps, err := pipelineRun(t, ctx, cancel, func() error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want %v", err, boom)
	}
	failed := committed[len(committed)-1]
	if !slices.Contains(failed, pos[10]) {
		t.Fatalf("a commit ran after the failed one: %v", committed)
	}
	commitsInOrder(t, pos, committed, int(failed[len(failed)-1].Commit-pos[0].Commit))
	if !cps.get().Less(failed[0]) {
		t.Fatalf("checkpoint %s at or past the failed batch starting at %s", cps.get(), failed[0])
	}
	if len(committed) > 1 {
		before := committed[len(committed)-2]
		if cps.get() != before[len(before)-1] {
			t.Fatalf("checkpoint %s, want the end of the last committed batch %s", cps.get(), before[len(before)-1])
		}
	}
}

// A node stopped while a slow commit is in flight saves no checkpoint past
// it, though later batches were prepared meanwhile.
func TestPipelineStoppedDuringASlowCommitKeepsItUncheckpointed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pos, committed, cps, err := pipelineRun(t, ctx, cancel, func() error {
		cancel() // the stop arrives while the append is in the commit queue
		return ctx.Err()
	})
	if err != nil {
		t.Fatalf("a stop returned %v", err)
	}
	slow := committed[len(committed)-1]
	if !slices.Contains(slow, pos[10]) {
		t.Fatalf("a commit ran after the interrupted one: %v", committed)
	}
	if !cps.get().Less(slow[0]) {
		t.Fatalf("checkpoint %s at or past the interrupted batch starting at %s", cps.get(), slow[0])
	}
}

// A slow commit holds the ones after it: the batches prepared meanwhile
// are committed after it, in log order, each event once, and the final
// checkpoint is the last event.
func TestPipelineCommitsBatchesPreparedDuringASlowCommitInOrder(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pos, committed, cps, err := pipelineRun(t, ctx, cancel, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	commitsInOrder(t, pos, committed, 19)
	// The batches prepared while the slow commit ran (at least three: nine
	// events, at most three a batch) went into merged commits: all but the
	// last were staged before it ended, so at most two commits.
	i := slices.IndexFunc(committed, func(b []events.Position) bool { return slices.Contains(b, pos[10]) })
	if rest := committed[i+1:]; len(rest) > 2 {
		t.Fatalf("commits %v: the batches prepared during the slow one were not merged behind it", committed)
	}
	if cps.get() != pos[19] {
		t.Fatalf("checkpoint %s after a clean stop, want %s", cps.get(), pos[19])
	}
}

// A batch is the prepare's to keep: batches gather in one buffer, and each
// is handed over in a slice of its own, so a prepared batch that holds its
// events (its commit waits until every later batch was prepared) still
// holds them, and the next batch's events do not overwrite them.
func TestPipelineBatchesOutliveTheNextOne(t *testing.T) {
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	pos := appendN(t, store, 20)
	src := subscribe.StoreSource{Store: store, Batch: 3, From: func(context.Context) (events.Position, error) { return events.Position{}, nil }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	allPrepared := make(chan struct{})
	prepare := func(_ context.Context, recs []events.Recorded) ([]events.Recorded, error) {
		if cap(recs) != len(recs) {
			t.Errorf("a batch of %d events came in a slice of capacity %d", len(recs), cap(recs))
		}
		if recs[len(recs)-1].Position == pos[19] {
			close(allPrepared)
		}
		return recs, nil // kept as they are, not copied
	}
	var committed []events.Recorded
	commit := func(ctx context.Context, batches [][]events.Recorded) error {
		select {
		case <-allPrepared:
		case <-ctx.Done():
			return ctx.Err()
		}
		committed = append(committed, slices.Concat(batches...)...)
		if len(committed) == len(pos) {
			cancel()
		}
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- pipeline(src, prepare, commit).Run(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("the pipeline did not end")
	}
	if len(committed) != len(pos) {
		t.Fatalf("committed %d events, want %d", len(committed), len(pos))
	}
	for i, r := range committed {
		if r.Position != pos[i] || r.ID != fmt.Sprintf("00000000-0000-4000-8000-%012d", i) {
			t.Fatalf("committed event %d is %s %s, want %s: a later batch overwrote it", i, r.ID, r.Position, pos[i])
		}
	}
}

// The checkpoint follows the effect: when a commit starts, the checkpoint
// is before its first event (it never counts an effect not yet written),
// and once every commit returned, a clean stop leaves it at the last event.
func TestPipelineCheckpointsOnlyCommittedBatches(t *testing.T) {
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	pos := appendN(t, store, 50)
	cps := &memCheckpoints{}
	src := subscribe.StoreSource{Store: store, Checkpoints: cps, Batch: 4}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var done int
	err := pipeline(src, func(_ context.Context, recs []events.Recorded) ([]events.Recorded, error) {
		return recs, nil
	}, func(_ context.Context, batches [][]events.Recorded) error {
		if cp := cps.get(); !cp.Less(batches[0][0].Position) {
			t.Errorf("checkpoint %s when the commit of %s began", cp, batches[0][0].Position)
		}
		for _, b := range batches {
			done += len(b)
		}
		if done == len(pos) {
			cancel()
		}
		return nil
	}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cps.get() != pos[len(pos)-1] {
		t.Fatalf("checkpoint %s after a clean stop, want %s", cps.get(), pos[len(pos)-1])
	}
}

// A failed preparation stops the pipeline with its error: the batches
// before it commit, it and what follows do not, nor are they checkpointed.
func TestPipelineStopsAtAFailedPreparation(t *testing.T) {
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	pos := appendN(t, store, 20)
	cps := &memCheckpoints{}
	src := subscribe.StoreSource{Store: store, Checkpoints: cps, Batch: 1}
	boom := errors.New("read model unavailable")
	var mu sync.Mutex
	var committed []events.Position
	err := pipeline(src, func(_ context.Context, recs []events.Recorded) ([]events.Recorded, error) {
		if recs[0].Position == pos[7] {
			return nil, boom
		}
		return recs, nil
	}, func(_ context.Context, batches [][]events.Recorded) error {
		mu.Lock()
		defer mu.Unlock()
		for _, b := range batches {
			for _, r := range b {
				committed = append(committed, r.Position)
			}
		}
		return nil
	}).Run(context.Background())
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want %v", err, boom)
	}
	if !slices.Equal(committed, pos[:len(committed)]) || len(committed) > 7 {
		t.Fatalf("committed %v, want a prefix of the log before %s", committed, pos[7])
	}
	if !cps.get().Less(pos[7]) {
		t.Fatalf("checkpoint %s at or past the failed preparation at %s", cps.get(), pos[7])
	}
}

// Under a lease, the pipeline commits only while this node holds it. Lost
// while a commit is in flight, the batch is not checkpointed and nothing
// after it commits while the other node holds the lease; once the lease is
// free again the pipeline takes it back and resumes from its checkpoint,
// so every event is committed, in log order, from the lost batch on.
func TestPipelineUnderALeaseStopsWhenItIsLostAndResumes(t *testing.T) {
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	pos := appendN(t, store, 20)
	cps := &memCheckpoints{}
	var skew atomic.Int64
	leases := leasemem.NewWithClock(func() time.Time { return time.Now().Add(time.Duration(skew.Load())) })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var mu sync.Mutex
	var runs [][]events.Position // what each holding committed, in order
	var other lease.Lease
	lostOnce := false
	p := subscribe.Pipeline[[]events.Recorded]{
		Name: "test", Source: subscribe.StoreSource{Store: store, Checkpoints: cps, Batch: 3},
		Leases: leases, Lease: "test-pipeline", Holder: "a", TTL: 150 * time.Millisecond,
		Prepare: func(_ context.Context, recs []events.Recorded) ([]events.Recorded, error) { return recs, nil },
		Commit: func(ctx context.Context, batches [][]events.Recorded) error {
			if l, err := leases.Get(ctx, "test-pipeline"); err != nil || l.Holder != "a" {
				t.Errorf("a commit ran while %q held the lease (err %v)", l.Holder, err)
			}
			all := slices.Concat(batches...)
			mu.Lock()
			if len(runs) == 0 {
				runs = append(runs, nil)
			}
			if !lostOnce && slices.ContainsFunc(all, func(r events.Recorded) bool { return r.Position == pos[10] }) {
				lostOnce = true
				mu.Unlock()
				// The lease lapses and another node takes it.
				skew.Store(int64(time.Hour))
				var err error
				if other, err = leases.Acquire(context.Background(), "test-pipeline", "b", time.Hour); err != nil {
					t.Error(err)
				}
				<-ctx.Done() // the renewal finds the lease lost
				mu.Lock()
				runs = append(runs, nil) // the next holding starts here
				mu.Unlock()
				return ctx.Err()
			}
			for _, r := range all {
				runs[len(runs)-1] = append(runs[len(runs)-1], r.Position)
			}
			finished := runs[len(runs)-1][len(runs[len(runs)-1])-1] == pos[19]
			mu.Unlock()
			if finished {
				cancel()
			}
			return nil
		},
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()

	// Wait until the lease was lost, then for the standing-by pipeline's
	// checkpoint to settle, and give the lease back.
	deadline := time.After(30 * time.Second)
	for {
		mu.Lock()
		lost := len(runs) == 2
		mu.Unlock()
		if lost {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the pipeline ended (%v) before the lease was lost", err)
		case <-deadline:
			t.Fatal("the lease was never lost")
		case <-time.After(5 * time.Millisecond):
		}
	}
	checkpointAtLoss := cps.get()
	if !checkpointAtLoss.Less(pos[10]) {
		t.Fatalf("checkpoint %s covers the batch whose commit the lost lease cut (holding %s)", checkpointAtLoss, pos[10])
	}
	if err := leases.Release(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-deadline:
		cancel()
		t.Fatal("the pipeline did not resume after the lease came back")
	}
	mu.Lock()
	defer mu.Unlock()
	first, second := runs[0], runs[1]
	if !slices.Equal(first, pos[:len(first)]) {
		t.Fatalf("first holding committed %v, want a prefix of the log", first)
	}
	// The second holding starts right after the checkpoint it found and
	// commits the rest in order. That checkpoint is at least the one seen at
	// the loss, and may be later: the first holding's committed batches may
	// still save their checkpoint after the loss, but never past its
	// committed prefix.
	start := slices.Index(pos, second[0])
	lo := 0
	if checkpointAtLoss != (events.Position{}) {
		lo = slices.Index(pos, checkpointAtLoss) + 1
	}
	if start < lo || start > len(first) || !slices.Equal(second, pos[start:]) {
		t.Fatalf("after the lease came back it committed %v; want the log after a checkpoint between %s and the first holding's last commit %v", second, checkpointAtLoss, first[len(first)-1])
	}
}
