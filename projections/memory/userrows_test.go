package memory

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

func TestUserRowsAre56_72And96Bytes(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{{"user", unsafeSizeof[userRow](), 56}, {"group", unsafeSizeof[groupRow](), 72}, {"member", unsafeSizeof[memberRow](), 96}} {
		if c.got != c.want {
			t.Errorf("a %s row is %d bytes, want %d", c.name, c.got, c.want)
		}
	}
}

// Users, groups and members read back as they were written, through every
// read, an image and a restored snapshot (whole and paged): optional
// texts absent, empty and present, texts past a one-byte length (128 and
// 16,384 bytes) and of several bytes a rune, times at their microsecond
// (a later nanosecond truncated), the zero time and times before 1970, a
// member's height and weight of zero and absent, a deleted member.
func TestUserRowsReadAsWritten(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 1, 2, 3, 456789000, time.UTC)
	str := func(s string) *string { return &s }
	num := func(n int64) *int64 { return &n }
	long, longer := strings.Repeat("é", 64), strings.Repeat("x", 1<<14)
	old := time.Date(1901, 2, 3, 4, 5, 6, 7000, time.UTC)
	users := []projections.User{
		{AppID: 1, OpenUserID: 10, ChannelUserID: "c-10", Name: "Ann", Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at},
		{AppID: 1, OpenUserID: 11, ChannelUserID: "c-11", Name: "", Gender: "female", Status: "ACTIVE",
			Nickname: str(""), Avatar: str(""), Phone: str(""), Email: str(""), BirthDate: str(""), UpdatedAt: old},
		{AppID: 2, OpenUserID: 12, ChannelUserID: long, Name: longer, Gender: "male", Status: "ACTIVE",
			Nickname: str("狗"), Avatar: str(longer), Phone: str("13800000000"), Email: str("a@b.c"), BirthDate: str("1990-01-02"),
			RegisteredAt: at.Add(123), UpdatedAt: at.Add(time.Hour)},
		{AppID: 2, OpenUserID: 13, ChannelUserID: "", Phone: str("13800000000")}, // the same phone as 12
	}
	groups := []projections.Group{
		{AppID: 1, OpenUserID: 10, FamilyGroupID: 100, AppGroupID: 5, Name: "home", CreatedAt: at, UpdatedAt: at},
		{AppID: 1, OpenUserID: 10, FamilyGroupID: 101, Name: "", Dissolved: true},
		{AppID: 2, OpenUserID: 12, FamilyGroupID: 102, AppGroupID: 6, Name: longer, CreatedAt: old, UpdatedAt: at.Add(999)},
	}
	deletedAt := at.Add(time.Minute)
	members := []projections.Member{
		{AppID: 1, OpenUserID: 10, MemberID: 1000, AppUserID: "m", AppGroupID: 5, FamilyGroupID: 100, Name: "Bo",
			Relationship: "child", UpdatedAt: at},
		{AppID: 1, OpenUserID: 10, MemberID: 1001, FamilyGroupID: 100, Gender: str(""), BirthDate: str(""), Phone: str(""),
			IDType: str(""), IDNumber: str(""), BloodType: str(""), Height: num(0), Weight: num(0), IsDefault: true, UpdatedAt: old},
		{AppID: 1, OpenUserID: 10, MemberID: 1002, AppUserID: long, FamilyGroupID: 100, Name: longer, Relationship: "self",
			Gender: str("male"), BirthDate: str("2001-02-03"), Phone: str("1"), IDType: str("id"), IDNumber: str(long),
			BloodType: str("AB"), Height: num(180), Weight: num(-7550), Deleted: true, DeletedAt: &deletedAt,
			UpdatedAt: deletedAt.Add(5)},
		{AppID: 2, OpenUserID: 12, MemberID: 1003, FamilyGroupID: 102, Name: "Cy", UpdatedAt: at.Add(2 * time.Second)},
	}
	s := New()
	if err := s.Update(ctx, "users", events.Position{Commit: 1, Prepare: 1}, func(tx projections.UserTx) error {
		for _, u := range users {
			if err := tx.PutUser(ctx, u); err != nil {
				return err
			}
		}
		for _, g := range groups {
			if err := tx.PutGroup(ctx, g); err != nil {
				return err
			}
		}
		for _, m := range members {
			if err := tx.PutMember(ctx, m); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// As the store keeps them: times at their microsecond.
	for i := range users {
		users[i].RegisteredAt, users[i].UpdatedAt = normTime(users[i].RegisteredAt), normTime(users[i].UpdatedAt)
	}
	for i := range groups {
		groups[i].CreatedAt, groups[i].UpdatedAt = normTime(groups[i].CreatedAt), normTime(groups[i].UpdatedAt)
	}
	for i := range members {
		members[i].UpdatedAt = normTime(members[i].UpdatedAt)
		if d := members[i].DeletedAt; d != nil {
			v := normTime(*d)
			members[i].DeletedAt = &v
		}
	}
	check := func(s *Store, how string) {
		t.Helper()
		eq := func(what string, got, want any) {
			t.Helper()
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s\n got %+v\nwant %+v", how, what, got, want)
			}
		}
		for _, want := range users {
			got, err := s.User(ctx, want.AppID, want.OpenUserID)
			if err != nil {
				t.Fatalf("%s: User(%d): %v", how, want.OpenUserID, err)
			}
			eq("User", got, want)
			got, _ = s.UserByChannelID(ctx, want.AppID, want.ChannelUserID)
			eq("UserByChannelID", got, want)
			// A read hands out a copy: writing through its pointers
			// changes nothing the store holds.
			if got.Phone != nil {
				*got.Phone = "changed"
				again, _ := s.User(ctx, want.AppID, want.OpenUserID)
				eq("User after its copy was written", again, want)
			}
		}
		byPhone, _ := s.UserByPhone(ctx, 2, "13800000000")
		eq("UserByPhone (the lowest id of two)", byPhone, users[2])
		mine, _ := s.Groups(ctx, 1, 10)
		g0 := groups[0]
		g0.MemberCount = 2 // 1002 is deleted
		eq("Groups", mine, []projections.Group{g0})
		all, _ := s.Members(ctx, 1, 10, time.Time{})
		eq("Members", all, members[:2])
		after, _ := s.Members(ctx, 2, 12, members[3].UpdatedAt.Add(-time.Nanosecond))
		eq("Members updated after a nanosecond before", after, members[3:])
		after, _ = s.Members(ctx, 2, 12, members[3].UpdatedAt)
		eq("Members updated after their own time", after, []projections.Member(nil))
		for _, want := range members {
			got, _ := s.Member(ctx, want.AppID, want.MemberID)
			eq("Member", got, want)
		}
		s.Update(ctx, "probe", events.Position{Commit: 1, Prepare: 1}, func(tx projections.UserTx) error {
			for _, want := range users {
				got, _ := tx.User(ctx, want.OpenUserID)
				eq("tx.User", got, want)
			}
			for _, want := range groups {
				got, _ := tx.Group(ctx, want.FamilyGroupID)
				want.MemberCount = map[int64]int{100: 2, 102: 1}[want.FamilyGroupID]
				eq("tx.Group", got, want)
			}
			return nil
		})
	}
	check(s, "written")

	im, err := s.Image(ctx, projections.ReadModelUsers)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(im.Users, users) || !reflect.DeepEqual(im.Groups, groups) || !reflect.DeepEqual(im.Members, members) {
		t.Errorf("the image\n got %+v\n     %+v\n     %+v\nwant %+v\n     %+v\n     %+v", im.Users, im.Groups, im.Members, users, groups, members)
	}
	paged, end, err := s.imageToWrite(ctx, projections.ReadModelUsers, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer end()
	check(throughSnapshot(t, im), "restored")
	check(throughSnapshot(t, paged), "restored from a paged image")
}

// Erased users leave their places to the next rows, and a failed batch
// gives the tables back as they were.
func TestErasedUsersPlacesAreTakenAgain(t *testing.T) {
	ctx := context.Background()
	s := New()
	put := func(from, to int64) {
		t.Helper()
		if err := s.Update(ctx, "users", events.Position{Commit: uint64(to), Prepare: uint64(to)}, func(tx projections.UserTx) error {
			for id := from; id < to; id++ {
				if err := tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: id, ChannelUserID: fmt.Sprint("c-", id)}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	put(0, 1)
	put(1, 4)
	if err := s.Update(ctx, "users", events.Position{Commit: 10, Prepare: 10}, func(tx projections.UserTx) error {
		for _, id := range []int64{1, 2} {
			if err := tx.EraseUser(ctx, id); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if s.users.rows.n != 4 || len(s.users.free) != 2 {
		t.Fatalf("after two erasures: %d places, %d free; want 4 and 2", s.users.rows.n, len(s.users.free))
	}
	put(10, 12)
	if s.users.rows.n != 4 || len(s.users.free) != 0 || s.users.len() != 4 {
		t.Fatalf("after two more users: %d places, %d free, %d users; want 4, 0, 4", s.users.rows.n, len(s.users.free), s.users.len())
	}
	for _, id := range []int64{0, 3, 10, 11} {
		if u, err := s.User(ctx, 1, id); err != nil || u.OpenUserID != id {
			t.Fatalf("User(%d) = %+v, %v", id, u, err)
		}
	}
}

func unsafeSizeof[T any]() uintptr {
	var v T
	return reflect.TypeOf(v).Size()
}
