package auth

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// Default failure budgets: a source address may fail authentication
// DefaultAddressFailures times, and DefaultAppAddressFailures times for one
// app, in a burst; each budget refills completely in FailurePeriod.
const (
	DefaultAddressFailures    = 60
	DefaultAppAddressFailures = 20
	FailurePeriod             = time.Minute
	// maxFailureBuckets bounds the limiter's memory under a spray of
	// addresses; beyond it, refilled buckets are forgotten first, then all.
	maxFailureBuckets = 100_000
)

// Failures throttles failed authentication so that guessing signatures
// costs time, without letting an attacker lock a partner out: budgets are
// kept per source address and per (app, source address), never per app
// alone, so failures from one address never refuse the app's requests
// from another. A blocked address is refused before its signature is
// checked, so a good guess cannot be told from a bad one while blocked.
type Failures struct {
	PerAddress    int // failures per FailurePeriod from one address (burst)
	PerAppAddress int // failures per FailurePeriod from one address for one app
	Period        time.Duration
	Now           func() time.Time

	mu      sync.Mutex
	buckets map[budgetKey]*failureBucket
	calls   int
}

// budgetKey names a budget: a source address's (app 0) or the address's
// for one app.
type budgetKey struct {
	app int64
	src string
}

type failureBucket struct {
	tokens float64
	limit  int
	at     time.Time
}

// NewFailures builds a limiter with the default budgets.
func NewFailures() *Failures {
	return &Failures{PerAddress: DefaultAddressFailures, PerAppAddress: DefaultAppAddressFailures,
		Period: FailurePeriod, Now: time.Now}
}

type failuresKey struct{}

// requestAuth is what Install puts in a request's context: the node's
// failure limiter and the server time the request arrived.
type requestAuth struct {
	f  *Failures
	at time.Time
}

// Install makes f the failure limiter of every request through next; the
// node wraps its router with it so that all APIs share one limiter. It
// also stamps each request with its arrival on f.Now (the node's clock,
// which SchemeM.Now reads too), before the request waits for anything:
// the scheme M route binding measures its grace between arrivals, so
// that time a request spends inside a stalled node (a starved CPU, a
// directory check waiting for Postgres, a restart's catch-up) is not
// charged to the partner.
func (f *Failures) Install(next http.Handler) http.Handler {
	now := f.Now
	if now == nil {
		now = time.Now
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ra := &requestAuth{f: f, at: now()}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), failuresKey{}, ra)))
	})
}

func failuresFrom(ctx context.Context) *Failures {
	ra, _ := ctx.Value(failuresKey{}).(*requestAuth)
	if ra == nil {
		return nil
	}
	return ra.f
}

// arrival is the server time r arrived at the node (stamped by Install),
// or now() for a request that did not come through Install.
func arrival(r *http.Request, now func() time.Time) time.Time {
	if ra, _ := r.Context().Value(failuresKey{}).(*requestAuth); ra != nil {
		return ra.at
	}
	return now()
}

// SourceKey names the source of a request for the budgets: its remote IP,
// or the /64 for IPv6 (one host usually owns a whole /64). Forwarded
// headers are not trusted.
func SourceKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return "?"
	}
	ip = ip.Unmap()
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.String()
		}
	}
	return ip.String()
}

// guard is one request's view of the limiter; app is 0 while unknown.
type guard struct {
	f    *Failures
	src  string
	app  int64
	note *httpapi.Note
}

func newGuard(r *http.Request) guard {
	return guard{f: failuresFrom(r.Context()), src: SourceKey(r), note: httpapi.NoteFrom(r.Context())}
}

type budget struct {
	key   budgetKey
	limit int
}

// keys are the budgets a request spends from: its address's, and its
// app's at that address once the app is known (n of them).
func (g guard) keys() (ks [2]budget, n int) {
	ks[0] = budget{budgetKey{src: g.src}, g.f.PerAddress}
	if g.app == 0 {
		return ks, 1
	}
	ks[1] = budget{budgetKey{app: g.app, src: g.src}, g.f.PerAppAddress}
	return ks, 2
}

// blocked returns how long until the source may try again, if it is out of
// budget. It only reads: a budget without a bucket has never been spent
// (or refilled and was pruned), so it is full, and every request of a
// source that does not fail leaves the map as it found it.
func (g guard) blocked() (time.Duration, bool) {
	if g.f == nil {
		return 0, false
	}
	ks, n := g.keys()
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	if len(g.f.buckets) == 0 {
		return 0, false
	}
	now := g.f.Now()
	var wait time.Duration
	for _, k := range ks[:n] {
		b, ok := g.f.buckets[k.key]
		if !ok {
			continue
		}
		if tokens := b.level(now, g.f.Period); tokens < 1 {
			rate := float64(k.limit) / g.f.Period.Seconds()
			wait = max(wait, time.Duration((1-tokens)/rate*float64(time.Second)))
		}
	}
	return wait, wait > 0
}

// fail records the reason in the access log and, when counted (a
// credential was presented), spends one failure from each budget.
func (g guard) fail(reason string, counted bool) {
	g.note.Reason = reason
	if g.f == nil || !counted {
		return
	}
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	now := g.f.Now()
	ks, n := g.keys()
	for _, k := range ks[:n] {
		b := g.f.refill(k.key, k.limit, now)
		b.tokens = math.Max(0, b.tokens-1)
	}
	g.f.calls++
	if g.f.calls%1024 == 0 || len(g.f.buckets) > maxFailureBuckets {
		g.f.prune(now)
	}
}

// refill returns key's bucket brought up to now; f.mu is held.
func (f *Failures) refill(key budgetKey, limit int, now time.Time) *failureBucket {
	if f.buckets == nil {
		f.buckets = map[budgetKey]*failureBucket{}
	}
	b, ok := f.buckets[key]
	if !ok {
		b = &failureBucket{tokens: float64(limit), limit: limit, at: now}
		f.buckets[key] = b
	}
	if now.After(b.at) {
		b.tokens, b.at = b.level(now, f.Period), now
	}
	return b
}

// level is the bucket's tokens at now, refilled at its limit per period
// since it was last brought up to date. A clock stepped back (NTP, a
// test's clock) refills nothing and never drains: the bucket waits until
// the clock passes its last time again.
func (b *failureBucket) level(now time.Time, period time.Duration) float64 {
	if !now.After(b.at) {
		return b.tokens
	}
	return math.Min(float64(b.limit), b.tokens+now.Sub(b.at).Seconds()*float64(b.limit)/period.Seconds())
}

// prune forgets full buckets (they equal new ones), and everything if the
// map is still too big.
func (f *Failures) prune(now time.Time) {
	for k, b := range f.buckets {
		if b.level(now, f.Period) >= float64(b.limit) {
			delete(f.buckets, k)
		}
	}
	if len(f.buckets) > maxFailureBuckets {
		clear(f.buckets)
	}
}

// throttled is the answer to a source out of failure budget; codeless
// for scheme H, whose 429 the spec shows without a code.
func throttled(wait time.Duration, code string) error {
	return &httpapi.Problem{Status: http.StatusTooManyRequests, Code: code,
		Message: "too many failed authentication attempts from this address; retry after Retry-After seconds",
		Headers: map[string]string{"Retry-After": strconv.Itoa(max(1, int(math.Ceil(wait.Seconds()))))}}
}
