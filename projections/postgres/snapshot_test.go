package postgres_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/nonces"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/postgres"
	"github.com/healthtech/partner-open-platform/projections/storetest"
)

func TestSnapshot(t *testing.T) {
	t.Parallel()
	storetest.RunSnapshot(t, func(t *testing.T) storetest.SnapshotStore { return open(t, postgres.MigratedDB(t)) })
}

// Under SeeHead the snapshot carries the head the event store's statement
// returns, converted by its function; without it, no head.
func TestSnapshotReadsTheHeadWhenToldHow(t *testing.T) {
	t.Parallel()
	url := postgres.MigratedDB(t)
	s := open(t, url)
	defer s.Close()
	ctx := context.Background()
	q := projections.SnapshotQuery{AppID: 1, OpenUserID: 10}
	if snap, err := s.Snapshot(ctx, q); err != nil || snap.HeadKnown || s.SeesHead() {
		t.Fatalf("without SeeHead: %+v, %v (sees head %v)", snap, err, s.SeesHead())
	}
	exec(t, url, `CREATE TABLE fake_log (position bigint)`)
	exec(t, url, `INSERT INTO fake_log VALUES (3), (9)`)
	s.SeeHead(`SELECT coalesce(max(position), 0) FROM fake_log`, func(p int64) events.Position {
		return events.Position{Commit: uint64(p), Prepare: uint64(p) - 1}
	})
	snap, err := s.Snapshot(ctx, q)
	if err != nil || !snap.HeadKnown || snap.Head != (events.Position{Commit: 9, Prepare: 8}) || !s.SeesHead() {
		t.Fatalf("with SeeHead: %+v, %v", snap, err)
	}
}

var _ storetest.SnapshotStore = (*postgres.Store)(nil)

// A database written before the snapshots part existed (no user_snapshots
// table) serves its users' snapshots after the upgrade, as the
// separate reads answer them, at the checkpoint it had.
func TestSnapshotsBackfilledOnUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.New(t)
	s := open(t, url)
	pos := events.Position{Commit: 41, Prepare: 40}
	err := s.Update(ctx, string(projections.ReadModelUsers), pos, func(tx projections.UserTx) error {
		at := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
		phone := "13800138000"
		if err := tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: 10, ChannelUserID: "c-10", Name: "张三", Phone: &phone, Gender: "male", Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}); err != nil {
			return err
		}
		if err := tx.PutGroup(ctx, projections.Group{AppID: 1, OpenUserID: 10, FamilyGroupID: 5, AppGroupID: 6, Name: "家", CreatedAt: at, UpdatedAt: at}); err != nil {
			return err
		}
		for id := int64(1); id <= 2; id++ {
			if err := tx.PutMember(ctx, projections.Member{AppID: 1, OpenUserID: 10, MemberID: id, AppUserID: "a", AppGroupID: 6, FamilyGroupID: 5, Name: "m", Relationship: "child", Phone: &phone, UpdatedAt: at}); err != nil {
				return err
			}
		}
		return tx.DeleteMember(ctx, 2, at)
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	exec(t, url, `DROP TABLE user_snapshots; DROP VIEW user_snapshot_docs; ALTER TABLE family_members DROP COLUMN snapshot_json, DROP COLUMN snapshot_json_at;
DROP FUNCTION snapshot_member_json(family_members); DELETE FROM schema_versions WHERE part = 'snapshots'`)

	s = open(t, url)
	defer s.Close()
	snap, err := s.Snapshot(ctx, projections.SnapshotQuery{AppID: 1, OpenUserID: 10})
	if err != nil || !snap.Found || snap.Checkpoint != pos {
		t.Fatalf("snapshot after the upgrade: %+v, %v; want user 10 at %v", snap, err, pos)
	}
	u, _ := s.User(ctx, 1, 10)
	groups, _ := s.Groups(ctx, 1, 10)
	members, _ := s.Members(ctx, 1, 10, time.Time{})
	if !reflect.DeepEqual(snap.User, u) || !reflect.DeepEqual(snap.Groups, groups) || !reflect.DeepEqual(snap.Members, members) {
		t.Fatalf("snapshot after the upgrade:\n%+v\n%+v\n%+v\nwant\n%+v\n%+v\n%+v", snap.User, snap.Groups, snap.Members, u, groups, members)
	}
	if len(members) != 1 || groups[0].MemberCount != 1 {
		t.Fatalf("fixture: %d live members, count %d; want 1 and 1", len(members), groups[0].MemberCount)
	}

	// Erasure leaves nothing of the person in the documents either.
	if err := s.Update(ctx, string(projections.ReadModelUsers), events.Position{Commit: 42, Prepare: 42}, func(tx projections.UserTx) error {
		return tx.EraseUser(ctx, 10)
	}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM user_snapshots WHERE open_user_id = 10 OR position('13800138000' in convert_from(doc, 'UTF8')) > 0`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("after erasure %d snapshot documents still hold the user (%v)", left, err)
	}
}

// Two nodes on one database: a binding one node recorded through a
// snapshot holds on the other (its Bind and its snapshot reads), and one
// the other recorded first holds on the first, cache or not.
func TestBindingsHoldAcrossNodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := postgres.MigratedDB(t)
	a, b := open(t, url), open(t, url)
	defer a.Close()
	defer b.Close()
	expires := time.Now().Add(time.Minute)
	bind := func(key, value string) *nonces.Binding {
		return &nonces.Binding{Scope: "m", Key: key, Value: value, Expires: expires}
	}
	for i := range 2 { // the second pass answers from each node's cache
		snap, err := a.Snapshot(ctx, projections.SnapshotQuery{AppID: 1, OpenUserID: 10, Bind: bind("k1", "GET")})
		if err != nil || snap.Bound != "GET" {
			t.Fatalf("round %d: node a's read bound %q, %v; want GET", i, snap.Bound, err)
		}
		if got, fresh, err := b.Bind(ctx, "m", "k1", "POST /x", expires); err != nil || fresh || got != "GET" {
			t.Fatalf("round %d: node b's Bind = %q, %v, %v; want GET, not fresh", i, got, fresh, err)
		}
		if got, fresh, err := b.Bind(ctx, "m", "k2", "POST /y", expires); err != nil || got != "POST /y" || fresh != (i == 0) {
			t.Fatalf("round %d: node b's own Bind = %q, %v, %v; want POST /y, fresh the first time", i, got, fresh, err)
		}
		snap, err = a.Snapshot(ctx, projections.SnapshotQuery{AppID: 1, OpenUserID: 10, Bind: bind("k2", "GET")})
		if err != nil || snap.Bound != "POST /y" {
			t.Fatalf("round %d: node a's read of b's binding = %q, %v; want POST /y", i, snap.Bound, err)
		}
	}
}
