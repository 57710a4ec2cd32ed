package commands

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/esdb"
	"github.com/healthtech/partner-open-platform/events/memory"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// oneAppendPerStream hides a store's atomic multi-stream append, as the
// EventStoreDB adapter has none: commands must keep their rules with
// separate appends too.
type oneAppendPerStream struct{ events.Store }

// eventStores runs a test on every event-store adapter: uniqueness rules must
// hold on each of them, decided on the write side alone.
func eventStores(t *testing.T, test func(t *testing.T, store events.Store)) {
	t.Run("memory", func(t *testing.T) { test(t, memory.New()) })
	t.Run("memory, one append per stream", func(t *testing.T) { test(t, oneAppendPerStream{memory.New()}) })
	t.Run("bolt, one append per stream", func(t *testing.T) {
		s, err := bolt.Open(filepath.Join(t.TempDir(), "events.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		test(t, oneAppendPerStream{s})
	})
	t.Run("postgres", func(t *testing.T) {
		s, err := pgevents.Open(context.Background(), pgtest.New(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		test(t, s)
	})
	t.Run("bolt", func(t *testing.T) {
		s, err := bolt.Open(filepath.Join(t.TempDir(), "events.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		test(t, s)
	})
	t.Run("esdb", func(t *testing.T) {
		url := os.Getenv("PLATFORM_ESDB_URL")
		if url == "" {
			t.Skip("EventStoreDB run skipped: PLATFORM_ESDB_URL is not set")
		}
		s, err := esdb.Open(url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		test(t, s)
	})
}

func TestConcurrentRegistersOnEveryAdapter(t *testing.T) {
	eventStores(t, func(t *testing.T, store events.Store) {
		reg := catalog.Registry()
		// Separate allocators model separate processes sharing one store.
		loc := time.UTC
		handlers := []*Users{
			NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, loc),
			NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, loc),
		}
		channelID := "concurrent-" + time.Now().Format("150405.000000000")
		const n = 50
		var wg sync.WaitGroup
		results := make([]RegisterResult, n)
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = handlers[i%2].Register(ctx, Register{AppID: 1, ChannelUserID: channelID, User: UserInput{Name: "n"},
					Groups: []GroupInput{{AppGroupID: 1, Name: "g"}}}, Meta{})
			}()
		}
		wg.Wait()
		created := 0
		ids := map[int64]bool{}
		groups := map[int64]bool{}
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("register %d: %v", i, errs[i])
			}
			if results[i].Created {
				created++
			}
			ids[results[i].OpenUserID] = true
			groups[results[i].Groups[0].FamilyGroupID] = true
		}
		if created != 1 || len(ids) != 1 || len(groups) != 1 {
			t.Fatalf("created %d, distinct users %d, distinct groups %d", created, len(ids), len(groups))
		}
	})
}

func TestConcurrentMemberUpsertsCreateOneMember(t *testing.T) {
	eventStores(t, func(t *testing.T, store events.Store) {
		reg := catalog.Registry()
		users := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC)
		res, err := users.Register(ctx, Register{AppID: 1, ChannelUserID: "m-" + time.Now().Format("150405.000000000"), User: UserInput{Name: "n"},
			Groups: []GroupInput{{AppGroupID: 1, Name: "g"}}}, Meta{})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		const n = 20
		out := make([]MemberResult, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				out[i], err = users.UpsertMember(ctx, 1, res.OpenUserID, MemberInput{AppUserID: "same", AppGroupID: 1, Name: "m", Relationship: "SON", Height: domain.Val(int64(100 + i))}, Meta{})
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		created, ids := 0, map[int64]bool{}
		for _, r := range out {
			if r.Created {
				created++
			}
			ids[r.MemberID] = true
		}
		if created != 1 || len(ids) != 1 {
			t.Fatalf("created %d, distinct members %d", created, len(ids))
		}
	})
}

// refusingUserStreams fails every append that creates a user stream, as a
// store that dies mid-register would: the binding must not be recorded
// without its user where the store can append both atomically.
type refusingUserStreams struct{ *memory.Store }

var errRefused = errors.New("refused by the test")

func (s refusingUserStreams) AppendMulti(ctx context.Context, parts ...events.StreamAppend) ([]events.AppendResult, error) {
	for _, p := range parts {
		if strings.HasPrefix(p.Stream, "user-") {
			return nil, errRefused
		}
	}
	return s.Store.AppendMulti(ctx, parts...)
}

func TestRegisterBindsAndCreatesInOneAppend(t *testing.T) {
	store := memory.New()
	reg := catalog.Registry()
	users := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC)
	res, err := users.Register(ctx, Register{AppID: 1, ChannelUserID: "one", User: UserInput{Name: "n"}}, Meta{})
	if err != nil || !res.Created {
		t.Fatalf("register: %+v %v", res, err)
	}
	bound, err := store.ReadStream(ctx, testNames.BindingStream(1, "one"), 0, 0)
	if err != nil || len(bound) != 1 {
		t.Fatalf("binding stream: %d events, %v", len(bound), err)
	}
	user, err := store.ReadStream(ctx, domain.UserStream(res.OpenUserID), 0, 0)
	if err != nil || len(user) != 1 {
		t.Fatalf("user stream: %d events, %v", len(user), err)
	}
	if bound[0].Position.Commit+1 != user[0].Position.Commit || res.Position != user[0].Position {
		t.Fatalf("binding at %s, user at %s, answered %s: want one append, the user last", bound[0].Position, user[0].Position, res.Position)
	}

	// A store failing the user's creation records no binding either, and
	// the next register (the store healthy again) creates the user.
	failing := refusingUserStreams{memory.New()}
	users = NewUsers(failing, reg, NewAllocator(failing, reg, 5), testNames, time.Now, time.UTC)
	if _, err := users.Register(ctx, Register{AppID: 1, ChannelUserID: "two", User: UserInput{Name: "n"}}, Meta{}); !errors.Is(err, errRefused) {
		t.Fatalf("register on a failing store: %v, want the store's error", err)
	}
	if got, err := failing.ReadStream(ctx, testNames.BindingStream(1, "two"), 0, 0); err != nil || len(got) != 0 {
		t.Fatalf("a failed register left %d binding events (%v)", len(got), err)
	}
	users = NewUsers(failing.Store, reg, NewAllocator(failing.Store, reg, 5), testNames, time.Now, time.UTC)
	if res, err := users.Register(ctx, Register{AppID: 1, ChannelUserID: "two", User: UserInput{Name: "n"}}, Meta{}); err != nil || !res.Created {
		t.Fatalf("register after the failure: %+v %v", res, err)
	}
}
