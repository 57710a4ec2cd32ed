package webhooks_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/webhooks"
)

// endpoint is a partner endpoint that records which deliveries arrived
// and every POST's span; answer decides what each POST gets.
type endpoint struct {
	srv *httptest.Server

	mu      sync.Mutex
	arrived map[string]int // delivery id → POSTs answered
	posts   []post
	changed chan struct{}
	answer  func(*http.Request) int // blocks as long as the endpoint should hang
}

// post is one POST as the endpoint saw it. abandoned: the sender gave up
// on it (its timeout) before the answer; the endpoint may notice that
// later than the sender, so its span here outlasts the attempt.
type post struct {
	id         string
	start, end time.Time
	abandoned  bool
}

func newEndpoint(t *testing.T, answer func(*http.Request) int) *endpoint {
	e := &endpoint{arrived: map[string]int{}, changed: make(chan struct{}, 1), answer: answer}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		p := post{id: r.Header.Get("X-Webhook-Id"), start: time.Now()}
		status := e.answer(r)
		p.end, p.abandoned = time.Now(), r.Context().Err() != nil
		e.mu.Lock()
		e.posts = append(e.posts, p)
		if status/100 == 2 && !p.abandoned {
			e.arrived[p.id]++
		}
		e.mu.Unlock()
		w.WriteHeader(status)
		select {
		case e.changed <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(e.srv.Close)
	return e
}

// concurrency is the most POSTs the sender held open at once, and the
// deliveries it posted twice at the same time, over the POSTs it waited
// for (an abandoned POST ended for the sender when it gave up, which the
// endpoint cannot see).
func (e *endpoint) concurrency() (most int, twice []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	type edge struct {
		at    time.Time
		delta int
		id    string
	}
	var edges []edge
	for _, p := range e.posts {
		if !p.abandoned {
			edges = append(edges, edge{p.start, 1, p.id}, edge{p.end, -1, p.id})
		}
	}
	// Ends before starts at the same instant: a POST answered frees its slot.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	open, n := map[string]int{}, 0
	for _, x := range edges {
		n += x.delta
		open[x.id] += x.delta
		if x.delta > 0 && open[x.id] > 1 {
			twice = append(twice, x.id)
		}
		most = max(most, n)
	}
	return most, twice
}

// delivered is how many distinct deliveries the endpoint answered with 2xx.
func (e *endpoint) delivered() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.arrived)
}

// waitDelivered waits (bounded) until n distinct deliveries were answered 2xx.
func (e *endpoint) waitDelivered(t *testing.T, n int, why string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for e.delivered() < n {
		select {
		case <-e.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%s: %d of %d deliveries arrived", why, e.delivered(), n)
		}
	}
}

// profileUpdates registers n users of a and updates each once: n
// user.profile.updated deliveries for a.
func profileUpdates(t *testing.T, p *harness.Platform, a *harness.App, prefix string, n int) {
	t.Helper()
	for i := range n {
		var reg harness.RegisterData
		p.Send(a.Request("POST", "/open/v1/channel/users", map[string]any{"channel_user_id": fmt.Sprint(prefix, i), "user": map[string]any{"name": "n"}}, time.Now())).Data(t, &reg)
		if res := p.Send(a.Request("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID), map[string]any{"nickname": "x"}, time.Now())); res.Status != http.StatusOK {
			t.Fatalf("patch: %d %s", res.Status, res.Raw)
		}
	}
}

// One partner endpoint that answers only after 10 s takes at most its own
// share of the sender's workers: every other endpoint's deliveries arrive
// while it hangs, and its own arrive once it answers, none posted twice at
// once and never more at once than the per-endpoint bound.
func TestSlowEndpointDelaysNoOtherEndpoint(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback, cfg.PartnerRateLimit = true, -1
		cfg.WebhookWorkers, cfg.WebhookPerEndpoint = 6, 2
		// A POST the 10 s timeout cuts is retried at once, not in a minute.
		cfg.WebhookSchedule = []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}
		p := harness.Start(t, cfg)
		release := make(chan struct{})
		// It hangs until released, or until the node's 10 s POST timeout
		// gives up on the attempt (then it is gone before the retry), not for
		// a fixed time that a loaded machine could outlast before the other
		// endpoints are served.
		slow := newEndpoint(t, func(r *http.Request) int {
			select {
			case <-release:
				return http.StatusOK
			case <-r.Context().Done():
				return http.StatusServiceUnavailable // nobody reads it
			}
		})
		fast := newEndpoint(t, func(*http.Request) int { return http.StatusOK })
		other := newEndpoint(t, func(*http.Request) int { return http.StatusNoContent })
		a, b, c := p.CreateApp("slow"), p.CreateApp("fast"), p.CreateApp("other")
		p.ConfigureWebhook(a, slow.srv.URL, "user.profile.updated")
		p.ConfigureWebhook(b, fast.srv.URL, "user.profile.updated")
		p.ConfigureWebhook(c, other.srv.URL, "user.profile.updated")

		// The slow endpoint's deliveries are first in the queue and more
		// than all the workers.
		profileUpdates(t, p, a, "s", 10)
		profileUpdates(t, p, b, "f", 15)
		profileUpdates(t, p, c, "o", 15)
		fast.waitDelivered(t, 15, "fast endpoint behind a hanging one")
		other.waitDelivered(t, 15, "second endpoint behind a hanging one")
		if got := slow.delivered(); got != 0 {
			t.Fatalf("the slow endpoint answered %d while it should still hang", got)
		}
		close(release)
		slow.waitDelivered(t, 10, "slow endpoint once it answers")

		for name, e := range map[string]*endpoint{"slow": slow, "fast": fast, "other": other} {
			most, twice := e.concurrency()
			if len(twice) > 0 {
				t.Errorf("%s endpoint: deliveries posted twice at once: %v", name, twice)
			}
			if most > 2 {
				t.Errorf("%s endpoint: %d POSTs at once, bound 2", name, most)
			}
		}
	})
}

// An endpoint that keeps failing trips its breaker: its deliveries wait
// without burning attempts, the operator sees the breaker open in the
// metrics, other endpoints are unaffected, and once the endpoint recovers
// a single probe closes the breaker and the waiting deliveries go out.
// The dispatcher's clock is the test's: the breaker stays open until the
// test moves it past the cool-down, so what the test reads while it is
// open (metrics, POST count) is not a race against a real-time cool-down
// that a loaded machine outlasts.
func TestFailingEndpointTripsItsBreakerAndRecovers(t *testing.T) {
	t.Parallel()
	clock := harness.NewFakeClock()
	const cooldown = time.Second
	cfg := node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true, PartnerRateLimit: -1, WebhookClock: clock,
		WebhookPerEndpoint: 1, WebhookBreakerFailures: 3, WebhookBreakerCooldown: cooldown,
		WebhookSchedule: []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond, time.Millisecond, time.Millisecond}}
	p := harness.Start(t, cfg)
	var mu sync.Mutex
	failing := true
	posts := 0
	broken := newEndpoint(t, func(*http.Request) int {
		mu.Lock()
		defer mu.Unlock()
		posts++
		if failing {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	fine := newEndpoint(t, func(*http.Request) int { return http.StatusOK })
	a, b := p.CreateApp("broken"), p.CreateApp("fine")
	p.ConfigureWebhook(a, broken.srv.URL, "user.profile.updated")
	p.ConfigureWebhook(b, fine.srv.URL, "user.profile.updated")

	profileUpdates(t, p, a, "x", 4)
	// Wait (bounded) until the breaker opens.
	deadline := time.Now().Add(harness.WaitBound)
	for !breakerIs(p, a.ID, webhooks.BreakerOpen) {
		if time.Now().After(deadline) {
			t.Fatalf("breaker never opened: %+v", p.Node.Dispatcher.Endpoints())
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	atTrip := posts
	mu.Unlock()
	if atTrip != 3 {
		t.Fatalf("%d POSTs before the breaker opened, want its threshold 3", atTrip)
	}
	if m := scrape(t, p); !strings.Contains(m, fmt.Sprintf(`platform_webhook_endpoint_breaker{app_id="%d",state="open"} 1`, a.ID)) ||
		!strings.Contains(m, fmt.Sprintf(`platform_webhook_endpoint_breaker_trips_total{app_id="%d"} 1`, a.ID)) {
		t.Fatalf("metrics do not show the open breaker:\n%s", grepLines(m, "breaker"))
	}
	// Others are unaffected while it is open.
	profileUpdates(t, p, b, "y", 5)
	fine.waitDelivered(t, 5, "healthy endpoint while another's breaker is open")
	mu.Lock()
	held := posts
	failing = false
	mu.Unlock()
	if held != atTrip || !breakerIs(p, a.ID, webhooks.BreakerOpen) {
		t.Fatalf("%d POSTs to the open breaker's endpoint before its cool-down ended (%d at the trip): %+v", held, atTrip, p.Node.Dispatcher.Endpoints())
	}

	clock.Advance(cooldown) // the probe is due
	// From here the dispatcher's clock runs as the real one would: the
	// sender also rescans on its 1 s timer, which is on that clock (a
	// projection change it wakes for may come before it listens again).
	for deadline := time.Now().Add(harness.WaitBound); broken.delivered() < 4; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("recovered endpoint after its probe: %d of 4 deliveries arrived", broken.delivered())
		}
		clock.Advance(100 * time.Millisecond)
	}
	if !breakerIs(p, a.ID, webhooks.BreakerClosed) {
		t.Fatalf("breaker after recovery: %+v", p.Node.Dispatcher.Endpoints())
	}
	// Every delivery got one attempt record per POST: none was burnt while open.
	var d struct {
		Deliveries []harness.DeliveryView `json:"deliveries"`
	}
	for wait := time.Now().Add(harness.WaitBound); ; time.Sleep(20 * time.Millisecond) {
		p.Admin("GET", fmt.Sprintf("/admin/v1/deliveries?app_id=%d", a.ID), nil).Data(t, &d)
		done := 0
		for _, del := range d.Deliveries {
			if del.Status == "delivered" {
				done++
			}
		}
		if done == 4 {
			break
		}
		if time.Now().After(wait) {
			t.Fatalf("deliveries never all recorded delivered: %+v", d.Deliveries)
		}
	}
	mu.Lock()
	total := posts
	mu.Unlock()
	attempts := 0
	for _, del := range d.Deliveries {
		attempts += del.Attempts
	}
	// One probe closed the breaker: the three failed POSTs, then each of the
	// four deliveries once (a failed probe would have added one).
	if len(d.Deliveries) != 4 || attempts != total || total != atTrip+4 {
		t.Fatalf("%d deliveries, %d attempts recorded for %d POSTs", len(d.Deliveries), attempts, total)
	}
}

func breakerIs(p *harness.Platform, appID int64, state string) bool {
	for _, e := range p.Node.Dispatcher.Endpoints() {
		if e.AppID == appID {
			return e.State == state
		}
	}
	return false
}

func scrape(t *testing.T, p *harness.Platform) string {
	t.Helper()
	res, err := http.Get(p.Srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return string(body)
}

func grepLines(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
