package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
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
// the users family's checkpoint, and keeps tenancy.
func RunSnapshot(t *testing.T, open func(t *testing.T) SnapshotStore) {
	t.Run("MatchesSeparateReadsWithCheckpoint", func(t *testing.T) {
		s := open(t)
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
		writeAt(t, usersOf(s), string(projections.FamilyUsers), pos, func(projections.UserTx) error { return nil })

		for _, q := range []projections.SnapshotQuery{
			{AppID: app, OpenUserID: owner},
			{AppID: app, ChannelUserID: "c-10"},
			{AppID: app, OpenUserID: owner, UpdatedAfter: at(30)},
			{AppID: 2, ChannelUserID: "c-10"},
		} {
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
		}
		if snap := must(s.Snapshot(ctx, projections.SnapshotQuery{AppID: app, OpenUserID: owner, UpdatedAfter: at(30)}))(t); !slices.Equal(ids(snap.Members), []int64{3}) {
			t.Fatalf("members updated after: %v, want [3]", ids(snap.Members))
		}
	})
	t.Run("Tenancy", func(t *testing.T) {
		s := open(t)
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
	})
	t.Run("CanceledContextFails", func(t *testing.T) {
		s := open(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
		defer cancel()
		<-ctx.Done()
		if _, err := s.Snapshot(ctx, projections.SnapshotQuery{AppID: 1, OpenUserID: 10}); err == nil {
			t.Fatal("a snapshot on an ended context succeeded")
		}
	})
}
