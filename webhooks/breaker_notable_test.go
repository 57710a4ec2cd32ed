package webhooks

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// checkNotable fails unless b.notable holds exactly the endpoints of b.eps
// that are not closed with a free slot: nextProbe and blocked read only
// those, so one missing would hide an open breaker's probe or a busy
// endpoint from the sender.
func checkNotable(t *testing.T, b *breakers) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	want := 0
	for key, ep := range b.eps {
		if ep.state != BreakerClosed || ep.inFlight >= b.limit {
			want++
			if b.notable[key] != ep {
				t.Fatalf("endpoint %+v (%s, %d in flight) is not in notable", key, ep.state, ep.inFlight)
			}
		}
	}
	if len(b.notable) != want {
		t.Fatalf("notable holds %d endpoints, want %d", len(b.notable), want)
	}
}

// Under random acquires, cancels, failures, successes, cool-downs and URL
// changes over many endpoints, the endpoints the sender is told about
// (probe times, blocked apps) are the same as a walk over every endpoint
// gives.
func TestBreakerNotableFollowsEveryChange(t *testing.T) {
	b := newBreakers(2, 2, time.Second, nil)
	now := time.Unix(1_700_000_000, 0)
	type slot struct {
		key   endpointKey
		url   string
		probe bool
	}
	var held []slot
	urls := map[int64]string{}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		app := int64(r.IntN(20))
		if urls[app] == "" || r.IntN(50) == 0 {
			urls[app] = fmt.Sprintf("https://a%d.example/%d", app, i)
		}
		key := endpointKey{app: app}
		switch op := r.IntN(4); {
		case op <= 1:
			if ok, probe := b.acquire(key, urls[app], now); ok {
				held = append(held, slot{key, urls[app], probe})
			}
		case len(held) > 0:
			j := r.IntN(len(held))
			s := held[j]
			held = append(held[:j], held[j+1:]...)
			if op == 2 {
				b.cancel(s.key, s.url, s.probe)
			} else {
				b.done(s.key, s.url, s.probe, r.IntN(2) == 0, now)
			}
		}
		if r.IntN(100) == 0 {
			now = now.Add(time.Duration(r.IntN(3000)) * time.Millisecond)
		}
		checkNotable(t, b)
		// What the sender reads agrees with a walk over every endpoint.
		var next time.Time
		b.mu.Lock()
		for _, ep := range b.eps {
			if ep.state == BreakerOpen && (next.IsZero() || ep.until.Before(next)) {
				next = ep.until
			}
		}
		b.mu.Unlock()
		if got, ok := b.nextProbe(); got != next || ok != !next.IsZero() {
			t.Fatalf("step %d: nextProbe %v %v, a walk over every endpoint gives %v", i, got, ok, next)
		}
	}
}

// BenchmarkBreakerPassManyIdleEndpoints is what one pass of the sender
// asks the breakers (nextProbe, blocked) when 10,000 apps' endpoints have
// been posted to and one is busy: it should not grow with the idle ones.
func BenchmarkBreakerPassManyIdleEndpoints(b *testing.B) {
	br := newBreakers(1, 5, time.Second, nil)
	now := time.Now()
	for app := range int64(10_000) {
		key := endpointKey{app: app}
		br.acquire(key, "u", now)
		br.done(key, "u", false, false, now)
	}
	br.acquire(endpointKey{app: 7}, "u", now)
	only := func(endpointKey) (string, bool) { return "u", true }
	b.ReportAllocs()
	for b.Loop() {
		br.nextProbe()
		if len(br.blocked(now, only)) != 1 {
			b.Fatal("want the one busy endpoint")
		}
	}
}
