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

// stale is a trusting source whose cached state lags the store: it lends
// lagging (read from nowhere) for the first decision, as a node's cache
// does after another node wrote the stream.
type stale struct {
	replay[*itemState]
	lagging *itemState
	lent    int
}

func (s *stale) loadCached(string) (*itemState, uint64, events.Position, uint64, bool) {
	s.lent++
	c := *s.lagging
	return &c, 1, events.Position{}, 0, true
}

// Given a source whose cache lags the stream, when the decision on the
// cached state refuses or decides nothing, then it is decided again on the
// stream as read, and that decision is the answer.
func TestExecuteBatchDecidesARefusalOrNoOpOnAnUnreadStateAgain(t *testing.T) {
	s, _ := newShellFixture(t, 0)
	for _, c := range []struct {
		name    string
		lagging itemState
		want    string
	}{
		{"refused on the cached state", itemState{}, ItemSuspended},             // the cache knows no item
		{"no-op on the cached state", itemState{id: 7, status: ItemActive}, ""}, // read: suspended, reactivate
	} {
		src := &stale{replay: items, lagging: &c.lagging}
		target := ItemSuspended
		if c.want == "" {
			target = ItemActive
		}
		var seen []string
		_, err := executeBatch(ctx, s, source[*itemState](src), domain.BenefitItemStream(7), func(st *itemState) ([]events.Payload, error) {
			seen = append(seen, st.status)
			return decideSetItemStatus(st, target)
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if src.lent != 1 || len(seen) != 2 {
			t.Fatalf("%s: lent the cache %d times, decided %d times (%v); want once on the cache, once on a read", c.name, src.lent, len(seen), seen)
		}
		got := itemEvents(t, s)
		if got[len(got)-1] != "benefit_item.status_changed" {
			t.Fatalf("%s: events %v, want the decision on the read state appended", c.name, got)
		}
	}
}

// Given a batch decided together, when the shell appends it, then each
// event carries the metadata of the request it answers (forRequest), and a
// payload whose id the decision chose (withID) is appended under that id,
// so deciding the same step again appends nothing more.
func TestShellAppendsEachPayloadWithItsRequestAndChosenID(t *testing.T) {
	s, _ := newShellFixture(t, 0)
	_, err := executeBatch(ctx, s, items, domain.BenefitItemStream(7), func(st *itemState) ([]events.Payload, error) {
		return []events.Payload{
			forRequest{catalog.BenefitItemStatusChanged{BenefitItemID: 7, Status: ItemSuspended}, Meta{AppID: 2, RequestID: "req-a"}},
			forRequest{catalog.BenefitItemStatusChanged{BenefitItemID: 7, Status: ItemActive}, Meta{AppID: 3, RequestID: "req-b"}},
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	step := func() ([]decided, error) {
		p := withID{catalog.BenefitItemStatusChanged{BenefitItemID: 7, Status: ItemSuspended}, "4f0c4d52-0d5c-5a6e-9e43-0a3d1c2b7e11"}
		return []decided{{stream: domain.BenefitItemStream(7), version: 3, ps: []events.Payload{p}}}, nil
	}
	for range 2 {
		if _, _, err := executeParts(ctx, s, &Meta{}, step); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := s.store.ReadStream(ctx, domain.BenefitItemStream(7), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[2].ID != "4f0c4d52-0d5c-5a6e-9e43-0a3d1c2b7e11" {
		t.Fatalf("%d events after the creation (last id %q), want the two requests' and the chosen id once", len(recs), recs[len(recs)-1].ID)
	}
	for i, want := range []events.Metadata{{AppID: 2, RequestID: "req-a"}, {AppID: 3, RequestID: "req-b"}} {
		env, err := s.reg.Decode(recs[i])
		if err != nil {
			t.Fatal(err)
		}
		if env.Metadata.AppID != want.AppID || env.Metadata.RequestID != want.RequestID {
			t.Fatalf("event %d metadata %+v, want app %d request %s", i, env.Metadata, want.AppID, want.RequestID)
		}
	}
}

// Given a try whose own step loses a race (it returns a conflict), when
// executeParts runs it, then it is tried again, as a conflict on a part is.
func TestExecutePartsTriesAgainWhenTryItselfConflicts(t *testing.T) {
	s, _ := newShellFixture(t, 0)
	tries := 0
	_, appended, err := executeParts(ctx, s, &Meta{}, func() ([]decided, error) {
		if tries++; tries == 1 {
			return nil, &events.ConflictError{Stream: domain.BenefitItemStream(7)}
		}
		return []decided{{stream: domain.BenefitItemStream(7), version: 1, ps: []events.Payload{catalog.BenefitItemStatusChanged{BenefitItemID: 7, Status: ItemSuspended}}}}, nil
	})
	if err != nil || tries != 2 || !appended {
		t.Fatalf("tries %d, appended %v, err %v; want a second try that appends", tries, appended, err)
	}
	if got := itemEvents(t, s); len(got) != 2 {
		t.Fatalf("events %v, want the creation and the second try's part", got)
	}
}
