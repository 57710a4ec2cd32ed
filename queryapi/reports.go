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
	app, err := q.SchemeH.Verify(r, body)
	if err != nil {
		return err
	}
	d, err := q.Limiter.Allow(r.Context(), strconv.FormatInt(app.AppID, 10))
	if err != nil {
		return fmt.Errorf("report pull rate limit of app %d: %w", app.AppID, err)
	}
	w.Header().Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
	w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(d.Remaining))
	w.Header().Set("X-RateLimit-Reset", strconv.Itoa(int(math.Ceil(d.Reset.Seconds()))))
	if !d.Allowed {
		return &httpapi.Problem{Status: http.StatusTooManyRequests, Message: "rate limit of " + strconv.Itoa(d.Limit) + " requests per minute exceeded; back off and retry",
			Headers: map[string]string{"Retry-After": strconv.Itoa(int(math.Ceil(d.RetryAfter.Seconds())))}}
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
		if _, err := q.Auditor.RecordAccess(r.Context(), catalog.AccessAudited{
			Actor: "app:" + strconv.FormatInt(app.AppID, 10), Action: catalog.AuditReportPull, AppID: app.AppID, ReportID: id,
			Subjects: []string{domain.ReportStream(id), domain.UserStream(rep.OpenUserID)},
		}, w.Header().Get(httpapi.RequestIDHeader)); err != nil {
			return err
		}
	}
	writePull(w, &rep, q.Location)
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
