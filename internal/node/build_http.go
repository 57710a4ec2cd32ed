package node

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/healthtech/partner-open-platform/commandapi"
	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/idempotency"
	"github.com/healthtech/partner-open-platform/internal/metrics"
	"github.com/healthtech/partner-open-platform/internal/openapi"
	"github.com/healthtech/partner-open-platform/portal"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/queryapi"
)

// buildRoutes makes the HTTP edges over the commands, the read models and
// the authentication schemes: the command API, the query API and the
// report pull. The projections they list are the read side's (p.all).
func (n *Node) buildRoutes(cfg Config, c commandSet, a authSet, p projectionSet) []commandapi.Route {
	cmdAPI := &commandapi.API{
		Users: c.users, Apps: c.apps,
		SchemeM: a.schemeM, Admin: a.admin, Watermarks: n.Watermarks, AppsReady: p.appsRunner,
		Resender: n.Dispatcher, Location: n.Location, Keys: n.Keys,
		Deliveries: n.ReadModel, DeliveryErasures: commands.NewDeliveryErasures(n.Events, n.Registry),
		BulkResendCap: cfg.BulkResendCap,
		SchemeH:       a.schemeH, Reports: c.reports, Plugin: c.plugin,
		Credentials: commands.NewCredentialIssuer(n.Events, n.Registry, c.ids, cfg.Now), UploaderDirectory: a.apps,
		Orders:         commands.NewOrders(n.Events, n.Registry, c.ids, cfg.Now),
		Benefits:       c.benefits,
		InternalToken:  n.InternalToken,
		Projections:    n.rebuilder(cfg, p.all),
		ErasureApplied: append(subscribe.RunnerSet(slices.Clone(p.all)), n.erasures.Runner()),
		Idempotency: &idempotency.Keeper{
			Store: n.Events, Registry: n.Registry, Sealer: c.sealer, Keys: n.Keys, Now: cfg.Now, Replayed: n.Watermarks.Wrote,
		},
		SignedWrites: a.nonces,
		Operators:    c.operators, OperatorsReady: p.operatorsRunner, Replays: c.replays,
	}
	if c.developers != nil {
		cmdAPI.Developers, cmdAPI.DevelopersReady = c.developers, c.developersReady
	}
	qAPI := &queryapi.API{
		Store: n.ReadModel, Apps: p.apps, Events: n.Events, Runners: p.all, ReadModelRunners: p.byReadModel, Pseudonyms: n.Pseudonyms,
		SchemeM: a.schemeM, SchemeH: a.schemeH, Admin: a.admin, Watermarks: n.Watermarks, Location: n.Location, Deliveries: n.ReadModel,
		Orders: n.ReadModel, Benefits: n.ReadModel, Outbox: n.Developers,
		Operators: p.operators, Audit: n.ReadModel, Auditor: c.operators, Stopping: n.stopping,
	}
	if n.Developers != nil {
		qAPI.Developers = n.Developers
	}
	// On Postgres the partner limit's shared bucket is on the read-model
	// store's pool: a snapshot's lease renewal rides its statement.
	if _, reserves := a.schemeM.Limiter.(auth.Reserver); reserves && any(a.nonces) == any(n.ReadModel) {
		qAPI.SnapshotTakes = true
	}
	if n.snapshots != nil {
		qAPI.Snapshot = n.snapshotState
	}
	reportAPI := &queryapi.ReportAPI{
		Reports: n.ReadModel, Users: n.ReadModel, Events: n.Events, Runner: p.byReadModel[projections.ReadModelReports], SchemeH: a.schemeH,
		Limiter: a.pullLimit, Tokens: a.apps, Apps: a.apps,
		Location: n.Location, Now: cfg.Now, Watermarks: n.Watermarks, Views: c.reports, Auditor: c.operators,
	}
	// On Postgres the nonces, the pull's rate-limit bucket (on this
	// store's pool) and the reports share one database: a pull is one
	// round trip.
	if puller, ok := n.ReadModel.(queryapi.ReportPuller); ok && any(a.nonces) == any(n.ReadModel) {
		if leases, ok := a.pullLimit.(queryapi.PullLeases); ok {
			if _, shared := leases.Spec(); shared {
				reportAPI.OneTrip = puller
				n.seePullHead()
			}
		}
	}
	routes := append(cmdAPI.Routes(), qAPI.Routes()...)
	return append(routes, reportAPI.Routes()...)
}

// watchLag reports, as metrics, how far each projection and the relay are
// behind the log's head.
func (n *Node) watchLag() {
	n.Metrics.WatchLag(n.Events, func() []metrics.Follower {
		fs := make([]metrics.Follower, 0, len(n.Runners)+2)
		for _, run := range n.Runners {
			fs = append(fs, metrics.Follower{Kind: "projection", Name: run.Name(), Position: func(context.Context) (events.Position, error) { return run.Position(), nil }})
		}
		if n.deliveriesCreated != nil {
			fs = append(fs, metrics.Follower{Kind: "webhooks", Name: "delivery creation", Position: n.deliveriesCreated.Load})
		}
		if n.relayCheckpoints != nil {
			fs = append(fs, metrics.Follower{Kind: "relay", Name: "kafka", Position: n.relayCheckpoints.Load})
		}
		return fs
	})
}

// longPollSuffix marks, in the route label of metrics and the access log,
// requests that asked to wait (the feed's long-poll): their latency is the
// wait the partner chose, so latency alerts leave them out.
const longPollSuffix = "?wait"

// asksToWait reports a long-poll: a wait query parameter other than 0.
func asksToWait(r *http.Request) bool {
	if r.URL.RawQuery == "" {
		return false
	}
	w := r.URL.Query().Get("wait")
	return w != "" && w != "0"
}

// router serves every route behind the edge: request lines beyond
// httpapi.MaxRequestLine are refused before routing or logging, methods
// are bounded metric labels, and one failed-authentication limiter is
// shared by every API of the node.
func (n *Node) router(routes []commandapi.Route, now func() time.Time) http.Handler {
	rt := httprouter.New()
	rt.RedirectTrailingSlash, rt.RedirectFixedPath = false, false
	observe := n.Metrics.ObserveHTTP
	wrap := func(route string, h http.Handler) http.Handler {
		return httpapi.InstrumentTo(n.log, n.accessLog, route, observe, h)
	}
	for _, r := range routes {
		plain := httpapi.InstrumentRoute(n.log, n.accessLog, r.Path, observe, r.Handle)
		waiting := httpapi.InstrumentRoute(n.log, n.accessLog, r.Path+longPollSuffix, observe, r.Handle)
		rt.Handle(r.Method, r.Path, func(w http.ResponseWriter, req *http.Request, ps httprouter.Params) {
			if asksToWait(req) {
				waiting(w, req, ps)
				return
			}
			plain(w, req, ps)
		})
	}
	rt.Handler("GET", "/healthz", wrap("/healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		httpapi.OK(w, http.StatusOK, map[string]any{"status": "ok"})
	})))
	rt.Handler("GET", "/readyz", wrap("/readyz", http.HandlerFunc(n.readyz)))
	rt.Handler("GET", "/metrics", promhttp.HandlerFor(n.Metrics.Registry, promhttp.HandlerOpts{}))
	rt.Handler("POST", "/admin/v1/backup", wrap("/admin/v1/backup", http.HandlerFunc(n.serveBackup)))
	rt.Handler("GET", "/openapi.yaml", wrap("/openapi.yaml", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(openapi.Spec)
	})))
	if n.Portal != nil {
		for _, m := range []string{"GET", "HEAD", "POST"} {
			rt.Handler(m, "/portal", wrap("/portal/", n.Portal))
			rt.Handler(m, "/portal/*path", wrap("/portal/", n.Portal))
		}
		rt.Handler("GET", "/favicon.ico", wrap("/favicon.ico", portal.Favicon()))
	}
	rt.NotFound = wrap("unmatched", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { httpapi.Error(w, r, httpapi.ErrNotFound) }))
	rt.MethodNotAllowed = wrap("unmatched", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { httpapi.Error(w, r, httpapi.ErrMethod) }))
	refuse := wrap("refused", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { httpapi.Error(w, r, httpapi.ErrURITooLong) }))
	failures := auth.NewFailures()
	failures.Now = now // the node's clock, as every other budget and window uses
	return httpapi.LimitRequestLine(failures.Install(rt), refuse)
}

// readyz answers 200 once every projection has applied the log as far as it
// reached when the node started, and stays 200 while an operator rebuilds a
// read model; its body lists each projection's progress and any event it had to
// skip.
func (n *Node) readyz(w http.ResponseWriter, r *http.Request) {
	status := map[string]any{}
	ready := true
	for _, run := range n.Runners {
		s := run.Stats()
		// A read model being rebuilt on an operator's request does not make the
		// node unready: every other read model still serves, and reads of the
		// rebuilt one wait for it (bounded) rather than answer without it.
		if s.LastError != "" || (!s.Ready && !s.Rebuilding) {
			ready = false
		}
		status[s.Name] = s
	}
	if !ready {
		httpapi.WriteJSON(w, http.StatusServiceUnavailable, httpapi.Envelope{Code: "HTTP_503", Message: "projections are catching up", Data: status, Timestamp: time.Now().Format(time.RFC3339)})
		return
	}
	httpapi.OK(w, http.StatusOK, status)
	noteReady()
}
