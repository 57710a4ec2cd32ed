package commands

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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

// blockSizes lists the sizes of the kind's reservations, in log order.
func blockSizes(t *testing.T, store events.Store, kind string) []int64 {
	t.Helper()
	recs, err := store.ReadStream(ctx, domain.IDStream(kind), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int64
	for _, r := range recs {
		env, err := catalog.Registry().Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		b := env.Payload.(*catalog.IDBlockReserved)
		sizes = append(sizes, b.Last-b.First+1)
	}
	return sizes
}

// Under load (each block used up within a second) blocks double up to the
// bound; once a block lasts longer the next is the configured size again.
// Without Grow every block is the configured size.
func TestBlocksGrowUnderLoadAndShrinkWhenQuiet(t *testing.T) {
	store := memory.New()
	clock := time.Unix(1_700_000_000, 0)
	a := NewAllocator(store, catalog.Registry(), 2).Grow(4)
	a.now = func() time.Time { return clock }
	seen := map[int64]bool{}
	take := func(n int) {
		for range n {
			id, err := a.Next(ctx, KindMember)
			if err != nil {
				t.Fatal(err)
			}
			if seen[id] {
				t.Fatalf("id %d handed out twice", id)
			}
			seen[id] = true
		}
	}
	take(2 + 4 + 8 + 8) // four blocks used up at once: 2, 4, 8, 8 (bound 4×2)
	clock = clock.Add(2 * time.Second)
	take(1) // the last block lasted 2 s: back to 2
	if got, want := blockSizes(t, store, KindMember), []int64{2, 4, 8, 8, 2}; !slices.Equal(got, want) {
		t.Fatalf("block sizes %v, want %v", got, want)
	}

	plain := memory.New()
	b := NewAllocator(plain, catalog.Registry(), 2)
	for range 7 {
		if _, err := b.Next(ctx, KindMember); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := blockSizes(t, plain, KindMember), []int64{2, 2, 2, 2}; !slices.Equal(got, want) {
		t.Fatalf("without Grow: block sizes %v, want %v", got, want)
	}
}

// Two growing allocators (two nodes) sharing a log, used concurrently,
// never hand out the same id.
func TestGrowingAllocatorsNeverShareAnID(t *testing.T) {
	store := memory.New()
	nodes := []*Allocator{NewAllocator(store, catalog.Registry(), 3).Grow(8), NewAllocator(store, catalog.Registry(), 3).Grow(8)}
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				id, err := nodes[w%2].Next(ctx, KindMember)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[id] {
					t.Errorf("id %d handed out twice", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 8*200 {
		t.Fatalf("%d distinct ids, want %d", len(seen), 8*200)
	}
}

// gateStore counts the appends to id streams and, while shut, fails them.
type gateStore struct {
	events.Store
	mu      sync.Mutex
	appends int
	shut    bool
}

func (s *gateStore) Append(ctx context.Context, stream string, expected events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	s.mu.Lock()
	shut := s.shut
	s.appends++
	s.mu.Unlock()
	if shut {
		return events.AppendResult{}, errors.New("the log is shut")
	}
	return s.Store.Append(ctx, stream, expected, evs...)
}

func (s *gateStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appends
}

// With ReserveAhead the next block is reserved once half of the current
// one is handed out, so the writer that uses the block up takes the next
// one without an append; a failed reservation ahead is retried by that
// writer, who gets its error.
func TestReserveAheadHandsOutTheNextBlockWithoutWaiting(t *testing.T) {
	store := &gateStore{Store: memory.New()}
	a := NewAllocator(store, catalog.Registry(), 4).ReserveAhead()
	for want := int64(1); want <= 3; want++ { // the second starts the reservation of 5-8
		if id, err := a.Next(ctx, KindUser); err != nil || id != want {
			t.Fatalf("id %d (%v), want %d", id, err, want)
		}
	}
	for i := 0; store.count() < 2; i++ { // bounded: the reservation is one append
		if i == 1000 {
			t.Fatal("the next block was not reserved ahead")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Wait for the background reservation to finish before shutting the log.
	a.mu.Lock()
	seq := a.kinds[KindUser]
	a.mu.Unlock()
	seq.mu.Lock()
	wait := seq.fetching
	seq.mu.Unlock()
	if wait != nil {
		<-wait
	}
	store.mu.Lock()
	store.shut = true
	store.mu.Unlock()
	for want := int64(4); want <= 6; want++ { // 4, then 5 and 6 from the block reserved ahead
		if id, err := a.Next(ctx, KindUser); err != nil || id != want {
			t.Fatalf("id %d (%v) with the log shut, want %d without an append", id, err, want)
		}
	}
	// 6 started a reservation of 9-12, which failed on the shut log: the
	// writer who uses 8 up reserves itself and gets the error.
	for i := 0; ; i++ {
		seq.mu.Lock()
		done := seq.fetching == nil
		seq.mu.Unlock()
		if done {
			break
		}
		if i == 1000 {
			t.Fatal("the reservation ahead never ended")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for want := int64(7); want <= 8; want++ {
		if id, err := a.Next(ctx, KindUser); err != nil || id != want {
			t.Fatalf("id %d (%v), want %d", id, err, want)
		}
	}
	if _, err := a.Next(ctx, KindUser); err == nil || !strings.Contains(err.Error(), "shut") {
		t.Fatalf("after the failed reservation ahead: %v, want the log's error", err)
	}
	store.mu.Lock()
	store.shut = false
	store.mu.Unlock()
	if id, err := a.Next(ctx, KindUser); err != nil || id != 9 {
		t.Fatalf("id %d (%v) once the log is back, want 9", id, err)
	}
}

// Many writers on allocators that reserve ahead (two nodes sharing a log)
// never get the same id, and every id they get lies in a reserved block.
func TestReservingAheadNeverSharesAnID(t *testing.T) {
	store := memory.New()
	nodes := []*Allocator{NewAllocator(store, catalog.Registry(), 3).Grow(8).ReserveAhead(), NewAllocator(store, catalog.Registry(), 3).Grow(8).ReserveAhead()}
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				id, err := nodes[w%2].Next(ctx, KindMember)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[id] {
					t.Errorf("id %d handed out twice", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 8*200 {
		t.Fatalf("%d distinct ids, want %d", len(seen), 8*200)
	}
	recs, err := store.ReadStream(ctx, domain.IDStream(KindMember), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Each block is decoded once, not once per id: 1600 ids times every
	// block is seconds of CPU under -race.
	blocks := make([]*catalog.IDBlockReserved, 0, len(recs))
	for _, r := range recs {
		env, err := catalog.Registry().Decode(r)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, env.Payload.(*catalog.IDBlockReserved))
	}
	for id := range seen {
		in := false
		for _, b := range blocks {
			in = in || (id >= b.First && id <= b.Last)
		}
		if !in {
			t.Fatalf("id %d lies in no reserved block", id)
		}
	}
}
