package queryapi

import (
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/projections/directory"
)

// DeveloperDirectory is the developer portal's directory of accounts as
// the admin API reads it, so operators without a browser (platformctl
// developers) see the qualification queue /portal/ops/developers shows.
type DeveloperDirectory interface {
	// List returns the accounts with status ("" for every one), newest first.
	List(status string) []directory.DeveloperAccount
	// Developer returns one account.
	Developer(id int64) (directory.DeveloperAccount, bool)
}

// developerStatuses are the statuses the status filter accepts.
var developerStatuses = []string{catalog.DeveloperPending, catalog.DeveloperApproved, catalog.DeveloperRejected}

func (q *API) developerRoutes() []httpapi.Route {
	return []httpapi.Route{
		{Method: "GET", Path: "/admin/v1/developers", Handle: q.admin(q.listDevelopers)},
		{Method: "GET", Path: "/admin/v1/developers/:developerId", Handle: q.admin(q.getDeveloper)},
	}
}

// listDevelopers lists the developer accounts, newest first, optionally
// one review status only (pending_review is the queue an operator works).
func (q *API) listDevelopers(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	status, err := statusParam(r, developerStatuses)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	var devs []directory.DeveloperAccount
	if q.Developers != nil {
		devs = q.Developers.List(status)
	}
	out := make([]map[string]any, 0, len(devs))
	for _, d := range devs {
		out = append(out, developerView(d))
	}
	httpapi.OK(w, http.StatusOK, map[string]any{"developers": out})
}

func (q *API) getDeveloper(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id, err := httpapi.PathID(ps, "developerId", false)
	if err != nil {
		httpapi.Error(w, r, err)
		return
	}
	var d directory.DeveloperAccount
	ok := false
	if q.Developers != nil {
		d, ok = q.Developers.Developer(id)
	}
	if !ok {
		httpapi.Error(w, r, domain.ErrDeveloperNotFound)
		return
	}
	httpapi.OK(w, http.StatusOK, developerView(d))
}

// developerView is an account as the admin API shows it: reviewed_at and
// reviewed_by are null until the first decision.
func developerView(d directory.DeveloperAccount) map[string]any {
	v := map[string]any{
		"developer_id": d.DeveloperID, "email": d.Email, "status": d.Status, "reason": d.Reason,
		"signed_up_at": d.SignedUpAt.UTC().Format(time.RFC3339), "reviewed_at": nil, "reviewed_by": nil,
	}
	if d.ReviewedAt != nil {
		v["reviewed_at"], v["reviewed_by"] = d.ReviewedAt.UTC().Format(time.RFC3339), d.ReviewedBy
	}
	return v
}
