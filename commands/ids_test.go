package commands

import (
	"context"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
)

// Given/When/Then of id block reservations.

func TestReserveDecision(t *testing.T) {
	got, err := decideReserve(given(t, &idState{}), KindUser, 10)
	then(t, got, err, catalog.IDBlockReserved{Kind: KindUser, First: 1, Last: 10})

	// The next block follows the highest reservation, whoever made it and
	// in whatever order they landed.
	st := given(t, &idState{},
		catalog.IDBlockReserved{Kind: KindUser, First: 1, Last: 10},
		catalog.IDBlockReserved{Kind: KindUser, First: 21, Last: 30},
		catalog.IDBlockReserved{Kind: KindUser, First: 11, Last: 20})
	got, err = decideReserve(st, KindUser, 3)
	then(t, got, err, catalog.IDBlockReserved{Kind: KindUser, First: 31, Last: 33})

	t.Run("exhausted", func(t *testing.T) {
		st := given(t, &idState{}, catalog.IDBlockReserved{Kind: KindUser, First: 1, Last: maxID - 3})
		got, err := decideReserve(st, KindUser, 3)
		then(t, got, err, catalog.IDBlockReserved{Kind: KindUser, First: maxID - 2, Last: maxID})
		got, err = decideReserve(st, KindUser, 4)
		if err == nil || !strings.Contains(err.Error(), "exhausted") || got != nil {
			t.Fatalf("past 2^53: %v %v, want exhausted", got, err)
		}
	})
}

// raceStore lets another writer reserve a block just before the first
// reservation it sees lands.
type raceStore struct {
	events.Store
	raced bool
}

func (s *raceStore) Append(ctx context.Context, stream string, expected events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	if !s.raced && stream == domain.IDStream(KindUser) {
		s.raced = true
		ev, err := catalog.Registry().Encode(catalog.IDBlockReserved{Kind: KindUser, First: 1, Last: 5}, events.Metadata{Actor: "other node"})
		if err != nil {
			return events.AppendResult{}, err
		}
		if _, err := s.Store.Append(ctx, stream, events.NoStream(), ev); err != nil {
			return events.AppendResult{}, err
		}
	}
	return s.Store.Append(ctx, stream, expected, evs...)
}

func TestReserveAfterAConflictTakesTheNextBlock(t *testing.T) {
	store := &raceStore{Store: memory.New()}
	a := NewAllocator(store, catalog.Registry(), 3)
	for want := int64(6); want <= 9; want++ { // 6-8, then a block of its own again: 9-11
		id, err := a.Next(ctx, KindUser)
		if err != nil {
			t.Fatal(err)
		}
		if id != want {
			t.Fatalf("id %d, want %d (after the other node's 1-5)", id, want)
		}
	}
	recs, err := store.ReadStream(ctx, domain.IDStream(KindUser), 0, 0)
	if err != nil || len(recs) != 3 {
		t.Fatalf("%d reservations (%v), want the other node's and two", len(recs), err)
	}
}
