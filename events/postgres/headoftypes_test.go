package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
)

// HeadOfTypesQuery reads the position of the last event of the given
// types, not the log's head: events of other types appended after it do
// not move it, a quote in a type name stays a literal, and no event of the
// types (or no types) gives 0.
func TestHeadOfTypesQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	appendOf := func(typ string) events.Position {
		t.Helper()
		res, err := s.Append(ctx, "s-"+typ, events.Any(), events.Proposed{ID: uuid.NewString(), Type: typ, Data: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		return res.Position
	}
	head := func(types ...string) events.Position {
		t.Helper()
		var p int64
		if err := s.pool.QueryRow(ctx, HeadOfTypesQuery(types)).Scan(&p); err != nil {
			t.Fatal(err)
		}
		return PositionAt(p)
	}
	if got := head("report.created"); got != PositionAt(0) {
		t.Fatalf("empty log: %v", got)
	}
	appendOf("report.created")
	viewed := appendOf("report.viewed")
	appendOf("access.audited")
	odd := appendOf("it's")
	appendOf("access.audited")
	if got := head("report.created", "report.viewed"); got != viewed {
		t.Fatalf("head of the report events %v, want %v", got, viewed)
	}
	if got := head("it's", "report.viewed"); got != odd {
		t.Fatalf("head with a quoted type %v, want %v", got, odd)
	}
	if got := head(); got != PositionAt(0) {
		t.Fatalf("no types: %v", got)
	}

	// On a log whose report events all lie early, under many later events
	// of another type, where the planner, not knowing which type a probe
	// looks for, would rather walk the log backwards from its head, each
	// probe is one descent of the (type, position) index.
	if _, err := s.pool.Exec(ctx, `INSERT INTO es_events (position, stream, revision, id, type, data, meta)
SELECT 1000 + g, 'bulk', g, 'bulk-' || g, CASE WHEN g <= 2000 THEN 'report.created' ELSE 'access.audited' END, '{}', '{}'
FROM generate_series(1, 30000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE es_events`); err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	rows, err := s.pool.Query(ctx, "EXPLAIN "+HeadOfTypesQuery([]string{"report.created", "report.updated", "report.viewed", "user.erased"}))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if rows.Err() != nil || !strings.Contains(plan.String(), "es_events_type_position") || strings.Contains(plan.String(), "es_events_pkey") {
		t.Fatalf("plan (%v):\n%s", rows.Err(), plan.String())
	}
	if got := head("report.created", "report.viewed"); got != PositionAt(3000) {
		t.Fatalf("head of the report events after the bulk %v, want 3000", got)
	}
}
