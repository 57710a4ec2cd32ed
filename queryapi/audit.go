package queryapi

import (
	"context"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/julienschmidt/httprouter"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/projections"
)

// Auditor records audit facts (the query side's own port onto the write
// side, as ReportViews is); it returns the fact's log position.
type Auditor interface {
	RecordAccess(ctx context.Context, fact catalog.AccessAudited, requestID string) (events.Position, error)
}

// OwnAccessAuditor is an Auditor that records an app's access to its own
// users' data (fact.AppID is every named user's app) without looking the
// users' apps up: the same fact RecordAccess records, one read fewer.
type OwnAccessAuditor interface {
	RecordOwnAccess(ctx context.Context, fact catalog.AccessAudited, requestID string) (events.Position, error)
}

// AuditReasonHeader carries the reason of a reveal, as the reason query
// parameter does.
const AuditReasonHeader = "X-Audit-Reason"

// maxReason bounds a reveal's reason.
const maxReason = 500

type operatorKey struct{}

// operatorOf is the operator the admin wrapper authenticated.
func operatorOf(ctx context.Context) auth.Operator {
	op, _ := ctx.Value(operatorKey{}).(auth.Operator)
	return op
}

func (q *API) auditRoutes() []httpapi.Route {
	return []httpapi.Route{
		{Method: "GET", Path: "/admin/v1/operators", Handle: q.admin(q.listOperators)},
		{Method: "GET", Path: "/admin/v1/audit", Handle: q.admin(q.listAudit)},
	}
}

func (q *API) listOperators(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	list := q.Operators.List()
	out := make([]map[string]any, 0, len(list))
	for _, op := range list {
		var revokedAt any
		if op.RevokedAt != nil {
			revokedAt = op.RevokedAt.UTC().Format(time.RFC3339)
		}
		out = append(out, map[string]any{
			"operator_id": op.OperatorID, "name": op.Name, "role": op.Role, "revoked": op.Revoked,
			"created_at": op.CreatedAt.UTC().Format(time.RFC3339), "revoked_at": revokedAt,
		})
	}
	httpapi.OK(w, http.StatusOK, map[string]any{"operators": out})
}

// revealRequest reads ?reveal= and the reason (?reason= or X-Audit-Reason).
// A reveal needs the auditor role (403 ROLE_FORBIDDEN otherwise, whatever
// else is wrong) and a reason of 1 to 500 characters without control
// characters (422 VALIDATION_ERROR on reason). A reason sent without a
// reveal is held to the same bounds, so the document's limits are the
// server's whichever way the request is made.
func revealRequest(r *http.Request) (reveal bool, reason string, err error) {
	switch r.URL.Query().Get("reveal") {
	case "", "false", "0":
		if reason := requestReason(r); reason != "" {
			if v := checkReason(reason); v != nil {
				return false, "", v
			}
		}
		return false, "", nil
	case "true", "1":
	default:
		v := &domain.ValidationError{}
		v.Add("reveal", "must be true or false")
		return false, "", v
	}
	if operatorOf(r.Context()).Role != auth.RoleAuditor {
		return false, "", domain.ErrRoleForbidden
	}
	reason = requestReason(r)
	if reason == "" {
		v := &domain.ValidationError{}
		v.Add("reason", "is required to reveal personal data (query parameter reason or header "+AuditReasonHeader+")")
		return true, "", v
	}
	return true, reason, checkReason(reason)
}

// requestReason is the reason of a request: ?reason=, else X-Audit-Reason.
func requestReason(r *http.Request) string {
	reason := strings.TrimSpace(r.URL.Query().Get("reason"))
	if reason == "" {
		reason = strings.TrimSpace(r.Header.Get(AuditReasonHeader))
	}
	return reason
}

// checkReason bounds a non-empty reason: at most 500 characters, text
// without control characters.
func checkReason(reason string) error {
	v := &domain.ValidationError{}
	switch {
	case utf8.RuneCountInString(reason) > maxReason:
		v.Add("reason", "must be at most 500 characters")
	case !utf8.ValidString(reason) || strings.IndexFunc(reason, unicode.IsControl) >= 0:
		v.Add("reason", "must be text without control characters")
	}
	return v.Err()
}

// renderEvents shows recorded events, their personal fields redacted unless
// reveal; a reveal is first recorded as an audit fact naming the streams
// and the events whose personal fields it shows, so no personal data is
// shown without its fact in the log.
func (q *API) renderEvents(w http.ResponseWriter, r *http.Request, recs []events.Recorded, reveal bool, action, reason string, subjects []string) ([]EventView, error) {
	out := make([]EventView, 0, len(recs))
	var shown []string
	seen := map[string]bool{}
	for _, s := range subjects {
		seen[s] = true
	}
	for _, rec := range recs {
		v := view(rec)
		// A legacy binding stream's name holds a channel_user_id: shown
		// (and recorded in the audit fact) by its hashed name unless
		// revealed.
		name := q.streamName(rec.Stream)
		if !reveal {
			v.Stream = name
		}
		redacted, changed, err := catalog.Redact(rec.Type, rec.Data)
		if err != nil {
			return nil, err
		}
		if changed {
			if reveal {
				shown = append(shown, rec.ID)
				if !seen[name] {
					seen[name] = true
					subjects = append(subjects, name)
				}
			} else {
				v.Data = rawOrNull(redacted)
			}
		}
		out = append(out, v)
	}
	if reveal {
		op := operatorOf(r.Context())
		if subjects == nil {
			subjects = []string{}
		}
		pos, err := q.Auditor.RecordAccess(r.Context(), catalog.AccessAudited{
			Actor: op.Actor(), Action: action, Subjects: subjects, EventIDs: shown, Reason: reason,
		}, w.Header().Get(httpapi.RequestIDHeader))
		if err != nil {
			return nil, err
		}
		q.Watermarks.Wrote(0, pos) // operator writes are app 0's: the audit listing waits for it
	}
	return out, nil
}

// listAudit lists audit facts, for auditors: filtered by actor, action
// (e.g. user.erased for erasures, reveal.history), subject (a stream, e.g.
// user-1001 or report-7) and time, paged by seq.
func (q *API) listAudit(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	query := r.URL.Query()
	v := &domain.ValidationError{}
	f := projections.AuditFilter{Actor: query.Get("actor"), Action: query.Get("action"), Subject: query.Get("subject")}
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
	after, err := httpapi.IntParam(r, "after", 0, 0)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	// As documented, 0 (like an absent limit) means the default page.
	limit, err := httpapi.IntParam(r, "limit", 100, 1000)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	if err := v.Err(); err != nil {
		httpapi.Error(w, r, err)
		return
	}
	f.After, f.Limit = after, int(limit)
	if limit == 0 {
		f.Limit = 100
	}
	// The operator's own reveals are written on this node: wait for them.
	if err := q.await(r.Context(), 0, projections.ReadModelAudit); err != nil {
		httpapi.Error(w, r, err)
		return
	}
	facts, err := q.Audit.AuditFacts(r.Context(), f)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	out := make([]map[string]any, 0, len(facts))
	for _, a := range facts {
		out = append(out, map[string]any{
			"seq": a.Seq, "event_id": a.EventID, "actor": a.Actor, "action": a.Action, "subjects": a.Subjects,
			"event_ids": a.EventIDs, "report_id": a.ReportID, "app_id": a.AppID, "reason": a.Reason,
			"at": a.At.UTC().Format(time.RFC3339Nano),
		})
	}
	var next any
	if len(facts) > 0 && len(facts) == f.Limit {
		next = facts[len(facts)-1].Seq
	}
	httpapi.OK(w, http.StatusOK, map[string]any{"facts": out, "next_after": next})
}
