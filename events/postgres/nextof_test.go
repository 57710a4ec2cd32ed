package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
)

// The probe a skipping follower makes for its next wanted event is one
// descent of the (type, position) index per type, in the generic plan a
// prepared statement settles on and in a custom one: on a log whose app
// events all lie early, under many later events of other types, walking
// the primary key forward from the start of the stretch and filtering on
// type read every event after it, once per type, on each skip (tens of
// thousands of buffers here, 1.3 s on a log of 300,000 events).
func TestNextOfQueryReadsOneIndexEntryPerType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t)
	for _, typ := range []string{"app.created", "operator.created", "app.updated"} {
		if _, err := s.Append(ctx, "s-"+typ, events.Any(), events.Proposed{ID: uuid.NewString(), Type: typ, Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO es_events (position, stream, revision, id, type, data, meta)
SELECT 3 + g, 'bulk-' || g, 0, 'bulk-' || g,
    (ARRAY['user.registered', 'family.member.upserted', 'user.profile.updated', 'report.created'])[1 + g % 4], '{}', '{}'
FROM generate_series(1, 30000) g`); err != nil {
		t.Fatal(err)
	}
	last, err := s.Append(ctx, "s-late", events.Any(), events.Proposed{ID: uuid.NewString(), Type: "app.updated", Data: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE es_events`); err != nil {
		t.Fatal(err)
	}
	head := int64(last.Position.Commit)
	wanted := []string{"app.created", "app.updated", "operator.created"}

	var next *int64
	if err := s.pool.QueryRow(ctx, nextOfQuery, wanted, int64(100), head).Scan(&next); err != nil || next == nil || *next != head {
		t.Fatalf("next wanted after 100: %v, %v; want %d", next, err, head)
	}
	if err := s.pool.QueryRow(ctx, nextOfQuery, wanted, int64(100), head-1).Scan(&next); err != nil || next != nil {
		t.Fatalf("next wanted in [100, %d]: %v, %v; want none", head-1, next, err)
	}

	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `PREPARE next_probe(text[], bigint, bigint) AS `+nextOfQuery); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
		if _, err := conn.Exec(ctx, `SET plan_cache_mode = `+mode); err != nil {
			t.Fatal(err)
		}
		var out []byte
		if err := conn.QueryRow(ctx, fmt.Sprintf(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE next_probe(ARRAY['app.created', 'app.updated', 'operator.created'], 100, %d)`,
			head)).Scan(&out); err != nil {
			t.Fatal(err)
		}
		var plans []struct {
			Plan struct {
				Hit  int64 `json:"Shared Hit Blocks"`
				Read int64 `json:"Shared Read Blocks"`
			}
		}
		if err := json.Unmarshal(out, &plans); err != nil || len(plans) != 1 {
			t.Fatalf("%s: %v: %s", mode, err, out)
		}
		// Three descents of a three-level index: about ten buffers.
		if b := plans[0].Plan.Hit + plans[0].Plan.Read; b > 60 {
			t.Errorf("%s: the probe read %d buffers, want a few per type:\n%s", mode, b, out)
		}
	}
}
