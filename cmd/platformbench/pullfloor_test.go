package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// The pull floor's transactions each use one nonce, take one token and
// append one audit fact at the log's next position (a gapless log of
// the seeded reports' events and the facts), all or nothing: after a
// short run the tables hold as many facts as nonces, the facts numbered
// on from the seed in one stream, and pgbench counted them.
func TestPullFloorWritesWhatAPullWrites(t *testing.T) {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pgbench")
	if len(bins) == 0 {
		t.Skip("no pgbench under /usr/lib/postgresql")
	}
	db := pgtest.New(t)
	ctx := context.Background()
	m, err := PullFloor(ctx, bins[len(bins)-1], db, Phase{Clients: 2, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if m.OK <= 0 {
		t.Fatalf("no transactions: %+v", m)
	}
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var facts, nonces, maxPos, maxRev, tokens int64
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM floor_events WHERE stream = 'audit-app:1'), (SELECT count(*) FROM floor_nonces),
    (SELECT max(position) FROM floor_events), (SELECT max(revision) FROM floor_events WHERE stream = 'audit-app:1'),
    (SELECT 1e9 - tokens FROM floor_buckets)::bigint`).Scan(&facts, &nonces, &maxPos, &maxRev, &tokens)
	if err != nil {
		t.Fatal(err)
	}
	if facts == 0 || facts != nonces || maxPos != 2000+facts || maxRev != facts-1 || tokens < 1 {
		t.Fatalf("%d facts, %d nonces, head %d, last revision %d, %d tokens taken (pgbench: %d)", facts, nonces, maxPos, maxRev, tokens, m.OK)
	}
}
