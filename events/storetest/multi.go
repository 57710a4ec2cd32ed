package storetest

import (
	"context"
	"errors"
	"sync"

	"github.com/healthtech/partner-open-platform/events"
)

// appendMulti calls events.AppendMulti with the subtest's bound.
func (f *fixture) appendMulti(parts ...events.StreamAppend) ([]events.AppendResult, error) {
	ctx, cancel := context.WithTimeout(f.ctx, wait)
	defer cancel()
	return events.AppendMulti(ctx, f.s, parts...)
}

// multiOrSkip reports whether the adapter appends to several streams
// atomically. One that does not must say so with ErrMultiStreamUnsupported
// and write nothing, so that callers fall back to one append per stream.
func (f *fixture) multiOrSkip() bool {
	f.t.Helper()
	if _, ok := f.s.(events.MultiStreamAppender); ok {
		return true
	}
	st := f.stream("multi-unsupported")
	_, err := f.appendMulti(events.StreamAppend{Stream: st, Expected: events.NoStream(), Events: proposed(1, "storetest.multi")})
	if !errors.Is(err, events.ErrMultiStreamUnsupported) {
		f.t.Fatalf("AppendMulti on a store without it: %v, want ErrMultiStreamUnsupported", err)
	}
	if got := f.read(st, 0, 0); len(got) != 0 {
		f.t.Fatalf("an unsupported AppendMulti wrote %d events", len(got))
	}
	f.t.Skip("this adapter has no atomic multi-stream append (it says so with ErrMultiStreamUnsupported); callers append stream by stream")
	return false
}

// testMultiStream: every part is recorded, adjacent in the global order and
// in part order, with per-part results; a retry of the same events is
// idempotent.
func testMultiStream(f *fixture) {
	if !f.multiOrSkip() {
		return
	}
	mark := f.marker()
	a, b := f.stream("multi-a"), f.stream("multi-b")
	f.append(b, events.NoStream(), proposed(2, "storetest.multi")...)
	pa, pb := proposed(1, "storetest.claim"), proposed(3, "storetest.create")
	parts := []events.StreamAppend{
		{Stream: a, Expected: events.NoStream(), Events: pa},
		{Stream: b, Expected: events.Exact(1), Events: pb},
	}
	res, err := f.appendMulti(parts...)
	if err != nil {
		f.t.Fatalf("AppendMulti: %v", err)
	}
	if len(res) != 2 || res[0].Revision != 0 || res[1].Revision != 4 {
		f.t.Fatalf("results %+v, want revisions 0 and 4", res)
	}
	if !res[0].Position.Less(res[1].Position) || events.Last(res) != res[1].Position {
		f.t.Fatalf("positions %v then %v: the second part must follow the first", res[0].Position, res[1].Position)
	}
	sameEvents(f.t, "stream a", f.read(a, 0, 0), idsOf(pa))
	gotB := f.read(b, 2, 0)
	sameEvents(f.t, "stream b after its first two", gotB, idsOf(pb))
	for i, r := range gotB {
		checkRecorded(f.t, r, b, uint64(2+i), pb[i])
	}
	// In the global order: the two earlier events of b, then the parts'
	// events one after the other, in part order.
	var after []events.Recorded
	for _, r := range f.readOwn(mark, 64) {
		if r.Stream == a || r.Stream == b {
			after = append(after, r)
		}
	}
	sameEvents(f.t, "$all", after[min(2, len(after)):], idsOf(pa, pb))

	// The same parts again: a retry, answered with the original results.
	again, err := f.appendMulti(parts...)
	if err != nil {
		f.t.Fatalf("retried AppendMulti: %v", err)
	}
	if len(again) != 2 || again[0] != res[0] || again[1] != res[1] {
		f.t.Fatalf("retry answered %+v, want %+v", again, res)
	}
	if got := f.read(b, 0, 0); len(got) != 5 {
		f.t.Fatalf("stream b holds %d events after a retry, want 5", len(got))
	}
}

// testMultiStreamAtomic: a failed expectation on any part writes no part.
func testMultiStreamAtomic(f *fixture) {
	if !f.multiOrSkip() {
		return
	}
	taken, fresh := f.stream("multi-taken"), f.stream("multi-fresh")
	f.append(taken, events.NoStream(), proposed(1, "storetest.claim")...)
	for _, parts := range [][]events.StreamAppend{
		{ // the failing part last: the first must not be written
			{Stream: fresh, Expected: events.NoStream(), Events: proposed(1, "storetest.create")},
			{Stream: taken, Expected: events.NoStream(), Events: proposed(1, "storetest.claim")},
		},
		{ // the failing part first
			{Stream: taken, Expected: events.Exact(5), Events: proposed(1, "storetest.claim")},
			{Stream: fresh, Expected: events.NoStream(), Events: proposed(2, "storetest.create")},
		},
	} {
		_, err := f.appendMulti(parts...)
		var ce *events.ConflictError
		if !errors.As(err, &ce) || !errors.Is(err, events.ErrConflict) || ce.Stream != taken || ce.Actual != 1 {
			f.t.Fatalf("AppendMulti with a taken stream: %v, want a *ConflictError on %s holding 1", err, taken)
		}
		if got := f.read(fresh, 0, 0); len(got) != 0 {
			f.t.Fatalf("a refused multi-stream append wrote %d events to its other stream", len(got))
		}
		if got := f.read(taken, 0, 0); len(got) != 1 {
			f.t.Fatalf("the taken stream holds %d events, want 1", len(got))
		}
	}
}

// testMultiStreamConcurrentClaim is the uniqueness claim register makes:
// 20 writers each claim one shared stream and create their own; exactly
// one wins, and no loser's own stream exists.
func testMultiStreamConcurrentClaim(f *fixture) {
	if !f.multiOrSkip() {
		return
	}
	const n = 20
	claim := f.stream("multi-claim")
	own := make([]string, n)
	for i := range own {
		own[i] = f.stream("multi-own")
	}
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		winners   []int
		conflicts int
		other     []error
		start     = make(chan struct{})
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := f.appendMulti(
				events.StreamAppend{Stream: claim, Expected: events.NoStream(), Events: proposed(1, "storetest.claim")},
				events.StreamAppend{Stream: own[i], Expected: events.NoStream(), Events: proposed(2, "storetest.create")})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				winners = append(winners, i)
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
		f.t.Fatalf("racing multi-stream appends failed without a conflict: %v", other)
	}
	if len(winners) != 1 || conflicts != n-1 {
		f.t.Fatalf("%d racing claims: %d won, %d conflicted; want 1 and %d", n, len(winners), conflicts, n-1)
	}
	if got := f.read(claim, 0, 0); len(got) != 1 {
		f.t.Fatalf("the claimed stream holds %d events, want 1", len(got))
	}
	for i, st := range own {
		want := 0
		if i == winners[0] {
			want = 2
		}
		if got := f.read(st, 0, 0); len(got) != want {
			f.t.Fatalf("writer %d's own stream holds %d events, want %d", i, len(got), want)
		}
	}
}

// testMultiStreamInvalid: parts no adapter can record atomically are
// refused (not as conflicts) and nothing is written.
func testMultiStreamInvalid(f *fixture) {
	if !f.multiOrSkip() {
		return
	}
	st, other := f.stream("multi-invalid"), f.stream("multi-invalid-other")
	shared := proposed(1, "storetest.multi")
	for name, parts := range map[string][]events.StreamAppend{
		"no parts": nil,
		"a stream twice": {
			{Stream: st, Expected: events.NoStream(), Events: proposed(1, "storetest.multi")},
			{Stream: st, Expected: events.Exact(0), Events: proposed(1, "storetest.multi")},
		},
		"an event id twice": {
			{Stream: st, Expected: events.NoStream(), Events: shared},
			{Stream: other, Expected: events.NoStream(), Events: shared},
		},
		"a part without events": {
			{Stream: st, Expected: events.NoStream(), Events: proposed(1, "storetest.multi")},
			{Stream: other, Expected: events.NoStream()},
		},
	} {
		_, err := f.appendMulti(parts...)
		if err == nil || errors.Is(err, events.ErrConflict) {
			f.t.Fatalf("%s: AppendMulti answered %v, want an error that is not a conflict", name, err)
		}
		for _, s := range []string{st, other} {
			if got := f.read(s, 0, 0); len(got) != 0 {
				f.t.Fatalf("%s: a refused AppendMulti wrote %d events to %s", name, len(got), s)
			}
		}
	}
}
