package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/nonces"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/projections"
)

// A snapshot read that records a binding prunes expired bindings in the
// same round trip when its 1-in-pruneEvery roll comes up: expired rows go
// (at most pruneBatch per read), live ones and the new binding stay, and
// the read answers exactly as a read without the prune does. A read whose
// binding this store already saw hold touches no binding, so it never
// prunes.
func TestSnapshotPrunesExpiredBindingsInItsRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, pgtest.New(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pos := events.Position{Commit: 7, Prepare: 7}
	if err := s.Update(ctx, string(projections.ReadModelUsers), pos, func(tx projections.UserTx) error {
		return tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: 10, ChannelUserID: "c-10", Name: "n", Gender: "male", Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at})
	}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	const expired, live = pruneBatch + 200, 30
	if _, err := s.pool.Exec(ctx, `INSERT INTO nonce_bindings (scope, key, value, claim, expires_at)
SELECT 'm', 'old-' || i, 'GET', i, $1::timestamptz - i * interval '1 second' FROM generate_series(1, $2::int) i
UNION ALL
SELECT 'm', 'new-' || i, 'GET', i, $1::timestamptz + interval '1 hour' FROM generate_series(1, $3::int) i`,
		now, expired, live); err != nil {
		t.Fatal(err)
	}
	count := func(cond string) int {
		t.Helper()
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM nonce_bindings WHERE `+cond).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	q := func(key string) projections.SnapshotQuery {
		return projections.SnapshotQuery{AppID: 1, OpenUserID: 10, Bind: &nonces.Binding{Scope: "m", Key: key, Value: "GET", Expires: now.Add(time.Minute)}}
	}

	// Without the roll: nothing pruned; this read is the reference answer.
	s.pruneNow = func() bool { return false }
	want, err := s.Snapshot(ctx, q("k0"))
	if err != nil || !want.Found || want.Bound != "GET" || want.Checkpoint != pos {
		t.Fatalf("read without prune: %+v, %v", want, err)
	}
	if n := count(`expires_at <= now()`); n != expired {
		t.Fatalf("%d expired bindings after a read without the roll; want all %d", n, expired)
	}

	rolls := 0
	s.pruneNow = func() bool { rolls++; return true }
	for i, left := range []int{expired - pruneBatch, 0} {
		key := "k" + string(rune('1'+i))
		got, err := s.Snapshot(ctx, q(key))
		if err != nil {
			t.Fatalf("read %d with prune: %v", i, err)
		}
		if got.Bound != "GET" || !got.Found || got.Checkpoint != want.Checkpoint || got.User != want.User {
			t.Fatalf("read %d with prune answered %+v; want %+v", i, got, want)
		}
		if n := count(`expires_at <= now()`); n != left {
			t.Fatalf("after read %d with prune: %d expired bindings left; want %d", i, n, left)
		}
		if n := count(`key = '` + key + `'`); n != 1 {
			t.Fatalf("read %d's own binding recorded %d times; want once", i, n)
		}
	}
	if n := count(`key LIKE 'new-%'`); n != live {
		t.Fatalf("%d live bindings after pruning; want all %d", n, live)
	}

	// A binding seen to hold is answered from the store's cache: no
	// binding statement, so no roll and no prune.
	rolls = 0
	if got, err := s.Snapshot(ctx, q("k1")); err != nil || got.Bound != "GET" || rolls != 0 {
		t.Fatalf("cached binding's read: %+v, %v, %d rolls; want GET and no roll", got, err, rolls)
	}
	// The pruned read's binding holds against another value.
	if got, fresh, err := s.Bind(ctx, "m", "k2", "POST /x", now.Add(time.Minute)); err != nil || fresh || got != "GET" {
		t.Fatalf("Bind over the pruned read's binding = %q, %v, %v; want GET, not fresh", got, fresh, err)
	}
}
