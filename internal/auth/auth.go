// Package auth verifies who is calling: partner apps by the spec's signature
// schemes, operators by a bearer token. Every comparison is constant-time.
package auth

import (
	"context"
	"crypto/md5"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/nonces"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
)

// Window is how far a request's timestamp may be from the server's clock.
const Window = 300 * time.Second

// BindingGrace is how long after a scheme M signature's first use reached
// the server the same signature is accepted on another route, both times
// taken when the requests arrived (Failures.Install), not when the server
// got round to checking them. The legitimate case is a partner's requests
// signed in one whole second (all bodyless ones share a signature): they
// are sent within that second (1 s), and a real network delays one more
// than another by up to a few seconds: a lost SYN is sent again after
// TCP's initial retransmission timeout of 1 s and a second loss 2 s later
// (RFC 6298), so 3 s, and 1 s more for latency, TLS and proxy queues. An
// attacker who captured the headers gets no longer than that to move them
// to another route (see docs/authentication.md).
const BindingGrace = 5 * time.Second

// Directory finds apps; the in-memory app projection implements it.
type Directory interface {
	ByID(id int64) (domain.App, bool)
	ByKey(key string) (domain.App, bool)
}

// CheckedDirectory is a Directory that follows the log and may lag it
// (another node may have created the app a moment ago): a miss it could not
// confirm at the log's head comes back as not found with an error wrapping
// ErrDirectoryUnconfirmed, so the caller answers "retry" (ErrDirectoryBehind)
// rather than "unknown app".
type CheckedDirectory interface {
	ByIDChecked(id int64) (domain.App, bool, error)
	ByKeyChecked(key string) (domain.App, bool, error)
}

// ErrDirectoryUnconfirmed is the cause a CheckedDirectory gives for a miss
// it could not confirm.
var ErrDirectoryUnconfirmed = errors.New("app directory: could not confirm it is at the log's head")

// ErrDirectoryBehind answers a request whose app this node did not find
// while it could not confirm its directory holds everything acknowledged:
// the app may exist (created through another node a moment ago), so the
// partner is told to retry, never that its key is unknown.
var ErrDirectoryBehind = &httpapi.Problem{Status: http.StatusServiceUnavailable, Code: "HTTP_503",
	Message: "the platform could not confirm the app's credentials just now; retry shortly",
	Headers: map[string]string{"Retry-After": "1"}}

// AppByID finds an app by id; a miss d could not confirm is ErrDirectoryBehind.
func AppByID(d Directory, id int64) (domain.App, bool, error) {
	if c, ok := d.(CheckedDirectory); ok {
		return behind(c.ByIDChecked(id))
	}
	app, ok := d.ByID(id)
	return app, ok, nil
}

// AppByKey finds an app by key; a miss d could not confirm is ErrDirectoryBehind.
func AppByKey(d Directory, key string) (domain.App, bool, error) {
	if c, ok := d.(CheckedDirectory); ok {
		return behind(c.ByKeyChecked(key))
	}
	app, ok := d.ByKey(key)
	return app, ok, nil
}

func behind(app domain.App, ok bool, err error) (domain.App, bool, error) {
	if err != nil && !ok {
		return domain.App{}, false, ErrDirectoryBehind
	}
	return app, ok, nil
}

// SchemeM verifies channel, order and verify-use calls: X-App-Id,
// X-Timestamp (Unix seconds, ±300 s) and X-Signature = hex MD5 of
// app_key + timestamp + app_secret + raw body.
//
// Route binding: the formula signs neither method nor path, so each
// accepted signature is bound, for its window, to the route it was first
// accepted on (method, path and query as sent; HEAD counts as GET) and to
// the server time that first use arrived. The same signature on another
// route is accepted only if it arrived within BindingGrace of the first
// use, and refused after:
// every bodyless request of one app in one second carries the same
// signature, so a spec-faithful partner's read and delete of one second
// must both pass, while headers captured from one request and replayed
// later on another route must not. A route accepted within the grace stays
// accepted for the signature's window (an identical retry of it passes;
// the write edge then answers it from its implicit idempotency record). An
// identical retry on the first route always passes. Bindings live in a
// store the nodes share, so the rule holds cluster-wide.
type SchemeM struct {
	Apps Directory
	Now  func() time.Time
	// Bindings remembers which route each accepted signature belongs to;
	// nil disables route binding (unit tests of the formula only).
	Bindings Bindings
	// Limiter bounds each app's requests (HTTP_429); nil means no limit.
	Limiter Limiter
}

// Limiter decides whether one more request of a key (an app) is within its
// rate: the in-process ratelimit.Limiter on an embedded node, the shared
// bucket (ratelimit/postgres, possibly behind ratelimit.Leased) when nodes
// share Postgres, so the limit holds across the cluster.
type Limiter interface {
	Allow(ctx context.Context, key string) (ratelimit.Decision, error)
}

// Bindings ties a value to a key until it expires; the first value bound
// holds (nonces.Store.Bind implements it on the shared store).
type Bindings interface {
	Bind(ctx context.Context, scope, key, value string, expires time.Time) (existing string, fresh bool, err error)
}

// ErrSchemeHRequired refuses a correct scheme M request of an app set to
// require scheme H on every route.
var ErrSchemeHRequired = &httpapi.Problem{Status: http.StatusUnauthorized, Code: "HTTP_401",
	Message: "this app requires scheme H (X-App-Key, X-Timestamp, X-Nonce, X-Signature) on every route; scheme M is refused"}

// SignM computes a scheme M signature; partners' SDKs and tests use it.
func SignM(appKey, timestamp, appSecret string, body []byte) string {
	sum := signMSum(appKey, timestamp, appSecret, body)
	return hex.EncodeToString(sum[:])
}

// signMSum is SignM's digest before hex, computed without a hash object
// or a hex round trip (the scheme M check runs on every partner request);
// SignM is its hex.
func signMSum(appKey, timestamp, appSecret string, body []byte) [md5.Size]byte {
	var stack [512]byte
	in := append(append(append(append(stack[:0], appKey...), timestamp...), appSecret...), body...)
	return md5.Sum(in)
}

// bindingKey is the binding key of a scheme M signature: the app and the
// signature's hex, built in one allocation.
func bindingKey(appID int64, sig *[md5.Size]byte) string {
	var stack [20 + 1 + 2*md5.Size]byte
	k := strconv.AppendInt(stack[:0], appID, 10)
	k = append(k, ':')
	k = hex.AppendEncode(k, sig[:])
	return string(k)
}

// Verify returns the calling app, or httpapi.ErrUnauthorized for any failure
// (missing header, bad number, stale time, unknown app, wrong signature),
// never saying which, so the answer teaches an attacker nothing; the reason
// goes to the access log only. A source out of failure budget (see
// Failures) gets HTTP_429 before anything is checked.
func (s SchemeM) Verify(r *http.Request, body []byte) (domain.App, error) {
	app, _, _, err := s.verify(r, body, verifyMode{})
	return app, err
}

// PendingBinding is a signature binding that VerifyLater left for its
// caller to record in the round trip of the caller's own query (the
// snapshot read does, on the Postgres store that also keeps bindings).
type PendingBinding struct {
	Scope, Key, Value string
	Expires           time.Time
	g                 guard
	// route and now are the request's route and the server time it arrived:
	// Check judges the recorded binding with them.
	route string
	now   time.Time
	s     SchemeM
	ctx   context.Context
	// deferred is the app's entry still to confirm (VerifyLaterAtHead);
	// nil once confirmed, or when it was current.
	deferred *deferredApp
}

// Check judges the value the binding's key holds once recorded: the same
// route passes; another route passes within BindingGrace of the
// signature's first use (or when accepted within it before), and is
// refused after, as Verify refuses it.
func (p *PendingBinding) Check(bound string) error {
	if err := p.confirm(events.Position{}, time.Time{}, false); err != nil {
		return err
	}
	if bound == p.Value {
		return nil
	}
	firstUse, route, timed := parseBound(bound)
	if route == p.route {
		return nil
	}
	// Another route: a marker per (signature, route) remembers the routes
	// the grace let in, so that their identical retries pass too; after
	// the grace, the marker's first value is a refusal.
	mark := boundRefused
	if timed && !p.now.After(firstUse.Add(BindingGrace)) {
		mark = boundAccepted
	}
	got, _, err := p.s.Bindings.Bind(p.ctx, p.Scope, p.Key+" "+p.route, mark, p.Expires)
	if err != nil {
		return err
	}
	if got != boundAccepted {
		p.g.fail("signature_route_mismatch", true)
		return httpapi.ErrUnauthorized
	}
	return nil
}

// Binding is the binding to record (idempotency.PendingRoute).
func (p *PendingBinding) Binding() nonces.Binding {
	return nonces.Binding{Scope: p.Scope, Key: p.Key, Value: p.Value, Expires: p.Expires}
}

// Route is the request's route, which the binding ties the signature to.
func (p *PendingBinding) Route() string { return p.route }

// Record records the binding and checks it, as Verify would have.
func (p *PendingBinding) Record() error {
	bound, _, err := p.s.Bindings.Bind(p.ctx, p.Scope, p.Key, p.Value, p.Expires)
	if err != nil {
		return err
	}
	return p.Check(bound)
}

// Values of a grace marker (see PendingBinding.Check).
const (
	boundAccepted = "accepted"
	boundRefused  = "refused"
)

// boundValue is what a signature's binding records: the server time its
// first use arrived and its route.
func boundValue(now time.Time, route string) string {
	return strconv.FormatInt(now.UnixNano(), 10) + " " + route
}

// parseBound reads a binding's value; one recorded without a time (by an
// earlier release) has no grace.
func parseBound(v string) (firstUse time.Time, route string, timed bool) {
	ns, rest, ok := strings.Cut(v, " ")
	if !ok {
		return time.Time{}, v, false
	}
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil {
		return time.Time{}, v, false
	}
	return time.Unix(0, n), rest, true
}

// VerifyLater is Verify without the binding's write when the request
// passes every other check: it returns the binding for the caller to record
// and Check (nil without Bindings). Any refusal binds first, as Verify
// does, so every answer is Verify's.
func (s SchemeM) VerifyLater(r *http.Request, body []byte) (domain.App, *PendingBinding, error) {
	app, pending, _, err := s.verify(r, body, verifyMode{later: true})
	return app, pending, err
}

// VerifyLaterAtHead is VerifyLater for a caller whose statement recording
// the binding also reads the event log's head (a signed write's claim on
// Postgres): when Apps is a DeferredDirectory, a request that passes on
// the app's entry as this node holds it is not held up by a head read of
// its own; the returned binding's CheckAt confirms the entry at the
// statement's head and judges the request again (Check and Record, used
// without a head, confirm with a head read of their own). The caller
// must end the binding with one of the three before acting on the
// request: the request is then decided on a directory at least as new as
// a head read after it arrived, as Verify decides it. A refusal is never
// decided on an entry not known current: it waits for the head first.
func (s SchemeM) VerifyLaterAtHead(r *http.Request, body []byte) (domain.App, *PendingBinding, error) {
	app, pending, _, err := s.verify(r, body, verifyMode{later: true, atHead: true})
	return app, pending, err
}

// VerifyLaterTake is VerifyLater that also leaves to the caller the app's
// rate-limit renewal when the limiter needs one and can take it within the
// caller's statement (a Reserver over a shared bucket): the returned
// PendingTake, nil when the request was decided without a round trip.
// The caller must end a non-nil PendingTake with Settle, Finish or Cancel.
func (s SchemeM) VerifyLaterTake(r *http.Request, body []byte) (domain.App, *PendingBinding, *PendingTake, error) {
	return s.verify(r, body, verifyMode{later: true, take: true})
}

// VerifyLaterTakeAtHead is VerifyLaterTake for a caller whose statement
// recording the binding and carrying the renewal also reads the log's
// head (a snapshot read on Postgres): the app's entry is confirmed at
// that head as VerifyLaterAtHead confirms it, and the caller ends the
// binding with CheckAt, Check or Record before acting on the request.
func (s SchemeM) VerifyLaterTakeAtHead(r *http.Request, body []byte) (domain.App, *PendingBinding, *PendingTake, error) {
	return s.verify(r, body, verifyMode{later: true, take: true, atHead: true})
}

// verifyMode is how verify leaves work to its caller: later leaves the
// binding unrecorded, take the limiter's renewal, atHead the confirmation
// of the app's entry (VerifyLaterAtHead).
type verifyMode struct{ later, take, atHead bool }

// BindNow records a pending binding and checks it, for a caller of
// VerifyLater that answers without its own query (a refusal, a failure).
func (s SchemeM) BindNow(r *http.Request, p *PendingBinding) error { return s.bindNow(r, p) }

// bindNow records a pending binding and checks it.
func (s SchemeM) bindNow(r *http.Request, p *PendingBinding) error {
	bound, _, err := s.Bindings.Bind(r.Context(), p.Scope, p.Key, p.Value, p.Expires)
	if err != nil {
		return err
	}
	return p.Check(bound)
}

func (s SchemeM) verify(r *http.Request, body []byte, mode verifyMode) (domain.App, *PendingBinding, *PendingTake, error) {
	app, pending, pt, err := s.check(r, body, mode)
	if err != nil && pending != nil {
		// Refused after the signature passed: bind as Verify would have
		// before refusing (a replay elsewhere is still 401 first).
		if berr := s.bindNow(r, pending); berr != nil {
			return domain.App{}, nil, nil, berr
		}
	}
	if err != nil {
		return domain.App{}, nil, nil, err
	}
	return app, pending, pt, nil
}

// check is Verify; with later set it returns the signature's binding
// instead of recording it, and with take the limiter's renewal (see
// VerifyLaterTake). A refusal after the signature passed returns the
// unrecorded binding with the error, so that verify records it.
func (s SchemeM) check(r *http.Request, body []byte, mode verifyMode) (domain.App, *PendingBinding, *PendingTake, error) {
	later, take := mode.later, mode.take
	g := newGuard(r)
	appID, err := strconv.ParseInt(strings.TrimSpace(r.Header.Get("X-App-Id")), 10, 64)
	if err != nil || appID <= 0 {
		appID = 0
	}
	g.note.AppID = appID
	app, known, unconfirmed := domain.App{}, false, error(nil)
	// deferred: the app's entry is not yet known current, and the
	// binding's CheckAt (or Check) confirms it (VerifyLaterAtHead).
	var deferred *deferredApp
	if appID != 0 {
		dd, ok := s.Apps.(DeferredDirectory)
		if ok && mode.later && mode.atHead && s.Bindings != nil {
			since := time.Now()
			var current bool
			app, known, current, unconfirmed = dd.ByIDDeferred(appID)
			app, known, unconfirmed = behind(app, known, unconfirmed)
			if known && !current {
				deferred = &deferredApp{dir: dd, id: appID, since: since}
			}
		} else {
			app, known, unconfirmed = AppByID(s.Apps, appID)
		}
	}
	if known {
		g.app = app.AppID
	}
	if wait, blocked := g.blocked(); blocked {
		g.note.Reason = "too_many_failures"
		return domain.App{}, nil, nil, throttled(wait, "HTTP_429")
	}
	ts := strings.TrimSpace(r.Header.Get("X-Timestamp"))
	sigHeader := strings.TrimSpace(r.Header.Get("X-Signature"))
	// Only a presented signature is an attempt worth counting; a request
	// missing headers costs nothing to refuse.
	attempt := sigHeader != ""
	switch {
	case appID == 0:
		g.fail(missingOr(r.Header.Get("X-App-Id"), "missing_app_id", "malformed_app_id"), attempt)
		return domain.App{}, nil, nil, httpapi.ErrUnauthorized
	case ts == "":
		g.fail("missing_timestamp", attempt)
		return domain.App{}, nil, nil, httpapi.ErrUnauthorized
	case !FreshTimestamp(ts, s.Now()):
		g.fail(timestampReason(ts), attempt)
		return domain.App{}, nil, nil, httpapi.ErrUnauthorized
	case sigHeader == "":
		g.fail("missing_signature", false)
		return domain.App{}, nil, nil, httpapi.ErrUnauthorized
	}
	var got [md5.Size]byte
	if len(sigHeader) != hex.EncodedLen(md5.Size) {
		g.fail("malformed_signature", true)
		return domain.App{}, nil, nil, httpapi.ErrUnauthorized
	}
	if _, err := hex.Decode(got[:], []byte(sigHeader)); err != nil {
		g.fail("malformed_signature", true)
		return domain.App{}, nil, nil, httpapi.ErrUnauthorized
	}
	v := judgeM(r, app, known, unconfirmed, &got, ts, body)
	if v.err != nil && deferred != nil {
		// Refused on an entry not known current: the app may have changed
		// through another node (a rotated secret, a resume), so the
		// refusal is decided on the entry at the log's head.
		app, known, unconfirmed = AppByID(s.Apps, appID)
		deferred = nil
		v = judgeM(r, app, known, unconfirmed, &got, ts, body)
	}
	if v.err != nil && !v.afterBinding {
		if v.reason != "" {
			g.fail(v.reason, v.counted)
		}
		return domain.App{}, nil, nil, v.err
	}
	if deferred != nil {
		deferred.got, deferred.ts, deferred.body, deferred.r = got, ts, body, r
	}
	var pending *PendingBinding
	if s.Bindings != nil {
		// A signature captured on one route, replayed on another, is
		// refused: the first route that presents it binds it.
		sec, _ := strconv.ParseInt(ts, 10, 64)
		now, route := arrival(r, s.Now), bindingRoute(r)
		pending = &PendingBinding{Scope: "m", Key: bindingKey(app.AppID, &got),
			Value: boundValue(now, route), Expires: time.Unix(sec, 0).Add(Window), g: g,
			route: route, now: now, s: s, ctx: r.Context(), deferred: deferred}
		if !later {
			if err := s.bindNow(r, pending); err != nil {
				return domain.App{}, nil, nil, err
			}
			pending = nil
		}
	}
	if v.err != nil {
		// Refused after the binding (not authorised): verify records it.
		return domain.App{}, pending, nil, v.err
	}
	if take {
		if pt, decided, err := s.reserve(app); decided {
			if err != nil {
				return domain.App{}, pending, nil, err
			}
			return app, pending, pt, nil
		}
	}
	if err := s.limit(r, app); err != nil {
		return domain.App{}, pending, nil, err
	}
	return app, pending, nil, nil
}

// limit applies the app's request rate (HTTP_429 past it).
func (s SchemeM) limit(r *http.Request, app domain.App) error {
	if s.Limiter == nil {
		return nil
	}
	d, err := s.Limiter.Allow(r.Context(), strconv.FormatInt(app.AppID, 10))
	if err != nil {
		return fmt.Errorf("partner rate limit of app %d: %w", app.AppID, err)
	}
	return refused(d)
}

// Reserver is a Limiter whose lease renewals a caller can carry in a
// statement of its own on the shared bucket (ratelimit.Leased over
// ratelimit/postgres): Reserve decides from the node's lease when it can,
// and otherwise hands over the renewal to make.
type Reserver interface {
	Reserve(key string) (ratelimit.Decision, *ratelimit.Renewal)
	Spec() (ratelimit.BucketSpec, bool)
}

// reserve decides app's rate from the limiter's lease, or returns the
// renewal for the caller's statement; decided is false when the limiter
// cannot hand over its renewals (limit then decides).
func (s SchemeM) reserve(app domain.App) (pt *PendingTake, decided bool, err error) {
	rs, ok := s.Limiter.(Reserver)
	if !ok {
		return nil, false, nil
	}
	spec, ok := rs.Spec()
	if !ok {
		return nil, false, nil
	}
	d, rn := rs.Reserve(strconv.FormatInt(app.AppID, 10))
	if rn == nil {
		return nil, true, refused(d)
	}
	return &PendingTake{Take: ratelimit.Take{Bucket: spec, Key: rn.Key, Want: rn.Want, Back: rn.Back}, rn: rn, app: app.AppID}, true, nil
}

// PendingTake is a request's rate-limit lease renewal that VerifyLaterTake
// left for the caller's own statement (ratelimit/postgres TakeWhen). Until
// it is ended (Settle, Finish or Cancel), the app's other requests on this
// node wait for it.
type PendingTake struct {
	Take    ratelimit.Take
	rn      *ratelimit.Renewal
	app     int64
	refused bool
}

// Settle ends the renewal with what the caller's statement granted and
// answers as Verify would have: nil, or HTTP_429 with the limit's headers.
func (p *PendingTake) Settle(g ratelimit.Grant) error {
	if !p.Pending() {
		return nil
	}
	err := refused(p.rn.Settle(g))
	p.refused = err != nil
	return err
}

// Finish ends a renewal the caller's statement did not carry with a round
// trip of its own and answers as Settle does; nil once ended.
func (p *PendingTake) Finish(ctx context.Context) error {
	if !p.Pending() {
		return nil
	}
	d, err := p.rn.TakeNow(ctx)
	if err != nil {
		return fmt.Errorf("partner rate limit of app %d: %w", p.app, err)
	}
	err = refused(d)
	p.refused = err != nil
	return err
}

// Cancel ends the renewal with nothing taken (the statement that carried
// it failed); a no-op once ended. Callers defer it.
func (p *PendingTake) Cancel() {
	if p != nil {
		p.rn.Cancel()
	}
}

// Pending reports whether the renewal still waits to be ended.
func (p *PendingTake) Pending() bool { return p != nil && p.rn.Pending() }

// Refused reports whether Settle or Finish answered HTTP_429.
func (p *PendingTake) Refused() bool { return p != nil && p.refused }

// refused is the spec's answer to a request over its app's rate, nil
// within it.
func refused(d ratelimit.Decision) error {
	if !d.Allowed {
		return &httpapi.Problem{Status: http.StatusTooManyRequests, Code: "HTTP_429",
			Message: "request rate exceeded; slow down with exponential backoff",
			Headers: map[string]string{
				"Retry-After":           strconv.Itoa(int(math.Ceil(d.RetryAfter.Seconds()))),
				"X-RateLimit-Limit":     strconv.Itoa(d.Limit),
				"X-RateLimit-Remaining": "0",
				"X-RateLimit-Reset":     strconv.Itoa(int(math.Ceil(d.Reset.Seconds()))),
			}}
	}
	return nil
}

// missingOr names a header failure: missing when the header is blank.
func missingOr(v, missing, malformed string) string {
	if strings.TrimSpace(v) == "" {
		return missing
	}
	return malformed
}

// timestampReason tells a stale timestamp from one that is not Unix seconds.
func timestampReason(ts string) string {
	if _, err := strconv.ParseUint(ts, 10, 63); err != nil || len(ts) > 12 {
		return "malformed_timestamp"
	}
	return "expired_timestamp"
}

// FreshTimestamp accepts decimal Unix seconds within Window of now.
func FreshTimestamp(ts string, now time.Time) bool {
	if ts == "" || len(ts) > 12 {
		return false
	}
	for _, c := range ts {
		if c < '0' || c > '9' {
			return false
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	d := now.Sub(time.Unix(sec, 0))
	return d <= Window && d >= -Window
}

// SameSecret compares a presented secret with the stored one in constant time.
func SameSecret(stored, presented string) bool {
	return stored != "" && subtle.ConstantTimeCompare([]byte(stored), []byte(presented)) == 1
}

// Allowed refuses an authenticated call of a suspended app
// (domain.ErrAppSuspended, 403 APP_SUSPENDED: the caller proved who it is,
// so this is a refusal to authorise, not a failed authentication) and a
// route whose scope the app was not granted (403 SCOPE_NOT_GRANTED). An
// app is granted exactly its declared scopes; see domain.DefaultScopes.
func Allowed(app domain.App, scope string) error {
	if app.Suspended {
		return domain.ErrAppSuspended
	}
	if scope == "" || slices.Contains(app.Scopes, scope) {
		return nil
	}
	return &httpapi.Problem{Status: http.StatusForbidden, Code: "SCOPE_NOT_GRANTED", Message: "the app was not granted the API scope " + scope + " that this route needs"}
}

// scopePrefixes maps partner route prefixes to the scope they need.
var scopePrefixes = []struct{ prefix, scope string }{
	{"/open/v1/channel/", "channel_users"},
	{"/open/v1/order/", "orders"},
	{"/open/v1/webhooks/", "webhooks"},
	{"/open/v1/benefit-cards", "benefits"},
	{"/open/v1/service-providers", "benefits"},
	{"/open/v1/health-reports", "health_reports"},
	{"/v1/health/daily-report", "daily_report"},
	{"/sandbox/", "plugin"},
}

// ScopeOf names the scope a partner route needs ("" for none).
func ScopeOf(path string) string {
	for _, p := range scopePrefixes {
		if strings.HasPrefix(path, p.prefix) {
			return p.scope
		}
	}
	return ""
}

// bindingRoute is what a scheme M signature is bound to: the method and
// the path with query as sent (HEAD as GET, its body-less twin).
func bindingRoute(r *http.Request) string {
	m := r.Method
	if m == http.MethodHead {
		m = http.MethodGet
	}
	return m + " " + requestURI(r)
}
