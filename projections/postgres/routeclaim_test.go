package postgres_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/nonces"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
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

// TestBindRouteClaimAndTake: the route binding, the request's rate-limit
// take and the claim in one statement. A granted take claims as
// BindRouteAndClaim does and leaves the bucket the tokens fewer; a take the
// empty bucket refuses still records the route's binding (a replay on
// another route stays refused) but leaves no claim, so the same request
// retried once the bucket refilled runs.
func TestBindRouteClaimAndTake(t *testing.T) {
	url := postgres.MigratedDB(t)
	s := open(t, url)
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	exp := time.Now().Add(5 * time.Minute)
	clock := time.Unix(1_900_000_000, 0)
	take := func(want, back int) ratelimit.Take {
		return ratelimit.Take{Bucket: ratelimit.BucketSpec{Name: "scheme_m_claim", Limit: 12, Period: time.Minute, Now: func() time.Time { return clock }},
			Key: "7", Want: want, Back: back}
	}
	use := func(sig, route string) nonces.Binding {
		return nonces.Binding{Scope: "m", Key: "7:" + sig, Value: strconv.FormatInt(time.Now().UnixNano(), 10) + " " + route, Expires: exp}
	}
	claim := func(sig string) nonces.Binding {
		return nonces.Binding{Scope: "signed-write", Key: "7:" + sig + ":run", Value: "run-" + sig, Expires: exp}
	}
	first := use("a", "PATCH /u")
	bound, claimed, fresh, g, took, err := s.BindRouteClaimAndTake(ctx, first, claim("a"), "PATCH /u", take(10, 0))
	if err != nil || !took || g.Granted != 10 || g.Tokens != 2 || bound != first.Value || !claimed || !fresh {
		t.Fatalf("first write: bound %q claimed %v fresh %v grant %+v took %v, %v; want its binding claimed with 10 tokens of 12", bound, claimed, fresh, g, took, err)
	}
	// The bucket holds 2: a take of 10 grants them, and the write claims.
	if _, claimed, _, g, _, err = s.BindRouteClaimAndTake(ctx, use("b", "PATCH /u"), claim("b"), "PATCH /u", take(10, 0)); err != nil || g.Granted != 2 || !claimed {
		t.Fatalf("second write: grant %+v claimed %v, %v; want the last 2 tokens, claimed", g, claimed, err)
	}
	refused := use("c", "PATCH /u")
	bound, claimed, _, g, took, err = s.BindRouteClaimAndTake(ctx, refused, claim("c"), "PATCH /u", take(10, 0))
	if err != nil || !took || g.Granted != 0 || bound != refused.Value || claimed {
		t.Fatalf("write over the limit: bound %q claimed %v grant %+v, %v; want its binding, no token, no claim", bound, claimed, g, err)
	}
	if got, isNew, err := s.Bind(ctx, "signed-write", "7:c:run", "retry", exp); err != nil || !isNew || got != "retry" {
		t.Fatalf("the refused write's claim key: %q fresh %v, %v; want unbound, so its retry runs", got, isNew, err)
	}
	// Tokens given back with a take are taken again by it.
	if _, claimed, _, g, _, err = s.BindRouteClaimAndTake(ctx, use("d", "PATCH /u"), claim("d"), "PATCH /u", take(1, 3)); err != nil || g.Granted != 1 || g.Tokens != 2 || !claimed {
		t.Fatalf("a take giving 3 back: grant %+v claimed %v, %v; want 1 granted leaving 2", g, claimed, err)
	}
	// A route binding this store has seen: no statement, the caller takes.
	if _, claimed, _, _, took, err = s.BindRouteClaimAndTake(ctx, first, claim("e"), "PATCH /u", take(1, 0)); err != nil || took || claimed {
		t.Fatalf("a binding the store has seen: claimed %v took %v, %v; want neither", claimed, took, err)
	}
}
