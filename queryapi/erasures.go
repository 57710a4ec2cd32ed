package queryapi

import (
	"context"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/projections"
)

func (q *API) erasureRoutes() []httpapi.Route {
	return []httpapi.Route{
		{Method: "GET", Path: "/admin/v1/erasures", Handle: q.admin(q.listErasures)},
	}
}

// PendingErasure is an erasure the app that held the person has not
// acknowledged yet: Seq is the erasure's audit fact, the listing's cursor.
type PendingErasure struct {
	Seq        int64
	AppID      int64
	OpenUserID int64
	Subject    string
	ErasedBy   string
	Reason     string
	ErasedAt   time.Time
}

// auditPage is the page size of the scans behind the erasure listing.
const auditPage = 1000

// PendingErasures lists, in erasure order after the cursor, the erasures
// of app (0: every app) whose app has not acknowledged them, at most
// limit; next is the cursor of the next page (0: none). Both sets come
// from the audit read model: user.erased facts minus the apps'
// user.erasure_acknowledged facts.
func PendingErasures(ctx context.Context, audit projections.AuditStore, app, after int64, limit int) (out []PendingErasure, next int64, err error) {
	type key struct {
		app     int64
		subject string
	}
	acked := map[key]bool{}
	for cursor := int64(0); ; {
		facts, err := audit.AuditFacts(ctx, projections.AuditFilter{Action: projections.ErasureAcknowledgedAction, App: app, After: cursor, Limit: auditPage})
		if err != nil {
			return nil, 0, err
		}
		for _, f := range facts {
			for _, s := range f.Subjects {
				acked[key{f.AppID, s}] = true
			}
		}
		if len(facts) < auditPage {
			break
		}
		cursor = facts[len(facts)-1].Seq
	}
	for cursor := after; ; {
		facts, err := audit.AuditFacts(ctx, projections.AuditFilter{Action: projections.ErasureAction, App: app, After: cursor, Limit: auditPage})
		if err != nil {
			return nil, 0, err
		}
		for _, f := range facts {
			cursor = f.Seq
			if len(f.Subjects) == 0 || acked[key{f.AppID, f.Subjects[0]}] {
				continue
			}
			id, ok := domain.UserStreamID(f.Subjects[0])
			if !ok {
				continue
			}
			out = append(out, PendingErasure{Seq: f.Seq, AppID: f.AppID, OpenUserID: id, Subject: f.Subjects[0], ErasedBy: f.Actor, Reason: f.Reason, ErasedAt: f.At})
			if len(out) == limit {
				return out, f.Seq, nil
			}
		}
		if len(facts) < auditPage {
			return out, 0, nil
		}
	}
}

// listErasures lists the erasures not yet acknowledged by the app that
// held the person (GDPR Art. 19 follow-up), optionally of one app, paged
// by the erasure's audit seq.
func (q *API) listErasures(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	app, err := httpapi.IntParam(r, "app_id", 0, 0)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	after, err := httpapi.IntParam(r, "after", 0, 0)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	limit, err := httpapi.IntParam(r, "limit", 100, 1000)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	if limit == 0 {
		limit = 100
	}
	if app > 0 {
		if _, ok := q.Apps.ByID(app); !ok {
			httpapi.Error(w, r, domain.ErrAppNotFound)
			return
		}
	}
	// Erasures are the operators' writes; acknowledgements the app's.
	for _, writer := range []int64{0, app} {
		if err := q.await(r.Context(), writer, projections.ReadModelAudit); err != nil {
			httpapi.Error(w, r, err)
			return
		}
	}
	pending, next, err := PendingErasures(r.Context(), q.Audit, app, after, int(limit))
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	out := make([]map[string]any, 0, len(pending))
	for _, p := range pending {
		out = append(out, map[string]any{
			"seq": p.Seq, "app_id": p.AppID, "open_user_id": p.OpenUserID, "erased_by": p.ErasedBy, "reason": p.Reason,
			"erased_at": p.ErasedAt.UTC().Format(time.RFC3339Nano), "acknowledged": false,
		})
	}
	var nextAfter any
	if next > 0 {
		nextAfter = next
	}
	httpapi.OK(w, http.StatusOK, map[string]any{"erasures": out, "next_after": nextAfter})
}
