package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
)

const (
	// wait bounds every single blocking call, so a broken adapter fails
	// instead of hanging the test binary.
	wait = 5 * time.Second
	// budget bounds a whole subtest.
	budget = 60 * time.Second
	// maxScan bounds how many foreign events a shared server may show us.
	maxScan = 1_000_000
)

// fixture is one subtest's store plus the names it owns; on a shared
// EventStoreDB only events of owned streams are asserted on.
type fixture struct {
	t     *testing.T
	s     events.Store
	ctx   context.Context
	run   string
	owned map[string]bool
}

func newFixture(t *testing.T, open func(t *testing.T) events.Store) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	t.Cleanup(cancel)
	s := open(t)
	if s == nil {
		t.Fatal("open returned a nil store")
	}
	return &fixture{t: t, s: s, ctx: ctx, run: uuid.NewString()[:8], owned: map[string]bool{}}
}

// stream names a stream unique to this run, because $all is shared.
func (f *fixture) stream(name string) string {
	st := fmt.Sprintf("storetest_%s-%s-%s", name, f.run, uuid.NewString()[:8])
	f.owned[st] = true
	return st
}

// proposed builds n events with fresh IDs and data telling them apart.
func proposed(n int, typ string) []events.Proposed {
	evs := make([]events.Proposed, n)
	for i := range evs {
		id := uuid.NewString()
		evs[i] = events.Proposed{
			ID:   id,
			Type: typ,
			Data: json.RawMessage(fmt.Sprintf(`{"i":%d,"id":%q}`, i, id)),
			Meta: json.RawMessage(fmt.Sprintf(`{"actor":"storetest","i":%d}`, i)),
		}
	}
	return evs
}

func (f *fixture) append(stream string, exp events.ExpectedRevision, evs ...events.Proposed) events.AppendResult {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.ctx, wait)
	defer cancel()
	res, err := f.s.Append(ctx, stream, exp, evs...)
	if err != nil {
		f.t.Fatalf("append %d events to %s (%s): %v", len(evs), stream, exp, err)
	}
	return res
}

// conflict asserts that the append is refused with a *ConflictError.
func (f *fixture) conflict(stream string, exp events.ExpectedRevision, evs ...events.Proposed) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.ctx, wait)
	defer cancel()
	_, err := f.s.Append(ctx, stream, exp, evs...)
	if err == nil {
		f.t.Fatalf("append to %s with %s succeeded, want a conflict", stream, exp)
	}
	if !errors.Is(err, events.ErrConflict) {
		f.t.Fatalf("append to %s with %s: %v, want errors.Is ErrConflict", stream, exp, err)
	}
	var ce *events.ConflictError
	if !errors.As(err, &ce) {
		f.t.Fatalf("append to %s with %s: %v is not a *events.ConflictError", stream, exp, err)
	}
	if ce.Stream != stream {
		f.t.Fatalf("ConflictError.Stream = %q, want %q", ce.Stream, stream)
	}
}

func (f *fixture) read(stream string, from uint64, limit int) []events.Recorded {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.ctx, wait)
	defer cancel()
	recs, err := f.s.ReadStream(ctx, stream, from, limit)
	if err != nil {
		f.t.Fatalf("read %s from %d limit %d: %v", stream, from, limit, err)
	}
	return recs
}

// marker appends one event to a fresh stream and returns its position: a
// point in $all before everything the subtest appends afterwards.
func (f *fixture) marker() events.Position {
	f.t.Helper()
	return f.append(f.stream("marker"), events.NoStream(), proposed(1, "storetest.marker")...).Position
}

// readOwn pages through ReadAll after pos to the end of the log, checks the
// global order on everything it sees and returns the events of owned streams.
func (f *fixture) readOwn(after events.Position, page int) []events.Recorded {
	f.t.Helper()
	var own []events.Recorded
	prev := after
	for seen := 0; seen < maxScan; {
		ctx, cancel := context.WithTimeout(f.ctx, wait)
		recs, err := f.s.ReadAll(ctx, prev, page)
		cancel()
		if err != nil {
			f.t.Fatalf("ReadAll after %s: %v", prev, err)
		}
		if len(recs) > page {
			f.t.Fatalf("ReadAll after %s limit %d returned %d events", prev, page, len(recs))
		}
		if len(recs) == 0 {
			return own
		}
		for _, r := range recs {
			if !prev.Less(r.Position) {
				f.t.Fatalf("ReadAll: position %s of %s/%d is not after %s", r.Position, r.Stream, r.Revision, prev)
			}
			prev = r.Position
			if f.owned[r.Stream] {
				own = append(own, r)
			}
		}
		seen += len(recs)
	}
	f.t.Fatalf("ReadAll after %s did not end within %d events", after, maxScan)
	return nil
}

// nextOwn reads n events of owned streams from sub, checking that every
// event it sees comes after the previous one and after pos.
func (f *fixture) nextOwn(sub events.Subscription, after events.Position, n int) []events.Recorded {
	f.t.Helper()
	var own []events.Recorded
	prev := after
	for seen := 0; len(own) < n; seen++ {
		if seen >= maxScan {
			f.t.Fatalf("subscription: no %d owned events within %d events", n, maxScan)
		}
		ctx, cancel := context.WithTimeout(f.ctx, wait)
		r, err := sub.Next(ctx)
		cancel()
		if err != nil {
			f.t.Fatalf("subscription Next after %d of %d owned events: %v", len(own), n, err)
		}
		if !prev.Less(r.Position) {
			f.t.Fatalf("subscription: position %s of %s/%d is not after %s", r.Position, r.Stream, r.Revision, prev)
		}
		prev = r.Position
		if f.owned[r.Stream] {
			own = append(own, r)
		}
	}
	return own
}

func (f *fixture) subscribe(after events.Position) events.Subscription {
	f.t.Helper()
	sub, err := f.s.SubscribeAll(f.ctx, after)
	if err != nil {
		f.t.Fatalf("SubscribeAll after %s: %v", after, err)
	}
	f.t.Cleanup(func() { _ = sub.Close() })
	return sub
}

// sameEvents asserts that got holds exactly the events with the wanted IDs, in order.
func sameEvents(t *testing.T, what string, got []events.Recorded, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d events %v, want %d %v", what, len(got), ids(got), len(want), want)
	}
	for i := range want {
		if got[i].ID != want[i] {
			t.Fatalf("%s: event %d is %s, want %s (got %v)", what, i, got[i].ID, want[i], ids(got))
		}
	}
}

func ids(recs []events.Recorded) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

func idsOf(evs ...[]events.Proposed) []string {
	var out []string
	for _, batch := range evs {
		for _, ev := range batch {
			out = append(out, ev.ID)
		}
	}
	return out
}

// checkRecorded asserts every field the log must give back for ev.
func checkRecorded(t *testing.T, r events.Recorded, stream string, rev uint64, ev events.Proposed) {
	t.Helper()
	if r.ID != ev.ID || r.Stream != stream || r.Type != ev.Type || r.Revision != rev {
		t.Fatalf("recorded %s %s/%d type %q, want %s %s/%d type %q", r.ID, r.Stream, r.Revision, r.Type, ev.ID, stream, rev, ev.Type)
	}
	if !bytes.Equal(r.Data, ev.Data) {
		t.Fatalf("data of %s: got %q, want %q", r.ID, r.Data, ev.Data)
	}
	if !bytes.Equal(r.Meta, ev.Meta) {
		t.Fatalf("meta of %s: got %q, want %q", r.ID, r.Meta, ev.Meta)
	}
	if r.Created.IsZero() || r.Created.Location() != time.UTC || r.Created.Year() < 2020 {
		t.Fatalf("created of %s: %v, want a recent UTC time", r.ID, r.Created)
	}
	if r.Position.IsZero() {
		t.Fatalf("position of %s is zero", r.ID)
	}
}
