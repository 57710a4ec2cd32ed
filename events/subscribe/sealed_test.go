package subscribe_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/events/subscribe"
)

// sealedMark prefixes an event's data in the log beneath a sealing store.
var sealedMark = []byte("sealed:")

// sealing keeps each event's data sealed in the log beneath it, as
// privacy.Store does: its reads and subscriptions hand events out opened
// (subscribed counts those its subscriptions opened), and OpenReplayed
// opens what a reader of the log beneath read as stored (replayed counts
// each event's openings there).
type sealing struct {
	events.Store // the sealed log
	subscribed   atomic.Int64
	mu           sync.Mutex
	replayed     map[string]int
}

func (s *sealing) SubscribeSealed(ctx context.Context, after events.Position, wants func(string) bool) (events.Subscription, error) {
	return events.SubscribeAllFor(ctx, s.Store, after, wants)
}

func (s *sealing) Append(ctx context.Context, stream string, expected events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	sealed := make([]events.Proposed, len(evs))
	for i, ev := range evs {
		ev.Data = append(bytes.Clone(sealedMark), ev.Data...)
		sealed[i] = ev
	}
	return s.Store.Append(ctx, stream, expected, sealed...)
}

func (s *sealing) ReadAll(ctx context.Context, after events.Position, limit int) ([]events.Recorded, error) {
	recs, err := s.Store.ReadAll(ctx, after, limit)
	for i := range recs {
		recs[i].Data = bytes.TrimPrefix(recs[i].Data, sealedMark)
	}
	return recs, err
}

func (s *sealing) SubscribeAll(ctx context.Context, after events.Position) (events.Subscription, error) {
	sub, err := s.Store.SubscribeAll(ctx, after)
	if err != nil {
		return nil, err
	}
	return &openingSub{Subscription: sub, s: s}, nil
}

func (s *sealing) OpenReplayed(_ context.Context, page []events.Recorded) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range page {
		if !bytes.HasPrefix(page[i].Data, sealedMark) {
			return errors.New("opening an event that is not sealed")
		}
		page[i].Data = page[i].Data[len(sealedMark):]
		s.replayed[page[i].ID]++
	}
	return nil
}

type openingSub struct {
	events.Subscription
	s *sealing
}

func (sub *openingSub) Next(ctx context.Context) (events.Recorded, error) {
	rec, err := sub.Subscription.Next(ctx)
	if err == nil {
		sub.s.subscribed.Add(1)
		rec.Data = bytes.TrimPrefix(rec.Data, sealedMark)
	}
	return rec, err
}

// Read models rebuilt together over a log of sealed events each open
// their own events (on their own goroutines): the group's reader hands
// them over as stored and opens none; each read model is handed each event
// of its types opened exactly once, and applies the log's events of its
// types in order, each once, up to the head.
func TestReadModelsRebuiltTogetherOpenTheirOwnEvents(t *testing.T) {
	store := &sealing{Store: memory.New(), replayed: map[string]int{}}
	defer store.Close()
	const logged = 3_000
	appendTyped(t, store, rand.New(rand.NewPCG(5, 6)), 0, logged)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	models := []*typed{newTyped("a", "a"), newTyped("b", "b"), newTyped("ac", "a", "c"), newTyped("none", "z")}
	set := groupOf(t, ctx, store, models)

	store.subscribed.Store(0)
	if _, _, err := set.Rebuild(ctx, subscribe.AllReadModels); err != nil {
		t.Fatal(err)
	}
	wantTheLog(t, ctx, store, set, models, logged)
	if n := store.subscribed.Load(); n != 0 {
		t.Errorf("the rebuild's reader opened %d events", n)
	}
	_, recs := reached(t, ctx, store, set)
	store.mu.Lock()
	defer store.mu.Unlock()
	for _, rec := range recs {
		want := 0
		for _, m := range models {
			if m.types[rec.Type] {
				want++
			}
		}
		if got := store.replayed[rec.ID]; got != want {
			t.Fatalf("event %s of type %s opened %d times by the read models, want once for each of the %d that handle it", rec.ID, rec.Type, got, want)
		}
	}
	for _, m := range models {
		if n := m.sealedSeen(); n > 0 {
			t.Errorf("%s was handed %d events sealed", m.name, n)
		}
	}
}
