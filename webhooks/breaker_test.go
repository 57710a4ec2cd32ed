package webhooks

import (
	"sync"
	"testing"
	"time"
)

func TestBreakerBoundsAnEndpointsPOSTs(t *testing.T) {
	b := newBreakers(2, 3, time.Second, nil)
	now := time.Now()
	for i := range 2 {
		if ok, _ := b.acquire(endpointKey{app: 1}, "u", now); !ok {
			t.Fatalf("slot %d refused under the bound", i)
		}
	}
	if ok, _ := b.acquire(endpointKey{app: 1}, "u", now); ok {
		t.Fatal("a third POST at once with bound 2")
	}
	if ok, _ := b.acquire(endpointKey{app: 2}, "v", now); !ok {
		t.Fatal("another app's endpoint refused because the first is full")
	}
	b.cancel(endpointKey{app: 1}, "u", false)
	if ok, _ := b.acquire(endpointKey{app: 1}, "u", now); !ok {
		t.Fatal("a cancelled slot was not given back")
	}
}

func TestBreakerOpensProbesOnceAndCloses(t *testing.T) {
	var changes []string
	b := newBreakers(10, 3, time.Second, func(_ int64, from, to string, _ int) { changes = append(changes, from+">"+to) })
	now := time.Now()
	fail := func() {
		t.Helper()
		ok, probe := b.acquire(endpointKey{app: 1}, "u", now)
		if !ok {
			t.Fatal("refused while closed")
		}
		b.done(endpointKey{app: 1}, "u", probe, true, now)
	}
	fail()
	fail()
	// A success in between resets the count.
	ok, probe := b.acquire(endpointKey{app: 1}, "u", now)
	if !ok {
		t.Fatal("refused")
	}
	b.done(endpointKey{app: 1}, "u", probe, false, now)
	fail()
	fail()
	fail()
	if ok, _ := b.acquire(endpointKey{app: 1}, "u", now.Add(999*time.Millisecond)); ok {
		t.Fatal("open breaker let a POST through before its cool-down ended")
	}
	ok, probe = b.acquire(endpointKey{app: 1}, "u", now.Add(time.Second))
	if !ok || !probe {
		t.Fatalf("no probe after the cool-down: ok %v probe %v", ok, probe)
	}
	if ok, _ := b.acquire(endpointKey{app: 1}, "u", now.Add(time.Second)); ok {
		t.Fatal("a second POST while the probe is out")
	}
	// The probe fails: open again, for twice as long.
	b.done(endpointKey{app: 1}, "u", true, true, now.Add(time.Second))
	if ok, _ := b.acquire(endpointKey{app: 1}, "u", now.Add(2900*time.Millisecond)); ok {
		t.Fatal("reopened breaker did not double its cool-down")
	}
	ok, probe = b.acquire(endpointKey{app: 1}, "u", now.Add(3*time.Second))
	if !ok || !probe {
		t.Fatal("no second probe")
	}
	b.done(endpointKey{app: 1}, "u", true, false, now.Add(3*time.Second))
	st := b.snapshot()
	if len(st) != 1 || st[0].State != BreakerClosed || st[0].Trips != 1 || st[0].Failures != 0 || st[0].InFlight != 0 {
		t.Fatalf("state after a good probe: %+v", st)
	}
	want := []string{"closed>open", "open>half_open", "half_open>open", "open>half_open", "half_open>closed"}
	if len(changes) != len(want) {
		t.Fatalf("changes %v, want %v", changes, want)
	}
	for i := range want {
		if changes[i] != want[i] {
			t.Fatalf("changes %v, want %v", changes, want)
		}
	}
}

func TestBreakerCancelledProbeLetsAnotherProbe(t *testing.T) {
	b := newBreakers(10, 1, time.Second, nil)
	now := time.Now()
	_, probe := b.acquire(endpointKey{app: 1}, "u", now)
	b.done(endpointKey{app: 1}, "u", probe, true, now)
	later := now.Add(time.Second)
	ok, probe := b.acquire(endpointKey{app: 1}, "u", later)
	if !ok || !probe {
		t.Fatal("no probe")
	}
	b.cancel(endpointKey{app: 1}, "u", probe) // the claim went to another node
	if ok, probe := b.acquire(endpointKey{app: 1}, "u", later); !ok || !probe {
		t.Fatal("a cancelled probe blocked the endpoint")
	}
}

func TestBreakerLateFailuresDoNotExtendAnOpenBreaker(t *testing.T) {
	b := newBreakers(10, 2, time.Second, nil)
	now := time.Now()
	var probes []bool
	for range 4 {
		_, p := b.acquire(endpointKey{app: 1}, "u", now)
		probes = append(probes, p)
	}
	for _, p := range probes {
		b.done(endpointKey{app: 1}, "u", p, true, now) // the first two open it; the rest were sent before
	}
	if ok, _ := b.acquire(endpointKey{app: 1}, "u", now.Add(time.Second)); !ok {
		t.Fatal("POSTs sent before the breaker opened extended its cool-down")
	}
}

func TestBreakerNewURLStartsClosed(t *testing.T) {
	b := newBreakers(10, 1, time.Hour, nil)
	now := time.Now()
	_, p := b.acquire(endpointKey{app: 1}, "old", now)
	b.done(endpointKey{app: 1}, "old", p, true, now)
	if ok, _ := b.acquire(endpointKey{app: 1}, "new", now); !ok {
		t.Fatal("an app's new URL inherited the old one's open breaker")
	}
}

// Concurrent acquires never exceed the bound (run with -race).
func TestBreakerConcurrentAcquiresKeepTheBound(t *testing.T) {
	b := newBreakers(3, 1000, time.Second, nil)
	var mu sync.Mutex
	in, peak := 0, 0
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				ok, p := b.acquire(endpointKey{app: 1}, "u", time.Now())
				if !ok {
					continue
				}
				mu.Lock()
				in++
				peak = max(peak, in)
				mu.Unlock()
				mu.Lock()
				in--
				mu.Unlock()
				b.done(endpointKey{app: 1}, "u", p, false, time.Now())
			}
		}()
	}
	wg.Wait()
	if peak > 3 {
		t.Fatalf("%d slots held at once, bound 3", peak)
	}
	if st := b.snapshot(); st[0].InFlight != 0 {
		t.Fatalf("slots leaked: %+v", st)
	}
}

// full names exactly the apps whose endpoint can take no POST now, so the
// sender leaves their queues out of its scans, and forgets an app whose
// URL changed (the new URL starts afresh).
func TestBreakerFullListsEndpointsThatCannotPost(t *testing.T) {
	b := newBreakers(1, 1, time.Second, nil)
	now := time.Now()
	urls := map[int64]string{1: "busy", 2: "failing", 3: "idle"}
	url := func(key endpointKey) (string, bool) { return urls[key.app], key.endpoint == 0 }
	if got := b.full(now, url); len(got) != 0 {
		t.Fatalf("no endpoint used yet: full %v", got)
	}
	b.acquire(endpointKey{app: 1}, "busy", now) // its one slot in flight
	ok, probe := b.acquire(endpointKey{app: 2}, "failing", now)
	if !ok {
		t.Fatal("a fresh endpoint refused its first POST")
	}
	b.done(endpointKey{app: 2}, "failing", probe, true, now) // opens at the first failure
	b.acquire(endpointKey{app: 3}, "idle", now)
	b.done(endpointKey{app: 3}, "idle", false, false, now)
	if got := b.full(now, url); !sameIDs(got, 1, 2) {
		t.Fatalf("full %v, want apps 1 (share in flight) and 2 (breaker open)", got)
	}
	if got := b.full(now.Add(time.Second), url); !sameIDs(got, 1) {
		t.Fatalf("after the cool-down full %v, want app 1 only: app 2 may probe", got)
	}
	ok, probe = b.acquire(endpointKey{app: 2}, "failing", now.Add(time.Second))
	if !ok || !probe {
		t.Fatal("no probe")
	}
	if got := b.full(now.Add(time.Second), url); !sameIDs(got, 1, 2) {
		t.Fatalf("with the probe out full %v, want apps 1 and 2", got)
	}
	urls[1] = "moved"
	b.cancel(endpointKey{app: 1}, "busy", false)
	b.acquire(endpointKey{app: 1}, "busy", now)
	if got := b.full(now.Add(time.Second), url); !sameIDs(got, 2) {
		t.Fatalf("after app 1's URL changed full %v, want app 2 only", got)
	}
	// An app with a second endpoint is never listed: Due skips whole apps.
	only := func(key endpointKey) (string, bool) { return urls[key.app], key.app != 2 }
	if got := b.full(now.Add(time.Second), only); len(got) != 0 {
		t.Fatalf("app 2 has another endpoint: full %v, want none", got)
	}
}

func sameIDs(got []int64, want ...int64) bool {
	if len(got) != len(want) {
		return false
	}
	seen := map[int64]bool{}
	for _, id := range got {
		seen[id] = true
	}
	for _, id := range want {
		if !seen[id] {
			return false
		}
	}
	return true
}

// full lists the apps whose only endpoint can take no POST at now: its
// share is in flight, its breaker is open, or its probe is out. The sender
// leaves their deliveries out of its due scans until a slot frees (which
// wakes it) or the probe is due. only(key) answers the endpoint's current
// URL and whether it is its app's only endpoint: an app with several
// endpoints is never listed (Due skips whole apps, and its other endpoints
// may be free), and an endpoint whose URL changed is not listed either (a
// new URL starts afresh).
func (b *breakers) full(now time.Time, only func(key endpointKey) (url string, sole bool)) []int64 {
	var out []int64
	for _, a := range b.blocked(now, only) {
		out = append(out, a.app)
	}
	return out
}
