// Package queryapi is the read side's HTTP edge: it authenticates, waits
// (bounded) until the read models reflect the caller's last write on this
// node, and renders read models in the spec's shapes.
package queryapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/nonces"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/directory"
)

// DateTime is the spec's Y-m-d H:i:s layout of channel-user and order times.
const DateTime = "2006-01-02 15:04:05"

// ReadTimeout bounds how long a read waits for projections to catch up.
const ReadTimeout = 5 * time.Second

// API holds what the read handlers need.
type API struct {
	Store   projections.UserStore
	Apps    *directory.Apps
	Events  events.Store
	Runners []*subscribe.Runner // every projection, for the progress route
	// ReadModelRunners follow the read models: a read waits only for the one it reads.
	ReadModelRunners map[projections.ReadModel]*subscribe.Runner
	SchemeM          auth.SchemeM
	// SnapshotTakes, set only when SchemeM's limiter is an auth.Reserver
	// whose shared bucket lives in Store's database (and Store is a
	// SnapshotReader keeping SchemeM's bindings), has a snapshot read
	// carry the app's rate-limit lease renewal in its own statement.
	SnapshotTakes bool
	// SchemeH is accepted beside scheme M on every partner read (see auth.Partner).
	SchemeH    auth.SchemeH
	Admin      auth.Admin
	Watermarks *projections.Watermarks
	Location   *time.Location
	Deliveries projections.DeliveryStore
	Orders     projections.OrderStore
	Benefits   projections.BenefitStore
	// Operators is the operator directory; Audit the audit read model; Auditor
	// records the audit fact of each reveal.
	Operators *directory.Operators
	Audit     projections.AuditStore
	Auditor   Auditor
	// Outbox is the developer portal's mail outbox (nil: no portal, the
	// list is empty).
	Outbox Outbox
	// Developers is the developer portal's account directory (nil: no
	// portal, the list is empty).
	Developers DeveloperDirectory
	// Pseudonyms renames the binding streams of a log written before
	// hashed names (their names hold the channel_user_id in clear) in
	// event pages and audit facts; nil shows every name as stored.
	Pseudonyms *domain.Pseudonyms
	// Stopping closes when the node begins to shut down: waiting feed
	// requests answer then, so the server's graceful stop is not held up
	// by them (nil: never).
	Stopping <-chan struct{}
	// Snapshot reports the embedded read models' snapshot on disk beside
	// the projections' progress (nil: Postgres read models or snapshots
	// off, and the list shows none).
	Snapshot func() SnapshotState

	feedWaiters feedWaiters
}

// SnapshotState is the embedded read models' snapshot as GET
// /admin/v1/projections shows it: whether one is on disk, when it was
// written and the lowest checkpoint it holds, from which a start after a
// crash replays the log. A rebuild shreds it; one is written again as the
// rebuild ends.
type SnapshotState struct {
	OnDisk   bool             `json:"on_disk"`
	Written  *time.Time       `json:"written_at,omitempty"`
	Position *events.Position `json:"position,omitempty"`
}

// deliveriesRunner is the runner of the deliveries read model (nil when
// the API has none, as in route-table tests).
func (q *API) deliveriesRunner() *subscribe.Runner {
	return q.ReadModelRunners[projections.ReadModelDeliveries]
}

// streamName is the name event pages show and audit facts record for a
// stream: a legacy binding stream's hashed equivalent, any other as it is.
func (q *API) streamName(stream string) string {
	if q.Pseudonyms == nil {
		return stream
	}
	return q.Pseudonyms.Stream(stream)
}

// Routes lists the read endpoints.
func (q *API) Routes() []httpapi.Route {
	routes := []httpapi.Route{
		{Method: "GET", Path: "/open/v1/channel/users/:openUserId", Handle: q.snapshot},
		{Method: "GET", Path: "/admin/v1/apps", Handle: q.admin(q.listApps)},
		{Method: "GET", Path: "/admin/v1/apps/:appId", Handle: q.admin(q.getApp)},
		{Method: "GET", Path: "/admin/v1/history", Handle: q.admin(q.history)},
		{Method: "GET", Path: "/admin/v1/events", Handle: q.admin(q.allEvents)},
		{Method: "GET", Path: "/admin/v1/projections", Handle: q.admin(q.projections)},
	}
	routes = append(routes, q.commerceRoutes()...)
	routes = append(routes, q.auditRoutes()...)
	routes = append(routes, q.erasureRoutes()...)
	routes = append(routes, q.accessLogRoutes()...)
	routes = append(routes, q.outboxRoutes()...)
	routes = append(routes, q.developerRoutes()...)
	routes = append(routes, eventTypeRoutes()...)
	return append(routes, q.deliveryRoutes()...)
}

func (q *API) admin(h httprouter.Handle) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		op, err := q.Admin.Operator(r)
		if err != nil {
			httpapi.Error(w, r, err)
			return
		}
		if err := httpapi.CheckParams(r, ps); err != nil {
			httpapi.Error(w, r, err)
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), operatorKey{}, op)), ps)
	}
}

// await makes the app's last acknowledged write on this node visible in the
// read model the read is about; the other read models may still be behind.
// The deliveries read model also waits for the log's head as the read
// begins (awaitCreations).
func (q *API) await(ctx context.Context, appID int64, f projections.ReadModel) error {
	wait, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	err := q.Watermarks.Await(wait, appID, ReadTimeout, q.ReadModelRunners[f])
	if err == nil && f == projections.ReadModelDeliveries {
		err = q.awaitCreations(wait)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &httpapi.Problem{Status: http.StatusServiceUnavailable, Code: "HTTP_503", Message: "read models are catching up; retry shortly",
			Headers: map[string]string{"Retry-After": "1"}}
	}
	return nil
}

// snapshotQuery parses and validates a snapshot request.
func (q *API) snapshotQuery(r *http.Request, ps httprouter.Params, appID int64) (projections.SnapshotQuery, error) {
	if err := httpapi.CheckParams(r, ps); err != nil {
		return projections.SnapshotQuery{}, err
	}
	var query url.Values // nil reads as empty: most reads have no query string to parse
	if r.URL.RawQuery != "" {
		query = r.URL.Query()
	}
	channelUserID := query.Get("channel_user_id")
	id, err := httpapi.PathID(ps, "openUserId", channelUserID != "")
	if err != nil {
		return projections.SnapshotQuery{}, err
	}
	sq := projections.SnapshotQuery{AppID: appID, OpenUserID: id, ChannelUserID: channelUserID}
	if s := query.Get("updated_after"); s != "" {
		t, ok := httpapi.ParseTime(s, q.Location)
		if !ok {
			v := &domain.ValidationError{}
			v.Add("updated_after", "must be an ISO 8601 date-time")
			return projections.SnapshotQuery{}, v
		}
		sq.UpdatedAfter = t
	}
	return sq, nil
}

// SnapshotReader is a users read model that reads a user's snapshot with
// the users read model's checkpoint, and the log's head when it sees the log
// (SeesHead), in one round trip (projections/postgres), so a snapshot read
// costs one round trip instead of a head read plus three queries.
type SnapshotReader interface {
	Snapshot(ctx context.Context, q projections.SnapshotQuery) (projections.Snapshot, error)
	SeesHead() bool
}

// readSnapshot reads a snapshot that reflects what read-your-writes asks
// for (the app's writes on this node, the floor, and under FollowHead the
// log's head as of the read). One round trip answers when either the
// read model's checkpoint read with the rows, or this node's runner position
// taken before the rows were read, is at that target (the checkpoint lags
// the runner over events the read model skips, which it writes only now and
// then; the runner moves only after the rows it applied are committed).
// Otherwise it waits, bounded, for the runner to get there and reads once
// more, as the other read models' reads do. recorded says whether the
// query's binding (sq.Bind) is in, whatever the outcome. With pt, the first
// read carries the app's rate-limit renewal (sq.Take) and settles it at
// once; a refusal returns its HTTP_429, recorded, with the snapshot's
// Bound, without waiting.
func (q *API) readSnapshot(ctx context.Context, sr SnapshotReader, sq projections.SnapshotQuery, pt *auth.PendingTake) (snap projections.Snapshot, recorded bool, err error) {
	wait, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	inline := sr.SeesHead() && q.Watermarks.FollowsHead()
	need, err := q.Watermarks.Target(wait, sq.AppID, !inline)
	if err != nil {
		return projections.Snapshot{}, false, q.behind(ctx)
	}
	runner := q.ReadModelRunners[projections.ReadModelUsers]
	before := runner.Position()
	snap, err = sr.Snapshot(wait, sq)
	if err != nil {
		return projections.Snapshot{}, false, q.snapshotFailed(ctx, wait, err)
	}
	recorded = true // the binding, if any, is in
	if sq.Take != nil {
		if !snap.Took {
			return projections.Snapshot{}, true, errors.New("queryapi: the read model did not carry the rate-limit take")
		}
		if err := pt.Settle(snap.Grant); err != nil {
			return snap, true, err
		}
	}
	bound := snap.Bound
	if inline {
		if !snap.HeadKnown {
			return projections.Snapshot{}, true, errors.New("queryapi: the read model promised the log's head and did not return it")
		}
		if need.Less(snap.Head) {
			need = snap.Head
		}
	}
	if !snap.Checkpoint.Less(need) || !before.Less(need) {
		return snap, true, nil
	}
	if err := runner.WaitFor(wait, need); err != nil {
		return projections.Snapshot{}, true, q.behind(ctx)
	}
	sq.Bind, sq.Take = nil, nil
	snap, err = sr.Snapshot(wait, sq)
	if err != nil {
		return projections.Snapshot{}, true, q.snapshotFailed(ctx, wait, err)
	}
	snap.Bound = bound
	return snap, true, nil
}

// snapshotFailed maps a failed snapshot query: past the read's bound it is
// a read model catching up (503), otherwise the store's error as is.
func (q *API) snapshotFailed(ctx, wait context.Context, err error) error {
	if wait.Err() != nil {
		return q.behind(ctx)
	}
	return err
}

// behind maps a failure to catch up to what await answers: the client's own
// cancellation as is, anything else 503 with Retry-After.
func (q *API) behind(ctx context.Context) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return &httpapi.Problem{Status: http.StatusServiceUnavailable, Code: "HTTP_503", Message: "read models are catching up; retry shortly",
		Headers: map[string]string{"Retry-After": "1"}}
}

// partnerAuth verifies a partner read by scheme M or scheme H.
func (q *API) partnerAuth() auth.Partner { return auth.Partner{M: q.SchemeM, H: q.SchemeH} }

func (q *API) snapshot(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if err := q.serveSnapshot(w, r, ps); err != nil {
		httpapi.Error(w, r, err)
	}
}

func (q *API) serveSnapshot(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	body, err := httpapi.ReadBody(r)
	if err != nil {
		return err
	}
	// On a read model that also keeps the signature bindings, the replay
	// guard's write rides the snapshot's own round trip.
	// With SnapshotTakes, so does the app's rate-limit lease renewal.
	sr, oneTrip := q.Store.(SnapshotReader)
	var app domain.App
	var pending *auth.PendingBinding
	var pt *auth.PendingTake
	// When the statement also reads the log's head, the app's entry is
	// confirmed at that head (pending.CheckAt) rather than by a head read
	// of its own before the read.
	atHead := oneTrip && sr.SeesHead()
	switch {
	case oneTrip && q.SchemeM.Bindings != nil && any(q.SchemeM.Bindings) == any(q.Store) && q.SnapshotTakes:
		if atHead {
			app, pending, pt, err = q.partnerAuth().VerifyLaterTakeAtHead(r, body)
		} else {
			app, pending, pt, err = q.partnerAuth().VerifyLaterTake(r, body)
		}
	case oneTrip && q.SchemeM.Bindings != nil && any(q.SchemeM.Bindings) == any(q.Store):
		if atHead {
			app, pending, err = q.partnerAuth().VerifyLaterAtHead(r, body)
		} else {
			app, pending, err = q.partnerAuth().VerifyLater(r, body)
		}
	default:
		app, err = q.partnerAuth().Verify(r, body)
	}
	if err != nil {
		return err
	}
	// A renewal no statement carried is made on its own before answering,
	// so that HTTP_429 comes where Verify would have put it.
	defer pt.Cancel()
	ctx := r.Context()
	sq, err := q.snapshotQuery(r, ps, app.AppID)
	if err != nil {
		if pending != nil {
			// Refused without a query: bind first, as Verify would have.
			if berr := q.SchemeM.BindNow(r, pending); berr != nil {
				return berr
			}
		}
		if terr := pt.Finish(ctx); pt.Refused() {
			return terr
		}
		return err
	}
	id, channelUserID := sq.OpenUserID, sq.ChannelUserID
	if oneTrip {
		if pending != nil {
			sq.Bind = &nonces.Binding{Scope: pending.Scope, Key: pending.Key, Value: pending.Value, Expires: pending.Expires}
		}
		if pt != nil {
			sq.Take = &pt.Take
		}
		sent := time.Now()
		snap, recorded, err := q.readSnapshot(ctx, sr, sq, pt)
		if err != nil {
			if pending != nil && !recorded {
				if berr := q.SchemeM.BindNow(r, pending); berr != nil {
					return berr
				}
			}
			if pending != nil && recorded && pt.Refused() {
				// A replay on another route is 401 before it is 429.
				if cerr := checkAtHead(pending, snap, sent); cerr != nil {
					return cerr
				}
			}
			if pt.Pending() {
				if terr := pt.Finish(ctx); pt.Refused() {
					return terr
				}
			}
			return err
		}
		if pending != nil {
			if err := checkAtHead(pending, snap, sent); err != nil {
				return err
			}
		}
		if !snap.Found || (channelUserID != "" && id != 0 && snap.User.OpenUserID != id) {
			return domain.ErrUserNotFound
		}
		q.writeSnapshot(w, snap.User, snap.Groups, snap.Members)
		return nil
	}
	after := sq.UpdatedAfter
	if err := q.await(ctx, app.AppID, projections.ReadModelUsers); err != nil {
		return err
	}
	var u projections.User
	if channelUserID != "" {
		u, err = q.Store.UserByChannelID(ctx, app.AppID, channelUserID)
		if err == nil && id != 0 && u.OpenUserID != id {
			err = projections.ErrNotFound
		}
	} else {
		u, err = q.Store.User(ctx, app.AppID, id)
	}
	if errors.Is(err, projections.ErrNotFound) {
		return domain.ErrUserNotFound
	}
	if err != nil {
		return err
	}
	groups, err := q.Store.Groups(ctx, app.AppID, u.OpenUserID)
	if err != nil {
		return err
	}
	members, err := q.Store.Members(ctx, app.AppID, u.OpenUserID, after)
	if err != nil {
		return err
	}
	q.writeSnapshot(w, u, groups, members)
	return nil
}

// checkAtHead judges a snapshot read's binding as recorded by its
// statement, sent at sent: at the log's head that statement read when it
// read one (the app's entry is confirmed there), otherwise with a head
// read of the directory's own.
func checkAtHead(pending *auth.PendingBinding, snap projections.Snapshot, sent time.Time) error {
	if snap.HeadKnown {
		return pending.CheckAt(snap.Bound, snap.Head, sent)
	}
	return pending.Check(snap.Bound)
}

func (q *API) appView(a domain.App) map[string]any {
	evs := a.WebhookEvents
	if evs == nil {
		evs = []string{}
	}
	scopes := a.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	v := map[string]any{
		"scopes": scopes, "suspended": a.Suspended, "suspension_reason": a.SuspensionReason, "require_scheme_h": a.RequireSchemeH,
		"webhook_secret_pending": a.PendingWebhookSecret != "", "review": a.Review, "sandbox_app_id": a.SandboxAppID, "production_app_id": a.ProductionAppID,
		"app_id": a.AppID, "name": a.Name, "app_key": a.AppKey, "environment": a.Environment,
		"webhook_url": a.WebhookURL, "webhook_events": evs,
		"created_at": a.CreatedAt.Format(time.RFC3339), "updated_at": a.UpdatedAt.Format(time.RFC3339),
	}
	// A portal developer's app says whose it is and why it exists; apps an
	// operator created have neither, and the fields are left out.
	if a.DeveloperID != 0 {
		v["developer_id"] = a.DeveloperID
	}
	if a.Purpose != "" {
		v["purpose"] = a.Purpose
	}
	return v
}

func (q *API) listApps(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	apps := q.Apps.List()
	out := make([]map[string]any, 0, len(apps))
	for _, a := range apps {
		out = append(out, q.appView(a))
	}
	httpapi.OK(w, http.StatusOK, map[string]any{"apps": out})
}

func (q *API) getApp(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id, err := httpapi.PathID(ps, "appId", false)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	a, ok := q.Apps.ByID(id)
	if !ok {
		httpapi.Error(w, r, domain.ErrAppNotFound)
		return
	}
	httpapi.OK(w, http.StatusOK, q.appView(a))
}

// EventView is how auditors see one recorded event.
type EventView struct {
	ID       string          `json:"id"`
	Stream   string          `json:"stream"`
	Type     string          `json:"type"`
	Revision uint64          `json:"revision"`
	Position events.Position `json:"position"`
	Time     string          `json:"time"`
	Data     any             `json:"data"`
	Metadata any             `json:"metadata"`
}

func view(rec events.Recorded) EventView {
	return EventView{
		ID: rec.ID, Stream: rec.Stream, Type: rec.Type, Revision: rec.Revision, Position: rec.Position,
		Time: rec.Created.UTC().Format(time.RFC3339Nano), Data: rawOrNull(rec.Data), Metadata: rawOrNull(rec.Meta),
	}
}

type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }

func rawOrNull(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return rawJSON(b)
}

// history prints one stream's events in order, for auditors, personal
// fields redacted unless an auditor reveals them with a reason.
func (q *API) history(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	stream := r.URL.Query().Get("stream")
	if stream == "" {
		v := &domain.ValidationError{}
		v.Add("stream", "is required")
		httpapi.Error(w, r, v)
		return
	}
	from, err := httpapi.IntParam(r, "from", 0, 0)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	limit, err := httpapi.IntParam(r, "limit", 1000, 10000)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	reveal, reason, err := revealRequest(r)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	recs, err := q.Events.ReadStream(r.Context(), stream, uint64(from), int(limit))
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	out, err := q.renderEvents(w, r, recs, reveal, catalog.AuditRevealHistory, reason, []string{q.streamName(stream)})
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	shown := stream
	if !reveal {
		shown = q.streamName(stream)
	}
	httpapi.OK(w, http.StatusOK, map[string]any{"stream": shown, "events": out, "revealed": reveal})
}

// allEvents pages through the global log, for auditors and replays,
// personal fields redacted unless an auditor reveals them with a reason.
func (q *API) allEvents(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	commit, err := httpapi.IntParam(r, "after_commit", 0, 0)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	prepare, err := httpapi.IntParam(r, "after_prepare", commit, 0)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	limit, err := httpapi.IntParam(r, "limit", 1000, 10000)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	reveal, reason, err := revealRequest(r)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	recs, err := q.Events.ReadAll(r.Context(), events.Position{Commit: uint64(commit), Prepare: uint64(prepare)}, int(limit))
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	out, err := q.renderEvents(w, r, recs, reveal, catalog.AuditRevealEvents, reason, nil)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	httpapi.OK(w, http.StatusOK, map[string]any{"events": out, "revealed": reveal})
}

func (q *API) projections(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	out := make([]subscribe.Stats, 0, len(q.Runners))
	for _, run := range q.Runners {
		out = append(out, run.Stats())
	}
	body := map[string]any{"projections": out}
	if q.Snapshot != nil {
		body["snapshot"] = q.Snapshot()
	}
	httpapi.OK(w, http.StatusOK, body)
}
