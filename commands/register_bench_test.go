package commands

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
	keyfiles "github.com/healthtech/partner-open-platform/internal/datakeys/files"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/internal/secrets"
	"github.com/healthtech/partner-open-platform/privacy"
)

// benchUsers is the register path as the node runs it, in memory: personal
// fields sealed per person (key files on disk), keys made ahead.
func benchUsers(b *testing.B) *Users { return benchUsersOn(b, memory.New()) }

// benchUsersOn is benchUsers over the given event store.
func benchUsersOn(b *testing.B, inner events.Store) *Users {
	sealer, err := secrets.New(bytes.Repeat([]byte{5}, 32))
	if err != nil {
		b.Fatal(err)
	}
	backend, err := keyfiles.Open(filepath.Join(b.TempDir(), "keys"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { backend.Close() })
	ks := datakeys.New(backend, sealer)
	store := privacy.New(inner, ks)
	reg := catalog.Registry()
	ids := NewAllocator(store, reg, 1000)
	ids.OnReserve(KindUser, func(ctx2 context.Context, first, last int64) {
		subjects := make([]string, 0, last-first+1)
		for id := first; id <= last; id++ {
			subjects = append(subjects, ErasureSubject(id))
		}
		_ = ks.Prepare(ctx2, subjects)
	})
	// A log begun with hashed names, as a node decides for it.
	return NewUsers(store, reg, ids, testNames, time.Now, time.UTC).WithKeys(ks).WithKeyWarmer(ks).WithLegacyBindings(false)
}

func benchRegister(i int) Register {
	return Register{AppID: 1, ChannelUserID: "user" + strconv.Itoa(i) + "@example.com",
		User:    UserInput{Name: "Li Lei", Phone: domain.Val("13800138000")},
		Groups:  []GroupInput{{AppGroupID: 1, Name: "Home"}},
		Members: []MemberInput{{AppUserID: "m1", AppGroupID: 1, Name: "Han", Relationship: "SPOUSE"}}}
}

// BenchmarkRegisterNew registers a new channel user per op (one group, one member).
func BenchmarkRegisterNew(b *testing.B) {
	u := benchUsers(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res, err := u.Register(ctx, benchRegister(i), Meta{AppID: 1}); err != nil || !res.Created {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkRegisterExisting repeats the register of a bound user (the 200 answer).
func BenchmarkRegisterExisting(b *testing.B) {
	u := benchUsers(b)
	if _, err := u.Register(ctx, benchRegister(0), Meta{AppID: 1}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res, err := u.Register(ctx, benchRegister(0), Meta{AppID: 1}); err != nil || res.Created {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkRegisterNewPostgres is BenchmarkRegisterNew on the Postgres
// event store (PLATFORM_TEST_POSTGRES_URL), where each stream read is a
// round trip.
func BenchmarkRegisterNewPostgres(b *testing.B) {
	s, err := pgevents.Open(context.Background(), pgtest.New(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	u := benchUsersOn(b, s)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res, err := u.Register(ctx, benchRegister(i), Meta{AppID: 1}); err != nil || !res.Created {
			b.Fatal(res, err)
		}
	}
}
