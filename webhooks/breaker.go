package webhooks

import (
	"sort"
	"sync"
	"time"
)

// Breaker states as operators see them (metrics, logs, Dispatcher.Endpoints).
const (
	// BreakerClosed: the endpoint answers; its deliveries go out, at most
	// PerEndpoint POSTs at a time.
	BreakerClosed = "closed"
	// BreakerOpen: the endpoint failed or timed out BreakerFailures times in
	// a row; its deliveries wait (no attempt recorded, no retry used) until
	// the cool-down ends.
	BreakerOpen = "open"
	// BreakerHalfOpen: the cool-down ended and one delivery probes the
	// endpoint; its outcome closes the breaker or opens it again for longer.
	BreakerHalfOpen = "half_open"
)

// Defaults of the per-endpoint bound and breaker, used when the Dispatcher's fields are zero.
const (
	DefaultPerEndpoint     = 16
	DefaultBreakerFailures = 5
	DefaultBreakerCooldown = 30 * time.Second
	// maxCooldownFactor caps how far repeated failed probes stretch the cool-down.
	maxCooldownFactor = 10
)

// EndpointState is one app endpoint's breaker as an operator sees it.
type EndpointState struct {
	AppID      int64
	EndpointID int64 // domain.DefaultEndpointID for the app-level one
	State      string
	InFlight   int
	// Failures counts failed or timed-out POSTs in a row.
	Failures int
	// OpenUntil is when an open breaker lets one probe through.
	OpenUntil time.Time
	// Trips counts how often the breaker opened since the node started.
	Trips int
}

// endpoint is the mutable state behind EndpointState.
type endpoint struct {
	url      string
	state    string
	inFlight int
	failures int
	cooldown time.Duration
	until    time.Time
	probing  bool
	trips    int
}

// breakers bounds concurrent POSTs per endpoint and trips a breaker per
// endpoint, so that one slow or failing partner endpoint holds at most its
// own share of the workers and never the others' deliveries. Endpoints are
// keyed by app and endpoint id; a changed URL starts afresh.
type breakers struct {
	mu        sync.Mutex
	limit     int
	threshold int
	cooldown  time.Duration
	eps       map[endpointKey]*endpoint
	// notable holds the endpoints of eps that are not closed with a free
	// slot (breaker open or half-open, or their share in flight): the
	// sender asks for those on every pass (nextProbe, blocked), and eps
	// holds every endpoint posted to since the start, one per app with
	// many tenants, almost all of them idle.
	notable map[endpointKey]*endpoint
	// onChange reports a state change (closed, open, half_open) to the operator.
	onChange func(appID int64, from, to string, failures int)
}

func newBreakers(limit, threshold int, cooldown time.Duration, onChange func(int64, string, string, int)) *breakers {
	return &breakers{limit: limit, threshold: threshold, cooldown: cooldown, eps: map[endpointKey]*endpoint{}, notable: map[endpointKey]*endpoint{}, onChange: onChange}
}

// endpointKey names one endpoint of one app.
type endpointKey struct {
	app      int64
	endpoint int64
}

func (b *breakers) get(key endpointKey, url string) *endpoint {
	ep := b.eps[key]
	if ep == nil || ep.url != url {
		inFlight := 0
		if ep != nil {
			inFlight = ep.inFlight // POSTs to the old URL still count against the endpoint's share
		}
		ep = &endpoint{url: url, state: BreakerClosed, cooldown: b.cooldown, inFlight: inFlight}
		b.eps[key] = ep
		b.track(key, ep)
	}
	return ep
}

// track files ep in notable or out of it after a change; every change of
// an endpoint's state or in-flight count is followed by one.
func (b *breakers) track(key endpointKey, ep *endpoint) {
	if ep.state != BreakerClosed || ep.inFlight >= b.limit {
		b.notable[key] = ep
	} else {
		delete(b.notable, key)
	}
}

func (b *breakers) set(key endpointKey, ep *endpoint, to string) {
	from := ep.state
	ep.state = to
	if from != to && b.onChange != nil {
		b.onChange(key.app, from, to, ep.failures)
	}
}

// acquire reserves a POST slot of the app's endpoint at now. It fails while
// the endpoint has its share in flight, while its breaker is open, and while
// a half-open breaker's probe is out; otherwise probe says this POST is the
// half-open probe. Every successful acquire is followed by exactly one done
// or cancel.
func (b *breakers) acquire(key endpointKey, url string, now time.Time) (ok, probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ep := b.get(key, url)
	defer b.track(key, ep)
	switch ep.state {
	case BreakerOpen:
		if now.Before(ep.until) {
			return false, false
		}
		b.set(key, ep, BreakerHalfOpen)
		fallthrough
	case BreakerHalfOpen:
		if ep.probing {
			return false, false
		}
		ep.probing = true
		ep.inFlight++
		return true, true
	}
	if ep.inFlight >= b.limit {
		return false, false
	}
	ep.inFlight++
	return true, false
}

// cancel gives back a slot that posted nothing (the claim went to another
// node, the delivery was no longer due): the breaker learns nothing from it.
func (b *breakers) cancel(key endpointKey, url string, probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ep := b.get(key, url)
	defer b.track(key, ep)
	ep.inFlight = max(ep.inFlight-1, 0)
	if probe {
		ep.probing = false
	}
}

// done gives back a slot whose POST ended, failed saying whether the
// endpoint timed out, could not be reached or answered 5xx or 429.
func (b *breakers) done(key endpointKey, url string, probe, failed bool, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ep := b.get(key, url)
	defer b.track(key, ep)
	ep.inFlight = max(ep.inFlight-1, 0)
	if probe {
		ep.probing = false
	}
	if !failed {
		ep.failures, ep.cooldown = 0, b.cooldown
		b.set(key, ep, BreakerClosed)
		return
	}
	ep.failures++
	switch {
	case probe:
		// The probe failed: wait longer before the next one.
		ep.cooldown = min(2*ep.cooldown, maxCooldownFactor*b.cooldown)
	case ep.state != BreakerClosed || ep.failures < b.threshold:
		return // POSTs sent before the breaker opened leave it as it is
	default:
		ep.trips++
	}
	ep.until = now.Add(ep.cooldown)
	b.set(key, ep, BreakerOpen)
}

// nextProbe is the earliest time an open breaker lets a probe through, so
// the sender wakes for it.
func (b *breakers) nextProbe() (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var next time.Time
	for _, ep := range b.notable {
		if ep.state == BreakerOpen && (next.IsZero() || ep.until.Before(next)) {
			next = ep.until
		}
	}
	return next, !next.IsZero()
}

// snapshot lists every endpoint the sender has posted to, by app id.
func (b *breakers) snapshot() []EndpointState {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]EndpointState, 0, len(b.eps))
	for key, ep := range b.eps {
		out = append(out, EndpointState{AppID: key.app, EndpointID: key.endpoint, State: ep.state, InFlight: ep.inFlight, Failures: ep.failures, OpenUntil: ep.until, Trips: ep.trips})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].AppID < out[j].AppID || (out[i].AppID == out[j].AppID && out[i].EndpointID < out[j].EndpointID)
	})
	return out
}

// blockedApp is an app whose sole endpoint can take no POST now.
type blockedApp struct {
	app  int64
	open bool // its breaker is open or its probe is out, not merely busy
}

// blocked is full with the reason: open says the endpoint's breaker holds
// it (until the probe), not its share of POSTs in flight (a slot frees
// within a POST).
func (b *breakers) blocked(now time.Time, only func(key endpointKey) (url string, sole bool)) []blockedApp {
	type cand struct {
		key  endpointKey
		url  string
		open bool
	}
	var cands []cand
	b.mu.Lock()
	for key, ep := range b.notable {
		open := (ep.state == BreakerOpen && now.Before(ep.until)) || (ep.state == BreakerHalfOpen && ep.probing)
		if open || ep.inFlight >= b.limit {
			cands = append(cands, cand{key, ep.url, open})
		}
	}
	b.mu.Unlock()
	var out []blockedApp
	for _, c := range cands {
		if url, sole := only(c.key); sole && url == c.url { // outside the lock: the directory has its own
			out = append(out, blockedApp{c.key.app, c.open})
		}
	}
	return out
}

// isOpen says whether the endpoint's breaker holds its POSTs at now (open
// before its probe is due, or its probe out).
func (b *breakers) isOpen(key endpointKey, url string, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	ep, ok := b.eps[key]
	if !ok || ep.url != url {
		return false
	}
	return (ep.state == BreakerOpen && now.Before(ep.until)) || (ep.state == BreakerHalfOpen && ep.probing)
}
