// Package commandapi is the thin HTTP edge of the write side: it
// authenticates, decodes the body into a command, runs it, records the
// write's position for read-your-writes, and answers in the spec's envelope.
package commandapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/idempotency"
	"github.com/healthtech/partner-open-platform/projections"
)

// Route is one endpoint for the node's router.
type Route = httpapi.Route

// AppWaiter lets app creation answer only once this node can authenticate the new app.
type AppWaiter interface {
	WaitFor(ctx context.Context, pos events.Position) error
}

// API holds what the write handlers need.
type API struct {
	Users      *commands.Users
	Apps       *commands.Apps
	SchemeM    auth.SchemeM
	Admin      auth.Admin
	Watermarks *projections.Watermarks
	AppsReady  AppWaiter
	// Projections serves the rebuild route.
	Projections Rebuilder
	// ErasureApplied is what an erasure waits for before its answer: this
	// node's read models and its erasure follower, so that once the erasure
	// is acknowledged no read on this node answers the person and the
	// read-model snapshot is no longer held back by it (a graceful stop
	// writes one).
	ErasureApplied AppWaiter

	Resender Resender
	// Deliveries and DeliveryErasures serve the resend routes: a delivery
	// erased with its user is refused, and skipped by a resend of many.
	Deliveries       DeliveryLister
	DeliveryErasures DeliveryErasures
	// BulkResendCap bounds the matching deliveries one bulk resend call
	// examines (0: DefaultBulkResendCap); the answer's next_after continues.
	BulkResendCap int
	Location      *time.Location

	SchemeH           auth.SchemeH
	Reports           *commands.Reports
	Plugin            *commands.Plugin
	Credentials       *commands.CredentialIssuer
	UploaderDirectory Uploaders

	Orders        *commands.Orders
	Benefits      *commands.Benefits
	InternalToken string

	// Idempotency serves the Idempotency-Key of partner writes; nil turns keys off.
	Idempotency *idempotency.Keeper
	// SignedWrites keeps the records of scheme M writes, whose signature is
	// an implicit idempotency key (the store the nodes share); nil turns
	// that off.
	SignedWrites idempotency.SignedStore

	// Operators creates and revokes named operators; OperatorsReady is the
	// operator directory, which a creation or revocation waits for so the
	// answer holds on this node at once.
	Operators      *commands.Operators
	OperatorsReady AppWaiter

	// Keys re-seals the personal-data keys after a master-key rotation.
	Keys KeyResealer

	// Replays serves the webhook replay routes (nil: none).
	Replays *commands.Replays

	// Developers decides the qualification review of developer accounts
	// (nil: no portal, every id is unknown); DevelopersReady is the account directory,
	// which a decision waits for so a listing on this node shows it.
	Developers      *commands.Developers
	DevelopersReady AppWaiter
}

// Routes lists the write endpoints.
func (a *API) Routes() []Route {
	routes := []Route{
		{Method: "POST", Path: "/open/v1/channel/users", Handle: a.partner(a.register)},
		{Method: "PATCH", Path: "/open/v1/channel/users/:openUserId", Handle: a.partner(a.patchUser)},
		{Method: "POST", Path: "/open/v1/channel/users/:openUserId/family-groups", Handle: a.partner(a.upsertGroup)},
		{Method: "DELETE", Path: "/open/v1/channel/users/:openUserId/family-groups/:groupId", Handle: a.partner(a.dissolveGroup)},
		{Method: "POST", Path: "/open/v1/channel/users/:openUserId/family-members", Handle: a.partner(a.upsertMember)},
		{Method: "DELETE", Path: "/open/v1/channel/users/:openUserId/family-members/:memberId", Handle: a.partner(a.deleteMember)},
		{Method: "POST", Path: "/admin/v1/apps", Handle: a.admin(a.createApp)},
		{Method: "POST", Path: "/admin/v1/apps/:appId/rotate-secret", Handle: a.admin(a.rotateSecret)},
		{Method: "POST", Path: "/admin/v1/projections/:name/rebuild", Handle: a.admin(a.rebuild)},
		{Method: "POST", Path: "/admin/v1/channel-users/:openUserId/erase", Handle: a.admin(a.eraseUser)},
		{Method: "POST", Path: "/open/v1/erasures/:openUserId/acknowledge", Handle: a.partner(a.acknowledgeErasure)},
	}
	routes = append(routes, a.reportRoutes()...)
	routes = append(routes, a.keyRoutes()...)
	routes = append(routes, a.commerceRoutes()...)
	routes = append(routes, a.appRoutes()...)
	routes = append(routes, a.operatorRoutes()...)
	routes = append(routes, a.replayRoutes()...)
	routes = append(routes, a.sandboxEventRoutes()...)
	routes = append(routes, a.endpointRoutes()...)
	routes = append(routes, a.developerRoutes()...)
	return append(routes, a.webhookRoutes()...)
}

// call is one authenticated partner request.
type call struct {
	w      http.ResponseWriter
	r      *http.Request
	ps     httprouter.Params
	app    domain.App
	body   []byte
	meta   commands.Meta
	config *API
	// begin claims the request's Idempotency-Key (a no-op without one).
	begin func() error
}

// claim marks the end of validation: the handler is about to change state,
// so a keyed request claims its key now (bad input therefore appends
// nothing). It returns idempotency.ErrAnswered when the key's record
// answered instead; the handler returns that error unchanged.
func (c *call) claim() error {
	if c.begin == nil {
		return nil
	}
	return c.begin()
}

// answer records a successful write for the app's next read and answers
// 201 when it created the resource, 200 otherwise.
func (c *call) answer(pos events.Position, created bool, data any) {
	c.config.Watermarks.Wrote(c.app.AppID, pos)
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	httpapi.OK(c.w, status, data)
}

// promise renders the answer answer(…, created, data) writes and announces
// it before the write's append (idempotency.Promise): it returns the
// context to append with. For writes whose answer does not depend on what
// the append returns.
func (c *call) promise(created bool, data any) context.Context {
	return c.promiseOn(c.r.Context(), created, data)
}

// promiseOn is promise for an append made with ctx.
func (c *call) promiseOn(ctx context.Context, created bool, data any) context.Context {
	if !idempotency.Promising(ctx) {
		return ctx
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	var out answerBuffer
	httpapi.OK(&out, status, data)
	return idempotency.Promise(ctx, out.status, out.header.Get("Content-Type"), out.body)
}

// answerBuffer is a ResponseWriter that keeps what is written to it.
type answerBuffer struct {
	header http.Header
	status int
	body   []byte
}

func (b *answerBuffer) Header() http.Header {
	if b.header == nil {
		b.header = http.Header{}
	}
	return b.header
}

func (b *answerBuffer) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *answerBuffer) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	b.body = append(b.body, p...)
	return len(p), nil
}

// aboutUser says that the answer is about channel user openUserID (the
// one registered, or the one in the path): a keyed or signed write's
// recorded answer is then sealed for that user without being parsed for
// it (idempotency.AnswerAbout).
func (c *call) aboutUser(openUserID int64) { idempotency.AnswerAbout(c.w, openUserID) }

// ids parses the named positive-integer path parameters in order.
func (c *call) ids(names ...string) ([]int64, error) {
	out := make([]int64, len(names))
	for i, name := range names {
		id, err := httpapi.PathID(c.ps, name, false)
		if err != nil {
			return nil, err
		}
		out[i] = id
	}
	return out, nil
}

// decode parses the body as one JSON object, lets read pick its fields, and
// returns every type problem read found.
func (c *call) decode(read func(*httpapi.Object)) error {
	o, err := httpapi.ParseObject(c.body)
	if err != nil {
		return err
	}
	read(o)
	o.CheckUnknown()
	if err := o.Err(); err != nil {
		return err
	}
	return c.claim()
}

func (a *API) partner(h func(*call) error) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		body, err := httpapi.ReadBody(r)
		if err != nil {
			httpapi.Error(w, r, err)
			return
		}
		var route idempotency.PendingRoute
		var app domain.App
		if a.claimsWithRoute(r) {
			// The signature's route binding is recorded in the statement
			// that claims the signed write (keyed, ServeSigned), which on
			// Postgres also reads the head the app's entry is confirmed
			// at: the write sends no head read of its own.
			var pending *auth.PendingBinding
			app, pending, err = a.partnerAuth().VerifyLaterAtHead(r, body)
			if pending != nil {
				route = pending
			}
		} else {
			app, err = a.partnerAuth().Verify(r, body)
		}
		if err != nil {
			httpapi.Error(w, r, err)
			return
		}
		a.keyedRoute(w, r, ps, app, body, route, h)
	}
}

// claimsWithRoute says whether r, once authenticated, is a scheme M write
// whose signed-write claim can carry its route binding (keyed sends it to
// ServeSigned with a store that binds both in one statement).
func (a *API) claimsWithRoute(r *http.Request) bool {
	if a.Idempotency == nil || r.Method == http.MethodGet || a.SignedWrites == nil || auth.IsSchemeH(r) {
		return false
	}
	_, ok := a.SignedWrites.(idempotency.RouteClaimer)
	return ok
}

// partnerAuth verifies a partner route's request by scheme M or scheme H.
func (a *API) partnerAuth() auth.Partner { return auth.Partner{M: a.SchemeM, H: a.SchemeH} }

// keyed runs an authenticated app's write under its Idempotency-Key, if it
// sent one, and a scheme M write also under its signature.
func (a *API) keyed(w http.ResponseWriter, r *http.Request, ps httprouter.Params, app domain.App, body []byte, h func(*call) error) {
	a.keyedRoute(w, r, ps, app, body, nil, h)
}

// keyedRoute is keyed for a scheme M write whose route binding
// authentication left unrecorded (route; see claimsWithRoute).
func (a *API) keyedRoute(w http.ResponseWriter, r *http.Request, ps httprouter.Params, app domain.App, body []byte, route idempotency.PendingRoute, h func(*call) error) {
	run := func(w http.ResponseWriter, r *http.Request, begin func() error) {
		c := &call{w: w, r: r, ps: ps, app: app, body: body, config: a, begin: begin, meta: commands.Meta{
			AppID: app.AppID, Actor: "app:" + strconv.FormatInt(app.AppID, 10), RequestID: w.Header().Get(httpapi.RequestIDHeader),
		}}
		err := httpapi.CheckParams(r, ps)
		if err == nil {
			err = h(c)
		}
		if err != nil && !errors.Is(err, idempotency.ErrAnswered) {
			httpapi.Error(w, r, err)
		}
	}
	if route != nil && !a.claimsWithRoute(r) {
		if err := route.Record(); err != nil {
			httpapi.Error(w, r, err)
			return
		}
		route = nil
	}
	if a.Idempotency == nil || r.Method == http.MethodGet {
		run(w, r, nil)
		return
	}
	if a.SignedWrites != nil && !auth.IsSchemeH(r) {
		// Scheme M signs no nonce: a captured write could run again for as
		// long as its timestamp is fresh, so its signature is an implicit
		// idempotency key (scheme H nonces already refuse replays).
		a.Idempotency.ServeSigned(w, r, app.AppID, body, a.SignedWrites, idempotency.SignedKey(auth.SignatureM(r), r, body), route, run)
		return
	}
	a.Idempotency.Serve(w, r, app.AppID, body, run)
}

func (a *API) admin(h func(*call) error) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		op, err := a.Admin.Operator(r)
		if err != nil {
			httpapi.Error(w, r, err)
			return
		}
		body, err := httpapi.ReadBody(r)
		if err != nil {
			httpapi.Error(w, r, err)
			return
		}
		c := &call{w: w, r: r, ps: ps, body: body, config: a, meta: commands.Meta{
			Actor: op.Actor(), RequestID: w.Header().Get(httpapi.RequestIDHeader),
		}}
		if err := httpapi.CheckParams(r, ps); err != nil {
			httpapi.Error(w, r, err)
			return
		}
		if err := h(c); err != nil {
			httpapi.Error(w, r, err)
		}
	}
}

// waitApps makes admin writes visible to this node's authentication before answering.
func (a *API) waitApps(ctx context.Context, pos events.Position) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return a.AppsReady.WaitFor(ctx, pos)
}

// Rebuilder empties a projection and replays the log into it; an admin
// write, so it sits on the write edge. found is false for an unknown name;
// progress is what the answer shows.
type Rebuilder interface {
	Rebuild(ctx context.Context, name string) (progress any, found bool, err error)
}

func (a *API) rebuild(c *call) error {
	name := c.ps.ByName("name")
	progress, found, err := a.Projections.Rebuild(c.r.Context(), name)
	if errors.Is(err, subscribe.ErrRebuildPending) {
		return &httpapi.Problem{Status: http.StatusServiceUnavailable, Code: "HTTP_503",
			Message: "the rebuild is recorded but the family's owner has not started it yet; it will, watch GET /admin/v1/projections",
			Headers: map[string]string{"Retry-After": "5"}}
	}
	if err != nil {
		return err
	}
	if !found {
		return &httpapi.Problem{Status: http.StatusNotFound, Code: "PROJECTION_NOT_FOUND", Message: "no projection named " + name}
	}
	httpapi.OK(c.w, http.StatusAccepted, progress)
	return nil
}
