package commands

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// BenchmarkPatchLongHistory measures a PATCH of a user with 10,000 prior
// events against one of a fresh user, on the embedded bolt log, with the
// aggregate cache off (every command replays from revision 0) and on. The
// ratio metric (long/fresh) is the one that counts: the goal is ≤ 1.2.
//
//	go test -run '^$' -bench PatchLongHistory -benchtime 100x ./commands/
func BenchmarkPatchLongHistory(b *testing.B) {
	for _, cache := range []int{0, DefaultAggregateCache} {
		b.Run(fmt.Sprintf("cache=%d", cache), func(b *testing.B) {
			ctx := context.Background()
			store, err := bolt.Open(filepath.Join(b.TempDir(), "events.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			reg := catalog.Registry()
			u := NewUsers(store, reg, NewAllocator(store, reg, 100), testNames, time.Now, time.UTC).WithAggregateCache(cache)
			long := registerOne(b, u, "long")
			fresh := registerOne(b, u, "fresh")
			grow(b, store, reg, long, 10000)
			// A running node: each user was loaded once already (after a
			// start or an eviction the first command replays the stream once).
			for _, id := range []int64{long, fresh} {
				if _, err := u.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: domain.Val("warm")}, Meta{}); err != nil {
					b.Fatal(err)
				}
			}
			var tLong, tFresh time.Duration
			b.ResetTimer()
			for i := range b.N {
				nick := domain.Val(fmt.Sprintf("n%d", i))
				for _, id := range []int64{long, fresh} {
					start := time.Now()
					if _, err := u.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: nick}, Meta{}); err != nil {
						b.Fatal(err)
					}
					if id == long {
						tLong += time.Since(start)
					} else {
						tFresh += time.Since(start)
					}
				}
			}
			b.ReportMetric(float64(tLong.Nanoseconds())/float64(b.N), "ns/patch-long")
			b.ReportMetric(float64(tFresh.Nanoseconds())/float64(b.N), "ns/patch-fresh")
			b.ReportMetric(float64(tLong)/float64(tFresh), "long/fresh")
		})
	}
}

// grow appends n profile updates to a user's stream, in batches.
func grow(b *testing.B, store events.Store, reg *events.Registry, id int64, n int) {
	ctx := context.Background()
	stream := domain.UserStream(id)
	recs, err := store.ReadStream(ctx, stream, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	version := uint64(len(recs))
	for done := 0; done < n; {
		batch := make([]events.Proposed, 0, 1000)
		for ; len(batch) < 1000 && done < n; done++ {
			ev, err := reg.Encode(catalog.UserProfileUpdated{ChannelUserID: "long", OpenUserID: id, Changed: []string{"nickname"},
				Profile: catalog.Profile{Name: "Li", Gender: "unknown", Nickname: ptr(fmt.Sprintf("h%d", done))}}, events.Metadata{AppID: 1})
			if err != nil {
				b.Fatal(err)
			}
			batch = append(batch, ev)
		}
		if _, err := store.Append(ctx, stream, events.AfterVersion(version), batch...); err != nil {
			b.Fatal(err)
		}
		version += uint64(len(batch))
	}
}
