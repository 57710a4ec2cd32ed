package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
)

// A rider's statement is written by the transaction that commits its
// append's events, exactly once: a conflicting append writes neither the
// events nor the rider, and is not told anything; the next append with the
// same context commits both in one transaction (one xmin) and tells the
// rider's value; a later append with that context writes the rider no
// more.
func TestRiderIsWrittenWithTheAppendThatCommits(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	if _, err := s.pool.Exec(ctx, `CREATE TABLE rides (n int PRIMARY KEY, v text)`); err != nil {
		t.Fatal(err)
	}
	var told []bool
	rctx := WithRider(ctx, `WITH i AS (INSERT INTO rides VALUES ($1, $2) ON CONFLICT (n) DO NOTHING RETURNING true) SELECT EXISTS (SELECT FROM i)`,
		[]any{1, "ridden"}, func(v bool) { told = append(told, v) })
	ev := func() events.Proposed { return events.Proposed{ID: uuid.NewString(), Type: "t", Data: []byte(`{}`)} }

	var conflict *events.ConflictError
	if _, err := s.Append(rctx, "s-1", events.Exact(5), ev()); !errors.As(err, &conflict) {
		t.Fatalf("append at a wrong revision: %v, want a conflict", err)
	}
	var rows int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM rides`).Scan(&rows); err != nil || rows != 0 || len(told) != 0 {
		t.Fatalf("after a refused append: %d rides (%v), told %v; want none", rows, err, told)
	}

	if _, err := s.Append(rctx, "s-1", events.NoStream(), ev()); err != nil {
		t.Fatal(err)
	}
	var same bool
	if err := s.pool.QueryRow(ctx, `SELECT r.xmin::text = e.xmin::text FROM rides r, es_events e WHERE r.n = 1 AND e.stream = 's-1'`).Scan(&same); err != nil || !same {
		t.Fatalf("ride and event in one transaction: %v (%v), want true", same, err)
	}
	if len(told) != 1 || !told[0] {
		t.Fatalf("told %v, want [true] once", told)
	}

	if _, err := s.Append(rctx, "s-1", events.Exact(0), ev()); err != nil {
		t.Fatal(err)
	}
	if len(told) != 1 {
		t.Fatalf("a second append with the context told the rider again: %v", told)
	}
}
