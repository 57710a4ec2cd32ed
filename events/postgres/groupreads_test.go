package postgres

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// An append of several streams (a register: its binding and its user)
// reads every stream's count in one statement and every event id's place in
// another, however many parts it has; the checks still refuse a stream
// past its expected revision and answer a replay with its first results.
func TestAnAppendReadsItsStreamsInOneStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, count := pgtest.TracedConfig(t, pgtest.New(t))
	s, err := openConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
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
	counts, places := count.Count(streamCountsQuery), count.Count(placesQuery)
	first, err := s.AppendMulti(ctx, parts...)
	if err != nil {
		t.Fatal(err)
	}
	if n, m := count.Count(streamCountsQuery)-counts, count.Count(placesQuery)-places; n != 1 || m != 1 {
		t.Errorf("an append of three streams sent %d stream-count and %d event-id statements, want one each", n, m)
	}
	again, err := s.AppendMulti(ctx, parts...)
	if err != nil || len(again) != 3 || again[2] != first[2] || again[0] != first[0] {
		t.Fatalf("replay: %v %v, want %v", again, err, first)
	}
	parts[2].Events = []events.Proposed{ev()}
	if _, err := s.AppendMulti(ctx, parts[2]); !events.IsConflict(err) {
		t.Fatalf("append after a revision passed: %v, want a conflict", err)
	}
}
