package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/postgres"
)

// relationsHolding lists the relation files (tables, their TOAST tables and
// indexes) of the purged tables whose bytes hold marker, read straight from
// the data directory after a CHECKPOINT (superuser: pg_read_binary_file).
func relationsHolding(t *testing.T, pool *pgxpool.Pool, marker string) []string {
	t.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CHECKPOINT`); err != nil {
		t.Skipf("reading relation files needs a superuser: %v", err)
	}
	rows, err := pool.Query(ctx, `
WITH t AS (SELECT oid, reltoastrelid FROM pg_class WHERE relname = ANY($1) AND relkind = 'r'
           AND relnamespace = to_regnamespace(current_schema()))
SELECT c.oid::regclass::text, pg_relation_filepath(c.oid)
FROM pg_class c
WHERE c.oid IN (SELECT oid FROM t)
   OR c.oid IN (SELECT reltoastrelid FROM t WHERE reltoastrelid <> 0)
   OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT oid FROM t)
                UNION SELECT indexrelid FROM pg_index WHERE indrelid IN (SELECT reltoastrelid FROM t))`, postgres.PurgedTables)
	if err != nil {
		t.Fatal(err)
	}
	type rel struct{ name, path string }
	var rels []rel
	for rows.Next() {
		var r rel
		if err := rows.Scan(&r.name, &r.path); err != nil {
			t.Fatal(err)
		}
		rels = append(rels, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rels) < len(postgres.PurgedTables) {
		t.Fatalf("found %d relations for %d tables", len(rels), len(postgres.PurgedTables))
	}
	var holding []string
	for _, r := range rels {
		var found bool
		// Every 1 GB segment: the test's tables have one.
		err := pool.QueryRow(ctx, `SELECT position(convert_to($1, 'UTF8') IN pg_read_binary_file($2)) > 0`, marker, r.path).Scan(&found)
		if err != nil {
			t.Skipf("reading relation files needs a superuser or pg_read_server_files: %v", err)
		}
		if found {
			holding = append(holding, r.name)
		}
	}
	return holding
}

// An erased person's plaintext leaves the read model's files: after the
// erasure and a plain VACUUM the deleted rows' bytes (a name, a phone, an id
// number) are still in the relation files; once every read model that applies
// erasures has passed the erasure, PurgeErased rewrites the tables and
// they are gone, while the person kept is still there. A second call with
// no new erasure does nothing.
func TestPurgeErasedLeavesNoPlaintextInTheFiles(t *testing.T) {
	t.Parallel()
	url := postgres.MigratedDB(t)
	s := open(t, url)
	defer s.Close()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ctx := context.Background()
	var buf [6]byte
	_, _ = rand.Read(buf[:])
	gone := "ERASED-" + hex.EncodeToString(buf[:])
	kept := "KEPT-" + hex.EncodeToString(buf[:])
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pos := func(n uint64) events.Position { return events.Position{Commit: n, Prepare: n} }
	write := func(p events.Position, fn func(projections.UserTx) error) {
		t.Helper()
		if err := s.Update(ctx, "users", p, fn); err != nil {
			t.Fatal(err)
		}
	}
	write(pos(10), func(tx projections.UserTx) error {
		// The kept person first: a page fills from its end, and a VACUUM
		// compacts the live rows towards it, so the erased rows' bytes are
		// left in place, as they are in any table of more than a few rows.
		for i, name := range []string{kept, gone} {
			uid := int64(1002 - i)
			phone, id := name+"-phone", name+"-id"
			if err := tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: uid, ChannelUserID: "c-" + strconv.Itoa(i), Name: name + "-name",
				Phone: &phone, Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}); err != nil {
				return err
			}
			if err := tx.PutGroup(ctx, projections.Group{AppID: 1, OpenUserID: uid, FamilyGroupID: uid, AppGroupID: 1, Name: name + "-group", CreatedAt: at, UpdatedAt: at}); err != nil {
				return err
			}
			if err := tx.PutMember(ctx, projections.Member{AppID: 1, OpenUserID: uid, MemberID: uid, AppUserID: "self", AppGroupID: 1, FamilyGroupID: uid,
				Name: name + "-member", Relationship: "SELF", IDNumber: &id, UpdatedAt: at}); err != nil {
				return err
			}
		}
		return nil
	})
	// The erasure at 20, in a batch that ends at 21 with an event only the
	// users read model reads: the others stop at 20.
	erased := events.Envelope{Recorded: events.Recorded{ID: "ev-erased", Type: "user.erased", Stream: "user-1001", Position: pos(20)},
		Payload: &catalog.UserErased{AppID: 1, OpenUserID: 1001, Reason: "r", ErasedBy: "operator:1", ErasedAt: at}}
	if err := projections.UsersProjector(s).Apply(ctx, []events.Envelope{erased}, pos(21)); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `VACUUM users, family_groups, family_members, user_snapshots`); err != nil {
		t.Fatal(err)
	}
	if held := relationsHolding(t, pool, gone); len(held) == 0 {
		t.Fatal("the erased rows are not in the files after a plain VACUUM: the test cannot tell a purge from none")
	} else {
		t.Logf("after erasure and plain VACUUM, %q is still in %v", gone, held)
	}

	// The other erasing read models have not passed the erasure: the purge waits.
	res, err := s.PurgeErased(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Purged || !res.Waiting {
		t.Fatalf("purge before every family applied the erasure: %+v", res)
	}
	for _, f := range []func(context.Context, string, events.Position, func(projections.DeliveryTx) error) error{s.UpdateDeliveries} {
		if err := f(ctx, "deliveries", pos(20), func(projections.DeliveryTx) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.UpdateReports(ctx, "reports", pos(20), func(projections.ReportTx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateOrders(ctx, "orders", pos(20), func(projections.OrderTx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// Other sessions of the shared server may be older than the erasure
	// for a moment: the purge then waits, and the next call goes on.
	for try := 0; ; try++ {
		if res, err = s.PurgeErased(ctx); err != nil {
			t.Fatal(err)
		}
		if !res.Waiting || try == 10 {
			break
		}
	}
	if !res.Purged || res.Upto != pos(20) || len(res.Tables) != len(postgres.PurgedTables) || res.ErasedAt.IsZero() {
		t.Fatalf("purge: %+v", res)
	}
	if held := relationsHolding(t, pool, gone); len(held) != 0 {
		t.Fatalf("after the purge %q is still in %v", gone, held)
	}
	if held := relationsHolding(t, pool, kept); len(held) == 0 {
		t.Fatal("the purge lost the rows it must keep")
	}
	if u, err := s.User(ctx, 1, 1002); err != nil || u.Name != kept+"-name" {
		t.Fatalf("kept user after the purge: %+v %v", u, err)
	}
	if res, err := s.PurgeErased(ctx); err != nil || res.Purged || res.Waiting {
		t.Fatalf("second purge without a new erasure: %+v %v", res, err)
	}
}

// TestPurgeErasedCost measures one purge over n users (each with a group
// and two members, and a report, delivery and order) after one erasure:
// how long each table's rewrite holds its ACCESS EXCLUSIVE lock. Run with
// PLATFORM_PURGE_BENCH_USERS=n; it is not part of the normal suite.
func TestPurgeErasedCost(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("PLATFORM_PURGE_BENCH_USERS"))
	if n <= 0 {
		t.Skip("set PLATFORM_PURGE_BENCH_USERS to measure")
	}
	url := postgres.MigratedDB(t)
	s := open(t, url)
	defer s.Close()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ctx := context.Background()
	// Bulk rows straight in SQL: the purge reads files, not projections.
	for _, q := range []string{
		`INSERT INTO users (open_user_id, app_id, channel_user_id, name, nickname, gender, phone, email, birth_date, status, registered_at, updated_at)
		 SELECT i, 1, 'c-' || i, '姓名' || i, 'nick' || i, 'female', '1380000' || i, 'u' || i || '@example.com', '1990-01-01', 'ACTIVE', now(), now()
		 FROM generate_series(1, $1) i`,
		`INSERT INTO family_groups (family_group_id, app_id, open_user_id, app_group_id, name, dissolved, created_at, updated_at)
		 SELECT i, 1, i, 1, 'family ' || i, false, now(), now() FROM generate_series(1, $1) i`,
		`INSERT INTO family_members (member_id, app_id, open_user_id, app_user_id, app_group_id, family_group_id, name, relationship, phone, id_type, id_number, is_default, deleted, updated_at)
		 SELECT i * 2 + k, 1, i, 'm' || k, 1, i, 'member ' || i || '-' || k, 'SELF', '1390000' || i, 'ID_CARD', '11010519900101' || i, k = 0, false, now()
		 FROM generate_series(1, $1) i, generate_series(0, 1) k`,
		`INSERT INTO user_snapshots (open_user_id, app_id, channel_user_id, doc) SELECT open_user_id, app_id, channel_user_id, doc FROM user_snapshot_docs`,
	} {
		args := []any{n}
		if !strings.Contains(q, "$1") {
			args = nil
		}
		if _, err := pool.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	var size int64
	if err := pool.QueryRow(ctx, `SELECT sum(pg_total_relation_size(c)) FROM unnest($1::regclass[]) c`, postgres.PurgedTables).Scan(&size); err != nil {
		t.Fatal(err)
	}
	p := events.Position{Commit: 100, Prepare: 100}
	if err := s.Update(ctx, "users", p, func(tx projections.UserTx) error {
		if err := tx.EraseUser(ctx, 1); err != nil {
			return err
		}
		return tx.(projections.ErasureMarker).MarkErased(ctx, p)
	}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"deliveries", "reports", "orders"} {
		if _, err := pool.Exec(ctx, `INSERT INTO checkpoints (projection, commit_pos, prepare_pos, updated_at) VALUES ($1, 100, 100, now())
			ON CONFLICT (projection) DO UPDATE SET commit_pos = 100, prepare_pos = 100`, f); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.PurgeErased(ctx)
	for try := 0; err == nil && res.Waiting && try < 10; try++ {
		res, err = s.PurgeErased(ctx)
	}
	if err != nil || !res.Purged {
		t.Fatalf("purge: %+v %v", res, err)
	}
	t.Logf("purge of %d users (%.1f MB in the purged tables): %v in all", n, float64(size)/(1<<20), res.Took.Round(time.Millisecond))
	for _, table := range postgres.PurgedTables {
		t.Logf("  %-20s %v", table, res.Tables[table].Round(time.Millisecond))
	}
}
