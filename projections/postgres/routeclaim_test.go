package postgres_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/nonces"
	"github.com/healthtech/partner-open-platform/projections/postgres"
)

// TestBindRouteAndClaim: a scheme M write's route binding and its claim in
// one statement. Each case runs on a store (a node) that has not seen the
// binding, so the statement, not the node's memory, decides: the first use
// binds both; an identical retry on another node finds both (a replay);
// the signature on another route binds nothing new, and in particular no
// claim, which the binding's refusal would otherwise leave behind; a
// binding an older release recorded without its time holds its route.
func TestBindRouteAndClaim(t *testing.T) {
	url := postgres.MigratedDB(t)
	node := func() *postgres.Store {
		s := open(t, url)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	ctx := context.Background()
	exp := time.Now().Add(5 * time.Minute)
	route := func(key, value string) nonces.Binding {
		return nonces.Binding{Scope: "m", Key: key, Value: value, Expires: exp}
	}
	claim := func(key, value string) nonces.Binding {
		return nonces.Binding{Scope: "signed-write", Key: key, Value: value, Expires: exp}
	}
	firstUse := strconv.FormatInt(time.Now().UnixNano(), 10) + " PATCH /a"

	bound, claimed, fresh, err := node().BindRouteAndClaim(ctx, route("1:sig", firstUse), claim("1:w:run", "run-1"), "PATCH /a")
	if err != nil || bound != firstUse || !claimed || !fresh {
		t.Fatalf("first use: %q claimed %v fresh %v, %v; want its own binding, claimed, fresh", bound, claimed, fresh, err)
	}
	retry := strconv.FormatInt(time.Now().UnixNano(), 10) + " PATCH /a"
	bound, claimed, fresh, err = node().BindRouteAndClaim(ctx, route("1:sig", retry), claim("1:w:run", "run-2"), "PATCH /a")
	if err != nil || bound != firstUse || !claimed || fresh {
		t.Fatalf("identical retry on another node: %q claimed %v fresh %v, %v; want the first binding, claimed, not fresh", bound, claimed, fresh, err)
	}
	other := strconv.FormatInt(time.Now().UnixNano(), 10) + " DELETE /b"
	s := node()
	bound, claimed, _, err = s.BindRouteAndClaim(ctx, route("1:sig", other), claim("1:w2:run", "run-3"), "DELETE /b")
	if err != nil || bound != firstUse || claimed {
		t.Fatalf("another route: %q claimed %v, %v; want the first binding and no claim", bound, claimed, err)
	}
	if got, isNew, err := node().Bind(ctx, "signed-write", "1:w2:run", "later", exp); err != nil || !isNew || got != "later" {
		t.Fatalf("the other route's claim key: %q fresh %v, %v; want unbound (nothing left behind)", got, isNew, err)
	}
	// A node that has seen the binding leaves the route to its caller.
	if bound, claimed, _, err = s.BindRouteAndClaim(ctx, route("1:sig", other), claim("1:w3:run", "run-4"), "DELETE /b"); err != nil || bound != firstUse || claimed {
		t.Fatalf("a binding the node has seen: %q claimed %v, %v; want it answered and no claim", bound, claimed, err)
	}

	if _, _, err := node().Bind(ctx, "m", "1:legacy", "POST /c", exp); err != nil {
		t.Fatal(err)
	}
	bound, claimed, fresh, err = node().BindRouteAndClaim(ctx, route("1:legacy", "9 POST /c"), claim("1:w4:run", "run-5"), "POST /c")
	if err != nil || bound != "POST /c" || !claimed || !fresh {
		t.Fatalf("a binding without its time, same route: %q claimed %v fresh %v, %v; want claimed, fresh", bound, claimed, fresh, err)
	}
}

// TestBindRouteAndClaimConcurrently: identical signed writes sent to four
// nodes at once get one claim between them, and every one of them finds
// the same route binding.
func TestBindRouteAndClaimConcurrently(t *testing.T) {
	url := postgres.MigratedDB(t)
	stores := make([]*postgres.Store, 4)
	for i := range stores {
		stores[i] = open(t, url)
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	ctx := context.Background()
	exp := time.Now().Add(5 * time.Minute)
	for round := range 20 {
		var mu sync.Mutex
		fresh, bounds := 0, map[string]int{}
		var wg sync.WaitGroup
		for i := range len(stores) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				value := fmt.Sprintf("%d PATCH /r%d", time.Now().UnixNano()+int64(i), round)
				bound, claimed, f, err := stores[i%len(stores)].BindRouteAndClaim(ctx,
					nonces.Binding{Scope: "m", Key: fmt.Sprintf("1:sig-%d", round), Value: value, Expires: exp},
					nonces.Binding{Scope: "signed-write", Key: fmt.Sprintf("1:w-%d:run", round), Value: fmt.Sprint(i), Expires: exp},
					fmt.Sprintf("PATCH /r%d", round))
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
				if !claimed {
					// Only a node that had seen the binding leaves the claim
					// to its caller; these are first sightings.
					t.Errorf("round %d: not claimed with the route's own binding", round)
				}
				bounds[bound]++
				if f {
					fresh++
				}
			}()
		}
		wg.Wait()
		if fresh != 1 || len(bounds) != 1 {
			t.Fatalf("round %d: %d fresh claims, %d distinct route bindings; want 1 and 1", round, fresh, len(bounds))
		}
	}
}

// Under SeeHead, the route binding and claim's statement also returns the
// head the event store's statement reads (the log's head as of the
// statement, which a signed write's app is confirmed at); without it, or
// when the node answers the route from memory and sends nothing, no head.
func TestBindRouteAndClaimAtHeadReadsTheHeadWhenToldHow(t *testing.T) {
	url := postgres.MigratedDB(t)
	ctx := context.Background()
	exp := time.Now().Add(5 * time.Minute)
	route := func(key string) nonces.Binding {
		return nonces.Binding{Scope: "m", Key: key, Value: strconv.FormatInt(time.Now().UnixNano(), 10) + " PATCH /a", Expires: exp}
	}
	claim := func(key string) nonces.Binding {
		return nonces.Binding{Scope: "signed-write", Key: key, Value: "run", Expires: exp}
	}
	s := open(t, url)
	defer s.Close()
	c, err := s.BindRouteAndClaimAtHead(ctx, route("1:a"), claim("1:a:run"), "PATCH /a")
	if err != nil || !c.Claimed || !c.Fresh || c.HeadKnown {
		t.Fatalf("without SeeHead: %+v, %v; want claimed, fresh, no head", c, err)
	}
	exec(t, url, `CREATE TABLE fake_log (position bigint)`)
	exec(t, url, `INSERT INTO fake_log VALUES (3), (9)`)
	s.SeeHead(`SELECT coalesce(max(position), 0) FROM fake_log`, func(p int64) events.Position {
		return events.Position{Commit: uint64(p), Prepare: uint64(p) - 1}
	})
	r := route("1:b")
	c, err = s.BindRouteAndClaimAtHead(ctx, r, claim("1:b:run"), "PATCH /a")
	if err != nil || !c.Claimed || !c.Fresh || c.Bound != r.Value || !c.HeadKnown || c.Head != (events.Position{Commit: 9, Prepare: 8}) {
		t.Fatalf("with SeeHead: %+v, %v; want claimed, fresh, its binding, head 9/8", c, err)
	}
	exec(t, url, `INSERT INTO fake_log VALUES (12)`)
	other := open(t, url)
	defer other.Close()
	other.SeeHead(`SELECT coalesce(max(position), 0) FROM fake_log`, func(p int64) events.Position {
		return events.Position{Commit: uint64(p), Prepare: uint64(p)}
	})
	c, err = other.BindRouteAndClaimAtHead(ctx, r, claim("1:b:run"), "PATCH /a")
	if err != nil || !c.Claimed || c.Fresh || !c.HeadKnown || c.Head.Commit != 12 {
		t.Fatalf("the retry on another node: %+v, %v; want the claim held, head 12", c, err)
	}
	// The node that bound the route answers it from memory: no statement, no head.
	if c, err = s.BindRouteAndClaimAtHead(ctx, r, claim("1:b:run"), "PATCH /a"); err != nil || c.Claimed || c.HeadKnown {
		t.Fatalf("a route the node has seen: %+v, %v; want no claim and no head", c, err)
	}
}
