package commands

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
)

// BenchmarkUpsertMemberCached renames members of a user who has 20 (as
// e2e/bench's BenchmarkMemberUpsertHTTP does), with the user cached:
// the command's own CPU (load, decide, encode, append to an in-memory log,
// advance the cache), without HTTP, sealing or the bolt commit.
//
//	go test -run '^$' -bench UpsertMemberCached -benchmem ./commands/
func BenchmarkUpsertMemberCached(b *testing.B) {
	ctx := context.Background()
	store := memory.New()
	reg := catalog.Registry()
	u := NewUsers(store, reg, NewAllocator(store, reg, 100), testNames, time.Now, time.UTC)
	id := registerOne(b, u, "bench")
	in := func(i int) MemberInput {
		return MemberInput{AppUserID: fmt.Sprintf("m-%d", i%20), AppGroupID: 7, Name: fmt.Sprintf("n-%d", i), Relationship: "SON"}
	}
	for i := range 20 {
		if _, err := u.UpsertMember(ctx, 1, id, in(i), Meta{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := u.UpsertMember(ctx, 1, id, in(i), Meta{}); err != nil {
			b.Fatal(err)
		}
	}
}
