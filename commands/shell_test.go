package commands

import (
	"context"
	"errors"
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
)

// racingStore lets another writer append to the stream right before each
// of the command's first races appends, so every one of those meets a
// stale expected revision, as under real contention.
type racingStore struct {
	events.Store
	s     streams
	races int
}

func (r *racingStore) Append(ctx context.Context, stream string, exp events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	if r.races > 0 {
		r.races--
		cur, _, err := r.s.load(ctx, stream, func(events.Envelope) {})
		if err != nil {
			return events.AppendResult{}, err
		}
		if _, err := r.s.append(ctx, stream, cur, Meta{Actor: "racer"}, catalog.BenefitItemStatusChanged{BenefitItemID: 7, Status: ItemSuspended}); err != nil {
			return events.AppendResult{}, err
		}
	}
	return r.Store.Append(ctx, stream, exp, evs...)
}

func newShellFixture(t *testing.T, races int) (streams, *racingStore) {
	t.Helper()
	store, reg := memory.New(), catalog.Registry()
	plain := streams{store: store, reg: reg}
	if _, err := plain.append(ctx, domain.BenefitItemStream(7), 0, Meta{}, decideCreateItem(7, "massage")...); err != nil {
		t.Fatal(err)
	}
	r := &racingStore{Store: store, s: plain, races: races}
	return streams{store: r, reg: reg}, r
}

func itemEvents(t *testing.T, s streams) []string {
	t.Helper()
	var types []string
	if _, _, err := s.load(ctx, domain.BenefitItemStream(7), func(env events.Envelope) { types = append(types, env.Payload.EventType()) }); err != nil {
		t.Fatal(err)
	}
	return types
}

var items = replay[*itemState]{func() *itemState { return &itemState{} }}

// reactivate decides on the state it is given, so a retry after a racer
// suspended the item decides again on the suspension.
func reactivate(seen *[]string) func(*itemState) ([]events.Payload, error) {
	return func(st *itemState) ([]events.Payload, error) {
		*seen = append(*seen, st.status)
		return decideSetItemStatus(st, ItemActive)
	}
}

func TestExecuteDecidesAgainOnTheNewStateAfterAConflict(t *testing.T) {
	s, _ := newShellFixture(t, 2)
	var seen []string
	// The first decision sees ACTIVE and decides nothing: no append, no race.
	if _, err := execute(ctx, s, items, domain.BenefitItemStream(7), &Meta{}, reactivate(&seen)); err != nil {
		t.Fatal(err)
	}
	suspend := func(st *itemState) ([]events.Payload, error) { return decideSetItemStatus(st, ItemSuspended) }
	// Suspending meets the racer's suspension: decided again, nothing to do.
	pos, err := execute(ctx, s, items, domain.BenefitItemStream(7), &Meta{}, suspend)
	if err != nil || pos == (events.Position{}) {
		t.Fatalf("suspend: %v at %v", err, pos)
	}
	if got := itemEvents(t, s); len(got) != 2 {
		t.Fatalf("events %v: want the creation and the racer's suspension only", got)
	}
	// Reactivating meets one more racer, then appends on the new state.
	seen = nil
	if _, err := execute(ctx, s, items, domain.BenefitItemStream(7), &Meta{}, reactivate(&seen)); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 {
		t.Fatalf("decided %d times on %v, want twice (once per load)", len(seen), seen)
	}
	if got := itemEvents(t, s); len(got) != 4 {
		t.Fatalf("events %v: want creation, two racer suspensions and the reactivation", got)
	}
}

func TestExecuteGivesUpWithContentionAndAppendsNothingOfItsOwn(t *testing.T) {
	s, _ := newShellFixture(t, 1<<30)
	toggle := func(st *itemState) ([]events.Payload, error) { return decideSetItemStatus(st, ItemActive+"x") }
	_, err := execute(ctx, s, items, domain.BenefitItemStream(7), &Meta{}, toggle)
	if !errors.Is(err, domain.ErrContention) {
		t.Fatalf("err %v, want domain.ErrContention", err)
	}
	if got := itemEvents(t, s); len(got) != 1+maxAttempts {
		t.Fatalf("%d events, want the creation and %d racers' only", len(got), maxAttempts)
	}
}

func TestExecuteOnceAnswersTheLostRace(t *testing.T) {
	s, _ := newShellFixture(t, 1)
	errLost := errors.New("lost")
	var seen []string
	suspend := func(st *itemState) ([]events.Payload, error) {
		seen = append(seen, st.status)
		return decideSetItemStatus(st, ItemSuspended)
	}
	if _, err := executeOnce(ctx, s, items, domain.BenefitItemStream(7), &Meta{}, errLost, suspend); !errors.Is(err, errLost) {
		t.Fatalf("err %v, want the conflict's code", err)
	}
	if len(seen) != 1 {
		t.Fatalf("decided %d times, want once", len(seen))
	}
	s, _ = newShellFixture(t, 1)
	recs, err := s.store.ReadStream(ctx, domain.BenefitItemStream(7), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	loaded := recs[len(recs)-1].Position
	pos, err := executeOnce(ctx, s, items, domain.BenefitItemStream(7), &Meta{}, nil, suspend)
	if err != nil || pos != loaded {
		t.Fatalf("answered %v, %v; want the loaded position %v and no error (the winner did it)", pos, err, loaded)
	}
	if got := itemEvents(t, s); len(got) != 2 {
		t.Fatalf("events %v: want the creation and the racer's only", got)
	}
}
