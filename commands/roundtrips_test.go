package commands

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
)

// countingStore counts the store calls a command makes per stream kind (the
// name up to its first '-'), leaving out id-block reservations: on Postgres
// each is a round trip, so the command shell must add none.
type countingStore struct {
	*memory.Store
	mu    sync.Mutex
	calls map[string]int // "read user", "append channeluserhmac", "multi" ...
}

func (c *countingStore) count(what, stream string) {
	kind, _, _ := strings.Cut(stream, "-")
	if kind == "ids" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[what+" "+kind]++
}

func (c *countingStore) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.calls
	c.calls = map[string]int{}
	return got
}

func (c *countingStore) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]events.Recorded, error) {
	c.count("read", stream)
	return c.Store.ReadStream(ctx, stream, from, limit)
}

func (c *countingStore) Append(ctx context.Context, stream string, exp events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	c.count("append", stream)
	return c.Store.Append(ctx, stream, exp, evs...)
}

func (c *countingStore) AppendMulti(ctx context.Context, parts ...events.StreamAppend) ([]events.AppendResult, error) {
	c.count("multi", parts[0].Stream)
	return c.Store.AppendMulti(ctx, parts...)
}

func sameCalls(t *testing.T, what string, got, want map[string]int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: store calls %v, want %v", what, got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Fatalf("%s: store calls %v, want %v", what, got, want)
		}
	}
}

// Given the command shell between each command and the store, when a
// channel user registers, registers again, and a card is used twice, then
// each costs the store calls it needs and no more: a new register appends
// binding and user in one multi-stream append without reading the binding;
// a repeated one finds its claim of the binding refused by that append,
// then reads the binding and the user; a use of a card this node holds
// appends without reading the card.
func TestShellCommandsCostTheirRoundTripsOnly(t *testing.T) {
	store := &countingStore{Store: memory.New(), calls: map[string]int{}}
	reg := catalog.Registry()
	users := NewUsers(store, reg, NewAllocator(store, reg, 100), testNames, time.Now, time.UTC).WithLegacyBindings(false)
	in := Register{AppID: 1, ChannelUserID: "cu-1", User: UserInput{Name: "Li Lei"}, Groups: []GroupInput{{AppGroupID: 1, Name: "home"}}}
	store.take()
	if res, err := users.Register(ctx, in, Meta{}); err != nil || !res.Created {
		t.Fatal(res, err)
	}
	sameCalls(t, "new register", store.take(), map[string]int{"multi channeluserhmac": 1})
	if res, err := users.Register(ctx, in, Meta{}); err != nil || res.Created {
		t.Fatal(res, err)
	}
	sameCalls(t, "repeated register", store.take(), map[string]int{"multi channeluserhmac": 1, "read channeluserhmac": 1, "read user": 1})

	b, card, item := benefitFixture(t, store, 10, 0)
	use := func() {
		t.Helper()
		if _, err := b.Verify(ctx, 2, VerifyInput{CardNumber: card, BenefitItemID: &item, Quantity: 1}, Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	use() // reads the card once
	store.take()
	use()
	if got := store.take(); got["read "+strings.Split(domain.CardStream(card), "-")[0]] != 0 || got["append "+strings.Split(domain.CardStream(card), "-")[0]] != 1 {
		t.Fatalf("use of a cached card: store calls %v, want one card append and no card read", got)
	}
}
