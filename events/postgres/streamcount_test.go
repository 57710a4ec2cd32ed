package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
)

// The stream count an append reads under the append lock is one index
// probe however long the stream is, in the generic plan a prepared
// statement settles on too: reading the stream's every entry made each
// append to a long stream (an app's audit facts) slower than the last.
func TestStreamCountReadsOneIndexEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	one := func(stream, typ string) {
		t.Helper()
		if _, err := s.Append(ctx, stream, events.Any(), events.Proposed{ID: uuid.NewString(), Type: typ, Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	// Statistics taken while every stream is short, as on a young log;
	// then one stream grows past them.
	for range 300 {
		one("user-"+uuid.NewString(), "user.registered")
	}
	one("audit-app:1", "audit.access_recorded")
	if _, err := s.pool.Exec(ctx, `ANALYZE es_events`); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		evs := make([]events.Proposed, 200)
		for j := range evs {
			evs[j] = events.Proposed{ID: uuid.NewString(), Type: "audit.access_recorded", Data: []byte(`{}`)}
		}
		if _, err := s.Append(ctx, "audit-app:1", events.Any(), evs...); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var (
		stream string
		count  int64
	)
	if err := conn.QueryRow(ctx, streamCountsQuery, []string{"audit-app:1"}).Scan(&stream, &count); err != nil || count != 601 {
		t.Fatalf("count %d, %v: want 601", count, err)
	}
	for _, q := range []string{`SET plan_cache_mode = force_generic_plan`, `PREPARE count_probe(text[]) AS ` + streamCountsQuery} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := conn.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE count_probe('{audit-app:1}')`)
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if rows.Err() != nil || !strings.Contains(plan.String(), "Backward") || !strings.Contains(plan.String(), "rows=1 loops=1") {
		t.Fatalf("generic plan of the stream count (%v):\n%s", rows.Err(), plan.String())
	}
}
