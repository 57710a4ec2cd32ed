package postgres

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/internal/groupcommit"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// An append whose expectation is an exact revision or "no stream" costs one
// round trip, which holds the append lock for none; an "any" append, a
// conflict and a retry of an append already written take the reads first,
// and answer as the conformance suite wants.
func TestAnExpectedAppendIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, trace := openTraced(t)
	trips := func(what string, want int, append func() error) {
		t.Helper()
		trace.Reset()
		if err := append(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		// The listener's LISTEN may go at any time.
		if got := trace.RoundTrips() - trace.Count("LISTEN"); got != want {
			t.Errorf("%s: %d round trips, want %d (alone: %q)", what, got, want, trace.Alone())
		}
	}
	first := proposed("first")
	trips("no stream", 1, func() error { _, err := s.Append(ctx, "a", events.NoStream(), first); return err })
	trips("exact", 1, func() error { _, err := s.Append(ctx, "a", events.Exact(0), proposed("second")); return err })
	trips("any", 2, func() error { _, err := s.Append(ctx, "a", events.Any(), proposed("third")); return err })
	// Refused by the unique id index, rolled back, then read and replayed.
	trips("retry", 4, func() error {
		r, err := s.Append(ctx, "a", events.NoStream(), first)
		if err == nil && (r.Revision != 0 || r.Position != position(1)) {
			err = fmt.Errorf("replayed as %+v, want revision 0 at 1", r)
		}
		return err
	})
	// Refused by the guard.
	trips("conflict", 4, func() error {
		var ce *events.ConflictError
		if _, err := s.Append(ctx, "a", events.Exact(0), proposed("late")); !errors.As(err, &ce) || ce.Actual != 3 {
			return fmt.Errorf("append behind: %v, want a conflict at 3 events", err)
		}
		return nil
	})
}

// A group decided in one round trip gives every append what the
// two-round-trip path gives it: each scenario's group goes to a store that
// takes one round trip where it can and to one that always takes two (its
// beforeCommit hook set), on logs holding the same events, and the
// revisions, positions and errors must be the same. The counts say which
// groups took which path.
func TestOneRoundTripAnswersAsTwo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	one, two := open(t), open(t)
	two.beforeCommit = func(events.Position) {}
	ev := func(id string) events.Proposed {
		return events.Proposed{ID: id, Type: "test.event", Data: []byte(`{"id":"` + id + `"}`)}
	}
	part := func(stream string, expected events.ExpectedRevision, ids ...string) events.StreamAppend {
		p := events.StreamAppend{Stream: stream, Expected: expected}
		for _, id := range ids {
			p.Events = append(p.Events, ev(id))
		}
		return p
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	type app struct {
		ctx   context.Context
		parts []events.StreamAppend
	}
	scenarios := []struct {
		name    string
		group   []app
		oneTrip bool
	}{
		{"new streams", []app{{ctx, []events.StreamAppend{part("x", events.NoStream(), "x0", "x1")}}, {ctx, []events.StreamAppend{part("y", events.NoStream(), "y0"), part("z", events.NoStream(), "z0")}}}, true},
		{"a stream twice, chained", []app{{ctx, []events.StreamAppend{part("x", events.Exact(1), "x2")}}, {ctx, []events.StreamAppend{part("x", events.Exact(2), "x3", "x4")}}}, true},
		{"a stream twice, both expecting its start", []app{{ctx, []events.StreamAppend{part("y", events.Exact(0), "y1")}}, {ctx, []events.StreamAppend{part("y", events.Exact(0), "y1b")}}}, false},
		{"a retry beside a new append", []app{{ctx, []events.StreamAppend{part("x", events.Exact(1), "x2")}}, {ctx, []events.StreamAppend{part("w", events.NoStream(), "w0")}}}, false},
		{"a conflict beside a new append", []app{{ctx, []events.StreamAppend{part("z", events.Exact(5), "z9")}}, {ctx, []events.StreamAppend{part("v", events.NoStream(), "v0")}}}, false},
		{"a stale multi-stream append", []app{{ctx, []events.StreamAppend{part("u", events.NoStream(), "u0"), part("x", events.Exact(3), "x5")}}}, false},
		{"an id written on another stream", []app{{ctx, []events.StreamAppend{part("t", events.NoStream(), "x0")}}}, false},
		{"any", []app{{ctx, []events.StreamAppend{part("x", events.Any(), "x6")}}}, false},
		{"an ended context", []app{{done, []events.StreamAppend{part("s", events.NoStream(), "s0")}}, {ctx, []events.StreamAppend{part("r", events.NoStream(), "r0")}}}, false},
	}
	type outcome struct {
		Res []events.AppendResult
		Err string
		CE  *events.ConflictError
	}
	run := func(s *Store, g []app) []outcome {
		group := make([]*groupcommit.Append, len(g))
		for i, a := range g {
			group[i] = &groupcommit.Append{Ctx: a.ctx, Parts: a.parts}
		}
		if _, err := s.commit(group); err != nil {
			t.Fatalf("commit: %v", err)
		}
		out := make([]outcome, len(group))
		for i, p := range group {
			out[i].Res = p.Res
			if p.Err != nil {
				out[i].Res, out[i].Err = nil, p.Err.Error()
				errors.As(p.Err, &out[i].CE)
			}
		}
		return out
	}
	for _, sc := range scenarios {
		twos := one.trips.two.Load()
		got, want := run(one, sc.group), run(two, sc.group)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: one round trip gave %+v, two gave %+v", sc.name, got, want)
		}
		if took := one.trips.two.Load() == twos; took != sc.oneTrip {
			t.Errorf("%s: took one round trip %v, want %v", sc.name, took, sc.oneTrip)
		}
	}
	a, err := one.ReadAll(ctx, events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := two.ReadAll(ctx, events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(b) {
		t.Fatalf("logs of %d and %d events", len(a), len(b))
	}
	for i := range a {
		a[i].Created = b[i].Created // the transactions' start times
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("logs differ:\n%+v\n%+v", a, b)
	}
}

// reportTrips reports how many groups a benchmark's store committed in two
// round trips, and how many of those the server refused a one-round-trip
// plan for, per append.
func reportTrips(b *testing.B, s *Store) {
	b.ReportMetric(float64(s.trips.two.Load())/float64(b.N), "two-trip-groups/op")
	b.ReportMetric(float64(s.trips.refused.Load())/float64(b.N), "refused-plans/op")
}

// openTraced gives t a store on a fresh database whose statements and round
// trips a trace records.
func openTraced(t *testing.T) (*Store, *pgtest.Trace) {
	t.Helper()
	cfg, trace := pgtest.TracedConfig(t, pgtest.New(t))
	s, err := openConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, trace
}
