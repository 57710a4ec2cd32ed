package queryapi

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/postgres"
)

// On Postgres, the one-trip snapshot (the user's document read by a
// hand-written scanner, the answer appended by hand) answers with the bytes
// the separate reads rendered through encoding/json did: by open and by
// channel user id, with and without updated_after, in the configured time
// zone east and west of UTC, with strings that need escapes and optional
// fields absent; an erased user is not found either way.
func TestSnapshotOnPostgresBytesAsSeparateReads(t *testing.T) {
	ctx := context.Background()
	s, err := postgres.Open(ctx, pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const app = int64(3)
	at := func(sec int) time.Time { return time.Date(2026, 3, 4, 23, 30, sec, 123456000, time.UTC) }
	str := func(v string) *string { return &v }
	num := func(v int64) *int64 { return &v }
	odd := "引号\"反斜杠\\ <b>&</b>\ttab\u2028 🙂"
	err = s.Update(ctx, string(projections.ReadModelUsers), events.Position{Commit: 5, Prepare: 5}, func(tx projections.UserTx) error {
		users := []projections.User{
			{AppID: app, OpenUserID: 10, ChannelUserID: "c/10&<x>", Name: odd, Nickname: str(odd), Gender: "female", Avatar: str("https://x/a.png?a=1&b=2"),
				Phone: str("13812345678"), Email: str("a@x"), BirthDate: str("1990-01-02"), Status: "ACTIVE", RegisteredAt: at(1), UpdatedAt: at(2)},
			{AppID: app, OpenUserID: 11, ChannelUserID: "c-11", Name: "n", Gender: "unknown", Status: "ACTIVE", RegisteredAt: at(3), UpdatedAt: at(3)},
			{AppID: app, OpenUserID: 12, ChannelUserID: "c-12", Name: "gone", Gender: "male", Status: "ACTIVE", RegisteredAt: at(3), UpdatedAt: at(3)},
		}
		for _, u := range users {
			if err := tx.PutUser(ctx, u); err != nil {
				return err
			}
		}
		for _, g := range []projections.Group{
			{AppID: app, OpenUserID: 10, FamilyGroupID: 100, AppGroupID: 7, Name: "家 " + odd, CreatedAt: at(4), UpdatedAt: at(4)},
			{AppID: app, OpenUserID: 10, FamilyGroupID: 101, AppGroupID: 8, Name: "work", CreatedAt: at(4), UpdatedAt: at(4)},
		} {
			if err := tx.PutGroup(ctx, g); err != nil {
				return err
			}
		}
		for _, m := range []projections.Member{
			{AppID: app, OpenUserID: 10, MemberID: 1, AppUserID: "m1", AppGroupID: 7, FamilyGroupID: 100, Name: odd, Relationship: "self", Gender: str("female"),
				BirthDate: str("1990-01-02"), Phone: str("13800000000"), IDType: str("id_card"), IDNumber: str("110"), Height: num(165), Weight: num(5200), BloodType: str("AB"), IsDefault: true, UpdatedAt: at(5)},
			{AppID: app, OpenUserID: 10, MemberID: 2, AppUserID: "m2", AppGroupID: 7, FamilyGroupID: 100, Name: "child", Relationship: "child", UpdatedAt: at(20)},
			{AppID: app, OpenUserID: 10, MemberID: 3, AppUserID: "m3", AppGroupID: 8, FamilyGroupID: 101, Name: "deleted", Relationship: "spouse", UpdatedAt: at(6)},
			{AppID: app, OpenUserID: 12, MemberID: 4, AppUserID: "m4", Name: "gone", Relationship: "self", UpdatedAt: at(6)},
		} {
			if err := tx.PutMember(ctx, m); err != nil {
				return err
			}
		}
		if err := tx.DeleteMember(ctx, 3, at(7)); err != nil {
			return err
		}
		return tx.EraseUser(ctx, 12)
	})
	if err != nil {
		t.Fatal(err)
	}
	queries := []projections.SnapshotQuery{
		{AppID: app, OpenUserID: 10},
		{AppID: app, ChannelUserID: "c/10&<x>"},
		{AppID: app, OpenUserID: 10, UpdatedAfter: at(5)},
		{AppID: app, ChannelUserID: "c/10&<x>", UpdatedAfter: at(19)},
		{AppID: app, OpenUserID: 10, UpdatedAfter: at(30)},
		{AppID: app, OpenUserID: 11},
		{AppID: app, ChannelUserID: "c-11", UpdatedAfter: at(1)},
		{AppID: app, OpenUserID: 12},
		{AppID: app, ChannelUserID: "c-12"},
		{AppID: app + 1, OpenUserID: 10},
	}
	west, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		west = time.FixedZone("PST", -8*3600)
	}
	for _, loc := range []*time.Location{time.FixedZone("CST", 8*3600), west} {
		q := &API{Location: loc}
		for _, sq := range queries {
			snap, err := s.Snapshot(ctx, sq)
			if err != nil {
				t.Fatal(err)
			}
			var u projections.User
			if sq.ChannelUserID != "" {
				u, err = s.UserByChannelID(ctx, sq.AppID, sq.ChannelUserID)
			} else {
				u, err = s.User(ctx, sq.AppID, sq.OpenUserID)
			}
			if errors.Is(err, projections.ErrNotFound) {
				if snap.Found {
					t.Errorf("%s %+v: the separate reads find no user, the snapshot finds %+v", loc, sq, snap.User)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			groups, err := s.Groups(ctx, sq.AppID, u.OpenUserID)
			if err != nil {
				t.Fatal(err)
			}
			members, err := s.Members(ctx, sq.AppID, u.OpenUserID, sq.UpdatedAfter)
			if err != nil {
				t.Fatal(err)
			}
			if !snap.Found {
				t.Errorf("%s %+v: not found, the separate reads find %+v", loc, sq, u)
				continue
			}
			got := q.appendSnapshot(nil, snap.User, snap.Groups, snap.Members)
			want := encode(t, q.renderSnapshot(u, groups, members))
			want = want[:len(want)-1]
			if !bytes.Equal(got, want) {
				t.Errorf("%s %+v:\n got %s\nwant %s", loc, sq, got, want)
			}
		}
	}
}
