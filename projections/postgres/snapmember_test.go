package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/postgres"
)

// referenceDocs creates reference_docs: the snapshot document exactly as
// the first migration's view defined it, built from the rows alone, read
// from that migration's file so the reference cannot drift with the code.
func referenceDocs(t *testing.T, ctx context.Context, conn *pgx.Conn) {
	t.Helper()
	b, err := os.ReadFile("migrations/snapshots/0001_user_snapshots.sql")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	start := strings.Index(src, "CREATE VIEW user_snapshot_docs AS")
	end := strings.Index(src, "FROM users u;")
	if start < 0 || end < start {
		t.Fatal("0001_user_snapshots.sql no longer holds the view this test copies")
	}
	view := strings.Replace(src[start:end+len("FROM users u")], "user_snapshot_docs", "reference_docs", 1)
	if _, err := conn.Exec(ctx, view); err != nil {
		t.Fatal(err)
	}
}

// compareDocs fails unless every user's stored document is, byte for
// byte, the one reference_docs builds from the rows, no document is left
// for a user who is gone, and every live member's stored part is the one
// snapshot_member_json builds from its row.
func compareDocs(t *testing.T, ctx context.Context, conn *pgx.Conn, when string) {
	t.Helper()
	var users, differ, orphans, stale int
	err := conn.QueryRow(ctx, `SELECT
    (SELECT count(*) FROM users),
    (SELECT count(*) FROM reference_docs r LEFT JOIN user_snapshots s USING (open_user_id)
      WHERE s.doc IS DISTINCT FROM r.doc OR s.channel_user_id IS DISTINCT FROM r.channel_user_id OR s.app_id IS DISTINCT FROM r.app_id),
    (SELECT count(*) FROM user_snapshots s WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.open_user_id = s.open_user_id)),
    (SELECT count(*) FROM family_members m WHERE NOT m.deleted AND (m.snapshot_json IS DISTINCT FROM snapshot_member_json(m) OR m.snapshot_json_at IS DISTINCT FROM m.updated_at))`).Scan(&users, &differ, &orphans, &stale)
	if err != nil {
		t.Fatal(err)
	}
	if differ != 0 || orphans != 0 || stale != 0 {
		var example string
		_ = conn.QueryRow(ctx, `SELECT coalesce(convert_from(s.doc, 'UTF8'), '<none>') || E'\nwant\n' || convert_from(r.doc, 'UTF8')
FROM reference_docs r LEFT JOIN user_snapshots s USING (open_user_id) WHERE s.doc IS DISTINCT FROM r.doc LIMIT 1`).Scan(&example)
		t.Fatalf("%s: of %d users, %d documents differ from the rows' (e.g.\n%s), %d documents of users gone, %d live members' parts stale",
			when, users, differ, example, orphans, stale)
	}
}

// docsStore opens a store on a fresh database and a connection to it on
// which reference_docs exists; both close when the test ends.
func docsStore(t *testing.T, ctx context.Context) (*postgres.Store, *pgx.Conn) {
	t.Helper()
	url := pgtest.New(t)
	s := open(t, url)
	t.Cleanup(func() { _ = s.Close() })
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	referenceDocs(t, ctx, conn)
	return s, conn
}

// The documents the users read model keeps (each member's JSON written with its
// row, concatenated by the refresh) are byte for byte the documents
// the first definition builds from the rows, over random histories of
// puts, soft and hard deletes, dissolved groups, erasures and owners
// changing, with strings that JSON must escape.
func TestSnapshotDocumentsMatchTheRowsForRandomHistories(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, conn := docsStore(t, ctx)

	rng := rand.New(rand.NewPCG(11, 6))
	texts := []string{"a", "", "张三", `quote " and \ back`, "tab\tnew\nline", "<&>", "\u2028", "emoji 🙂"}
	str := func() string { return texts[rng.IntN(len(texts))] }
	optStr := func() *string {
		if rng.IntN(3) == 0 {
			return nil
		}
		v := str()
		return &v
	}
	optInt := func() *int64 {
		if rng.IntN(3) == 0 {
			return nil
		}
		v := rng.Int64N(300) - 10
		return &v
	}
	at := func() time.Time {
		return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(rng.Int64N(1e15)) * time.Microsecond)
	}
	// Groups and members keep their owner (group u*10+k, member u*100+k,
	// members in their owner's groups), as the projector writes them: the
	// refresh rewrites the documents of the owners a transaction names.
	const app, nUsers = int64(1), 6
	pos := uint64(0)
	for round := 0; round < 60; round++ {
		pos++
		err := s.Update(ctx, string(projections.ReadModelUsers), events.Position{Commit: pos, Prepare: pos}, func(tx projections.UserTx) error {
			for range 1 + rng.IntN(6) {
				u := 1 + rng.Int64N(nUsers)
				var err error
				switch op := rng.IntN(10); {
				case op < 2:
					err = tx.PutUser(ctx, projections.User{AppID: app, OpenUserID: u, ChannelUserID: fmt.Sprint("c", u), Name: str(), Nickname: optStr(),
						Gender: str(), Avatar: optStr(), Phone: optStr(), Email: optStr(), BirthDate: optStr(), Status: "ACTIVE", RegisteredAt: at(), UpdatedAt: at()})
				case op < 4:
					err = tx.PutGroup(ctx, projections.Group{AppID: app, OpenUserID: u, FamilyGroupID: u*10 + rng.Int64N(2), AppGroupID: rng.Int64N(4),
						Name: str(), Dissolved: rng.IntN(4) == 0, CreatedAt: at(), UpdatedAt: at()})
				case op < 8:
					deleted := rng.IntN(6) == 0
					var deletedAt *time.Time
					if deleted {
						d := at()
						deletedAt = &d
					}
					err = tx.PutMember(ctx, projections.Member{AppID: app, OpenUserID: u, MemberID: u*100 + rng.Int64N(4), AppUserID: str(),
						AppGroupID: rng.Int64N(4), FamilyGroupID: u*10 + rng.Int64N(2), Name: str(), Relationship: str(), Gender: optStr(),
						BirthDate: optStr(), Phone: optStr(), IDType: optStr(), IDNumber: optStr(), Height: optInt(), Weight: optInt(),
						BloodType: optStr(), IsDefault: rng.IntN(2) == 0, Deleted: deleted, DeletedAt: deletedAt, UpdatedAt: at()})
				case op < 9:
					err = tx.DeleteMember(ctx, u*100+rng.Int64N(4), at())
				default:
					err = tx.EraseUser(ctx, u)
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		compareDocs(t, ctx, conn, fmt.Sprintf("after round %d", round))
	}
	var members int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM family_members WHERE NOT deleted`).Scan(&members); err != nil || members == 0 {
		t.Fatalf("the history left %d live members (%v): the comparison covered no member part", members, err)
	}
	// A row without its part (as a writer older than the part leaves it)
	// is built from the row: the view's documents are still the rows'.
	if _, err := conn.Exec(ctx, `UPDATE family_members SET snapshot_json = NULL`); err != nil {
		t.Fatal(err)
	}
	var differ int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM reference_docs r FULL JOIN user_snapshot_docs d USING (open_user_id)
WHERE d.doc IS DISTINCT FROM r.doc`).Scan(&differ); err != nil || differ != 0 {
		t.Fatalf("without the members' parts, %d documents of the view differ from the rows' (%v)", differ, err)
	}
	// A writer older than the parts (a node not yet upgraded) changes a row
	// and its updated_at but leaves the part built for the old row: the view
	// builds that member from the row, not from the stale part.
	if _, err := conn.Exec(ctx, `UPDATE family_members m SET snapshot_json = snapshot_member_json(m), snapshot_json_at = m.updated_at`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE family_members SET name = name || ' (renamed by an older node)', updated_at = updated_at + interval '1 second' WHERE NOT deleted`); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM reference_docs r FULL JOIN user_snapshot_docs d USING (open_user_id)
WHERE d.doc IS DISTINCT FROM r.doc`).Scan(&differ); err != nil || differ != 0 {
		t.Fatalf("after an older writer changed the rows, %d documents of the view differ from the rows' (%v)", differ, err)
	}
}

// Concurrent users read model transactions writing the same user's members
// (two writers, as two nodes in a lease hand-over would) leave documents
// equal to the rows': a member's part is written by the statement that
// writes its row, under that row's lock, and each refresh runs after its
// transaction's writes.
func TestSnapshotDocumentsUnderConcurrentWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, conn := docsStore(t, ctx)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := s.Update(ctx, string(projections.ReadModelUsers), events.Position{Commit: 1, Prepare: 1}, func(tx projections.UserTx) error {
		return tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: 1, ChannelUserID: "c1", Name: "n", Gender: "male", Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at})
	}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for w := range 2 {
		wg.Go(func() {
			for i := range 20 {
				// The checkpoint only moves forward: each writer uses its own
				// projection name so neither refuses the other's position.
				err := s.Update(ctx, fmt.Sprint("writer-", w), events.Position{Commit: uint64(i + 2), Prepare: uint64(i + 2)}, func(tx projections.UserTx) error {
					for id := int64(1); id <= 4; id++ {
						if err := tx.PutMember(ctx, projections.Member{AppID: 1, OpenUserID: 1, MemberID: id, AppUserID: "a", AppGroupID: 1, FamilyGroupID: 1,
							Name: fmt.Sprint("w", w, "i", i), Relationship: "child", UpdatedAt: at.Add(time.Duration(i) * time.Second)}); err != nil {
							return err
						}
					}
					if i%5 == 4 {
						return tx.DeleteMember(ctx, int64(1+i%4), at)
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	compareDocs(t, ctx, conn, "after two concurrent writers")
}

// An erasure removes the user's document in its own transaction, and only
// there (the refresh no longer checks every touched user for a document
// left behind): a channel id erased and registered again by a new user in
// one transaction gets the new user's document, none is left for the
// erased user, and a later transaction that only writes the new user's
// members leaves the documents equal to the rows.
func TestSnapshotChannelFreedAndTakenInOneUpdate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, conn := docsStore(t, ctx)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	user := func(id int64) projections.User {
		return projections.User{AppID: 1, OpenUserID: id, ChannelUserID: "same-channel", Name: fmt.Sprint("n", id), Gender: "male", Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}
	}
	member := func(owner, id int64) projections.Member {
		return projections.Member{AppID: 1, OpenUserID: owner, MemberID: id, AppUserID: "a", AppGroupID: 1, FamilyGroupID: owner * 10, Name: "m", Relationship: "child", UpdatedAt: at}
	}
	steps := []func(tx projections.UserTx) error{
		func(tx projections.UserTx) error {
			if err := tx.PutUser(ctx, user(1)); err != nil {
				return err
			}
			return tx.PutMember(ctx, member(1, 100))
		},
		func(tx projections.UserTx) error {
			if err := tx.EraseUser(ctx, 1); err != nil {
				return err
			}
			if err := tx.PutUser(ctx, user(2)); err != nil {
				return err
			}
			return tx.PutMember(ctx, member(2, 200))
		},
		func(tx projections.UserTx) error { return tx.PutMember(ctx, member(2, 201)) },
		func(tx projections.UserTx) error { return tx.EraseUser(ctx, 2) },
	}
	for i, step := range steps {
		pos := uint64(i + 1)
		if err := s.Update(ctx, string(projections.ReadModelUsers), events.Position{Commit: pos, Prepare: pos}, step); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		compareDocs(t, ctx, conn, fmt.Sprint("after step ", i))
		snap, err := s.Snapshot(ctx, projections.SnapshotQuery{AppID: 1, ChannelUserID: "same-channel"})
		if err != nil {
			t.Fatalf("step %d: snapshot: %v", i, err)
		}
		want := map[int]int64{0: 1, 1: 2, 2: 2, 3: 0}[i]
		if got := map[bool]int64{true: snap.User.OpenUserID}[snap.Found]; got != want {
			t.Fatalf("step %d: the channel's snapshot is user %d (found %v), want %d", i, got, snap.Found, want)
		}
	}
}
