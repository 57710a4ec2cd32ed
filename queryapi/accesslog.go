package queryapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/projections"
)

func (q *API) accessLogRoutes() []httpapi.Route {
	return []httpapi.Route{
		{Method: "GET", Path: "/open/v1/access-log", Handle: q.partner(projections.ReadModelAudit, q.accessLog)},
	}
}

// isAccess reports the audit actions that read a person's data: the app's
// own report pulls and the operators' reveals (not erasures, their
// acknowledgements or portal actions).
func isAccess(action string) bool {
	return action == catalog.AuditReportPull || strings.HasPrefix(action, "reveal.")
}

// accessor is who read, as an app is shown it: the app itself, or an
// operator by its role and pseudonymous id (operator:<id>), never its name.
func (q *API) accessor(actor string, roles map[string]string) (role, id string) {
	switch {
	case strings.HasPrefix(actor, "app:"):
		return "app", actor
	case actor == auth.BootstrapActor:
		return auth.RoleAdmin, actor
	case strings.HasPrefix(actor, "operator:"):
		if r, ok := roles[actor]; ok {
			return r, actor
		}
		return "operator", actor
	}
	return "platform", "platform"
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
	f := projections.AuditFilter{Subject: domain.AppStream(appID)}
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
	owned := map[int64]bool{}
	owns := func(id int64) (bool, error) {
		if o, ok := owned[id]; ok {
			return o, nil
		}
		app, err := q.userApp(r.Context(), id)
		if err != nil {
			return false, err
		}
		owned[id] = app == appID
		return owned[id], nil
	}
	if user > 0 {
		// Another app's user is a 404 like a missing one.
		if ok, err := owns(user); err != nil {
			return err
		} else if !ok {
			return domain.ErrUserNotFound
		}
		f.Subject = domain.UserStream(user)
	}
	roles := map[string]string{}
	for _, op := range q.Operators.List() {
		roles["operator:"+strconv.FormatInt(op.OperatorID, 10)] = op.Role
	}
	out := make([]map[string]any, 0, limit)
	var next any
	f.After = after
	for len(out) < int(limit) {
		f.Limit = auditPage
		facts, err := q.Audit.AuditFacts(r.Context(), f)
		if err != nil {
			return err
		}
		for _, a := range facts {
			f.After = a.Seq
			if !isAccess(a.Action) {
				continue
			}
			var users []int64
			for _, s := range a.Subjects {
				id, ok := domain.UserStreamID(s)
				if !ok {
					continue
				}
				if mine, err := owns(id); err != nil {
					return err
				} else if mine {
					users = append(users, id)
				}
			}
			if len(users) == 0 {
				continue
			}
			role, id := q.accessor(a.Actor, roles)
			entry := map[string]any{
				"seq": a.Seq, "at": a.At.In(q.Location).Format(time.RFC3339), "action": a.Action, "accessor_role": role,
				"accessor": id, "reason": a.Reason, "open_user_ids": users, "report_id": nil,
			}
			if a.ReportID > 0 && a.AppID == appID {
				entry["report_id"] = a.ReportID
			}
			out = append(out, entry)
			if len(out) == int(limit) {
				next = a.Seq
				break
			}
		}
		if next != nil || len(facts) < auditPage {
			break
		}
	}
	httpapi.OK(w, http.StatusOK, map[string]any{"accesses": out, "next_after": next})
	return nil
}
