package queryapi

import (
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
	pending, next, err := projections.PendingErasures(r.Context(), q.Audit, app, after, int(limit))
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
