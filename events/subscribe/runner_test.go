package subscribe_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/events/subscribe"
)

// flaky is a transactional projector: a batch is applied whole or not at
// all. It refuses events whose stream is poison, and everything while down.
type flaky struct {
	mu      sync.Mutex
	pos     events.Position
	applied []string
	poison  string
	down    bool
}

func (f *flaky) Name() string { return "flaky" }
func (f *flaky) Checkpoint(context.Context) (events.Position, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pos, nil
}
func (f *flaky) Reset(context.Context) error { return nil }
func (f *flaky) Apply(_ context.Context, batch []events.Envelope, pos events.Position) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return errors.New("connection refused")
	}
	for _, env := range batch {
		if env.Stream == f.poison {
			return errors.New(`invalid byte sequence for encoding "UTF8": 0x00`)
		}
	}
	for _, env := range batch {
		f.applied = append(f.applied, env.Stream)
	}
	f.pos = pos
	return nil
}

func (f *flaky) state() ([]string, events.Position) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.applied...), f.pos
}

func appendApp(t *testing.T, store events.Store, reg *events.Registry, stream string) events.Position {
	t.Helper()
	ev, err := reg.Encode(&catalog.UploaderRegistered{Name: stream}, events.Metadata{OccurredAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := store.Append(context.Background(), stream, events.Any(), ev)
	if err != nil {
		t.Fatal(err)
	}
	return res.Position
}

func run(t *testing.T, r *subscribe.Runner) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// TestPoisonEventIsSkippedAndReported: one event that the store refuses on
// its own does not stall the events after it (other tenants); it is listed
// with its position, and the runner reports ready.
func TestPoisonEventIsSkippedAndReported(t *testing.T) {
	store, reg := memory.New(), catalog.Registry()
	p := &flaky{poison: "bad"}
	var skipped []string
	var mu sync.Mutex
	r := subscribe.NewRunner(store, reg, p, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	r.SkipPoison(func(name string) { mu.Lock(); skipped = append(skipped, name); mu.Unlock() })

	appendApp(t, store, reg, "a")
	bad := appendApp(t, store, reg, "bad")
	last := appendApp(t, store, reg, "b")
	run(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatalf("a poison event stalled the projection: %v (%+v)", err, r.Stats())
	}
	applied, pos := p.state()
	if len(applied) != 2 || applied[0] != "a" || applied[1] != "b" || pos != last {
		t.Fatalf("applied %v up to %s, want [a b] up to %s", applied, pos, last)
	}
	s := r.Stats()
	if !s.Ready || len(s.Skipped) != 1 || s.Skipped[0].Position != bad || s.Skipped[0].Stream != "bad" {
		t.Fatalf("stats %+v: want ready with the event at %s listed as skipped", s, bad)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(skipped) != 1 || skipped[0] != "flaky" {
		t.Fatalf("metric hook saw %v", skipped)
	}
}

// TestStoreOutageIsNotPoison: while the store refuses everything, nothing
// is skipped; the runner retries, reports the error, and applies every
// event once the store is back.
func TestStoreOutageIsNotPoison(t *testing.T) {
	store, reg := memory.New(), catalog.Registry()
	p := &flaky{down: true}
	r := subscribe.NewRunner(store, reg, p, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	r.SkipPoison(nil)
	appendApp(t, store, reg, "a")
	last := appendApp(t, store, reg, "b")
	run(t, r)
	deadline := time.Now().Add(5 * time.Second)
	for r.Stats().LastError == "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if s := r.Stats(); s.LastError == "" || s.Ready || len(s.Skipped) != 0 {
		t.Fatalf("during the outage: %+v", s)
	}
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	if applied, _ := p.state(); len(applied) != 2 {
		t.Fatalf("applied %v after the outage", applied)
	}
	if s := r.Stats(); !s.Ready || len(s.Skipped) != 0 {
		t.Fatalf("after the outage: %+v", s)
	}
}

// TestReadyOnlyAtTheHeadFoundAtStart: a runner whose checkpoint is behind
// the log's head is not ready (and not caught up) until it has applied the
// head, however small its batches.
func TestReadyOnlyAtTheHeadFoundAtStart(t *testing.T) {
	store, reg := memory.New(), catalog.Registry()
	var last events.Position
	for i := 0; i < 2000; i++ {
		last = appendApp(t, store, reg, "s")
	}
	p := &flaky{}
	r := subscribe.NewRunner(store, reg, p, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	run(t, r)
	for {
		ch := r.Changed()
		s := r.Stats()
		if s.Ready && s.Position.Less(last) {
			t.Fatalf("ready at %s before the head %s", s.Position, last)
		}
		if s.Ready || ctx.Err() != nil {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
		}
	}
	if s := r.Stats(); !s.Ready || s.Target != last {
		t.Fatalf("stats %+v, want ready with target %s", s, last)
	}
}

// recorder keeps the batches it is handed, as they came.
type recorder struct {
	mu      sync.Mutex
	pos     events.Position
	batches [][]events.Envelope
}

func (r *recorder) Name() string { return "recorder" }
func (r *recorder) Checkpoint(context.Context) (events.Position, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pos, nil
}
func (r *recorder) Reset(context.Context) error { return nil }
func (r *recorder) Apply(_ context.Context, batch []events.Envelope, pos events.Position) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, append([]events.Envelope(nil), batch...))
	r.pos = pos
	return nil
}

// recordReady runs a registry-less runner over store into a recorder, in
// batches of at most batch events, and returns once it is ready.
func recordReady(t *testing.T, store events.Store, batch int) (*recorder, *subscribe.Runner) {
	t.Helper()
	rec := &recorder{}
	r := subscribe.NewRunner(store, nil, rec, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	r.BatchSize(batch)
	run(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return rec, r
}

func (r *recorder) seen() (n int, batches [][]events.Envelope) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.batches {
		n += len(b)
	}
	return n, append([][]events.Envelope(nil), r.batches...)
}

// A runner without a registry hands over the events as stored: of every
// type (one this build never registered too), undecoded, in order, in
// batches no larger than BatchSize.
func TestRunnerWithoutRegistryHandsOverStoredEvents(t *testing.T) {
	store := memory.New()
	defer store.Close()
	reg := catalog.Registry()
	for i := range 7 {
		appendApp(t, store, reg, fmt.Sprint("app-", i))
	}
	unknown := events.Proposed{ID: "future-1", Type: "future.thing", Data: []byte(`{"x":1}`)}
	if _, err := store.Append(context.Background(), "future", events.Any(), unknown); err != nil {
		t.Fatal(err)
	}
	rec, _ := recordReady(t, store, 3)
	n, batches := rec.seen()
	if n != 8 {
		t.Fatalf("handed %d events, want 8", n)
	}
	last := batches[len(batches)-1]
	if got := last[len(last)-1]; got.Type != "future.thing" || string(got.Data) != `{"x":1}` || got.Payload != nil {
		t.Fatalf("last event handed over as %+v, want the stored future.thing undecoded", got)
	}
	for _, b := range batches {
		if len(b) > 3 {
			t.Fatalf("a batch of %d events, want at most 3", len(b))
		}
		for _, env := range b {
			if env.Payload != nil {
				t.Fatalf("event %s was decoded", env.ID)
			}
		}
	}
}

// StopOnError: when the log fails, Run returns the failure (the caller
// restarts it) instead of retrying on its own.
func TestStopOnErrorReturnsTheLogsFailure(t *testing.T) {
	store := memory.New()
	reg := catalog.Registry()
	appendApp(t, store, reg, "app-1")
	r := subscribe.NewRunner(store, reg, &recorder{}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	r.StopOnError()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	if err := r.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	store.Close()
	select {
	case err := <-done:
		if !errors.Is(err, events.ErrClosed) {
			t.Fatalf("Run returned %v, want events.ErrClosed", err)
		}
	case <-ctx.Done():
		t.Fatal("Run kept retrying after the log failed")
	}
}

// A replay whose last batch is full cannot tell from the batch that it
// reached the log's end; the runner asks the log's head, so it reports
// caught up without waiting for another event (with batches of one, every
// batch is full).
func TestFullLastBatchStillCatchesUp(t *testing.T) {
	store := memory.New()
	defer store.Close()
	reg := catalog.Registry()
	for i := range 3 {
		appendApp(t, store, reg, fmt.Sprint("app-", i))
	}
	r := subscribe.NewRunner(store, nil, &recorder{}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	r.BatchSize(1)
	run(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	for !r.Stats().CaughtUp {
		select {
		case <-r.Changed():
		case <-ctx.Done():
			t.Fatalf("not caught up at the log's end: %+v", r.Stats())
		}
	}
	if got := r.Stats().Applied; got != 3 {
		t.Fatalf("applied %d events, want 3", got)
	}
}

// picky is a recorder that handles one event type only.
type picky struct {
	recorder
	handles string
}

func (p *picky) Handles(eventType string) bool { return eventType == p.handles }

// With EagerCheckpoints, a projector whose events are none of a stretch of
// the log still has its checkpoint committed at the stretch's end, batch by
// batch: what its store holds is the position reached, not the last event
// it applied (a snapshot of the store then restores it there).
func TestEagerCheckpointsFollowEventsOfOtherTypes(t *testing.T) {
	store := memory.New()
	defer store.Close()
	reg := catalog.Registry()
	for i := range 5 {
		appendApp(t, store, reg, fmt.Sprint("app-", i))
	}
	p := &picky{handles: (&catalog.UserErased{}).EventType()}
	r := subscribe.NewRunner(store, reg, p, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	r.BatchSize(2)
	r.EagerCheckpoints()
	run(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for round := range 2 {
		last := appendApp(t, store, reg, fmt.Sprint("last-", round))
		if err := r.WaitFor(ctx, last); err != nil {
			t.Fatal(err)
		}
		cp, err := p.Checkpoint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if cp != last {
			t.Fatalf("round %d: checkpoint %s once the runner reached %s: it lags events the projector skips", round, cp, last)
		}
		if n, _ := p.seen(); n != 0 {
			t.Fatalf("the projector was handed %d events of types it does not handle", n)
		}
	}
}

// A runner whose projector handles none of a replayed stretch still
// commits its checkpoint once it has caught up with the log's end, even
// if the log then stays idle: a restart resumes there instead of reading
// the stretch again.
func TestCaughtUpAfterALongStretchOfOthersEventsCommitsTheCheckpoint(t *testing.T) {
	store := memory.New()
	defer store.Close()
	reg := catalog.Registry()
	var last events.Position
	for i := range 5_000 {
		last = appendApp(t, store, reg, fmt.Sprint("app-", i))
	}
	p := &picky{handles: (&catalog.UserErased{}).EventType()}
	r := subscribe.NewRunner(store, reg, p, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	run(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.WaitFor(ctx, last); err != nil {
		t.Fatal(err)
	}
	for {
		cp, err := p.Checkpoint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if cp == last {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("checkpoint %s after the runner caught up at %s on an idle log: a restart reads the stretch again", cp, last)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// replays is a store that records the replay subscriptions asked of it
// (privacy.Store's SubscribeReplay) and serves them as SubscribeAllFor.
type replays struct {
	events.Store
	mu    sync.Mutex
	asked [][2]events.Position // after, through
}

func (s *replays) SubscribeReplay(ctx context.Context, after, through events.Position, wants func(string) bool) (events.Subscription, error) {
	s.mu.Lock()
	s.asked = append(s.asked, [2]events.Position{after, through})
	s.mu.Unlock()
	return events.SubscribeAllFor(ctx, s.Store, after, wants)
}

func (s *replays) calls() [][2]events.Position {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][2]events.Position(nil), s.asked...)
}

// A rebuild replays the log up to its head as a replay (which the privacy
// store opens without its cache), and applies every event; a start that
// is no rebuild follows the log as any follower.
func TestARebuildSubscribesAsAReplayUpToTheHead(t *testing.T) {
	store := &replays{Store: memory.New()}
	defer store.Close()
	reg := catalog.Registry()
	var head events.Position
	for i := range 3 {
		head = appendApp(t, store, reg, fmt.Sprint("app-", i))
	}
	p := &inOrder{name: "replayed"}
	r := subscribe.NewRunner(store, reg, p, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	run(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if asked := store.calls(); len(asked) != 0 {
		t.Fatalf("a start subscribed as a replay: %v", asked)
	}
	if err := r.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if asked := store.calls(); len(asked) != 1 || !asked[0][0].IsZero() || asked[0][1] != head {
		t.Fatalf("the rebuild subscribed as replays %v, want one from the start through %s", asked, head)
	}
	if ids, _ := p.applied(); len(ids) != 3 {
		t.Fatalf("the rebuild applied %d events of 3", len(ids))
	}
}
