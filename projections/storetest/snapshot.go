package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/nonces"
	"github.com/healthtech/partner-open-platform/projections"
)

// SnapshotStore is a read model that also serves the query side's
// one-round-trip snapshot read (queryapi.SnapshotReader).
type SnapshotStore interface {
	Store
	Snapshot(ctx context.Context, q projections.SnapshotQuery) (projections.Snapshot, error)
	SeesHead() bool
}

// RunSnapshot is the conformance suite of the snapshot read: it answers
// exactly what User (or UserByChannelID), Groups and Members answer, with
// the users read model's checkpoint, and keeps tenancy. The cases run in
// parallel, each on its own store from open.
func RunSnapshot(t *testing.T, open func(t *testing.T) SnapshotStore) {
	t.Run("MatchesSeparateReadsWithCheckpoint", func(t *testing.T) { t.Parallel(); testSnapshotMatchesSeparateReadsWithCheckpoint(t, open(t)) })
	t.Run("FollowsEveryWriteAndErasure", func(t *testing.T) { t.Parallel(); testSnapshotFollowsEveryWriteAndErasure(t, open(t)) })
	t.Run("BindsOnceUnderConcurrentReads", func(t *testing.T) { t.Parallel(); testSnapshotBindsOnceUnderConcurrentReads(t, open(t)) })
	t.Run("ConcurrentReadsEachGetTheirOwn", func(t *testing.T) { t.Parallel(); testSnapshotConcurrentReadsEachGetTheirOwn(t, open(t)) })
	t.Run("Tenancy", func(t *testing.T) { t.Parallel(); testSnapshotTenancy(t, open(t)) })
	t.Run("CanceledContextFails", func(t *testing.T) { t.Parallel(); testSnapshotCanceledContextFails(t, open(t)) })
}

// testSnapshotMatchesSeparateReadsWithCheckpoint: given users, groups
// (one dissolved) and members (one deleted, one updated late) of two apps
// and a users checkpoint, a snapshot by id, by channel id or of members
// updated after a time answers what the separate reads answer, at that
// checkpoint; an empty store answers not found at checkpoint zero.
func testSnapshotMatchesSeparateReadsWithCheckpoint(t *testing.T, s SnapshotStore) {
	ctx := context.Background()
	const app, owner = int64(1), int64(10)
	if snap := must(s.Snapshot(ctx, projections.SnapshotQuery{AppID: app, OpenUserID: owner}))(t); snap.Found || !snap.Checkpoint.IsZero() {
		t.Fatalf("empty store: %+v, want not found at checkpoint zero", snap)
	}
	dissolved := group(app, owner, 300)
	dissolved.Dissolved = true
	gone := member(app, owner, 100, 2)
	gone.Deleted, gone.DeletedAt = true, ptr(at(25))
	late := member(app, owner, 200, 3)
	late.UpdatedAt = at(40)
	put(t, s, []projections.User{fullUser(app, owner, "c-10"), fullUser(2, 11, "c-10")},
		[]projections.Group{group(app, owner, 100), group(app, owner, 200), dissolved, group(2, 11, 400)},
		[]projections.Member{member(app, owner, 100, 5), gone, member(app, owner, 100, 1), late, member(2, 11, 400, 7)})
	pos := events.Position{Commit: 77, Prepare: 76}
	writeAt(t, usersOf(s), string(projections.ReadModelUsers), pos, func(projections.UserTx) error { return nil })

	for _, q := range []projections.SnapshotQuery{
		{AppID: app, OpenUserID: owner},
		{AppID: app, ChannelUserID: "c-10"},
		{AppID: app, OpenUserID: owner, UpdatedAfter: at(30)},
		{AppID: 2, ChannelUserID: "c-10"},
	} {
		wantSnapshot(t, s, q, pos)
	}
	if snap := must(s.Snapshot(ctx, projections.SnapshotQuery{AppID: app, OpenUserID: owner, UpdatedAfter: at(30)}))(t); !slices.Equal(ids(snap.Members), []int64{3}) {
		t.Fatalf("members updated after: %v, want [3]", ids(snap.Members))
	}
}

// testSnapshotFollowsEveryWriteAndErasure: after each write (profile,
// member, member deletion, group dissolution) the snapshot matches the
// separate reads at the write's checkpoint; after an erasure it answers
// nothing, and the erased channel id can be taken by a new user.
func testSnapshotFollowsEveryWriteAndErasure(t *testing.T, s SnapshotStore) {
	ctx := context.Background()
	const app, owner = int64(1), int64(10)
	put(t, s, []projections.User{fullUser(app, owner, "c-10"), fullUser(app, 11, "c-11")},
		[]projections.Group{group(app, owner, 100), group(app, owner, 200), group(app, 11, 300)},
		[]projections.Member{member(app, owner, 100, 1), member(app, owner, 100, 2), member(app, owner, 200, 3), member(app, 11, 300, 4)})
	byID := projections.SnapshotQuery{AppID: app, OpenUserID: owner}
	byChannel := projections.SnapshotQuery{AppID: app, ChannelUserID: "c-10"}
	steps := []struct {
		what string
		fn   func(projections.UserTx) error
	}{
		{"profile update", func(tx projections.UserTx) error {
			u := fullUser(app, owner, "c-10")
			u.Name, u.Phone, u.UpdatedAt = "李四", nil, at(50)
			return tx.PutUser(ctx, u)
		}},
		{"member update", func(tx projections.UserTx) error {
			m := member(app, owner, 100, 2)
			m.Name, m.Height, m.UpdatedAt = "改名", nil, at(51)
			return tx.PutMember(ctx, m)
		}},
		{"member delete", func(tx projections.UserTx) error { return tx.DeleteMember(ctx, 1, at(52)) }},
		{"group dissolve", func(tx projections.UserTx) error {
			g := group(app, owner, 200)
			g.Dissolved, g.UpdatedAt = true, at(53)
			if err := tx.PutGroup(ctx, g); err != nil {
				return err
			}
			return tx.DeleteMember(ctx, 3, at(53))
		}},
	}
	for i, step := range steps {
		pos := events.Position{Commit: uint64(100 + i), Prepare: uint64(100 + i)}
		writeAt(t, usersOf(s), string(projections.ReadModelUsers), pos, step.fn)
		t.Logf("after %s", step.what)
		wantSnapshot(t, s, byID, pos)
		wantSnapshot(t, s, byChannel, pos)
	}
	if snap := must(s.Snapshot(ctx, byID))(t); len(snap.Groups) != 1 || snap.Groups[0].MemberCount != 1 || !slices.Equal(ids(snap.Members), []int64{2}) {
		t.Fatalf("after the writes: groups %+v, members %v; want group 100 with one member, member 2", snap.Groups, ids(snap.Members))
	}
	pos := events.Position{Commit: 200, Prepare: 200}
	writeAt(t, usersOf(s), string(projections.ReadModelUsers), pos, func(tx projections.UserTx) error { return tx.EraseUser(ctx, owner) })
	for _, q := range []projections.SnapshotQuery{byID, byChannel} {
		snap := must(s.Snapshot(ctx, q))(t)
		if snap.Found || len(snap.Groups) != 0 || len(snap.Members) != 0 || snap.User.Name != "" || snap.Checkpoint != pos {
			t.Fatalf("%+v after erasure: %+v, want nothing at %v", q, snap, pos)
		}
	}
	// The neighbour is untouched, and a new user may take the erased
	// user's channel id in one transaction with the erasure of another.
	wantSnapshot(t, s, projections.SnapshotQuery{AppID: app, OpenUserID: 11}, pos)
	pos = events.Position{Commit: 201, Prepare: 201}
	writeAt(t, usersOf(s), string(projections.ReadModelUsers), pos, func(tx projections.UserTx) error {
		if err := tx.EraseUser(ctx, 11); err != nil {
			return err
		}
		return tx.PutUser(ctx, fullUser(app, 12, "c-11"))
	})
	snap := wantSnapshot(t, s, projections.SnapshotQuery{AppID: app, ChannelUserID: "c-11"}, pos)
	if snap.User.OpenUserID != 12 || len(snap.Groups) != 0 || len(snap.Members) != 0 {
		t.Fatalf("channel id c-11 after erasure and registration: %+v, want user 12 alone", snap)
	}
}

// testSnapshotBindsOnceUnderConcurrentReads: concurrent snapshots that bind
// one signature key to different values all see one bound value, which
// Bind and later reads also see; a fresh key binds its own value.
func testSnapshotBindsOnceUnderConcurrentReads(t *testing.T, s SnapshotStore) {
	ctx := context.Background()
	put(t, s, []projections.User{fullUser(1, 10, "c-10")}, nil, nil)
	expires := time.Now().Add(time.Minute)
	const readers = 16
	bound := make([]string, readers)
	errs := make([]error, readers)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() {
			// Half bind the signature to a read, half to a write route.
			v := "GET"
			if i%2 == 1 {
				v = fmt.Sprintf("POST /x/%d", i)
			}
			snap, err := s.Snapshot(ctx, projections.SnapshotQuery{AppID: 1, OpenUserID: 10,
				Bind: &nonces.Binding{Scope: "m", Key: "1:sig", Value: v, Expires: expires}})
			bound[i], errs[i] = snap.Bound, err
			if err == nil && !snap.Found {
				errs[i] = fmt.Errorf("reader %d: user not found", i)
			}
		})
	}
	wg.Wait()
	for i := range readers {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if bound[i] != bound[0] || bound[i] == "" {
			t.Fatalf("readers saw bindings %q: want one value for all", bound)
		}
	}
	// The store's own Bind sees the same binding, and so does a read
	// repeated later; a fresh key binds its own value.
	if got, fresh, err := s.Bind(ctx, "m", "1:sig", "DELETE /y", expires); err != nil || fresh || got != bound[0] {
		t.Fatalf("Bind after the reads = %q, %v, %v; want %q, not fresh", got, fresh, err, bound[0])
	}
	snap := must(s.Snapshot(ctx, projections.SnapshotQuery{AppID: 1, OpenUserID: 10,
		Bind: &nonces.Binding{Scope: "m", Key: "1:sig", Value: "PATCH /z", Expires: expires}}))(t)
	if snap.Bound != bound[0] {
		t.Fatalf("a later read's binding = %q, want %q", snap.Bound, bound[0])
	}
	snap = must(s.Snapshot(ctx, projections.SnapshotQuery{AppID: 1, OpenUserID: 10,
		Bind: &nonces.Binding{Scope: "m", Key: "1:other", Value: "GET", Expires: expires}}))(t)
	if snap.Bound != "GET" || !snap.Found {
		t.Fatalf("a new key's binding = %q (found %v), want GET", snap.Bound, snap.Found)
	}
}

// testSnapshotConcurrentReadsEachGetTheirOwn: many reads at once (a read
// model may send them together) each answer their own user, by id or
// channel id, at the checkpoint; reads of unknown users answer not found
// and fail no other read.
func testSnapshotConcurrentReadsEachGetTheirOwn(t *testing.T, s SnapshotStore) {
	ctx := context.Background()
	const app, users = int64(1), 24
	var us []projections.User
	var gs []projections.Group
	var ms []projections.Member
	for i := range int64(users) {
		id := 1000 + i
		us = append(us, fullUser(app, id, fmt.Sprintf("c-%d", id)))
		gs = append(gs, group(app, id, 10*id))
		for j := range i % 4 {
			ms = append(ms, member(app, id, 10*id, 100*id+j))
		}
	}
	put(t, s, us, gs, ms)
	pos := events.Position{Commit: 90, Prepare: 90}
	writeAt(t, usersOf(s), string(projections.ReadModelUsers), pos, func(projections.UserTx) error { return nil })
	const readers = 96
	snaps := make([]projections.Snapshot, readers)
	errs := make([]error, readers)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() {
			snaps[i], errs[i] = s.Snapshot(ctx, readerQuery(app, i))
		})
	}
	wg.Wait()
	for i := range readers {
		if errs[i] != nil {
			t.Fatalf("reader %d: %v", i, errs[i])
		}
		snap, q := snaps[i], readerQuery(app, i)
		if snap.Checkpoint != pos {
			t.Fatalf("reader %d: checkpoint %v, want %v", i, snap.Checkpoint, pos)
		}
		if i%5 == 4 {
			if snap.Found {
				t.Fatalf("reader %d (%+v, unknown user): found %+v", i, q, snap.User)
			}
			continue
		}
		id := 1000 + int64(i%users)
		if !snap.Found || snap.User.OpenUserID != id || len(snap.Groups) != 1 || snap.Groups[0].FamilyGroupID != 10*id || len(snap.Members) != int(id%4) {
			t.Fatalf("reader %d (%+v): %+v, want user %d with its group and %d members", i, q, snap, id, id%4)
		}
		for _, m := range snap.Members {
			if m.OpenUserID != id {
				t.Fatalf("reader %d: member %+v of another user", i, m)
			}
		}
	}
}

// testSnapshotTenancy: another app's user, an unknown id and an unknown
// channel id answer nothing.
func testSnapshotTenancy(t *testing.T, s SnapshotStore) {
	ctx := context.Background()
	put(t, s, []projections.User{fullUser(1, 10, "c-10")}, []projections.Group{group(1, 10, 100)}, []projections.Member{member(1, 10, 100, 1)})
	for _, q := range []projections.SnapshotQuery{
		{AppID: 2, OpenUserID: 10},
		{AppID: 2, ChannelUserID: "c-10"},
		{AppID: 1, OpenUserID: 99},
		{AppID: 1, ChannelUserID: "nobody"},
	} {
		snap := must(s.Snapshot(ctx, q))(t)
		if snap.Found || len(snap.Groups) != 0 || len(snap.Members) != 0 {
			t.Fatalf("%+v: %+v, want nothing", q, snap)
		}
	}
}

// testSnapshotCanceledContextFails: a snapshot on an ended context fails.
func testSnapshotCanceledContextFails(t *testing.T, s SnapshotStore) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	if _, err := s.Snapshot(ctx, projections.SnapshotQuery{AppID: 1, OpenUserID: 10}); err == nil {
		t.Fatal("a snapshot on an ended context succeeded")
	}
}

// wantSnapshot checks that a snapshot answers what the separate reads
// answer (User or UserByChannelID, Groups, Members) at checkpoint pos.
func wantSnapshot(t *testing.T, s SnapshotStore, q projections.SnapshotQuery, pos events.Position) projections.Snapshot {
	t.Helper()
	ctx := context.Background()
	snap := must(s.Snapshot(ctx, q))(t)
	if !snap.Found || snap.Checkpoint != pos {
		t.Fatalf("%+v: found %v at %v, want found at %v", q, snap.Found, snap.Checkpoint, pos)
	}
	var u projections.User
	if q.ChannelUserID != "" {
		u = must(s.UserByChannelID(ctx, q.AppID, q.ChannelUserID))(t)
	} else {
		u = must(s.User(ctx, q.AppID, q.OpenUserID))(t)
	}
	wantRow(t, "user", snap.User, u)
	groups := must(s.Groups(ctx, q.AppID, u.OpenUserID))(t)
	members := must(s.Members(ctx, q.AppID, u.OpenUserID, q.UpdatedAfter))(t)
	if len(snap.Groups) != len(groups) || len(snap.Members) != len(members) {
		t.Fatalf("%+v: %d groups and %d members, want %d and %d", q, len(snap.Groups), len(snap.Members), len(groups), len(members))
	}
	for i := range groups {
		wantRow(t, "group", snap.Groups[i], groups[i])
	}
	for i := range members {
		wantRow(t, "member", snap.Members[i], members[i])
	}
	return snap
}

// readerQuery is the query of reader i in ConcurrentReadsEachGetTheirOwn:
// every fifth an unknown user, the others users 1000+i%24, by open user id
// or, every other reader, by channel user id.
func readerQuery(app int64, i int) projections.SnapshotQuery {
	id := 1000 + int64(i%24)
	switch {
	case i%5 == 4 && i%2 == 0:
		return projections.SnapshotQuery{AppID: app, OpenUserID: 5000 + int64(i)}
	case i%5 == 4:
		return projections.SnapshotQuery{AppID: app, ChannelUserID: fmt.Sprintf("nobody-%d", i)}
	case i%2 == 0:
		return projections.SnapshotQuery{AppID: app, OpenUserID: id}
	default:
		return projections.SnapshotQuery{AppID: app, ChannelUserID: fmt.Sprintf("c-%d", id)}
	}
}
