package subscribe_test

import (
	"context"
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

// gated is a read model whose Apply, once held, blocks until its context
// ends: a read model stuck in the middle of a rebuild.
type gated struct {
	name string

	mu      sync.Mutex
	held    bool
	applied int
	pos     events.Position
}

func (g *gated) Name() string        { return g.name }
func (g *gated) Handles(string) bool { return true }
func (g *gated) Checkpoint(context.Context) (events.Position, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.pos, nil
}
func (g *gated) Reset(context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.applied, g.pos = 0, events.Position{}
	return nil
}
func (g *gated) Apply(ctx context.Context, batch []events.Envelope, pos events.Position) error {
	g.mu.Lock()
	held := g.held && g.applied > 0
	g.mu.Unlock()
	if held {
		<-ctx.Done()
		return ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.applied += len(batch)
	g.pos = pos
	return nil
}

// Read models rebuilt together share one reader, which hands each its
// events: while one of them is stuck early in the log (its Apply does not
// return, its hand-over is full), the others stop a batch or two further
// (the reader waits for it); once the stuck one stops following, it no
// longer holds them, and they finish with every event applied.
func TestRebuiltReadModelsWaitForTheSlowestAndNotForOneThatStopped(t *testing.T) {
	slowestHoldsTheRebuild(t, func(s events.Store) events.Store { return s })
}

// aside is the log through another handle, as a read model shared between
// nodes follows it: a rebuild's one reader leaves out the runners that do
// not follow its store, and they read through subscriptions of their own.
type aside struct{ events.Store }

// Read models rebuilt together that the one reader leaves out replay paced
// within reach of one another (a few thousand events), so a store's shared
// reads serve them all; the stuck one holds the others as in the group, and
// stops holding them when it stops following.
func TestPacedReadModelsWaitForTheSlowestAndNotForOneThatStopped(t *testing.T) {
	slowestHoldsTheRebuild(t, func(s events.Store) events.Store { return aside{s} })
}

// slowestHoldsTheRebuild rebuilds two read models, the lead's runner
// following leadStore(store): a stuck one holds the lead near the start
// until it stops following, and then the lead applies the whole log.
func slowestHoldsTheRebuild(t *testing.T, leadStore func(events.Store) events.Store) {
	store := memory.New()
	defer store.Close()
	reg := catalog.Registry()
	const total = 20_000
	for i := range total {
		appendApp(t, store, reg, fmt.Sprint("app-", i))
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	stuck, lead := &gated{name: "stuck"}, &gated{name: "lead"}
	stuckRun := subscribe.NewRunner(store, nil, stuck, log, nil)
	leadRun := subscribe.NewRunner(leadStore(store), nil, lead, log, nil)
	stuckCtx, stopStuck := context.WithCancel(context.Background())
	stuckDone := make(chan struct{})
	go func() { defer close(stuckDone); _ = stuckRun.Run(stuckCtx) }()
	defer func() { stopStuck(); <-stuckDone }()
	run(t, leadRun)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	set := subscribe.RunnerSet{stuckRun, leadRun}
	for _, r := range set {
		if err := r.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}

	stuck.mu.Lock()
	stuck.held = true
	stuck.mu.Unlock()
	if _, _, err := set.Rebuild(ctx, subscribe.AllReadModels); err != nil {
		t.Fatal(err)
	}
	// The lead is held within a hand-over of the stuck one (which applied
	// one batch and holds at most a batch more), or within the pace's
	// window of it: give it time to run through the whole log if nothing
	// held it.
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if s := leadRun.Stats(); s.Ready || s.Position.Commit > total/2 {
			t.Fatalf("the lead read model reached %d of %d events (ready %v) while another one of its rebuild was stuck near the start",
				s.Position.Commit, total, s.Ready)
		}
		time.Sleep(10 * time.Millisecond)
	}

	stopStuck()
	<-stuckDone
	if err := leadRun.WaitReady(ctx); err != nil {
		t.Fatalf("the lead read model did not finish once the stuck one stopped: %v (%+v)", err, leadRun.Stats())
	}
	lead.mu.Lock()
	applied := lead.applied
	lead.mu.Unlock()
	if applied != total {
		t.Fatalf("the lead read model applied %d events after the rebuild, want %d", applied, total)
	}
}
