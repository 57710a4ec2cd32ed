package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/projections"
)

// refreshCountingStore is a Store on a migrated database of its own that
// counts the refresh statements it sends.
func refreshCountingStore(t *testing.T) (*Store, *pgtest.Trace) {
	t.Helper()
	pool, trace := pgtest.TracedPool(t, MigratedDB(t))
	return &Store{pool: pool}, trace
}

type registrar interface {
	RegisterUser(context.Context, projections.User) error
	NameGroup(context.Context, projections.Group) error
}

// drawnText is a string of every kind of character a JSON text escapes
// or keeps: quotes, backslashes, each control character, '/', DEL,
// multi-byte characters (U+2028 among them).
func drawnText(rng *rand.Rand) string {
	pool := []string{`"`, `\`, "/", "\x7f", "é", "中", "😀", "\u2028", "a", "Z", "0", " ", "<", ">", "&", "'"}
	for c := byte(1); c < 0x20; c++ {
		pool = append(pool, string([]byte{c}))
	}
	var b strings.Builder
	for range rng.IntN(12) {
		b.WriteString(pool[rng.IntN(len(pool))])
	}
	return b.String()
}

// A user registered by a transaction gets their snapshot document built
// in Go (freshdoc.go) and no refresh statement; the document is, byte for
// byte, the one user_snapshot_docs builds from the rows the transaction
// wrote, whatever the strings, the missing fields, the times' zones and
// sub-microsecond parts, the groups named (again) and the profile changed
// in the same transaction. Users whose rows the transaction writes in
// other ways (a member, a group written whole, an erasure, a group of
// another app) are refreshed by the statement, and theirs match the view
// too.
func TestRegisteredUsersDocumentsAreTheViews(t *testing.T) {
	ctx := context.Background()
	s, refreshes := refreshCountingStore(t)
	pool := s.pool

	rng := rand.New(rand.NewPCG(7, 30))
	zones := []*time.Location{time.UTC, time.FixedZone("x", 5*3600+1800), time.FixedZone("y", -7*3600)}
	drawTime := func() time.Time {
		base := time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC)
		if rng.IntN(3) > 0 {
			base = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
		}
		return base.Add(time.Duration(rng.Int64N(int64(48 * time.Hour)))).In(zones[rng.IntN(len(zones))])
	}
	optText := func() *string {
		if rng.IntN(3) == 0 {
			return nil
		}
		v := drawnText(rng)
		return &v
	}
	user := func(id int64) projections.User {
		return projections.User{AppID: 1 + id%3, OpenUserID: id, ChannelUserID: fmt.Sprintf("c-%d-%s", id, drawnText(rng)),
			Name: drawnText(rng), Nickname: optText(), Gender: drawnText(rng), Avatar: optText(), Phone: optText(),
			Email: optText(), BirthDate: optText(), Status: "ACTIVE", RegisteredAt: drawTime(), UpdatedAt: drawTime()}
	}
	group := func(u projections.User, id int64) projections.Group {
		return projections.Group{AppID: u.AppID, OpenUserID: u.OpenUserID, FamilyGroupID: id, AppGroupID: rng.Int64N(1 << 40),
			Name: drawnText(rng), CreatedAt: drawTime(), UpdatedAt: drawTime()}
	}
	// registers writes users from..from+n-1, each with up to four groups
	// named in any id order (some named twice), and some profiles changed
	// after their groups, as a batch of registers and updates applies.
	registers := func(tx projections.UserTx, from, n int64) error {
		r := tx.(registrar)
		for id := from; id < from+n; id++ {
			u := user(id)
			if err := r.RegisterUser(ctx, u); err != nil {
				return err
			}
			k := rng.IntN(5)
			for _, j := range rng.Perm(k) {
				g := group(u, id*10+int64(j))
				if err := r.NameGroup(ctx, g); err != nil {
					return err
				}
				if rng.IntN(3) == 0 {
					g.Name, g.UpdatedAt = drawnText(rng), drawTime()
					if err := r.NameGroup(ctx, g); err != nil {
						return err
					}
				}
			}
			if rng.IntN(4) == 0 {
				got, err := tx.User(ctx, id)
				if err != nil {
					return err
				}
				got.Name, got.Email, got.UpdatedAt = drawnText(rng), optText(), drawTime()
				if err := tx.PutUser(ctx, got); err != nil {
					return err
				}
			}
		}
		return nil
	}

	if err := s.Update(ctx, string(projections.ReadModelUsers), events.Position{Commit: 1, Prepare: 1}, func(tx projections.UserTx) error {
		return registers(tx, 1, 60)
	}); err != nil {
		t.Fatal(err)
	}
	if n := refreshes.Count("user_snapshot_docs"); n != 0 {
		t.Fatalf("a transaction of registers sent %d refresh statements, want none (its documents built in Go)", n)
	}

	// Registers whose users then get writes only the refresh follows.
	if err := s.Update(ctx, string(projections.ReadModelUsers), events.Position{Commit: 2, Prepare: 2}, func(tx projections.UserTx) error {
		if err := registers(tx, 100, 20); err != nil {
			return err
		}
		for id := int64(100); id < 120; id++ {
			var err error
			switch id % 4 {
			case 0:
				err = tx.PutMember(ctx, projections.Member{AppID: 1 + id%3, OpenUserID: id, MemberID: id, AppUserID: drawnText(rng),
					AppGroupID: 1, FamilyGroupID: id * 10, Name: drawnText(rng), Relationship: "self", UpdatedAt: drawTime()})
			case 1:
				g := group(user(id), id*10+7)
				g.AppID, g.Dissolved = 1+id%3, rng.IntN(2) == 0
				err = tx.PutGroup(ctx, g)
			case 2:
				err = tx.EraseUser(ctx, id)
			case 3:
				// A group of another app: the view leaves it out.
				g := group(user(id), id*10+8)
				g.AppID = 1 + (id+1)%3
				err = tx.(registrar).NameGroup(ctx, g)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	var docs int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM user_snapshots`).Scan(&docs); err != nil {
		t.Fatal(err)
	}
	if want := 60 + 15; docs != want {
		t.Fatalf("%d documents, want %d (80 users registered, 5 erased)", docs, want)
	}
	docsAreTheViews(t, pool)
}

// docsAreTheViews fails t for every user whose stored document (or app,
// or channel id) is not the one user_snapshot_docs builds from the rows.
func docsAreTheViews(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	rows, err := pool.Query(ctx, `SELECT open_user_id, s.app_id, d.app_id, s.channel_user_id, d.channel_user_id, s.doc, d.doc
FROM user_snapshots s FULL JOIN user_snapshot_docs d USING (open_user_id)
WHERE s.doc IS DISTINCT FROM d.doc OR s.app_id IS DISTINCT FROM d.app_id OR s.channel_user_id IS DISTINCT FROM d.channel_user_id
ORDER BY open_user_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var sApp, dApp *int64
		var sCh, dCh *string
		var sDoc, dDoc []byte
		if err := rows.Scan(&id, &sApp, &dApp, &sCh, &dCh, &sDoc, &dDoc); err != nil {
			t.Fatal(err)
		}
		t.Errorf("user %d: stored app %v channel %q document\n%q\nthe view's: app %v channel %q\n%q", id, sApp, deref(sCh), sDoc, dApp, deref(dCh), dDoc)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// The users read model's projector registers through RegisterUser: a
// batch of registrations (one of an erased user, whose channel id reads
// as "", one whose profile changes in the same batch) with their groups
// sends no refresh statement, and the documents are the view's and read
// back as the user, the groups and no member.
func TestUsersProjectorRegistersWithoutARefresh(t *testing.T) {
	ctx := context.Background()
	s, refreshes := refreshCountingStore(t)
	at := time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.FixedZone("x", 8*3600))
	nick := "A\"\n"
	env := func(i int, p events.Payload) events.Envelope {
		return events.Envelope{Payload: p, Metadata: events.Metadata{AppID: 3, OccurredAt: at.Add(time.Duration(i) * time.Millisecond)}}
	}
	batch := []events.Envelope{
		env(0, &catalog.UserRegistered{AppID: 3, OpenUserID: 41, ChannelUserID: "ch-41", Profile: catalog.Profile{Name: "李雷", Nickname: &nick, Gender: "male"}, RegisteredAt: at}),
		env(1, &catalog.FamilyGroupUpserted{ChannelUserID: "ch-41", OpenUserID: 41, FamilyGroupID: 412, AppGroupID: 9, Name: "home", Created: true}),
		env(2, &catalog.FamilyGroupUpserted{ChannelUserID: "ch-41", OpenUserID: 41, FamilyGroupID: 411, AppGroupID: 8, Name: "work", Created: true}),
		env(3, &catalog.UserRegistered{AppID: 3, OpenUserID: 42, Profile: catalog.Profile{Name: "erased", Gender: "unknown"}, RegisteredAt: at}),
		env(4, &catalog.UserRegistered{AppID: 3, OpenUserID: 43, ChannelUserID: "ch-43", Profile: catalog.Profile{Name: "Han", Gender: "female"}, RegisteredAt: at}),
		env(5, &catalog.UserProfileUpdated{OpenUserID: 43, Profile: catalog.Profile{Name: "Han Meimei", Gender: "female", Email: &nick}}),
	}
	if err := projections.UsersProjector(s).Apply(ctx, batch, events.Position{Commit: 9, Prepare: 9}); err != nil {
		t.Fatal(err)
	}
	if n := refreshes.Count("user_snapshot_docs"); n != 0 {
		t.Fatalf("the projector's batch of registers sent %d refresh statements, want none", n)
	}
	docsAreTheViews(t, s.pool)
	snap, err := s.Snapshot(ctx, projections.SnapshotQuery{AppID: 3, ChannelUserID: "ch-41"})
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Found || snap.User.Name != "李雷" || *snap.User.Nickname != nick || len(snap.Groups) != 2 || snap.Groups[0].FamilyGroupID != 411 ||
		snap.Groups[1].Name != "home" || len(snap.Members) != 0 || !snap.User.UpdatedAt.Equal(at.Truncate(time.Microsecond)) || !snap.Groups[1].CreatedAt.Equal(at.Add(time.Millisecond).Truncate(time.Microsecond)) {
		t.Fatalf("snapshot of ch-41 = %+v", snap)
	}
	snap, err = s.Snapshot(ctx, projections.SnapshotQuery{AppID: 3, OpenUserID: 43})
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Found || snap.User.Name != "Han Meimei" || snap.User.Email == nil || *snap.User.Email != nick || len(snap.Groups) != 0 {
		t.Fatalf("snapshot of user 43 = %+v", snap)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
