package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/projections"
)

// userCases are the cases of the users sub-suite.
var userCases = []testCase{
	{"CheckpointZeroForUnknownProjection", testCheckpointZero},
	{"UpdateSetsCheckpointWithWrites", testUpdateAtomic},
	{"FailedUpdateChangesNothing", testFailedUpdate},
	{"CheckpointsArePerProjection", testCheckpointsPerProjection},
	{"CheckpointFullUint64Range", testCheckpointRange},
	{"UserLookupsAndTenancy", testUserLookups},
	{"PutUserReplacesAllFields", testPutUserReplaces},
	{"UserRoundTrip", testUserRoundTrip},
	{"GroupsFilterOrderAndCount", testGroups},
	{"GroupRoundTrip", testGroupRoundTrip},
	{"MembersFilterAndOrder", testMembers},
	{"MembersUpdatedAfterStrict", testMembersUpdatedAfter},
	{"MemberRoundTrip", testMemberRoundTrip},
	{"DeleteMember", testDeleteMember},
	{"EraseUser", testEraseUser},
	{"ResetEmptiesEverything", testReset},
	{"ConcurrentUpdates", testConcurrentUpdates},
	{"TxReadsSeeOwnWrites", testTxReads},
	{"TxReadsAfterFailedUpdate", testTxReadsAfterFailure},
	{"ChannelIDConflictFailsUpdate", testChannelConflict},
	{"UserByPhone", testUserByPhone},
	{"ErasedUsersReplay", testErasedUsersReplay},
}

// The cases of the users read model: users, their family groups and members, and the checkpoints every read model shares.

func fullUser(app, open int64, channel string) projections.User {
	return projections.User{
		AppID:         app,
		OpenUserID:    open,
		ChannelUserID: channel,
		Name:          "张三 Zhang 👨‍👩‍👧",
		Nickname:      ptr("小张"),
		Gender:        "male",
		Avatar:        ptr("https://cdn.example/a/" + channel + ".png"),
		Phone:         ptr("+86 138 0013 8000"),
		Email:         ptr("zhang@example.com"),
		BirthDate:     ptr("1990-02-03"),
		Status:        "ACTIVE",
		RegisteredAt:  at(1),
		UpdatedAt:     at(2),
	}
}

func group(app, owner, id int64) projections.Group {
	return projections.Group{
		AppID:         app,
		OpenUserID:    owner,
		FamilyGroupID: id,
		AppGroupID:    id + 900000,
		Name:          fmt.Sprintf("家庭 %d", id),
		CreatedAt:     at(10),
		UpdatedAt:     at(11),
	}
}

func member(app, owner, groupID, id int64) projections.Member {
	return projections.Member{
		AppID:         app,
		OpenUserID:    owner,
		MemberID:      id,
		AppUserID:     fmt.Sprintf("app-user-%d", id),
		AppGroupID:    groupID + 900000,
		FamilyGroupID: groupID,
		Name:          fmt.Sprintf("成员 %d", id),
		Relationship:  "child",
		Gender:        ptr("female"),
		BirthDate:     ptr("2015-06-07"),
		Phone:         ptr("13900139000"),
		IDType:        ptr("ID_CARD"),
		IDNumber:      ptr("11010519491231002X"),
		Height:        ptr(int64(132)),
		Weight:        ptr(int64(2850)),
		BloodType:     ptr("O"),
		IsDefault:     id%2 == 0,
		UpdatedAt:     at(20),
	}
}

func put(t *testing.T, s Store, users []projections.User, groups []projections.Group, members []projections.Member) {
	t.Helper()
	writeAt(t, usersOf(s), "fixture", events.Position{Commit: 1, Prepare: 1}, func(tx projections.UserTx) error {
		ctx := context.Background()
		for _, u := range users {
			if err := tx.PutUser(ctx, u); err != nil {
				return fmt.Errorf("PutUser %d: %w", u.OpenUserID, err)
			}
		}
		for _, g := range groups {
			if err := tx.PutGroup(ctx, g); err != nil {
				return fmt.Errorf("PutGroup %d: %w", g.FamilyGroupID, err)
			}
		}
		for _, m := range members {
			if err := tx.PutMember(ctx, m); err != nil {
				return fmt.Errorf("PutMember %d: %w", m.MemberID, err)
			}
		}
		return nil
	})
}

// ---- cases ----

func testCheckpointZero(t *testing.T, s Store) {
	wantCheckpoint(t, s, "never-ran", events.Position{})
	writeAt(t, usersOf(s), "other", events.Position{Commit: 5, Prepare: 4}, func(projections.UserTx) error { return nil })
	wantCheckpoint(t, s, "never-ran", events.Position{})
}

func testUpdateAtomic(t *testing.T, s Store) {
	u := fullUser(1, 10, "c-10")
	pos := events.Position{Commit: 42, Prepare: 41}
	writeAt(t, usersOf(s), "users", pos, func(tx projections.UserTx) error { return tx.PutUser(ctx, u) })
	wantCheckpoint(t, s, "users", pos)
	wantRow(t, "after Update", must(s.User(ctx, 1, 10))(t), u)

	// An Update with no writes still moves the checkpoint.
	next := events.Position{Commit: 43, Prepare: 43}
	writeAt(t, usersOf(s), "users", next, func(projections.UserTx) error { return nil })
	wantCheckpoint(t, s, "users", next)
}

func testFailedUpdate(t *testing.T, s Store) {
	u := fullUser(1, 10, "c-10")
	g := group(1, 10, 100)
	m := member(1, 10, 100, 1000)
	m2 := member(1, 10, 100, 1001)
	failedUpdate(t, s, usersOf(s), func(tx projections.UserTx) error {
		return firstErr(tx.PutUser(ctx, u), tx.PutGroup(ctx, g), tx.PutMember(ctx, m), tx.PutMember(ctx, m2))
	}, func(tx projections.UserTx) error {
		u2 := u
		u2.Name, u2.ChannelUserID, u2.Nickname = "changed", "c-changed", nil
		g2 := g
		g2.Name, g2.Dissolved = "changed", true
		m3 := m2
		m3.Name, m3.Height = "changed", nil
		return firstErr(tx.PutUser(ctx, u2), tx.PutUser(ctx, fullUser(1, 11, "c-11")), tx.PutGroup(ctx, g2),
			tx.PutGroup(ctx, group(1, 10, 101)), tx.DeleteMember(ctx, m.MemberID, at(99)), tx.PutMember(ctx, m3),
			tx.PutMember(ctx, member(1, 10, 100, 1002)))
	}, func(when string) {
		wantRow(t, "user "+when, must(s.User(ctx, 1, 10))(t), u)
		wantRow(t, "user by channel id "+when, must(s.UserByChannelID(ctx, 1, "c-10"))(t), u)
		_, err := s.UserByChannelID(ctx, 1, "c-changed")
		wantNotFound(t, "UserByChannelID(channel id of failed Update) "+when, err)
		_, err = s.User(ctx, 1, 11)
		wantNotFound(t, "User inserted by failed Update "+when, err)
		wantG := g
		wantG.MemberCount = 2
		wantRows(t, "groups "+when, must(s.Groups(ctx, 1, 10))(t), []projections.Group{wantG})
		wantRows(t, "members "+when, must(s.Members(ctx, 1, 10, time.Time{}))(t), []projections.Member{m, m2})
	})

	// The store is still usable after a failed Update (at a position after
	// the fixture's, which nextPos numbers across the suite's cases).
	pos := nextPos()
	writeAt(t, usersOf(s), "users", pos, func(tx projections.UserTx) error {
		return tx.PutUser(ctx, fullUser(1, 11, "c-11"))
	})
	must(s.User(ctx, 1, 11))(t)
	wantCheckpoint(t, s, "users", pos)
}

func testCheckpointsPerProjection(t *testing.T, s Store) {
	a := events.Position{Commit: 100, Prepare: 99}
	b := events.Position{Commit: 5, Prepare: 3}
	noop := func(projections.UserTx) error { return nil }
	writeAt(t, usersOf(s), "a", a, noop)
	writeAt(t, usersOf(s), "b", b, noop)
	wantCheckpoint(t, s, "a", a)
	wantCheckpoint(t, s, "b", b)
	wantCheckpoint(t, s, "c", events.Position{})

	// Moving one leaves the other alone.
	a2 := events.Position{Commit: 101, Prepare: 1}
	writeAt(t, usersOf(s), "a", a2, noop)
	wantCheckpoint(t, s, "a", a2)
	wantCheckpoint(t, s, "b", b)

	// A checkpoint never moves back: a writer that is behind (a node that
	// lost its lease and has not noticed yet) fails as a whole, and its
	// rows are not written. Only a reset (a rebuild) starts it over.
	// Writing the same position again (a replayed batch) is fine.
	err := s.Update(context.Background(), "a", a, func(tx projections.UserTx) error {
		return tx.PutUser(ctx, fullUser(1, 7001, "behind"))
	})
	if !errors.Is(err, subscribe.ErrCheckpointBackwards) {
		t.Fatalf("Update moving the checkpoint back: %v, want ErrCheckpointBackwards", err)
	}
	wantCheckpoint(t, s, "a", a2)
	_, uerr := s.User(ctx, 1, 7001)
	wantNotFound(t, "the user written by an update that moved the checkpoint back", uerr)
	writeAt(t, usersOf(s), "a", a2, noop)
	wantCheckpoint(t, s, "a", a2)

	// A failed Update of one projection does not touch any checkpoint.
	err = s.Update(context.Background(), "b", events.Position{Commit: 6, Prepare: 6}, func(projections.UserTx) error {
		return errors.New("no")
	})
	if err == nil {
		t.Fatal("Update with failing fn returned nil")
	}
	wantCheckpoint(t, s, "a", a2)
	wantCheckpoint(t, s, "b", b)

	// Names are compared exactly.
	wantCheckpoint(t, s, "A", events.Position{})
	wantCheckpoint(t, s, "a ", events.Position{})
}

func testCheckpointRange(t *testing.T, s Store) {
	noop := func(projections.UserTx) error { return nil }
	// In increasing order across the whole uint64 range (checkpoints only
	// move forward, compared as Go compares them).
	ps := []events.Position{
		{Commit: 0, Prepare: 1},
		{Commit: 1<<63 - 1, Prepare: 1<<63 - 2},
		{Commit: 1<<63 - 1, Prepare: 1 << 63},
		{Commit: 1 << 63, Prepare: 1<<63 + 1},
		{Commit: ^uint64(0), Prepare: ^uint64(0) - 1},
		{Commit: ^uint64(0), Prepare: ^uint64(0)},
	}
	for _, p := range ps {
		writeAt(t, usersOf(s), "range", p, noop)
		wantCheckpoint(t, s, "range", p)
	}
	last := ps[len(ps)-1]
	for _, p := range ps[:len(ps)-1] {
		if err := s.Update(ctx, "range", p, noop); !errors.Is(err, subscribe.ErrCheckpointBackwards) {
			t.Errorf("Update back to %v after %v: %v, want ErrCheckpointBackwards", p, last, err)
		}
	}
	wantCheckpoint(t, s, "range", last)
}

func testUserLookups(t *testing.T, s Store) {
	u1 := fullUser(1, 10, "shared-channel-id")
	u2 := fullUser(2, 20, "shared-channel-id") // same partner id in another app
	u2.Name = "Other app"
	put(t, s, []projections.User{u1, u2}, nil, nil)

	wantRow(t, "User(1,10)", must(s.User(ctx, 1, 10))(t), u1)
	wantRow(t, "User(2,20)", must(s.User(ctx, 2, 20))(t), u2)

	got, err := s.UserByChannelID(ctx, 1, "shared-channel-id")
	if err != nil {
		t.Fatalf("UserByChannelID(1): %v", err)
	}
	wantRow(t, "UserByChannelID(1)", got, u1)
	got, err = s.UserByChannelID(ctx, 2, "shared-channel-id")
	if err != nil {
		t.Fatalf("UserByChannelID(2): %v", err)
	}
	wantRow(t, "UserByChannelID(2)", got, u2)

	// Tenancy: another app cannot see the user.
	_, err = s.User(ctx, 2, 10)
	wantNotFound(t, "User of another app", err)
	_, err = s.User(ctx, 3, 20)
	wantNotFound(t, "User of an unknown app", err)
	_, err = s.User(ctx, 1, 999)
	wantNotFound(t, "unknown User", err)
	_, err = s.UserByChannelID(ctx, 3, "shared-channel-id")
	wantNotFound(t, "UserByChannelID of another app", err)
	_, err = s.UserByChannelID(ctx, 1, "Shared-Channel-ID")
	wantNotFound(t, "UserByChannelID is case-sensitive", err)
	_, err = s.UserByChannelID(ctx, 1, "")
	wantNotFound(t, "UserByChannelID empty", err)
}

func testPutUserReplaces(t *testing.T, s Store) {
	u := fullUser(1, 10, "c-old")
	put(t, s, []projections.User{u}, nil, nil)

	repl := projections.User{
		AppID:         1,
		OpenUserID:    10,
		ChannelUserID: "c-new",
		Name:          "Renamed",
		Gender:        "",
		Status:        "ACTIVE",
		RegisteredAt:  at(5),
		UpdatedAt:     at(6),
	}
	put(t, s, []projections.User{repl}, nil, nil)
	wantRow(t, "replaced user", must(s.User(ctx, 1, 10))(t), repl)

	got, err := s.UserByChannelID(ctx, 1, "c-new")
	if err != nil {
		t.Fatalf("UserByChannelID(new): %v", err)
	}
	wantRow(t, "replaced user by channel id", got, repl)
	_, err = s.UserByChannelID(ctx, 1, "c-old")
	wantNotFound(t, "UserByChannelID(old channel id after replace)", err)

	// Moving the user to another app moves the tenancy with it.
	moved := repl
	moved.AppID = 2
	put(t, s, []projections.User{moved}, nil, nil)
	_, err = s.User(ctx, 1, 10)
	wantNotFound(t, "User in the old app after move", err)
	_, err = s.UserByChannelID(ctx, 1, "c-new")
	wantNotFound(t, "UserByChannelID in the old app after move", err)
	wantRow(t, "moved user", must(s.User(ctx, 2, 10))(t), moved)

	// The old channel id is free for another user.
	other := fullUser(1, 11, "c-old")
	put(t, s, []projections.User{other}, nil, nil)
	got, err = s.UserByChannelID(ctx, 1, "c-old")
	if err != nil {
		t.Fatalf("UserByChannelID(reused): %v", err)
	}
	wantRow(t, "user holding a reused channel id", got, other)
}

func testUserRoundTrip(t *testing.T, s Store) {
	full := fullUser(1, 1<<62, "渠道-ユーザー-🙂")
	full.RegisteredAt = time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	full.UpdatedAt = time.Date(2038, 1, 19, 3, 14, 8, 1000, time.FixedZone("CST", 8*3600))
	empty := projections.User{
		AppID:         -3,
		OpenUserID:    -5,
		ChannelUserID: "x",
		Nickname:      ptr(""), // set but empty is not nil
		Avatar:        nil,
		Phone:         ptr(""),
		Email:         nil,
		BirthDate:     ptr(""),
		RegisteredAt:  at(0),
		UpdatedAt:     at(0),
	}
	put(t, s, []projections.User{full, empty}, nil, nil)

	for _, want := range []projections.User{full, empty} {
		got := must(s.User(ctx, want.AppID, want.OpenUserID))(t)
		wantRow(t, fmt.Sprintf("User(%d)", want.OpenUserID), got, want)
		got, err := s.UserByChannelID(ctx, want.AppID, want.ChannelUserID)
		if err != nil {
			t.Fatalf("UserByChannelID(%q): %v", want.ChannelUserID, err)
		}
		wantRow(t, fmt.Sprintf("UserByChannelID(%q)", want.ChannelUserID), got, want)
	}

	// The store owns its copy: changing what was read or written later
	// does not change the stored row.
	got := must(s.User(ctx, full.AppID, full.OpenUserID))(t)
	*got.Nickname = "mutated"
	wantRow(t, "User after caller mutated a result", must(s.User(ctx, full.AppID, full.OpenUserID))(t), full)
	got, err := s.UserByChannelID(ctx, full.AppID, full.ChannelUserID)
	if err != nil {
		t.Fatal(err)
	}
	*got.Email = "mutated"
	wantRow(t, "User after caller mutated a UserByChannelID result", must(s.User(ctx, full.AppID, full.OpenUserID))(t), full)
}

func testGroups(t *testing.T, s Store) {
	const app, owner = int64(1), int64(10)
	g3, g1, g2 := group(app, owner, 300), group(app, owner, 100), group(app, owner, 200)
	dissolved := group(app, owner, 150)
	dissolved.Dissolved = true
	otherOwner := group(app, 11, 50)
	otherApp := group(2, owner, 60)
	g2.MemberCount = 99 // ignored on write

	live := func(gid, id int64) projections.Member { return member(app, owner, gid, id) }
	gone := func(gid, id int64) projections.Member {
		m := member(app, owner, gid, id)
		m.Deleted, m.DeletedAt = true, ptr(at(30))
		return m
	}
	put(t, s, nil,
		[]projections.Group{g3, g1, dissolved, otherOwner, g2, otherApp},
		[]projections.Member{
			live(100, 1), live(100, 2), gone(100, 3),
			live(200, 4),
			gone(300, 5),
			live(150, 6),
			member(app, 11, 50, 7),
		})

	gs := must(s.Groups(ctx, app, owner))(t)
	if !slices.Equal(ids(gs), []int64{100, 200, 300}) {
		t.Fatalf("Groups = %v, want [100 200 300]", ids(gs))
	}
	for i, want := range []struct {
		g     projections.Group
		count int
	}{{g1, 2}, {g2, 1}, {g3, 0}} {
		w := want.g
		w.MemberCount = want.count
		wantRow(t, fmt.Sprintf("Groups[%d]", i), gs[i], w)
	}

	if gs := must(s.Groups(ctx, 2, 11))(t); len(gs) != 0 {
		t.Errorf("Groups of another app = %v, want none", ids(gs))
	}
	if gs := must(s.Groups(ctx, app, 999))(t); len(gs) != 0 {
		t.Errorf("Groups of unknown user = %v, want none", ids(gs))
	}
	if gs := must(s.Groups(ctx, 2, owner))(t); !slices.Equal(ids(gs), []int64{60}) {
		t.Errorf("Groups(app 2) = %v, want [60]", ids(gs))
	}

	// Counts follow member writes; dissolving hides the group.
	writeAt(t, usersOf(s), "p", events.Position{Commit: 2, Prepare: 2}, func(tx projections.UserTx) error {
		if err := tx.DeleteMember(ctx, 1, at(40)); err != nil {
			return err
		}
		m := live(300, 8)
		if err := tx.PutMember(ctx, m); err != nil {
			return err
		}
		// Move member 4 from group 200 to group 300.
		if err := tx.PutMember(ctx, live(300, 4)); err != nil {
			return err
		}
		d := g2
		d.Dissolved = true
		return tx.PutGroup(ctx, d)
	})

	gs = must(s.Groups(ctx, app, owner))(t)
	if !slices.Equal(ids(gs), []int64{100, 300}) {
		t.Fatalf("Groups after dissolve = %v, want [100 300]", ids(gs))
	}
	if gs[0].MemberCount != 1 || gs[1].MemberCount != 2 {
		t.Errorf("MemberCount after writes = %d, %d, want 1, 2", gs[0].MemberCount, gs[1].MemberCount)
	}
}

func testGroupRoundTrip(t *testing.T, s Store) {
	g := projections.Group{
		AppID:         9,
		OpenUserID:    1 << 40,
		FamilyGroupID: 1<<63 - 1,
		AppGroupID:    -42,
		Name:          "Famille Müller — 李家 🏠",
		CreatedAt:     time.Date(2020, 2, 29, 0, 0, 0, 1000, time.UTC),
		UpdatedAt:     time.Date(2021, 3, 1, 12, 0, 0, 999999000, time.FixedZone("X", -7*3600)),
	}
	empty := projections.Group{AppID: 9, OpenUserID: 1 << 40, FamilyGroupID: 1, CreatedAt: at(0), UpdatedAt: at(0)}
	put(t, s, nil, []projections.Group{g, empty}, nil)
	gs := must(s.Groups(ctx, 9, 1<<40))(t)
	if !slices.Equal(ids(gs), []int64{1, 1<<63 - 1}) {
		t.Fatalf("Groups = %v", ids(gs))
	}
	wantRow(t, "empty group", gs[0], empty)
	wantRow(t, "full group", gs[1], g)
}

func testMembers(t *testing.T, s Store) {
	const app, owner = int64(1), int64(10)
	m5, m1, m3 := member(app, owner, 100, 5), member(app, owner, 100, 1), member(app, owner, 200, 3)
	deleted := member(app, owner, 100, 2)
	deleted.Deleted, deleted.DeletedAt = true, ptr(at(25))
	inDissolved := member(app, owner, 300, 4) // members of a dissolved group still list
	dissolved := group(app, owner, 300)
	dissolved.Dissolved = true
	put(t, s, nil,
		[]projections.Group{group(app, owner, 100), group(app, owner, 200), dissolved},
		[]projections.Member{m5, deleted, m1, inDissolved, m3,
			member(app, 11, 500, 6), member(2, owner, 600, 7)})

	ms := must(s.Members(ctx, app, owner, time.Time{}))(t)
	if !slices.Equal(ids(ms), []int64{1, 3, 4, 5}) {
		t.Fatalf("Members = %v, want [1 3 4 5]", ids(ms))
	}
	for i, want := range []projections.Member{m1, m3, inDissolved, m5} {
		wantRow(t, fmt.Sprintf("Members[%d]", i), ms[i], want)
	}
	if ms := must(s.Members(ctx, 2, 11, time.Time{}))(t); len(ms) != 0 {
		t.Errorf("Members of another app = %v, want none", ids(ms))
	}
	if ms := must(s.Members(ctx, 2, owner, time.Time{}))(t); !slices.Equal(ids(ms), []int64{7}) {
		t.Errorf("Members(app 2) = %v, want [7]", ids(ms))
	}
	if ms := must(s.Members(ctx, app, 999, time.Time{}))(t); len(ms) != 0 {
		t.Errorf("Members of unknown user = %v, want none", ids(ms))
	}
}

func testMembersUpdatedAfter(t *testing.T, s Store) {
	const app, owner = int64(1), int64(10)
	var ms []projections.Member
	for i := int64(1); i <= 5; i++ {
		m := member(app, owner, 100, 10-i) // ids 9..5, times ascending
		m.UpdatedAt = at(int(i))           // one microsecond apart
		ms = append(ms, m)
	}
	gone := member(app, owner, 100, 20)
	gone.UpdatedAt, gone.Deleted = at(100), true
	put(t, s, nil, nil, append(ms, gone))

	check := func(after time.Time, want []int64) {
		t.Helper()
		got := ids(must(s.Members(ctx, app, owner, after))(t))
		if !slices.Equal(got, want) {
			t.Errorf("Members(updatedAfter=%v) = %v, want %v", after.Format(time.RFC3339Nano), got, want)
		}
	}
	check(time.Time{}, []int64{5, 6, 7, 8, 9})
	check(at(0), []int64{5, 6, 7, 8, 9})
	check(at(2), []int64{5, 6, 7})                                   // strictly after: at(2) itself excluded
	check(at(2).In(time.FixedZone("CST", 8*3600)), []int64{5, 6, 7}) // same instant, other zone
	check(at(5), nil)
	check(at(1000), nil)
	check(time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), []int64{5, 6, 7, 8, 9})
}

func testMemberRoundTrip(t *testing.T, s Store) {
	full := projections.Member{
		AppID:         3,
		OpenUserID:    33,
		MemberID:      1<<63 - 1,
		AppUserID:     "外部-ID-ü-🙂",
		AppGroupID:    -1,
		FamilyGroupID: 1 << 50,
		Name:          "Zoë 王小明",
		Relationship:  "配偶",
		Gender:        ptr("unknown"),
		BirthDate:     ptr("1900-01-01"),
		Phone:         ptr("+1-555-0100"),
		IDType:        ptr("PASSPORT"),
		IDNumber:      ptr("E12345678"),
		Height:        ptr(int64(0)), // zero is set, not nil
		Weight:        ptr(int64(1<<62 + 7)),
		BloodType:     ptr("AB-"),
		IsDefault:     true,
		Deleted:       false,
		DeletedAt:     ptr(time.Date(2023, 7, 1, 1, 2, 3, 4000, time.FixedZone("Y", 5*3600+1800))),
		UpdatedAt:     time.Date(2023, 7, 1, 1, 2, 3, 5000, time.UTC),
	}
	bare := projections.Member{
		AppID:         3,
		OpenUserID:    33,
		MemberID:      -9,
		FamilyGroupID: 1,
		Gender:        ptr(""),
		Height:        ptr(int64(-1)),
		UpdatedAt:     at(0),
	}
	put(t, s, nil, nil, []projections.Member{full, bare})
	ms := must(s.Members(ctx, 3, 33, time.Time{}))(t)
	if !slices.Equal(ids(ms), []int64{-9, 1<<63 - 1}) {
		t.Fatalf("Members = %v", ids(ms))
	}
	wantRow(t, "bare member", ms[0], bare)
	wantRow(t, "full member", ms[1], full)

	// Replacing sets pointers back to nil.
	repl := full
	repl.Gender, repl.BirthDate, repl.Phone, repl.IDType, repl.IDNumber = nil, nil, nil, nil, nil
	repl.Height, repl.Weight, repl.BloodType, repl.DeletedAt = nil, nil, nil, nil
	repl.IsDefault, repl.Name = false, "renamed"
	put(t, s, nil, nil, []projections.Member{repl})
	ms = must(s.Members(ctx, 3, 33, time.Time{}))(t)
	if len(ms) != 2 {
		t.Fatalf("Members after replace = %v", ids(ms))
	}
	wantRow(t, "replaced member", ms[1], repl)

	// Results are copies.
	*ms[0].Height = 12345
	ms = must(s.Members(ctx, 3, 33, time.Time{}))(t)
	wantRow(t, "member after caller mutated a result", ms[0], bare)
}

func testDeleteMember(t *testing.T, s Store) {
	const app, owner = int64(1), int64(10)
	g := group(app, owner, 100)
	m1, m2 := member(app, owner, 100, 1), member(app, owner, 100, 2)
	put(t, s, nil, []projections.Group{g}, []projections.Member{m1, m2})

	del := at(500)
	writeAt(t, usersOf(s), "p", events.Position{Commit: 2, Prepare: 2}, func(tx projections.UserTx) error {
		if err := tx.DeleteMember(ctx, 1, del); err != nil {
			return err
		}
		// A missing member is not an error.
		return tx.DeleteMember(ctx, 424242, del)
	})

	ms := must(s.Members(ctx, app, owner, time.Time{}))(t)
	if !slices.Equal(ids(ms), []int64{2}) {
		t.Fatalf("Members after delete = %v, want [2]", ids(ms))
	}
	if gs := must(s.Groups(ctx, app, owner))(t); len(gs) != 1 || gs[0].MemberCount != 1 {
		t.Fatalf("Groups after delete = %+v, want one group with 1 member", gs)
	}
	wantCheckpoint(t, s, "p", events.Position{Commit: 2, Prepare: 2})

	if r, ok := s.(MemberReader); ok {
		got, err := r.Member(ctx, app, 1)
		if err != nil {
			t.Fatalf("Member(deleted): %v", err)
		}
		want := m1
		want.Deleted, want.DeletedAt, want.UpdatedAt = true, ptr(del), del
		wantRow(t, "deleted member", got, want)
		_, err = r.Member(ctx, 2, 1)
		wantNotFound(t, "Member of another app", err)
		_, err = r.Member(ctx, app, 424242)
		wantNotFound(t, "unknown Member", err)
	} else {
		t.Log("store does not implement storetest.MemberReader: deleted rows not inspected")
	}

	// Deleting twice is harmless.
	writeAt(t, usersOf(s), "p", events.Position{Commit: 3, Prepare: 3}, func(tx projections.UserTx) error {
		return tx.DeleteMember(ctx, 1, at(600))
	})

	if ms := must(s.Members(ctx, app, owner, time.Time{}))(t); !slices.Equal(ids(ms), []int64{2}) {
		t.Fatalf("Members after second delete = %v, want [2]", ids(ms))
	}

	// A later PutMember with Deleted=false restores the row as written.
	restored := m1
	restored.UpdatedAt = at(700)
	writeAt(t, usersOf(s), "p", events.Position{Commit: 4, Prepare: 4}, func(tx projections.UserTx) error {
		return tx.PutMember(ctx, restored)
	})

	ms = must(s.Members(ctx, app, owner, time.Time{}))(t)
	if !slices.Equal(ids(ms), []int64{1, 2}) {
		t.Fatalf("Members after restore = %v, want [1 2]", ids(ms))
	}
	wantRow(t, "restored member", ms[0], restored)

	// Order within one Update counts: a Put then a Delete leaves it deleted.
	writeAt(t, usersOf(s), "p", events.Position{Commit: 5, Prepare: 5}, func(tx projections.UserTx) error {
		if err := tx.PutMember(ctx, member(app, owner, 100, 3)); err != nil {
			return err
		}
		return tx.DeleteMember(ctx, 3, at(800))
	})

	ms = must(s.Members(ctx, app, owner, time.Time{}))(t)
	if !slices.Equal(ids(ms), []int64{1, 2}) {
		t.Fatalf("Members after put+delete = %v, want [1 2]", ids(ms))
	}
	if gs := must(s.Groups(ctx, app, owner))(t); len(gs) != 1 || gs[0].MemberCount != 2 {
		t.Fatalf("Groups after put+delete = %+v, want one group with 2 members", gs)
	}
	if r, ok := s.(MemberReader); ok {
		got, err := r.Member(ctx, app, 3)
		if err != nil {
			t.Fatalf("Member(3): %v", err)
		}
		if !got.Deleted || got.DeletedAt == nil || !sameTime(*got.DeletedAt, at(800)) || !sameTime(got.UpdatedAt, at(800)) {
			t.Errorf("member deleted in the Update that put it = %+v", got)
		}
	}
}

func testReset(t *testing.T, s Store) {
	put(t, s,
		[]projections.User{fullUser(1, 10, "c")},
		[]projections.Group{group(1, 10, 100)},
		[]projections.Member{member(1, 10, 100, 1)})
	writeAt(t, usersOf(s), "other", events.Position{Commit: 9, Prepare: 9}, func(projections.UserTx) error { return nil })

	if err := s.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	_, err := s.User(ctx, 1, 10)
	wantNotFound(t, "User after Reset", err)
	_, err = s.UserByChannelID(ctx, 1, "c")
	wantNotFound(t, "UserByChannelID after Reset", err)
	if gs := must(s.Groups(ctx, 1, 10))(t); len(gs) != 0 {
		t.Errorf("Groups after Reset = %v", ids(gs))
	}
	if ms := must(s.Members(ctx, 1, 10, time.Time{}))(t); len(ms) != 0 {
		t.Errorf("Members after Reset = %v", ids(ms))
	}
	wantCheckpoint(t, s, "fixture", events.Position{})
	wantCheckpoint(t, s, "other", events.Position{})

	// The store is usable after Reset, and the old rows do not come back.
	put(t, s, []projections.User{fullUser(1, 10, "c")}, []projections.Group{group(1, 10, 100)}, nil)
	if gs := must(s.Groups(ctx, 1, 10))(t); len(gs) != 1 || gs[0].MemberCount != 0 {
		t.Errorf("Groups after Reset and rebuild = %+v, want one empty group", gs)
	}
	wantCheckpoint(t, s, "fixture", events.Position{Commit: 1, Prepare: 1})
}

func testConcurrentUpdates(t *testing.T, s Store) {
	const writers, rounds = 4, 20
	errs := make(chan error, writers*rounds)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			proj := fmt.Sprintf("proj-%d", w)
			owner := int64(1000 + w)
			for r := range rounds {
				pos := events.Position{Commit: uint64(r + 1), Prepare: uint64(r + 1)}
				err := s.Update(ctx, proj, pos, func(tx projections.UserTx) error {
					u := fullUser(1, owner, fmt.Sprintf("w%d", w))
					u.UpdatedAt = at(r)
					if err := tx.PutUser(ctx, u); err != nil {
						return err
					}
					gid := owner*100 + int64(r%3)
					if err := tx.PutGroup(ctx, group(1, owner, gid)); err != nil {
						return err
					}
					m := member(1, owner, gid, owner*1000+int64(r))
					if err := tx.PutMember(ctx, m); err != nil {
						return err
					}
					if r%4 == 3 {
						return tx.DeleteMember(ctx, owner*1000+int64(r-1), at(r))
					}
					return nil
				})
				if err != nil {
					errs <- fmt.Errorf("%s round %d: %w", proj, r, err)
					return
				}
				// Readers run alongside writers.
				if _, err := s.Groups(ctx, 1, owner); err != nil {
					errs <- fmt.Errorf("%s round %d Groups: %w", proj, r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	for w := range writers {
		proj := fmt.Sprintf("proj-%d", w)
		owner := int64(1000 + w)
		wantCheckpoint(t, s, proj, events.Position{Commit: rounds, Prepare: rounds})
		u := must(s.User(ctx, 1, owner))(t)
		if u.ChannelUserID != fmt.Sprintf("w%d", w) || !sameTime(u.UpdatedAt, at(rounds-1)) {
			t.Errorf("user of %s = %+v", proj, u)
		}
		var want []int64
		deleted := map[int]bool{}
		for r := range rounds {
			if r%4 == 3 {
				deleted[r-1] = true
			}
		}
		for r := range rounds {
			if !deleted[r] {
				want = append(want, owner*1000+int64(r))
			}
		}
		sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
		if got := ids(must(s.Members(ctx, 1, owner, time.Time{}))(t)); !slices.Equal(got, want) {
			t.Errorf("members of %s = %v, want %v", proj, got, want)
		}
		total := 0
		gs := must(s.Groups(ctx, 1, owner))(t)
		for _, g := range gs {
			total += g.MemberCount
		}
		if len(gs) != 3 || total != len(want) {
			t.Errorf("groups of %s = %d groups with %d members, want 3 with %d", proj, len(gs), total, len(want))
		}
	}
}

func testTxReads(t *testing.T, s Store) {
	u := fullUser(1, 10, "c-10")
	g := group(1, 10, 100)
	g.Dissolved = true // Tx.Group sees dissolved groups too
	writeAt(t, usersOf(s), "p", events.Position{Commit: 1, Prepare: 1}, func(tx projections.UserTx) error {
		_, err := tx.User(ctx, 10)
		wantNotFound(t, "Tx.User before PutUser", err)
		_, err = tx.Group(ctx, 100)
		wantNotFound(t, "Tx.Group before PutGroup", err)

		if err := tx.PutUser(ctx, u); err != nil {
			return err
		}
		got, err := tx.User(ctx, 10)
		if err != nil {
			return fmt.Errorf("Tx.User after PutUser: %w", err)
		}
		wantRow(t, "Tx.User after PutUser", got, u)

		// Read, change, write, read again: the projector's partial update.
		got.Name, got.Nickname = "renamed", nil
		if err := tx.PutUser(ctx, got); err != nil {
			return err
		}
		again, err := tx.User(ctx, 10)
		if err != nil {
			return err
		}
		wantRow(t, "Tx.User after second PutUser", again, got)

		if err := tx.PutGroup(ctx, g); err != nil {
			return err
		}
		for id := int64(1); id <= 3; id++ {
			if err := tx.PutMember(ctx, member(1, 10, 100, id)); err != nil {
				return err
			}
		}
		if err := tx.DeleteMember(ctx, 2, at(50)); err != nil {
			return err
		}
		gotG, err := tx.Group(ctx, 100)
		if err != nil {
			return fmt.Errorf("Tx.Group after PutGroup: %w", err)
		}
		wantG := g
		wantG.MemberCount = 2
		wantRow(t, "Tx.Group after writes", gotG, wantG)
		return nil
	})

	want := u
	want.Name, want.Nickname = "renamed", nil
	wantRow(t, "User after commit", must(s.User(ctx, 1, 10))(t), want)
	if gs := must(s.Groups(ctx, 1, 10))(t); len(gs) != 0 {
		t.Errorf("Groups = %v, want none (the group is dissolved)", ids(gs))
	}

	// A later Update reads the committed rows, whatever their app; a
	// not-found read handled by fn does not spoil the transaction.
	other := fullUser(2, 20, "c-20")
	put(t, s, []projections.User{other}, nil, nil)
	writeAt(t, usersOf(s), "p", events.Position{Commit: 2, Prepare: 2}, func(tx projections.UserTx) error {
		got, err := tx.User(ctx, 10)
		if err != nil {
			return err
		}
		wantRow(t, "Tx.User of committed row", got, want)
		got, err = tx.User(ctx, 20)
		if err != nil {
			return err
		}
		wantRow(t, "Tx.User of another app", got, other)
		if _, err := tx.Group(ctx, 999); !errors.Is(err, projections.ErrNotFound) {
			return fmt.Errorf("Tx.Group(999) = %v, want ErrNotFound", err)
		}
		ng := group(1, 10, 999)
		if err := tx.PutGroup(ctx, ng); err != nil {
			return err
		}
		*got.Nickname = "mutated"
		return nil
	})

	wantRow(t, "other user after a Tx result was mutated", must(s.User(ctx, 2, 20))(t), other)
	if gs := must(s.Groups(ctx, 1, 10))(t); !slices.Equal(ids(gs), []int64{999}) {
		t.Errorf("Groups after not-found read and PutGroup = %v, want [999]", ids(gs))
	}
	wantCheckpoint(t, s, "p", events.Position{Commit: 2, Prepare: 2})
}

func testTxReadsAfterFailure(t *testing.T, s Store) {
	u := fullUser(1, 10, "c-10")
	g := group(1, 10, 100)
	put(t, s, []projections.User{u}, []projections.Group{g}, []projections.Member{member(1, 10, 100, 1)})

	boom := errors.New("boom")
	err := s.Update(ctx, "p", events.Position{Commit: 5, Prepare: 5}, func(tx projections.UserTx) error {
		changed := u
		changed.Name = "changed"
		if err := tx.PutUser(ctx, changed); err != nil {
			return err
		}
		if err := tx.DeleteMember(ctx, 1, at(60)); err != nil {
			return err
		}
		got, err := tx.User(ctx, 10)
		if err != nil {
			return err
		}
		if got.Name != "changed" {
			t.Errorf("Tx.User inside the failing Update: Name = %q, want changed", got.Name)
		}
		gotG, err := tx.Group(ctx, 100)
		if err != nil {
			return err
		}
		if gotG.MemberCount != 0 {
			t.Errorf("Tx.Group inside the failing Update: MemberCount = %d, want 0", gotG.MemberCount)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want boom", err)
	}
	writeAt(t, usersOf(s), "p", events.Position{Commit: 6, Prepare: 6}, func(tx projections.UserTx) error {
		got, err := tx.User(ctx, 10)
		if err != nil {
			return err
		}
		wantRow(t, "Tx.User after failed Update", got, u)
		gotG, err := tx.Group(ctx, 100)
		if err != nil {
			return err
		}
		wantG := g
		wantG.MemberCount = 1
		wantRow(t, "Tx.Group after failed Update", gotG, wantG)
		return nil
	})
}

// Two users of one app can never share a channel id: the write that tries
// fails its Update, which then changes nothing, in every store alike.
func testChannelConflict(t *testing.T, s Store) {
	a := fullUser(1, 10, "taken")
	put(t, s, []projections.User{a}, nil, nil)
	pos := must(s.Checkpoint(ctx, "fixture"))(t)
	err := s.Update(ctx, "fixture", events.Position{Commit: 99, Prepare: 99}, func(tx projections.UserTx) error {
		if err := tx.PutUser(ctx, fullUser(1, 11, "free")); err != nil {
			return err
		}
		// A store may report the conflict here or when the Update commits.
		return tx.PutUser(ctx, fullUser(1, 12, "taken"))
	})
	if err == nil {
		t.Fatal("Update giving two users of one app the same channel id succeeded")
	}
	wantCheckpoint(t, s, "fixture", pos)
	_, err = s.User(ctx, 1, 11)
	wantNotFound(t, "user written before the conflict", err)
	_, err = s.User(ctx, 1, 12)
	wantNotFound(t, "conflicting user", err)
	got, err := s.UserByChannelID(ctx, 1, "taken")
	if err != nil {
		t.Fatal(err)
	}
	wantRow(t, "holder of the channel id", got, a)
}

func testUserByPhone(t *testing.T, s Store) {
	withPhone := func(app, open int64, phone *string) projections.User {
		u := fullUser(app, open, fmt.Sprintf("c-%d", open))
		u.Phone = phone
		return u
	}
	const phone = "13800138000"
	// Written highest id first, so the lowest id is not the first written.
	users := []projections.User{
		withPhone(1, 30, ptr(phone)),
		withPhone(1, 20, ptr(phone)),
		withPhone(1, 25, ptr(phone)),
		withPhone(2, 5, ptr(phone)), // another app, lower id
		withPhone(1, 40, ptr("+86 "+phone)),
		withPhone(1, 41, ptr("13900139000")),
		withPhone(1, 42, nil),
	}
	put(t, s, users, nil, nil)

	byPhone := func(app int64, p string) (int64, error) {
		u, err := s.UserByPhone(ctx, app, p)
		return u.OpenUserID, err
	}
	wantUserID := func(what string, app int64, p string, want int64) {
		t.Helper()
		got, err := byPhone(app, p)
		if err != nil || got != want {
			t.Errorf("%s: UserByPhone(%d, %q) = %d, %v; want %d", what, app, p, got, err, want)
		}
	}
	wantNoUser := func(what string, app int64, p string) {
		t.Helper()
		got, err := byPhone(app, p)
		wantNotFound(t, fmt.Sprintf("%s: UserByPhone(%d, %q) = %d", what, app, p, got), err)
	}

	wantUserID("several users: the lowest id", 1, phone, 20)
	wantUserID("other app", 2, phone, 5)
	wantUserID("one user", 1, "13900139000", 41)
	wantUserID("another spelling is another phone", 1, "+86 "+phone, 40)
	wantNoUser("unknown app", 3, phone)
	wantNoUser("missing", 1, "13700137000")
	wantNoUser("exact match only", 1, phone[:10])
	wantNoUser("exact match only", 1, phone+" ")
	got, err := s.UserByPhone(ctx, 1, phone)
	if err != nil {
		t.Fatal(err)
	}
	wantRow(t, "UserByPhone's user", got, users[1])
	*got.Phone = "mutated" // results are copies
	wantUserID("after a caller mutated a result", 1, phone, 20)

	// The lowest changes its phone: the old phone finds the next, the new
	// phone finds it; dropping a phone takes the user out of the lookup.
	changed := withPhone(1, 20, ptr("13700137000"))
	put(t, s, []projections.User{changed, withPhone(1, 25, nil)}, nil, nil)
	wantUserID("old phone after PutUser changed it", 1, phone, 30)
	wantUserID("new phone after PutUser", 1, "13700137000", 20)
	put(t, s, []projections.User{withPhone(1, 30, nil)}, nil, nil)
	wantNoUser("every holder changed its phone", 1, phone)
	wantUserID("other app unaffected", 2, phone, 5)

	// A user moving to another app takes its phone along.
	put(t, s, []projections.User{withPhone(3, 20, ptr("13700137000"))}, nil, nil)
	wantNoUser("phone of a user that moved app", 1, "13700137000")
	wantUserID("phone in the user's new app", 3, "13700137000", 20)
}

// testEraseUser: erasure drops the user's row, groups and members (their
// channel id and phone free), and nobody else's; erasing twice is harmless.
func testEraseUser(t *testing.T, s Store) {
	const app = int64(1)
	gone, kept := fullUser(app, 10, "c-gone"), fullUser(app, 11, "c-kept")
	put(t, s, []projections.User{gone, kept},
		[]projections.Group{group(app, 10, 100), group(app, 11, 110)},
		[]projections.Member{member(app, 10, 100, 1), member(app, 10, 100, 2), member(app, 11, 110, 3)})
	for i := range 2 {
		writeAt(t, usersOf(s), "p", events.Position{Commit: uint64(2 + i), Prepare: uint64(2 + i)}, func(tx projections.UserTx) error {
			return tx.EraseUser(ctx, 10)
		})
		_, err := s.User(ctx, app, 10)
		wantNotFound(t, "erased User", err)
		_, err = s.UserByChannelID(ctx, app, "c-gone")
		wantNotFound(t, "erased UserByChannelID", err)
		if gs := must(s.Groups(ctx, app, 10))(t); len(gs) != 0 {
			t.Fatalf("groups of an erased user: %+v", gs)
		}
		if ms := must(s.Members(ctx, app, 10, time.Time{}))(t); len(ms) != 0 {
			t.Fatalf("members of an erased user: %+v", ms)
		}
		if ms := must(s.Members(ctx, app, 11, time.Time{}))(t); !slices.Equal(ids(ms), []int64{3}) {
			t.Fatalf("another user's members: %v", ids(ms))
		}
		if u, err := s.User(ctx, app, 11); err != nil || u.ChannelUserID != "c-kept" {
			t.Fatalf("another user: %+v %v", u, err)
		}
	}
	// The channel id is free for a new person.
	put(t, s, []projections.User{fullUser(app, 12, "c-gone")}, nil, nil)
}

// testErasedUsersReplay: a channel_user_id is sealed with its user's data
// key, so replaying the registrations of users erased since reads it as "".
// Two such users of one app, projected before their erasures, must not
// collide on (app_id, channel_user_id); the live user beside them is found
// by its id, and the erased ones are gone once their erasures are projected.
func testErasedUsersReplay(t *testing.T, s Store) {
	ctx := context.Background()
	p := projections.UsersProjector(s)
	n := uint64(0)
	apply := func(ps ...events.Payload) {
		t.Helper()
		batch := make([]events.Envelope, 0, len(ps))
		for _, pl := range ps {
			n++
			batch = append(batch, events.Envelope{Recorded: events.Recorded{ID: fmt.Sprintf("e%d", n), Position: events.Position{Commit: n, Prepare: n}},
				Payload: pl, Metadata: events.Metadata{AppID: 1, OccurredAt: at(int(n))}})
		}
		if err := p.Apply(ctx, batch, batch[len(batch)-1].Position); err != nil {
			t.Fatal(err)
		}
	}
	apply(
		&catalog.UserRegistered{AppID: 1, OpenUserID: 1, ChannelUserID: "", RegisteredAt: at(1)},
		&catalog.FamilyGroupUpserted{OpenUserID: 1, FamilyGroupID: 10, AppGroupID: 1, Created: true},
		&catalog.UserRegistered{AppID: 1, OpenUserID: 2, ChannelUserID: "", RegisteredAt: at(1)},
		&catalog.UserRegistered{AppID: 1, OpenUserID: 3, ChannelUserID: "li@example.com", RegisteredAt: at(1)},
	)
	apply(&catalog.UserErased{AppID: 1, OpenUserID: 1}, &catalog.UserErased{AppID: 1, OpenUserID: 2})
	if u, err := s.UserByChannelID(ctx, 1, "li@example.com"); err != nil || u.OpenUserID != 3 {
		t.Fatalf("live user by channel id: %+v %v", u, err)
	}
	for _, id := range []int64{1, 2} {
		if _, err := s.User(ctx, 1, id); !errors.Is(err, projections.ErrNotFound) {
			t.Fatalf("erased user %d: %v", id, err)
		}
	}
	if _, err := s.UserByChannelID(ctx, 1, ""); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("an empty channel id finds: %v", err)
	}
}
