package memory

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// benchUsers fills s with n users as a seeded log makes them
// (platformbench seed): a register of one group and one member, a profile
// patch, every second user a second member.
func benchUsers(tb testing.TB, s *Store, n int) {
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 1, 2, 3, 456789000, time.UTC)
	str := func(s string) *string { return &s }
	num := func(n int64) *int64 { return &n }
	for i := 0; i < n; i += 1000 {
		if err := s.Update(ctx, "users", events.Position{Commit: uint64(i + 1), Prepare: uint64(i + 1)}, func(tx projections.UserTx) error {
			for j := i; j < min(i+1000, n); j++ {
				id := int64(1_000_000 + 3*j)
				app := int64(1 + j%100)
				phone := fmt.Sprintf("138%08d", j)
				if err := tx.PutUser(ctx, projections.User{AppID: app, OpenUserID: id, ChannelUserID: "seed-user-" + strconv.Itoa(j),
					Name: "Li Lei", Nickname: str("lei" + strconv.Itoa(j%1000)), Gender: "male", Phone: str(phone),
					Email: str("user" + strconv.Itoa(j) + "@example.com"), Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}); err != nil {
					return err
				}
				if err := tx.PutGroup(ctx, projections.Group{AppID: app, OpenUserID: id, FamilyGroupID: id + 1, AppGroupID: 1,
					Name: "Home", CreatedAt: at, UpdatedAt: at}); err != nil {
					return err
				}
				if err := tx.PutMember(ctx, projections.Member{AppID: app, OpenUserID: id, MemberID: id + 2, AppUserID: "m1",
					AppGroupID: 1, FamilyGroupID: id + 1, Name: "Han Meimei", Relationship: "SPOUSE", Phone: str(phone), UpdatedAt: at}); err != nil {
					return err
				}
				if j%2 == 0 {
					if err := tx.PutMember(ctx, projections.Member{AppID: app, OpenUserID: id, MemberID: id + 3_000_000, AppUserID: "m2",
						AppGroupID: 1, FamilyGroupID: id + 1, Name: "Li Xiaoming", Relationship: "SON", BirthDate: str("2015-06-01"),
						Height: num(130), Weight: num(2800), UpdatedAt: at}); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkUsersLiveHeap reports the live heap the users read model holds
// per user (B/user: the user, one group, one and a half members, every
// index), for users like a seeded log's (benchUsers).
//
//	go test -run '^$' -bench UsersLiveHeap ./projections/memory
func BenchmarkUsersLiveHeap(b *testing.B) {
	const n = 20_000
	liveHeapPer(b, n, "B/user", func(s *Store) { benchUsers(b, s, n) })
}

// BenchmarkUserReads reads one user by id, by channel id, its groups and
// its members, as the query API's routes do.
//
//	go test -run '^$' -bench UserReads -benchmem ./projections/memory
func BenchmarkUserReads(b *testing.B) {
	ctx := context.Background()
	s := New()
	benchUsers(b, s, 1000)
	const id, app = 1_000_000 + 3*10, 11 // the 10th user: two members
	read := map[string]func() error{
		"User": func() error { _, err := s.User(ctx, app, id); return err },
		"UserByChannelID": func() error {
			_, err := s.UserByChannelID(ctx, app, "seed-user-10")
			return err
		},
		"Groups": func() error { _, err := s.Groups(ctx, app, id); return err },
		"Members": func() error {
			ms, err := s.Members(ctx, app, id, time.Time{})
			if len(ms) != 2 {
				return fmt.Errorf("%d members", len(ms))
			}
			return err
		},
	}
	for _, name := range []string{"User", "UserByChannelID", "Groups", "Members"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := read[name](); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRestoreUsers restores an image of 20,000 users like a seeded
// log's into an empty read model, as a start does after decoding the
// snapshot.
//
//	go test -run '^$' -bench RestoreUsers -benchmem ./projections/memory
func BenchmarkRestoreUsers(b *testing.B) {
	ctx := context.Background()
	src := New()
	benchUsers(b, src, 20_000)
	im, err := src.Image(ctx, projections.ReadModelUsers)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		copyIm := im
		copyIm.Users, copyIm.Groups, copyIm.Members = slices.Clone(im.Users), slices.Clone(im.Groups), slices.Clone(im.Members)
		s := New()
		b.StartTimer()
		if err := s.Restore(ctx, copyIm); err != nil {
			b.Fatal(err)
		}
	}
}
