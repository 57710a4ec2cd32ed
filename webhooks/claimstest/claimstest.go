// Package claimstest is the conformance suite every webhooks.Claims adapter
// passes: a claim is exclusive until released or lapsed, a release drops
// only the claim it names, and concurrent claimers never hold one delivery
// at once.
package claimstest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/webhooks"
)

// Open returns two handles on one fresh, empty claim table (two nodes'
// views of it; an in-process adapter may return the same value twice) and
// registers their cleanup.
type Open func(t *testing.T) (first, second webhooks.Claims)

// Run holds an adapter to the claims contract.
func Run(t *testing.T, open Open) {
	cases := []struct {
		name string
		run  func(t *testing.T, a, b webhooks.Claims)
	}{
		{"Exclusive", testExclusive},
		{"Release", testRelease},
		{"StaleReleaseKeepsNewClaim", testStaleRelease},
		{"Lapse", testLapse},
		{"DuplicateAndEmpty", testDuplicateAndEmpty},
		{"ConcurrentClaimers", testConcurrent},
		{"ReleaseAndClaim", testReleaseAndClaim},
		{"ConcurrentReleaseAndClaim", testConcurrentReleaseAndClaim},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := open(t)
			c.run(t, a, b)
		})
	}
}

func claim(t *testing.T, c webhooks.Claims, owner string, ttl time.Duration, ids ...string) []webhooks.Claim {
	t.Helper()
	got, err := c.Claim(context.Background(), owner, ids, ttl)
	if err != nil {
		t.Fatalf("%s claims %v: %v", owner, ids, err)
	}
	return got
}

func ids(cs []webhooks.Claim) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.DeliveryID)
	}
	slices.Sort(out)
	return out
}

func release(t *testing.T, c webhooks.Claims, cs []webhooks.Claim) {
	t.Helper()
	if err := c.Release(context.Background(), cs); err != nil {
		t.Fatalf("release %v: %v", cs, err)
	}
}

// eventually claims id as owner until it succeeds (the previous claim
// lapsed), within a bounded number of tries.
func eventually(t *testing.T, c webhooks.Claims, owner, id string, ttl time.Duration) webhooks.Claim {
	t.Helper()
	for range 500 {
		if got := claim(t, c, owner, ttl, id); len(got) == 1 {
			return got[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never took %s after its claim lapsed", owner, id)
	return webhooks.Claim{}
}

func testExclusive(t *testing.T, a, b webhooks.Claims) {
	got := claim(t, a, "node-a", time.Minute, "d1", "d2")
	if fmt.Sprint(ids(got)) != "[d1 d2]" || got[0].Token == "" {
		t.Fatalf("first claim took %+v, want d1 and d2 with a token", got)
	}
	if again := claim(t, b, "node-b", time.Minute, "d2", "d1", "d3"); fmt.Sprint(ids(again)) != "[d3]" {
		t.Fatalf("second node took %v while d1 and d2 were claimed, want only d3", ids(again))
	}
	if self := claim(t, a, "node-a", time.Minute, "d1"); len(self) != 0 {
		t.Fatalf("the holder itself took d1 twice: %v", ids(self))
	}
}

func testRelease(t *testing.T, a, b webhooks.Claims) {
	got := claim(t, a, "node-a", time.Minute, "d1", "d2")
	var d1 []webhooks.Claim
	for _, c := range got {
		if c.DeliveryID == "d1" {
			d1 = append(d1, c)
		}
	}
	release(t, a, d1)
	if again := claim(t, b, "node-b", time.Minute, "d1", "d2"); fmt.Sprint(ids(again)) != "[d1]" {
		t.Fatalf("after releasing d1 another node took %v, want d1 only (d2 is still held)", ids(again))
	}
	release(t, a, d1) // releasing twice is harmless and keeps node-b's claim
	if third := claim(t, a, "node-c", time.Minute, "d1"); len(third) != 0 {
		t.Fatalf("a repeated release dropped node-b's claim: node-c took %v", ids(third))
	}
	release(t, b, nil)
}

func testStaleRelease(t *testing.T, a, b webhooks.Claims) {
	old := claim(t, a, "node-a", time.Millisecond, "d1")
	if len(old) != 1 {
		t.Fatalf("claim took %v", ids(old))
	}
	retaken := eventually(t, b, "node-b", "d1", time.Minute)
	if retaken.Token == old[0].Token {
		t.Fatalf("a retaken claim kept the lapsed claim's token %q", old[0].Token)
	}
	release(t, a, old) // node-a wakes up late and releases what it no longer holds
	if got := claim(t, a, "node-c", time.Minute, "d1"); len(got) != 0 {
		t.Fatalf("a stale release dropped node-b's claim: node-c took %v", ids(got))
	}
	release(t, b, []webhooks.Claim{retaken})
	if got := claim(t, a, "node-c", time.Minute, "d1"); len(got) != 1 {
		t.Fatalf("after node-b released, node-c took %v", ids(got))
	}
}

func testLapse(t *testing.T, a, b webhooks.Claims) {
	if got := claim(t, a, "node-a", 20*time.Millisecond, "d1"); len(got) != 1 {
		t.Fatalf("claim took %v", ids(got))
	}
	eventually(t, b, "node-b", "d1", time.Minute)
	if got := claim(t, a, "node-a", time.Minute, "d1"); len(got) != 0 {
		t.Fatalf("node-a took d1 back while node-b's fresh claim holds: %v", ids(got))
	}
}

func testDuplicateAndEmpty(t *testing.T, a, _ webhooks.Claims) {
	if got := claim(t, a, "node-a", time.Minute); len(got) != 0 {
		t.Fatalf("claiming nothing took %v", got)
	}
	if got := claim(t, a, "node-a", time.Minute, "d1", "d1", "d2", "d1"); fmt.Sprint(ids(got)) != "[d1 d2]" {
		t.Fatalf("claiming d1 three times and d2 took %v, want each once", ids(got))
	}
	release(t, a, nil)
}

// testReleaseAndClaim holds an adapter that can claim and release in one
// call (webhooks.ReleasingClaims) to doing exactly both: the claim takes
// what is free and leaves what another node holds or what the same call
// releases, the released claims are free to another node afterwards, and
// only the named token's claim is dropped.
func testReleaseAndClaim(t *testing.T, a, b webhooks.Claims) {
	rc, ok := a.(webhooks.ReleasingClaims)
	if !ok {
		t.Skip("the adapter has no ReleaseAndClaim")
	}
	ctx := context.Background()
	first := claim(t, a, "node-a", time.Minute, "d1", "d2", "d3")
	if len(first) != 3 {
		t.Fatalf("claim took %v", ids(first))
	}
	claim(t, b, "node-b", time.Minute, "d4")
	byID := map[string]webhooks.Claim{}
	for _, c := range first {
		byID[c.DeliveryID] = c
	}
	stale := webhooks.Claim{DeliveryID: "d4", Token: "not-node-b-token"}
	got, unreleased, err := rc.ReleaseAndClaim(ctx, []webhooks.Claim{byID["d1"], byID["d2"], stale}, "node-a", []string{"d2", "d4", "d5"}, time.Minute)
	if err != nil {
		t.Fatalf("claim d2, d4, d5 and release d1, d2: %v", err)
	}
	if fmt.Sprint(ids(got)) != "[d5]" {
		t.Fatalf("release-and-claim took %v, want d5 alone (node-b holds d4, the call itself released d2)", ids(got))
	}
	for _, c := range unreleased {
		if c != stale {
			t.Fatalf("nothing else holds d1 or d2, yet %v was left unreleased", c)
		}
	}
	if other := claim(t, b, "node-b", time.Minute, "d1", "d2", "d3", "d4", "d5"); fmt.Sprint(ids(other)) != "[d1 d2]" {
		t.Fatalf("after release-and-claim another node took %v, want d1 and d2 (d3, d5 are node-a's; d4 stays node-b's, the wrong token dropped nothing)", ids(other))
	}
	if none, unreleased, err := rc.ReleaseAndClaim(ctx, []webhooks.Claim{byID["d3"]}, "node-a", nil, time.Minute); err != nil || len(none) != 0 || len(unreleased) != 0 {
		t.Fatalf("release alone: %v, %v, %v", none, unreleased, err)
	}
	if freed := claim(t, b, "node-b", time.Minute, "d3"); len(freed) != 1 {
		t.Fatalf("d3 released without a claim beside it is not free: node-b took %v", ids(freed))
	}
	if only, _, err := rc.ReleaseAndClaim(ctx, nil, "node-a", []string{"d6"}, time.Minute); err != nil || fmt.Sprint(ids(only)) != "[d6]" {
		t.Fatalf("claim alone took %v, %v", ids(only), err)
	}
}

// testConcurrentReleaseAndClaim is testConcurrent with each round's claim
// releasing the previous round's claims in the same call (what a sender
// does): no delivery is held twice, no call fails (two nodes at once
// cannot deadlock), and every delivery is taken.
func testConcurrentReleaseAndClaim(t *testing.T, a, b webhooks.Claims) {
	if _, ok := a.(webhooks.ReleasingClaims); !ok {
		t.Skip("the adapter has no ReleaseAndClaim")
	}
	const deliveries, claimers, rounds = 12, 8, 25
	all := make([]string, deliveries)
	for i := range all {
		all[i] = fmt.Sprintf("d%02d", i)
	}
	var holders, taken [deliveries]atomic.Int32
	var overlaps atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, claimers)
	index := func(id string) int {
		var i int
		fmt.Sscanf(id, "d%02d", &i)
		return i
	}
	for w := range claimers {
		c := a.(webhooks.ReleasingClaims)
		if w%2 == 1 {
			c = b.(webhooks.ReleasingClaims)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("node-%d", w)
			var prev []webhooks.Claim
			for r := range rounds {
				want := slices.Clone(all)
				if (w+r)%2 == 1 {
					slices.Reverse(want)
				}
				// The previous round's claims are no longer in use.
				for _, cl := range prev {
					holders[index(cl.DeliveryID)].Add(-1)
				}
				got, unreleased, err := c.ReleaseAndClaim(context.Background(), prev, owner, want, time.Minute)
				if err == nil && len(unreleased) > 0 {
					err = c.Release(context.Background(), unreleased)
				}
				if err != nil {
					errs <- err
					return
				}
				for _, cl := range got {
					if holders[index(cl.DeliveryID)].Add(1) != 1 {
						overlaps.Add(1)
					}
					taken[index(cl.DeliveryID)].Add(1)
				}
				prev = got
				time.Sleep(time.Millisecond)
			}
			for _, cl := range prev {
				holders[index(cl.DeliveryID)].Add(-1)
			}
			if err := c.Release(context.Background(), prev); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent release-and-claim: %v", err)
	}
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("%d times a delivery was held by two claimers at once", n)
	}
	for i := range taken {
		if taken[i].Load() == 0 {
			t.Fatalf("%s was never claimed by %d claimers over %d rounds", all[i], claimers, rounds)
		}
	}
}

// testConcurrent runs claimers on both handles that each hold what they
// claim for a moment and release it: no delivery is ever held twice, and
// every delivery is taken at least once.
func testConcurrent(t *testing.T, a, b webhooks.Claims) {
	const deliveries, claimers, rounds = 12, 8, 25
	all := make([]string, deliveries)
	for i := range all {
		all[i] = fmt.Sprintf("d%02d", i)
	}
	var holders [deliveries]atomic.Int32
	var taken [deliveries]atomic.Int32
	var overlaps atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, claimers)
	for w := range claimers {
		c := a
		if w%2 == 1 {
			c = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("node-%d", w)
			for r := range rounds {
				// Each claimer asks in its own order, so lock orders differ.
				want := slices.Clone(all)
				if (w+r)%2 == 1 {
					slices.Reverse(want)
				}
				got, err := c.Claim(context.Background(), owner, want, time.Minute)
				if err != nil {
					errs <- err
					return
				}
				for _, cl := range got {
					var i int
					fmt.Sscanf(cl.DeliveryID, "d%02d", &i)
					if holders[i].Add(1) != 1 {
						overlaps.Add(1)
					}
					taken[i].Add(1)
				}
				time.Sleep(time.Millisecond)
				for _, cl := range got {
					var i int
					fmt.Sscanf(cl.DeliveryID, "d%02d", &i)
					holders[i].Add(-1)
				}
				if err := c.Release(context.Background(), got); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent claim or release: %v", err)
	}
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("%d times a delivery was held by two claimers at once", n)
	}
	for i := range taken {
		if taken[i].Load() == 0 {
			t.Fatalf("%s was never claimed by %d claimers over %d rounds", all[i], claimers, rounds)
		}
	}
}

// RunNodeBound checks an adapter whose claims end with the claiming node's
// process (its connection) once they are deadGrace old: open returns two
// nodes' handles on one fresh table, with that grace, and kill, which ends
// a handle as its process's death would.
func RunNodeBound(t *testing.T, open func(t *testing.T, deadGrace time.Duration) (first, second webhooks.Claims, kill func(webhooks.Claims))) {
	ctx := context.Background()
	// long is a claim no test waits out: a delivery claimed again within
	// bound was freed by its node's death. bound is generous, never
	// asserted closer.
	const long = 10 * time.Minute
	const bound = 5 * time.Second
	t.Run("DeadNodesClaimsFreeAfterTheGrace", func(t *testing.T) {
		const grace = 300 * time.Millisecond
		a, b, kill := open(t, grace)
		if got := claim(t, a, "node-a", long, "d1", "d2"); len(got) != 2 {
			t.Fatalf("first claim took %v", ids(got))
		}
		if got := claim(t, b, "node-b", long, "d1", "d2", "d3"); !slices.Equal(ids(got), []string{"d3"}) {
			t.Fatalf("a live node's claims were taken: %v", ids(got))
		}
		killed := time.Now()
		kill(a)
		deadline := killed.Add(bound)
		var got []webhooks.Claim
		for {
			got = append(got, claim(t, b, "node-b", long, "d1", "d2")...)
			if len(got) == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a dead node's claims still held %v after its death (claimed %v)", bound, ids(got))
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("claimed again %v after the claiming node's death (grace %v)", time.Since(killed).Round(time.Millisecond), grace)
		if err := b.Release(ctx, got); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("DeadNodesClaimsKeptWithinTheGrace", func(t *testing.T) {
		// The receiver may still be answering the dead node's attempt.
		a, b, kill := open(t, long)
		claim(t, a, "node-a", long, "d1")
		kill(a)
		time.Sleep(bound / 5)
		if got := claim(t, b, "node-b", long, "d1"); len(got) != 0 {
			t.Fatalf("a dead node's claim was taken within the grace: %v", ids(got))
		}
	})
}
