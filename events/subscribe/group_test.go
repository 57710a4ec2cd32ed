package subscribe_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/events/subscribe"
)

// typed is a read model of some event types (an inOrder of them) that
// fails every batch while down once it has applied failAfter events.
type typed struct {
	inOrder
	types     map[string]bool
	down      bool
	failAfter int
	// sealed counts the events handed to it still sealed (sealing).
	sealed int
}

func newTyped(name string, types ...string) *typed {
	t := &typed{inOrder: inOrder{name: name}, types: map[string]bool{}}
	for _, ty := range types {
		t.types[ty] = true
	}
	return t
}

func (m *typed) Handles(ty string) bool   { return m.types[ty] }
func (m *typed) setDown(down bool, n int) { m.mu.Lock(); m.down, m.failAfter = down, n; m.mu.Unlock() }
func (m *typed) Apply(ctx context.Context, batch []events.Envelope, pos events.Position) error {
	m.mu.Lock()
	down := m.down && len(m.ids) >= m.failAfter
	m.mu.Unlock()
	if down {
		return errors.New("connection refused")
	}
	for _, env := range batch {
		if !m.types[env.Type] {
			return fmt.Errorf("%s was handed an event of type %s", m.name, env.Type)
		}
		if bytes.HasPrefix(env.Data, sealedMark) {
			m.mu.Lock()
			m.sealed++
			m.mu.Unlock()
		}
	}
	return m.inOrder.Apply(ctx, batch, pos)
}

func (m *typed) sealedSeen() int { m.mu.Lock(); defer m.mu.Unlock(); return m.sealed }

// state is what an operator sees of a read model: what it applied, its
// checkpoint, and its runner's progress.
type state struct {
	ids        []string
	checkpoint events.Position
	position   events.Position
	applied    uint64
	ready      bool
}

func (m *typed) state(r *subscribe.Runner) state {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := r.Stats()
	return state{ids: slices.Clone(m.ids), checkpoint: m.pos, position: s.Position, applied: s.Applied, ready: s.Ready}
}

// counted is a store that counts the events its subscriptions hand out.
type counted struct {
	events.Store
	read atomic.Int64
}

func (s *counted) SubscribeAll(ctx context.Context, after events.Position) (events.Subscription, error) {
	sub, err := s.Store.SubscribeAll(ctx, after)
	if err != nil {
		return nil, err
	}
	return &countedSub{Subscription: sub, n: &s.read}, nil
}

type countedSub struct {
	events.Subscription
	n *atomic.Int64
}

func (s *countedSub) Next(ctx context.Context) (events.Recorded, error) {
	rec, err := s.Subscription.Next(ctx)
	if err == nil {
		s.n.Add(1)
	}
	return rec, err
}

// appendTyped appends n events of the types a, b and c in a random mix,
// in appends of one to five events.
func appendTyped(t *testing.T, store events.Store, rnd *rand.Rand, from, n int) {
	t.Helper()
	for i := from; i < from+n; {
		evs := make([]events.Proposed, min(1+rnd.IntN(5), from+n-i))
		for j := range evs {
			evs[j] = events.Proposed{ID: fmt.Sprintf("ev-%06d", i+j), Type: []string{"a", "b", "c"}[rnd.IntN(3)], Data: []byte(`{}`)}
		}
		if _, err := store.Append(context.Background(), fmt.Sprint("s-", i%7), events.Any(), evs...); err != nil {
			t.Fatal(err)
		}
		i += len(evs)
	}
}

// groupOf runs a runner of each model over store, eager checkpoints and
// batch sizes that cut the log anywhere, and waits until they are ready.
func groupOf(t *testing.T, ctx context.Context, store events.Store, models []*typed) subscribe.RunnerSet {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var set subscribe.RunnerSet
	for i, m := range models {
		r := subscribe.NewRunner(store, nil, m, log, nil)
		r.BatchSize(40 + 17*i)
		r.EagerCheckpoints()
		run(t, r)
		set = append(set, r)
	}
	for _, r := range set {
		if err := r.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return set
}

// Read models rebuilt together answer as each one rebuilt alone does: the
// same events applied in the log's order, the checkpoint at the head, and
// the same progress (every event of the log counted, ready); and the log
// is read once for all of them, not once per read model.
func TestReadModelsRebuiltTogetherEndAsEachRebuiltAlone(t *testing.T) {
	store := &counted{Store: memory.New()}
	defer store.Close()
	rnd := rand.New(rand.NewPCG(1, 2))
	const logged, during = 6_000, 2_000
	appendTyped(t, store, rnd, 0, logged)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	models := []*typed{newTyped("a", "a"), newTyped("b", "b"), newTyped("ac", "a", "c"), newTyped("none", "z")}
	set := groupOf(t, ctx, store, models)
	head := func() events.Position {
		h, err := store.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	settled := func() []state {
		t.Helper()
		if err := set.WaitFor(ctx, head()); err != nil {
			t.Fatal(err)
		}
		out := make([]state, len(models))
		for i, m := range models {
			out[i] = m.state(set[i])
		}
		return out
	}

	// Together, on a log at rest: one pass over the log.
	store.read.Store(0)
	if _, _, err := set.Rebuild(ctx, subscribe.AllReadModels); err != nil {
		t.Fatal(err)
	}
	together := settled()
	if n := store.read.Load(); n > logged+logged/10 {
		t.Errorf("a rebuild of %d read models together read %d events of a log of %d", len(models), n, logged)
	}
	// Alone, one by one.
	for _, r := range set {
		if err := r.Rebuild(ctx); err != nil {
			t.Fatal(err)
		}
		if err := r.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
	alone := settled()
	for i, m := range models {
		if !slices.Equal(together[i].ids, alone[i].ids) {
			t.Errorf("%s applied %d events rebuilt together, %d rebuilt alone", m.name, len(together[i].ids), len(alone[i].ids))
		}
		if together[i].checkpoint != head() || together[i].position != head() || together[i].applied != logged || !together[i].ready {
			t.Errorf("%s rebuilt together: checkpoint %s, position %s, %d events counted, ready %v; want the head %s, %d counted, ready",
				m.name, together[i].checkpoint, together[i].position, together[i].applied, together[i].ready, head(), logged)
		}
		together[i].ids, alone[i].ids = nil, nil
		if !reflect.DeepEqual(together[i], alone[i]) {
			t.Errorf("%s rebuilt together %+v, alone %+v", m.name, together[i], alone[i])
		}
	}

	// Together again, with appends landing while it replays: each one
	// applies the log's events of its types, in order, each once.
	if _, _, err := set.Rebuild(ctx, subscribe.AllReadModels); err != nil {
		t.Fatal(err)
	}
	appendTyped(t, store, rnd, logged, during)
	wantTheLog(t, ctx, store, set, models, logged+during)
}

// wantTheLog checks that each of models (run by set) applied the log's
// events of its types, in order, each once, and stands at the log's head
// with counted events counted.
func wantTheLog(t *testing.T, ctx context.Context, store events.Store, set subscribe.RunnerSet, models []*typed, counted uint64) {
	t.Helper()
	head, recs := reached(t, ctx, store, set)
	for i, m := range models {
		var want []string
		for _, rec := range recs {
			if m.types[rec.Type] {
				want = append(want, rec.ID)
			}
		}
		s := m.state(set[i])
		if !slices.Equal(s.ids, want) {
			t.Errorf("%s applied %d events, the log holds %d of its types", m.name, len(s.ids), len(want))
		}
		if s.checkpoint != head || s.position != head || s.applied != counted {
			t.Errorf("%s: checkpoint %s, position %s, %d events counted; want the head %s, %d", m.name, s.checkpoint, s.position, s.applied, head, counted)
		}
	}
}

// A read model that fails in the middle of a rebuild made together does
// not hold the others: they finish while it fails (its Stats say why), and
// once its store works again it finishes alone from its checkpoint, every
// event of its types applied once.
func TestAReadModelFailingMidRebuildRecoversAloneWithoutStallingTheOthers(t *testing.T) {
	store := memory.New()
	defer store.Close()
	rnd := rand.New(rand.NewPCG(3, 4))
	const logged = 6_000
	appendTyped(t, store, rnd, 0, logged)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	failing := newTyped("failing", "a", "b")
	models := []*typed{newTyped("a", "a"), failing, newTyped("bc", "b", "c")}
	set := groupOf(t, ctx, store, models)

	failing.setDown(true, 300)
	if _, _, err := set.Rebuild(ctx, subscribe.AllReadModels); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2} {
		if err := set[i].WaitReady(ctx); err != nil {
			t.Fatalf("%s did not finish its rebuild while another read model of it failed: %v (%+v)", models[i].name, err, set[i].Stats())
		}
	}
	if s := set[1].Stats(); s.Ready || s.LastError == "" {
		t.Fatalf("the failing read model reads ready %v, last error %q", s.Ready, s.LastError)
	}

	failing.setDown(false, 0)
	if err := set[1].WaitReady(ctx); err != nil {
		t.Fatalf("the failing read model did not finish once its store worked: %v", err)
	}
	wantTheLog(t, ctx, store, set, models, logged)
}
