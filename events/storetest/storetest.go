// Package storetest is the conformance suite every events.Store adapter
// passes, so that code tested against the in-memory store behaves the same
// on bbolt and on EventStoreDB.
//
// The suite works on a shared EventStoreDB too: stream names carry a random
// suffix per run, and assertions on $all look only at the suite's own streams.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
)

// Run is called by each adapter's tests so all adapters are held to one
// contract. open returns a fresh store (empty, or isolated by stream names)
// and registers its own cleanup; Close may be called more than once.
func Run(t *testing.T, open func(t *testing.T) events.Store) {
	cases := []struct {
		name string
		run  func(f *fixture)
	}{
		{"NoStream", testNoStream},
		{"Exact", testExact},
		{"Any", testAny},
		{"MultiEventAtomic", testMultiEventAtomic},
		{"Idempotent", testIdempotent},
		{"ReadStream", testReadStream},
		{"ReadAll", testReadAll},
		{"ReadAt", testReadAt},
		{"ReadPositions", testReadPositions},
		{"Head", testHead},
		{"SubscribeFromZero", testSubscribeFromZero},
		{"SubscribeFromCheckpoint", testSubscribeFromCheckpoint},
		{"SubscribeContext", testSubscribeContext},
		{"SubscribeClose", testSubscribeClose},
		{"TwoSubscribers", testTwoSubscribers},
		{"ConcurrentExact", testConcurrentExact},
		{"ConcurrentNoStream", testConcurrentNoStream},
		{"ConcurrentStreams", testConcurrentStreams},
		{"DataRoundTrip", testDataRoundTrip},
		{"RejectsInvalid", testRejectsInvalid},
		{"IDSpellings", testIDSpellings},
		{"ClosedStore", testClosedStore},
		{"MultiStream", testMultiStream},
		{"MultiStreamAtomic", testMultiStreamAtomic},
		{"MultiStreamConcurrentClaim", testMultiStreamConcurrentClaim},
		{"MultiStreamInvalid", testMultiStreamInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(newFixture(t, open)) })
	}
}

func testNoStream(f *fixture) {
	st := f.stream("nostream")
	res := f.append(st, events.NoStream(), proposed(1, "storetest.created")...)
	if res.Revision != 0 {
		f.t.Fatalf("first event revision = %d, want 0", res.Revision)
	}
	if res.Position.IsZero() {
		f.t.Fatal("AppendResult.Position is zero")
	}
	f.conflict(st, events.NoStream(), proposed(1, "storetest.created")...)

	ctx, cancel := context.WithTimeout(f.ctx, wait)
	defer cancel()
	_, err := f.s.Append(ctx, st, events.NoStream(), proposed(1, "storetest.created")...)
	var ce *events.ConflictError
	if !errors.As(err, &ce) || !ce.Expected.IsNoStream() || ce.Actual != 1 {
		f.t.Fatalf("conflict %#v: want Expected no-stream and Actual 1", ce)
	}
	if got := f.read(st, 0, 0); len(got) != 1 {
		f.t.Fatalf("stream holds %d events after a refused append, want 1", len(got))
	}
}

func testExact(f *fixture) {
	st := f.stream("exact")
	f.append(st, events.NoStream(), proposed(3, "storetest.step")...)
	if res := f.append(st, events.Exact(2), proposed(1, "storetest.step")...); res.Revision != 3 {
		f.t.Fatalf("Exact(2) appended at revision %d, want 3", res.Revision)
	}
	f.conflict(st, events.Exact(2), proposed(1, "storetest.step")...)  // too low
	f.conflict(st, events.Exact(0), proposed(1, "storetest.step")...)  // far too low
	f.conflict(st, events.Exact(10), proposed(1, "storetest.step")...) // too high
	f.conflict(st, events.Exact(4), proposed(1, "storetest.step")...)  // one too high
	ctx, cancel := context.WithTimeout(f.ctx, wait)
	defer cancel()
	_, err := f.s.Append(ctx, st, events.Exact(10), proposed(1, "storetest.step")...)
	var ce *events.ConflictError
	if !errors.As(err, &ce) || ce.Actual != 4 {
		f.t.Fatalf("conflict %v: want Actual 4 (the events the stream holds)", err)
	}
	if res := f.append(st, events.Exact(3), proposed(2, "storetest.step")...); res.Revision != 5 {
		f.t.Fatalf("Exact(3) with two events ended at revision %d, want 5", res.Revision)
	}
	if got := f.read(st, 0, 0); len(got) != 6 {
		f.t.Fatalf("stream holds %d events, want 6", len(got))
	}

	missing := f.stream("exact-missing")
	f.conflict(missing, events.Exact(0), proposed(1, "storetest.step")...)
	if got := f.read(missing, 0, 0); len(got) != 0 {
		f.t.Fatalf("refused append created %d events", len(got))
	}
	// AfterVersion is what aggregates use: it must agree with the adapter.
	f.append(missing, events.AfterVersion(0), proposed(1, "storetest.step")...)
	f.append(missing, events.AfterVersion(1), proposed(1, "storetest.step")...)
	f.conflict(missing, events.AfterVersion(1), proposed(1, "storetest.step")...)
}

func testAny(f *fixture) {
	st := f.stream("any")
	for i, want := range []uint64{0, 1, 3} {
		n := 1
		if i == 2 {
			n = 2
		}
		if res := f.append(st, events.Any(), proposed(n, "storetest.any")...); res.Revision != want {
			f.t.Fatalf("Any append %d ended at revision %d, want %d", i, res.Revision, want)
		}
	}
	if got := f.read(st, 0, 0); len(got) != 4 {
		f.t.Fatalf("stream holds %d events, want 4", len(got))
	}
}

func testMultiEventAtomic(f *fixture) {
	mark := f.marker()
	st := f.stream("multi")
	batch := proposed(5, "storetest.multi")
	res := f.append(st, events.NoStream(), batch...)
	if res.Revision != 4 {
		f.t.Fatalf("5-event append ended at revision %d, want 4", res.Revision)
	}
	f.conflict(st, events.Exact(99), proposed(3, "storetest.multi")...)
	f.conflict(st, events.Exact(3), proposed(3, "storetest.multi")...)

	got := f.read(st, 0, 0)
	sameEvents(f.t, "ReadStream", got, idsOf(batch))
	for i, r := range got {
		checkRecorded(f.t, r, st, uint64(i), batch[i])
		if i > 0 && !got[i-1].Position.Less(r.Position) {
			f.t.Fatalf("revision %d at %s is not after revision %d at %s", i, r.Position, i-1, got[i-1].Position)
		}
	}
	if got[4].Position != res.Position {
		f.t.Fatalf("AppendResult.Position %s, but the last event is at %s", res.Position, got[4].Position)
	}

	all := f.readOwn(mark, 100)
	sameEvents(f.t, "ReadAll", all, idsOf(batch))
	if all[4].Position != res.Position {
		f.t.Fatalf("AppendResult.Position %s, but ReadAll shows the last event at %s", res.Position, all[4].Position)
	}
	subbed := f.nextOwn(f.subscribe(mark), mark, 5)
	sameEvents(f.t, "SubscribeAll", subbed, idsOf(batch))
	if subbed[4].Position != res.Position {
		f.t.Fatalf("AppendResult.Position %s, but SubscribeAll shows the last event at %s", res.Position, subbed[4].Position)
	}
}

func testIdempotent(f *fixture) {
	st := f.stream("idem")
	a := proposed(2, "storetest.a")
	first := f.append(st, events.NoStream(), a...)
	if again := f.append(st, events.NoStream(), a...); again != first {
		f.t.Fatalf("NoStream retry returned %+v, want %+v", again, first)
	}

	b := proposed(2, "storetest.b")
	resB := f.append(st, events.Exact(1), b...)
	if again := f.append(st, events.Exact(1), b...); again != resB {
		f.t.Fatalf("Exact(1) retry returned %+v, want %+v", again, resB)
	}

	c := proposed(1, "storetest.c")
	resC := f.append(st, events.Any(), c...)
	if again := f.append(st, events.Any(), c...); again != resC {
		f.t.Fatalf("Any retry returned %+v, want %+v", again, resC)
	}

	// A retry that arrives after others appended still lands on its original
	// place. Only exact and no-stream expectations promise this: EventStoreDB
	// checks them against the stream itself, while an Any retry is caught
	// only by its in-memory cache of recent event ids (lost on restart), so
	// commands never append with Any.
	if again := f.append(st, events.Exact(1), b...); again != resB {
		f.t.Fatalf("late Exact(1) retry returned %+v, want %+v", again, resB)
	}
	if again := f.append(st, events.NoStream(), a...); again != first {
		f.t.Fatalf("late NoStream retry returned %+v, want %+v", again, first)
	}
	// The same IDs expected at a place where other events sit are a
	// conflict, not a silent success. (Expecting the current revision would
	// be a plain append; EventStoreDB then records the IDs a second time, so
	// the suite leaves that case to each adapter.)
	f.conflict(st, events.NoStream(), c...)
	f.conflict(st, events.Exact(0), c...)
	f.conflict(st, events.Exact(0), a...)
	f.conflict(st, events.Exact(10), b...)

	sameEvents(f.t, "stream after retries", f.read(st, 0, 0), idsOf(a, b, c))
}

func testReadStream(f *fixture) {
	st := f.stream("read")
	batch := proposed(5, "storetest.read")
	batch[2].Type = "storetest.other"
	batch[3].Meta = nil
	f.append(st, events.NoStream(), batch[:2]...)
	f.append(st, events.Exact(1), batch[2:]...)

	all := f.read(st, 0, 0)
	sameEvents(f.t, "full read", all, idsOf(batch))
	for i, r := range all {
		checkRecorded(f.t, r, st, uint64(i), batch[i])
	}
	sameEvents(f.t, "negative limit", f.read(st, 0, -1), idsOf(batch))
	sameEvents(f.t, "from 2", f.read(st, 2, 0), idsOf(batch[2:]))
	sameEvents(f.t, "from 1 limit 2", f.read(st, 1, 2), idsOf(batch[1:3]))
	sameEvents(f.t, "from 4 limit 10", f.read(st, 4, 10), idsOf(batch[4:]))
	sameEvents(f.t, "from 5", f.read(st, 5, 0), nil)
	sameEvents(f.t, "from 100", f.read(st, 100, 3), nil)

	ctx, cancel := context.WithTimeout(f.ctx, wait)
	defer cancel()
	missing, err := f.s.ReadStream(ctx, f.stream("read-missing"), 0, 0)
	if err != nil || len(missing) != 0 {
		f.t.Fatalf("missing stream: %d events, err %v; want none and no error", len(missing), err)
	}
}

// testHead: the head is the last appended event (the store may be shared,
// so it is at or after our append), and nothing is read after it.
func testHead(f *fixture) {
	ctx, cancel := context.WithTimeout(f.ctx, wait)
	defer cancel()
	before, err := f.s.Head(ctx)
	if err != nil {
		f.t.Fatalf("Head: %v", err)
	}
	last := f.append(f.stream("head"), events.NoStream(), proposed(3, "storetest.head")...)
	head, err := f.s.Head(ctx)
	if err != nil {
		f.t.Fatalf("Head after append: %v", err)
	}
	if head.Less(last.Position) || !before.Less(head) {
		f.t.Fatalf("Head = %s; before the append %s, the append ended at %s", head, before, last.Position)
	}
	rest, err := f.s.ReadAll(ctx, head, 10)
	if err != nil {
		f.t.Fatalf("ReadAll after head: %v", err)
	}
	if len(rest) != 0 && rest[0].Position.Less(head) {
		f.t.Fatalf("ReadAll after head %s returned an earlier event at %s", head, rest[0].Position)
	}
}

func testReadAll(f *fixture) {
	mark := f.marker()
	a, b, c := f.stream("all-a"), f.stream("all-b"), f.stream("all-c")
	e1, e2, e34, e5 := proposed(1, "storetest.all"), proposed(1, "storetest.all"), proposed(2, "storetest.all"), proposed(1, "storetest.all")
	f.append(a, events.NoStream(), e1...)
	f.append(b, events.NoStream(), e2...)
	f.append(a, events.Exact(0), e34...)
	last := f.append(c, events.Any(), e5...)
	want := idsOf(e1, e2, e34, e5)

	own := f.readOwn(mark, 100)
	sameEvents(f.t, "ReadAll after marker", own, want)
	if own[4].Position != last.Position {
		f.t.Fatalf("ReadAll shows the last event at %s, AppendResult said %s", own[4].Position, last.Position)
	}
	sameEvents(f.t, "ReadAll in pages of 2", f.readOwn(mark, 2), want)
	sameEvents(f.t, "ReadAll in pages of 1", f.readOwn(mark, 1), want)
	// Strictly after: starting at an event excludes it.
	sameEvents(f.t, "ReadAll after e2", f.readOwn(own[1].Position, 100), want[2:])
	sameEvents(f.t, "ReadAll after the last event", f.readOwn(last.Position, 100), nil)

	ctx, cancel := context.WithTimeout(f.ctx, wait)
	defer cancel()
	two, err := f.s.ReadAll(ctx, mark, 2)
	if err != nil {
		f.t.Fatalf("ReadAll limit 2: %v", err)
	}
	if len(two) != 2 || !mark.Less(two[0].Position) || !two[0].Position.Less(two[1].Position) {
		f.t.Fatalf("ReadAll after %s limit 2 returned %d events %v", mark, len(two), ids(two))
	}
}

// testReadAt reads each event alone by its position (a read of one from
// just before it), as a read model reads back the event it keeps only the
// position of.
func testReadAt(f *fixture) {
	mark := f.marker()
	a, b := f.stream("at-a"), f.stream("at-b")
	f.append(a, events.NoStream(), proposed(2, "storetest.at")...)
	f.append(b, events.NoStream(), proposed(1, "storetest.at")...)
	f.append(a, events.Exact(1), proposed(1, "storetest.at")...)
	own := f.readOwn(mark, 100)
	if len(own) != 4 {
		f.t.Fatalf("ReadAll after marker: %d events, want 4", len(own))
	}
	ctx, cancel := context.WithTimeout(f.ctx, wait)
	defer cancel()
	for _, want := range own {
		got, found, err := events.ReadAt(ctx, f.s, want.Position)
		if err != nil {
			f.t.Fatalf("ReadAt %s: %v", want.Position, err)
		}
		if !found || got.ID != want.ID || got.Position != want.Position {
			f.t.Fatalf("ReadAt %s: %s at %s (found %v), want %s", want.Position, got.ID, got.Position, found, want.ID)
		}
	}
}

// testReadPositions reads several events by their positions at once
// (events.ReadPositions: in one pass where the store can), in any order,
// with repeats and positions that hold no event, and finds what ReadAt
// finds at each: every field as ReadAll gives it, the caller's own bytes.
func testReadPositions(f *fixture) {
	mark := f.marker()
	a, b := f.stream("positions-a"), f.stream("positions-b")
	f.append(a, events.NoStream(), proposed(2, "storetest.positions")...)
	f.append(b, events.NoStream(), proposed(1, "storetest.positions")...)
	last := f.append(a, events.Exact(1), proposed(2, "storetest.positions")...)
	own := f.readOwn(mark, 100)
	if len(own) != 5 {
		f.t.Fatalf("ReadAll after marker: %d events, want 5", len(own))
	}
	none := []events.Position{
		{},
		own[2].Position.Before(),
		{Commit: last.Position.Commit + 1<<40, Prepare: last.Position.Prepare + 1<<40},
	}
	at := []events.Position{own[4].Position, none[0], own[0].Position, own[2].Position, none[1], own[0].Position, own[3].Position, none[2], own[1].Position}
	ctx, cancel := context.WithTimeout(f.ctx, wait)
	defer cancel()
	got, err := events.ReadPositions(ctx, f.s, at)
	if err != nil {
		f.t.Fatalf("ReadPositions: %v", err)
	}
	if len(got) != len(at) {
		f.t.Fatalf("ReadPositions of %d positions returned %d events", len(at), len(got))
	}
	for i, pos := range at {
		want, found, err := events.ReadAt(ctx, f.s, pos)
		if err != nil {
			f.t.Fatalf("ReadAt %s: %v", pos, err)
		}
		if !found {
			if got[i].Position != (events.Position{}) || got[i].ID != "" {
				f.t.Fatalf("ReadPositions found %s at %s, where ReadAt finds none", got[i].ID, pos)
			}
			continue
		}
		if got[i].ID != want.ID || got[i].Position != pos || got[i].Stream != want.Stream || got[i].Type != want.Type ||
			got[i].Revision != want.Revision || !got[i].Created.Equal(want.Created) ||
			string(got[i].Data) != string(want.Data) || string(got[i].Meta) != string(want.Meta) {
			f.t.Fatalf("ReadPositions at %s: %+v, ReadAt: %+v", pos, got[i], want)
		}
	}
	for i := range got {
		for j := range got[i].Data {
			got[i].Data[j] = 'x'
		}
	}
	again, err := events.ReadPositions(ctx, f.s, at[:1])
	if err != nil || len(again) != 1 || string(again[0].Data) != string(own[4].Data) {
		f.t.Fatalf("a write into what ReadPositions returned changed the log's event: %d events %v (%v)", len(again), ids(again), err)
	}
	if empty, err := events.ReadPositions(ctx, f.s, nil); err != nil || len(empty) != 0 {
		f.t.Fatalf("ReadPositions of no position: %d events (%v)", len(empty), err)
	}
}

func testSubscribeFromZero(f *fixture) {
	st := f.stream("sub-zero")
	before := proposed(3, "storetest.sub")
	f.append(st, events.NoStream(), before...)

	sub := f.subscribe(events.Position{})
	got := f.nextOwn(sub, events.Position{}, 3)
	sameEvents(f.t, "catch-up from zero", got, idsOf(before))

	live := proposed(2, "storetest.sub")
	res := f.append(st, events.Exact(2), live[:1]...)
	f.append(f.stream("sub-zero-other"), events.NoStream(), live[1:]...)
	more := f.nextOwn(sub, got[2].Position, 2)
	sameEvents(f.t, "live after zero", more, idsOf(live))
	if more[0].Position != res.Position {
		f.t.Fatalf("live event at %s, AppendResult said %s", more[0].Position, res.Position)
	}
}

func testSubscribeFromCheckpoint(f *fixture) {
	mark := f.marker()
	st := f.stream("sub-checkpoint")
	before := proposed(3, "storetest.sub")
	for i, ev := range before {
		f.append(st, events.AfterVersion(uint64(i)), ev)
	}
	got := f.nextOwn(f.subscribe(mark), mark, 3)
	sameEvents(f.t, "catch-up from marker", got, idsOf(before))

	// The checkpoint is exclusive: resuming at the second event yields the third.
	sub := f.subscribe(got[1].Position)
	sameEvents(f.t, "resume after second", f.nextOwn(sub, got[1].Position, 1), idsOf(before[2:]))

	live := proposed(3, "storetest.sub")
	done := make(chan error, 1)
	go func() {
		// Appends land while the subscriber is waiting, not before it subscribed.
		time.Sleep(50 * time.Millisecond)
		ctx, cancel := context.WithTimeout(f.ctx, wait)
		defer cancel()
		for i, ev := range live {
			if _, err := f.s.Append(ctx, st, events.Exact(uint64(2+i)), ev); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	sameEvents(f.t, "live after checkpoint", f.nextOwn(sub, got[2].Position, 3), idsOf(live))
	if err := <-done; err != nil {
		f.t.Fatalf("live append: %v", err)
	}
}

func testSubscribeContext(f *fixture) {
	last := f.append(f.stream("sub-ctx"), events.NoStream(), proposed(1, "storetest.sub")...)
	sub := f.subscribe(last.Position)

	// Next honours its own context; on a shared server foreign events may
	// arrive first, so drain them (bounded) until the deadline wins.
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		ctx, cancel := context.WithTimeout(f.ctx, 50*time.Millisecond)
		_, err = sub.Next(ctx)
		cancel()
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		f.t.Fatalf("Next with an expired context: %v, want context.DeadlineExceeded", err)
	}
	// The subscription survives a caller's timeout.
	ev := proposed(1, "storetest.sub")
	f.append(f.stream("sub-ctx-after"), events.NoStream(), ev...)
	sameEvents(f.t, "after a timed-out Next", f.nextOwn(sub, last.Position, 1), idsOf(ev))

	// Ending the SubscribeAll context ends the subscription.
	subCtx, cancelSub := context.WithCancel(f.ctx)
	sub2, err := f.s.SubscribeAll(subCtx, last.Position)
	if err != nil {
		f.t.Fatalf("SubscribeAll: %v", err)
	}
	defer sub2.Close()
	cancelSub()
	if err := drainUntilError(f, sub2); err == nil {
		f.t.Fatal("Next after the subscription context ended returned no error")
	}
}

func testSubscribeClose(f *fixture) {
	last := f.append(f.stream("sub-close"), events.NoStream(), proposed(1, "storetest.sub")...)
	sub := f.subscribe(last.Position)

	errc := make(chan error, 1)
	go func() { errc <- drainUntilError(f, sub) }()
	time.Sleep(50 * time.Millisecond) // let Next block
	if err := sub.Close(); err != nil {
		f.t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, events.ErrClosed) && !errors.Is(err, context.Canceled) {
			f.t.Fatalf("blocked Next after Close: %v, want ErrClosed", err)
		}
	case <-time.After(wait):
		f.t.Fatal("Close did not wake a blocked Next")
	}
	if err := drainUntilError(f, sub); !errors.Is(err, events.ErrClosed) && !errors.Is(err, context.Canceled) {
		f.t.Fatalf("Next after Close: %v, want ErrClosed", err)
	}
	if err := sub.Close(); err != nil {
		f.t.Fatalf("second Close: %v", err)
	}
}

// drainUntilError calls Next until it fails (skipping foreign events a
// shared server may deliver), bounded in count and time.
func drainUntilError(f *fixture, sub events.Subscription) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for i := 0; i < maxScan; i++ {
		if _, err := sub.Next(ctx); err != nil {
			return err
		}
	}
	return nil
}

func testTwoSubscribers(f *fixture) {
	mark := f.marker()
	s1, s2 := f.subscribe(mark), f.subscribe(mark)
	streams := []string{f.stream("two-a"), f.stream("two-b"), f.stream("two-c")}

	var wg sync.WaitGroup
	errs := make(chan error, len(streams))
	for _, st := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(f.ctx, wait)
			defer cancel()
			for range 4 {
				if _, err := f.s.Append(ctx, st, events.Any(), proposed(1, "storetest.two")...); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		f.t.Fatalf("concurrent append: %v", err)
	}

	want := f.readOwn(mark, 100)
	if len(want) != 12 {
		f.t.Fatalf("ReadAll shows %d events, want 12", len(want))
	}
	for _, sub := range []events.Subscription{s1, s2} {
		got := f.nextOwn(sub, mark, 12)
		sameEvents(f.t, "subscriber order", got, ids(want))
		for i := range got {
			if got[i].Position != want[i].Position {
				f.t.Fatalf("subscriber sees %s at %s, ReadAll at %s", got[i].ID, got[i].Position, want[i].Position)
			}
		}
	}
}

// race has n goroutines append one event each with the same expectation at
// once and returns how many succeeded and how many conflicted.
func race(f *fixture, st string, exp events.ExpectedRevision, n int) (wins, conflicts int) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		other []error
		start = make(chan struct{})
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(f.ctx, wait)
			defer cancel()
			<-start
			_, err := f.s.Append(ctx, st, exp, proposed(1, "storetest.race")...)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, events.ErrConflict):
				conflicts++
			default:
				other = append(other, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(other) > 0 {
		f.t.Fatalf("racing appends failed without a conflict: %v", other)
	}
	return wins, conflicts
}

func testConcurrentExact(f *fixture) {
	st := f.stream("race-exact")
	f.append(st, events.NoStream(), proposed(1, "storetest.race")...)
	if wins, conflicts := race(f, st, events.Exact(0), 20); wins != 1 || conflicts != 19 {
		f.t.Fatalf("20 racing Exact(0) appends: %d won, %d conflicted; want 1 and 19", wins, conflicts)
	}
	if got := f.read(st, 0, 0); len(got) != 2 {
		f.t.Fatalf("stream holds %d events, want 2", len(got))
	}
}

func testConcurrentNoStream(f *fixture) {
	st := f.stream("race-nostream")
	if wins, conflicts := race(f, st, events.NoStream(), 20); wins != 1 || conflicts != 19 {
		f.t.Fatalf("20 racing NoStream appends: %d won, %d conflicted; want 1 and 19", wins, conflicts)
	}
	if got := f.read(st, 0, 0); len(got) != 1 {
		f.t.Fatalf("stream holds %d events, want 1", len(got))
	}
}

func testConcurrentStreams(f *fixture) {
	const writers, perWriter, rounds = 10, 3, 10
	mark := f.marker()
	streams := make([][]string, writers)
	for w := range streams {
		for s := range perWriter {
			streams[w] = append(streams[w], f.stream(fmt.Sprintf("many-%d-%d", w, s)))
		}
	}

	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(f.ctx, budget/2)
			defer cancel()
			for r := range rounds {
				for _, st := range streams[w] {
					if _, err := f.s.Append(ctx, st, events.AfterVersion(uint64(r)), proposed(1, "storetest.many")...); err != nil {
						errs <- fmt.Errorf("writer %d, %s round %d: %w", w, st, r, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		f.t.Fatal(err)
	}

	own := f.readOwn(mark, 64)
	if len(own) != writers*perWriter*rounds {
		f.t.Fatalf("ReadAll shows %d events, want %d", len(own), writers*perWriter*rounds)
	}
	next := map[string]uint64{}
	for _, r := range own {
		if r.Revision != next[r.Stream] {
			f.t.Fatalf("%s: revision %d follows %d in global order", r.Stream, r.Revision, next[r.Stream])
		}
		next[r.Stream]++
	}
	for _, ss := range streams {
		for _, st := range ss {
			got := f.read(st, 0, 0)
			for i, r := range got {
				if r.Revision != uint64(i) {
					f.t.Fatalf("%s: event %d has revision %d", st, i, r.Revision)
				}
			}
			if len(got) != rounds {
				f.t.Fatalf("%s holds %d events, want %d", st, len(got), rounds)
			}
		}
	}
}

func testDataRoundTrip(f *fixture) {
	payloads := []string{
		`{"z":1,"a":2,"m":{"y":true,"b":null}}`,
		`{"amount":12345678901234567890.123456789,"tiny":1e-320,"neg":-0.0}`,
		`{"name":"Zoë Ødegård","city":"東京","emoji":"🩺💊","escaped":"\u00e9\u6771\ud83e\ude7a","quote":"\"\\/"}`,
		"{ \"spaced\" :\t[ 1 ,2 ,\n 3 ] }",
		`[1,"two",{"three":3}]`,
		`"just a string"`,
		`{}`,
		`{"big":"` + strings.Repeat("x", 256*1024) + `"}`,
	}
	st := f.stream("data")
	evs := make([]events.Proposed, len(payloads))
	for i, p := range payloads {
		evs[i] = events.Proposed{
			ID:   uuid.NewString(),
			Type: "storetest.data",
			Data: json.RawMessage(p),
			Meta: json.RawMessage(payloads[(i+2)%len(payloads)]),
		}
	}
	mark := f.marker()
	f.append(st, events.NoStream(), evs...)

	for i, r := range f.read(st, 0, 0) {
		checkRecorded(f.t, r, st, uint64(i), evs[i])
	}
	for i, r := range f.readOwn(mark, 3) {
		checkRecorded(f.t, r, st, uint64(i), evs[i])
	}
	for i, r := range f.nextOwn(f.subscribe(mark), mark, len(evs)) {
		checkRecorded(f.t, r, st, uint64(i), evs[i])
	}
}

func testClosedStore(f *fixture) {
	st := f.stream("closed")
	last := f.append(st, events.NoStream(), proposed(1, "storetest.closed")...)
	sub := f.subscribe(last.Position)
	errc := make(chan error, 1)
	go func() { errc <- drainUntilError(f, sub) }()
	time.Sleep(50 * time.Millisecond)

	if err := f.s.Close(); err != nil {
		f.t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, events.ErrClosed) {
			f.t.Fatalf("subscription after the store closed: %v, want ErrClosed", err)
		}
	case <-time.After(wait):
		f.t.Fatal("closing the store did not end its subscription")
	}
	ctx, cancel := context.WithTimeout(f.ctx, wait)
	defer cancel()
	if _, err := f.s.Append(ctx, st, events.Any(), proposed(1, "storetest.closed")...); !errors.Is(err, events.ErrClosed) {
		f.t.Fatalf("Append on a closed store: %v, want ErrClosed", err)
	}
	if _, err := f.s.ReadStream(ctx, st, 0, 0); !errors.Is(err, events.ErrClosed) {
		f.t.Fatalf("ReadStream on a closed store: %v, want ErrClosed", err)
	}
	if _, err := f.s.Head(ctx); !errors.Is(err, events.ErrClosed) {
		f.t.Fatalf("Head on a closed store: %v, want ErrClosed", err)
	}
	if err := f.s.Close(); err != nil {
		f.t.Fatalf("second Close: %v", err)
	}
}

func testRejectsInvalid(f *fixture) {
	st := f.stream("invalid")
	ctx, cancel := context.WithTimeout(f.ctx, wait)
	defer cancel()
	if _, err := f.s.Append(ctx, st, events.Any()); err == nil || errors.Is(err, events.ErrConflict) {
		f.t.Fatalf("empty append: %v, want an error that is not a conflict", err)
	}
	noID := proposed(1, "storetest.invalid")
	noID[0].ID = ""
	if _, err := f.s.Append(ctx, st, events.Any(), noID...); err == nil || errors.Is(err, events.ErrConflict) {
		f.t.Fatalf("event without ID: %v, want an error that is not a conflict", err)
	}
	noType := proposed(1, "")
	if _, err := f.s.Append(ctx, st, events.Any(), noType...); err == nil || errors.Is(err, events.ErrConflict) {
		f.t.Fatalf("event without a type: %v, want an error that is not a conflict", err)
	}
	// $-prefixed types are EventStoreDB's own: it records them but no
	// subscriber ever sees them, so every adapter refuses them alike.
	for _, typ := range []string{"$metadata", "$storetest.system"} {
		sys := proposed(1, typ)
		if _, err := f.s.Append(ctx, st, events.Any(), sys...); err == nil || errors.Is(err, events.ErrConflict) {
			f.t.Fatalf("event type %q: %v, want an error that is not a conflict", typ, err)
		}
	}
	mixed := append(proposed(1, "storetest.ok"), proposed(1, "$storetest.system")...)
	if _, err := f.s.Append(ctx, st, events.Any(), mixed...); err == nil || errors.Is(err, events.ErrConflict) {
		f.t.Fatalf("batch with a $-typed event: %v, want an error that is not a conflict", err)
	}
	if got := f.read(st, 0, 0); len(got) != 0 {
		f.t.Fatalf("refused appends recorded %d events", len(got))
	}
}

// testIDSpellings: an adapter may refuse an event id that is not a
// canonical UUID, but an id it accepts comes back exactly as written
// (EventStoreDB stores UUIDs, so it would return another spelling; its
// adapter refuses them instead).
func testIDSpellings(f *fixture) {
	ctx, cancel := context.WithTimeout(f.ctx, wait)
	defer cancel()
	id := uuid.NewString()
	for _, spelling := range []string{
		strings.ToUpper(id),
		"{" + id + "}",
		"urn:uuid:" + id,
		strings.ReplaceAll(uuid.NewString(), "-", ""),
	} {
		st := f.stream("id-spelling")
		ev := proposed(1, "storetest.id")
		ev[0].ID = spelling
		_, err := f.s.Append(ctx, st, events.NoStream(), ev...)
		if errors.Is(err, events.ErrConflict) {
			f.t.Fatalf("id %q: %v, want success or a refusal that is not a conflict", spelling, err)
		}
		got := f.read(st, 0, 0)
		if err != nil {
			if len(got) != 0 {
				f.t.Fatalf("id %q was refused (%v) but %d events were recorded", spelling, err, len(got))
			}
			continue
		}
		if len(got) != 1 || got[0].ID != spelling {
			f.t.Fatalf("id %q came back as %+v", spelling, ids(got))
		}
	}
}
