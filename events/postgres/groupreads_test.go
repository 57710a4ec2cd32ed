package postgres

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
)

// An append of several streams (a register: its binding and its user)
// checks every stream's count in one statement, the guard of its one round
// trip; its retry, which the id index refuses, reads every stream's count
// in one statement and every event id's place in another, however many
// parts it has, and is answered with its first results; and the checks
// still refuse a stream past its expected revision.
func TestAnAppendReadsItsStreamsInOneStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, count := openTraced(t)
	ev := func() events.Proposed {
		return events.Proposed{ID: uuid.NewString(), Type: "test.event", Data: []byte(`{}`)}
	}
	old := "old-" + uuid.NewString()
	if _, err := s.Append(ctx, old, events.NoStream(), ev()); err != nil {
		t.Fatal(err)
	}
	parts := []events.StreamAppend{
		{Stream: "a-" + uuid.NewString(), Expected: events.NoStream(), Events: []events.Proposed{ev(), ev()}},
		{Stream: "b-" + uuid.NewString(), Expected: events.NoStream(), Events: []events.Proposed{ev()}},
		{Stream: old, Expected: events.AfterVersion(1), Events: []events.Proposed{ev()}},
	}
	reads := func() [3]int {
		return [3]int{count.Count(appendGuardQuery), count.Count(streamCountsQuery), count.Count(placesQuery)}
	}
	sent := func(before [3]int) [3]int {
		after := reads()
		return [3]int{after[0] - before[0], after[1] - before[1], after[2] - before[2]}
	}
	before := reads()
	first, err := s.AppendMulti(ctx, parts...)
	if err != nil {
		t.Fatal(err)
	}
	if n := sent(before); n != [3]int{1, 0, 0} {
		t.Errorf("an append of three streams sent %d guard, %d stream-count and %d event-id statements, want 1, 0, 0", n[0], n[1], n[2])
	}
	before = reads()
	again, err := s.AppendMulti(ctx, parts...)
	if err != nil || len(again) != 3 || again[2] != first[2] || again[0] != first[0] {
		t.Fatalf("replay: %v %v, want %v", again, err, first)
	}
	if n := sent(before); n != [3]int{1, 1, 1} {
		t.Errorf("its retry sent %d guard, %d stream-count and %d event-id statements, want one each", n[0], n[1], n[2])
	}
	parts[2].Events = []events.Proposed{ev()}
	if _, err := s.AppendMulti(ctx, parts[2]); !events.IsConflict(err) {
		t.Fatalf("append after a revision passed: %v, want a conflict", err)
	}
}
