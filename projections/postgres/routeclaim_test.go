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
	"github.com/healthtech/partner-open-platform/internal/nonces/noncetest"
	"github.com/healthtech/partner-open-platform/projections/postgres"
)

// TestBindRouteAndClaim: a scheme M write's route binding and its claim in
// one statement. Each case of noncetest.RouteClaims runs on a store (a
// node) that has not seen the binding, so the statement, not the node's
// memory, decides; a node that has seen the binding leaves the route to
// its caller.
func TestBindRouteAndClaim(t *testing.T) {
	t.Parallel()
	url := postgres.MigratedDB(t)
	node := func() *postgres.Store {
		s := open(t, url)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	noncetest.RouteClaims(t, func() noncetest.RouteClaimer { return node() })

	ctx := context.Background()
	exp := time.Now().Add(5 * time.Minute)
	first := strconv.FormatInt(time.Now().UnixNano(), 10) + " PATCH /e"
	route := func(value string) nonces.Binding {
		return nonces.Binding{Scope: "m", Key: "2:sig", Value: value, Expires: exp}
	}
	if _, claimed, _, err := node().BindRouteAndClaim(ctx, route(first), nonces.Binding{Scope: "signed-write", Key: "2:w:run", Value: "run-1", Expires: exp}, "PATCH /e"); err != nil || !claimed {
		t.Fatalf("first use: claimed %v, %v", claimed, err)
	}
	s := node()
	other := strconv.FormatInt(time.Now().UnixNano(), 10) + " DELETE /f"
	if bound, claimed, _, err := s.BindRouteAndClaim(ctx, route(other), nonces.Binding{Scope: "signed-write", Key: "2:w2:run", Value: "run-2", Expires: exp}, "DELETE /f"); err != nil || bound != first || claimed {
		t.Fatalf("another route: %q claimed %v, %v; want the first binding and no claim", bound, claimed, err)
	}
	if bound, claimed, _, err := s.BindRouteAndClaim(ctx, route(other), nonces.Binding{Scope: "signed-write", Key: "2:w3:run", Value: "run-3", Expires: exp}, "DELETE /f"); err != nil || bound != first || claimed {
		t.Fatalf("a binding the node has seen: %q claimed %v, %v; want it answered and no claim", bound, claimed, err)
	}
}

// TestBindRouteAndClaimConcurrently: identical signed writes sent to four
// nodes at once get one claim between them, and every one of them finds
// the same route binding.
func TestBindRouteAndClaimConcurrently(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
