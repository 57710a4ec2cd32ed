package queryapi

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/healthdata"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
	"github.com/healthtech/partner-open-platform/projections"
)

// ReportViews records the owning app's first pull of a report (its
// is_viewed mark, an audit fact): the query side's own port, so that it never
// appends through the write side's commands. It returns the log position of
// the mark, for read-your-writes.
type ReportViews interface {
	MarkViewed(ctx context.Context, appID, reportID int64, requestID string) (events.Position, error)
}

// Tokens resolves OAuth access tokens by their hash.
type Tokens interface {
	Token(hash string, now time.Time) (appID int64, scope string, ok bool)
}

// RateLimiter decides whether one more report pull of an app is within the
// spec's 60 per minute; with Postgres the bucket is shared by every node.
type RateLimiter interface {
	Allow(ctx context.Context, key string) (ratelimit.Decision, error)
}

// ReportAPI holds what the report pull and the daily report need.
type ReportAPI struct {
	Reports    projections.ReportStore
	Users      projections.UserStore
	Events     events.Store
	Runner     *subscribe.Runner // the read-model projection
	SchemeH    auth.SchemeH
	Limiter    RateLimiter
	Views      ReportViews
	Tokens     Tokens
	Apps       auth.Directory
	Location   *time.Location
	Now        func() time.Time
	Watermarks *projections.Watermarks
	// Auditor records every pull as an audit fact (nil: none recorded).
	Auditor Auditor
	// OneTrip, when set, reads a pull in one round trip: the replay guard's
	// nonce, the rate-limit decision, the read model's checkpoint and the
	// log's head, and the report. Set it only when it keeps SchemeH's
	// nonces and the shared bucket of Limiter (a PullLeases) in the
	// database it reads reports from.
	OneTrip ReportPuller
}

// ReportPuller answers a report pull's whole read in one round trip
// (projections/postgres), the way SnapshotReader answers a snapshot's.
type ReportPuller interface {
	PullReport(ctx context.Context, q projections.ReportPullQuery) (projections.ReportPull, error)
	SeesHead() bool
}

// PullLeases is a RateLimiter that admits an app's pulls from this node's
// lease of the app's tokens (ratelimit.Leased over ratelimit/postgres):
// Reserve decides from the lease when it can and otherwise hands over the
// renewal, which the pull's statement carries; Refund gives back a token
// admitted for a pull that then spent nothing (a replayed nonce).
type PullLeases interface {
	Reserve(key string) (ratelimit.Decision, *ratelimit.Renewal)
	Refund(key string)
	Spec() (ratelimit.BucketSpec, bool)
}

// errNoReport is the spec's 404 "without a code": do not retry.
var errNoReport = &httpapi.Problem{Status: http.StatusNotFound, Message: "report not found"}

// Routes lists the report routes.
func (q *ReportAPI) Routes() []httpapi.Route {
	return []httpapi.Route{
		{Method: "GET", Path: "/open/v1/health-reports/:openReportId", Handle: q.pull},
		{Method: "GET", Path: "/v1/health/daily-report", Handle: q.daily},
	}
}

func (q *ReportAPI) pull(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if err := q.servePull(w, r, ps); err != nil {
		httpapi.Error(w, r, err)
	}
}

func (q *ReportAPI) servePull(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	body, err := httpapi.ReadBody(r)
	if err != nil {
		return err
	}
	if leases, ok := q.Limiter.(PullLeases); ok && q.OneTrip != nil {
		if bucket, ok := leases.Spec(); ok {
			return q.servePullOneTrip(w, r, ps, body, leases, bucket)
		}
	}
	app, err := q.SchemeH.Verify(r, body)
	if err != nil {
		return err
	}
	d, err := q.Limiter.Allow(r.Context(), strconv.FormatInt(app.AppID, 10))
	if err != nil {
		return fmt.Errorf("report pull rate limit of app %d: %w", app.AppID, err)
	}
	if err := limited(w, d); err != nil {
		return err
	}
	id, err := strconv.ParseInt(ps.ByName("openReportId"), 10, 64)
	if err != nil || id <= 0 {
		return errNoReport
	}
	if err := q.Watermarks.Await(r.Context(), app.AppID, ReadTimeout, q.Runner); err != nil {
		return err
	}
	rep, err := q.report(r.Context(), app.AppID, id)
	if err != nil {
		return err
	}
	return q.answer(w, r, app, &rep)
}

// limited sets the rate-limit headers of a decision and refuses a pull
// over the limit.
func limited(w http.ResponseWriter, d ratelimit.Decision) error {
	w.Header().Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
	w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(d.Remaining))
	w.Header().Set("X-RateLimit-Reset", strconv.Itoa(int(math.Ceil(d.Reset.Seconds()))))
	if !d.Allowed {
		return &httpapi.Problem{Status: http.StatusTooManyRequests, Message: "rate limit of " + strconv.Itoa(d.Limit) + " requests per minute exceeded; back off and retry",
			Headers: map[string]string{"Retry-After": strconv.Itoa(int(math.Ceil(d.RetryAfter.Seconds())))}}
	}
	return nil
}

// servePullOneTrip is servePull with the nonce's use, the rate-limit
// decision, the head and the report read in one round trip, in the order
// servePull takes them: a replay spends no token, a refused pull reads no
// report. The decision comes from this node's lease of the app's tokens
// when it holds one (the statement then takes nothing from the shared
// bucket, whose row every pull of the app would otherwise update in turn),
// else the statement carries the lease's renewal. Read-your-writes is
// judged as readSnapshot judges it: the rows answer when the reports read
// model's checkpoint read with them, or this node's runner position taken
// before, is at the target (the app's writes on this node, the floor, and
// the log's head read in the same statement); otherwise the pull waits,
// bounded, for the runner and reads the report once more.
func (q *ReportAPI) servePullOneTrip(w http.ResponseWriter, r *http.Request, ps httprouter.Params, body []byte, leases PullLeases, bucket ratelimit.BucketSpec) error {
	app, pn, err := q.SchemeH.VerifyLater(r, body)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(ps.ByName("openReportId"), 10, 64)
	if err != nil || id <= 0 {
		id = 0 // no report has it: the statement still uses the nonce and takes the token
	}
	ctx := r.Context()
	wait, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	inline := q.OneTrip.SeesHead() && q.Watermarks.FollowsHead()
	need, err := q.Watermarks.Target(wait, app.AppID, !inline)
	if err != nil {
		if uerr := q.SchemeH.UseNow(r, pn); uerr != nil {
			return uerr
		}
		return behind(ctx)
	}
	before := q.Runner.Position()
	key := strconv.FormatInt(app.AppID, 10)
	d, rn := leases.Reserve(key)
	var take *ratelimit.Take
	if rn != nil {
		take = &ratelimit.Take{Bucket: bucket, Key: key, Want: rn.Want, Back: rn.Back}
	}
	res, err := q.OneTrip.PullReport(wait, projections.ReportPullQuery{
		AppID: app.AppID, ReportID: id, NonceScope: pn.Scope, Nonce: pn.Nonce, NonceExpires: pn.Expires, Take: take,
	})
	switch {
	case rn != nil && (err != nil || !res.Fresh):
		rn.Cancel() // the statement took nothing: the lease stays as it was
	case rn != nil:
		d = rn.Settle(res.Grant)
	case err != nil || !res.Fresh:
		leases.Refund(key) // admitted from the lease, but nothing was spent
	}
	if err != nil {
		if ctx.Err() == nil && wait.Err() != nil {
			return behind(ctx)
		}
		return err
	}
	if err := pn.Used(res.Fresh); err != nil {
		return err
	}
	if err := limited(w, d); err != nil {
		return err
	}
	if id == 0 {
		return errNoReport
	}
	if inline {
		if !res.HeadKnown {
			return errors.New("queryapi: the read model promised the log's head and did not return it")
		}
		if need.Less(res.Head) {
			need = res.Head
		}
	}
	rep := res.Report
	switch {
	case res.Checkpoint.Less(need) && before.Less(need):
		if err := q.Runner.WaitFor(wait, need); err != nil {
			return behind(ctx)
		}
		if rep, err = q.report(ctx, app.AppID, id); err != nil {
			return err
		}
	case !res.Found && inline:
		// The read model had applied the log's head: no such report.
		return errNoReport
	case !res.Found:
		// Another node may have taken the upload after this node's writes.
		if rep, err = q.report(ctx, app.AppID, id); err != nil {
			return err
		}
	}
	return q.answer(w, r, app, &rep)
}

// behind maps a failure to catch up: the client's own cancellation as is,
// anything else 503 with Retry-After, as Watermarks.Await's callers answer.
func behind(ctx context.Context) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return &httpapi.Problem{Status: http.StatusServiceUnavailable, Code: "HTTP_503", Message: "read models are catching up; retry shortly",
		Headers: map[string]string{"Retry-After": "1"}}
}

// answer records the pull's facts (the first pull's is_viewed mark, and
// every pull's audit fact) and writes the report. Both facts are durable
// before the partner sees the data: an auditor must find every pull that
// was answered.
func (q *ReportAPI) answer(w http.ResponseWriter, r *http.Request, app domain.App, rep *projections.Report) error {
	id := rep.ReportID
	if !rep.IsViewed {
		pos, err := q.Views.MarkViewed(r.Context(), app.AppID, id, w.Header().Get(httpapi.RequestIDHeader))
		if err != nil {
			return err
		}
		q.Watermarks.Wrote(app.AppID, pos)
	}
	if q.Auditor != nil {
		// Every pull, not only the first (which is_viewed marks), is an
		// audit fact: the partner read a person's health data. No partner
		// read waits for it, so no watermark.
		fact := catalog.AccessAudited{
			Actor: "app:" + strconv.FormatInt(app.AppID, 10), Action: catalog.AuditReportPull, AppID: app.AppID, ReportID: id,
			Subjects: []string{domain.ReportStream(id), domain.UserStream(rep.OpenUserID)},
		}
		record := q.Auditor.RecordAccess
		if own, ok := q.Auditor.(OwnAccessAuditor); ok {
			// The app's report is of the app's user: no lookup of the
			// user's app before the append.
			record = own.RecordOwnAccess
		}
		if _, err := record(r.Context(), fact, w.Header().Get(httpapi.RequestIDHeader)); err != nil {
			return err
		}
	}
	writePull(w, rep, q.Location)
	return nil
}

// report reads the read model; when it does not know the report yet but the
// log does (this node is behind the node that took the upload, or the
// partner pulled the instant a webhook arrived), it waits for the projection.
func (q *ReportAPI) report(ctx context.Context, appID, id int64) (projections.Report, error) {
	rep, err := q.Reports.Report(ctx, appID, id)
	if !errors.Is(err, projections.ErrNotFound) {
		return rep, err
	}
	recs, serr := q.Events.ReadStream(ctx, domain.ReportStream(id), 0, 1)
	if serr != nil || len(recs) == 0 {
		return rep, errNoReport
	}
	wctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	if err := q.Runner.WaitFor(wctx, recs[0].Position); err != nil {
		return rep, errNoReport
	}
	rep, err = q.Reports.Report(ctx, appID, id)
	if errors.Is(err, projections.ErrNotFound) {
		return rep, errNoReport
	}
	return rep, err
}

// bearerProblem answers token failures as RFC 6750 asks, inside the envelope.
func bearerProblem(code, desc string) *httpapi.Problem {
	return &httpapi.Problem{Status: http.StatusUnauthorized, Code: code, Message: desc,
		Headers: map[string]string{"WWW-Authenticate": `Bearer realm="platform", error="invalid_token", error_description="` + desc + `"`}}
}

// daily answers the daily report of one user and day, computed from the
// indicators in the raw_data of the user's reports of that day.
func (q *ReportAPI) daily(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if err := q.serveDaily(w, r); err != nil {
		httpapi.Error(w, r, err)
	}
}

func (q *ReportAPI) serveDaily(w http.ResponseWriter, r *http.Request) error {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(tok) == "" {
		// RFC 6750 §3.1: a request without credentials gets no error code.
		return &httpapi.Problem{Status: http.StatusUnauthorized, Code: "MISSING_TOKEN", Message: "an OAuth 2.0 bearer token is required",
			Headers: map[string]string{"WWW-Authenticate": `Bearer realm="platform"`}}
	}
	appID, scope, found := q.Tokens.Token(domain.HashToken(strings.TrimSpace(tok)), q.Now())
	app, appFound := q.Apps.ByID(appID)
	if !found || !appFound || scope != "daily_report" || !auth.SameSecret(app.AppKey, r.Header.Get("X-App-Key")) {
		return bearerProblem("INVALID_TOKEN", "the token is unknown, expired, revoked, or not the X-App-Key app's")
	}
	if err := auth.Allowed(app, "daily_report"); err != nil {
		return err
	}
	if err := httpapi.CheckParams(r, nil); err != nil {
		return err
	}
	query := r.URL.Query()
	v := &domain.ValidationError{}
	date := query.Get("date")
	if date == "" {
		date = q.Now().In(q.Location).Format(time.DateOnly)
	} else if t, err := time.Parse(time.DateOnly, date); err != nil || t.Format(time.DateOnly) != date {
		v.Add("date", "must be a date in the form Y-m-d")
	}
	var u projections.User
	var err error
	switch {
	case query.Get("open_user_id") != "":
		id, perr := strconv.ParseInt(query.Get("open_user_id"), 10, 64)
		if perr != nil || id <= 0 {
			v.Add("open_user_id", "must be a positive integer")
			break
		}
		u, err = q.Users.User(r.Context(), appID, id)
	case query.Get("channel_user_id") != "":
		u, err = q.Users.UserByChannelID(r.Context(), appID, query.Get("channel_user_id"))
	default:
		v.Add("open_user_id", "open_user_id or channel_user_id is required")
	}
	if verr := v.Err(); verr != nil {
		return verr
	}
	if errors.Is(err, projections.ErrNotFound) {
		return domain.ErrUserNotFound
	}
	if err != nil {
		return err
	}
	reports, err := q.Reports.ReportsOfDay(r.Context(), appID, u.OpenUserID, date)
	if err != nil {
		return err
	}
	raws := make([][]byte, 0, len(reports))
	for _, rep := range reports {
		if rep.RawData != nil {
			raws = append(raws, rep.RawData)
		}
	}
	httpapi.OK(w, http.StatusOK, healthdata.Summarize(date, raws))
	return nil
}
