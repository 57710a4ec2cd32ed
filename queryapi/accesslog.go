package queryapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/projections"
)

func (q *API) accessLogRoutes() []httpapi.Route {
	return []httpapi.Route{
		{Method: "GET", Path: "/open/v1/access-log", Handle: q.partner(projections.ReadModelAudit, q.accessLog)},
	}
}

// accessLookups are the access log's lookups on this node: a user's app
// from its stream's first event, an operator's role from the directory.
func (q *API) accessLookups() projections.AccessLookups {
	roles := map[string]string{auth.BootstrapActor: auth.RoleAdmin}
	for _, op := range q.Operators.List() {
		roles["operator:"+strconv.FormatInt(op.OperatorID, 10)] = op.Role
	}
	return projections.AccessLookups{UserApp: q.userApp, Role: func(actor string) string { return roles[actor] }}
}

// userApp is the app a user stream belongs to (its first event; an erased
// user's too), 0 for an unknown user.
func (q *API) userApp(ctx context.Context, openUserID int64) (int64, error) {
	recs, err := q.Events.ReadStream(ctx, domain.UserStream(openUserID), 0, 1)
	if err != nil || len(recs) == 0 {
		return 0, err
	}
	var meta struct {
		AppID int64 `json:"app_id"`
	}
	if err := json.Unmarshal(recs[0].Meta, &meta); err != nil {
		return 0, fmt.Errorf("the app of user %d: %w", openUserID, err)
	}
	return meta.AppID, nil
}

// accessLog lists who accessed the calling app's users' data and why
// (access transparency): the app's own report pulls and the operators'
// reveals naming its users, newest last, filtered by user and time, paged
// by the fact's seq. Only the app's own users are shown in a fact.
func (q *API) accessLog(w http.ResponseWriter, r *http.Request, _ httprouter.Params, appID int64) error {
	query := r.URL.Query()
	v := &domain.ValidationError{}
	var f projections.AuditFilter
	for _, p := range []struct {
		name string
		into *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		if s := query.Get(p.name); s != "" {
			t, ok := httpapi.ParseTime(s, q.Location)
			if !ok {
				v.Add(p.name, "must be an ISO 8601 date-time")
			}
			*p.into = t
		}
	}
	user, err := httpapi.IntParam(r, "open_user_id", 0, 1<<53-1)
	if err != nil {
		return err
	}
	after, err := httpapi.IntParam(r, "after", 0, 0)
	if err != nil {
		return err
	}
	limit, err := httpapi.IntParam(r, "limit", 100, 1000)
	if err != nil {
		return err
	}
	if err := v.Err(); err != nil {
		return err
	}
	if limit == 0 {
		limit = 100
	}
	entries, next, err := projections.AccessLog(r.Context(), q.Audit, q.accessLookups(), projections.AccessFilter{
		App: appID, User: user, From: f.From, To: f.To, After: after, Limit: int(limit)})
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(entries))
	for _, e := range entries {
		var report any
		if e.ReportID > 0 {
			report = e.ReportID
		}
		out = append(out, map[string]any{
			"seq": e.Seq, "at": e.At.In(q.Location).Format(time.RFC3339), "action": e.Action, "accessor_role": e.AccessorRole,
			"accessor": e.Accessor, "reason": e.Reason, "open_user_ids": e.OpenUserIDs, "report_id": report,
		})
	}
	var nextAfter any
	if next > 0 {
		nextAfter = next
	}
	httpapi.OK(w, http.StatusOK, map[string]any{"accesses": out, "next_after": nextAfter})
	return nil
}
