package postgres

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
)

// The feed, the delivery log and the dispatcher must walk an index in the
// order they return rows, never sort or scan the whole table: a missing or
// mismatched index would pass every functional test and fail in production.
func TestDeliveryQueriesUseTheirIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, MigratedDB(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// On an empty table a sequential scan is cheapest; forbid it to see
	// which index the planner can use.
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}

	after := events.Position{Commit: 5, Prepare: 5}
	now := time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC)
	type query struct {
		name  string
		sql   string
		args  []any
		index string
		cond  string // a bound the index must apply, not a filter, when set
	}
	feed := func(name string, f domain.DeliveryFilter, index string) query {
		sql, args := deliveriesQuery(f)
		return query{name, sql, args, index, "ROW(cursor_commit, cursor_prepare) > ROW("}
	}
	for _, q := range []query{
		feed("partner feed", domain.DeliveryFilter{AppID: 1, After: after, Limit: 10}, "webhook_deliveries_app_cursor_idx"),
		feed("partner log, every filter", domain.DeliveryFilter{AppID: 1, Status: domain.DeliveryRetrying,
			EventType: "user.registered", From: now, To: now.Add(time.Hour), After: after, Limit: 10}, "webhook_deliveries_app_cursor_idx"),
		feed("operator log", domain.DeliveryFilter{After: after, Limit: 10}, "webhook_deliveries_cursor_idx"),
		{"Due", dueQuery, []any{now, 10, []int64{}}, "webhook_deliveries_due_idx", "next_attempt_at <="},
		{"Due skipping apps", dueQuery, []any{now, 10, []int64{1, 2}}, "webhook_deliveries_due_idx", "next_attempt_at <="},
		{"NextDue", nextDueQuery, nil, "webhook_deliveries_due_idx", ""},
		{"LastSource", lastSourceQuery, nil, "webhook_deliveries_source_idx", ""},
	} {
		rows, _ := conn.Query(ctx, "EXPLAIN "+q.sql, q.args...)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: EXPLAIN: %v", q.name, err)
		}
		plan := strings.Join(lines, "\n")
		if !strings.Contains(plan, " using "+q.index+" ") {
			t.Errorf("%s does not use %s:\n%s", q.name, q.index, plan)
		}
		if strings.Contains(plan, "Sort") || strings.Contains(plan, "Seq Scan") {
			t.Errorf("%s sorts or scans the table:\n%s", q.name, plan)
		}
		if q.cond != "" && !slices.ContainsFunc(lines, func(l string) bool {
			_, c, ok := strings.Cut(l, "Index Cond: ")
			return ok && strings.Contains(c, q.cond)
		}) {
			t.Errorf("%s: index condition lacks %q:\n%s", q.name, q.cond, plan)
		}
	}
}
