package portal

import (
	"net/http"
	"strconv"

	"github.com/healthtech/partner-open-platform/projections"
)

func init() {
	addRoutes(func(s *Server) {
		s.Operator("GET /portal/ops/erasures", s.opsErasures)
	})
}

// opsErasures lists the erasures the apps that held the person have not
// acknowledged yet (GET /admin/v1/erasures), for an operator to follow up;
// ?app_id= narrows to one app. Any operator role may read it.
func (s *Server) opsErasures(w http.ResponseWriter, r *http.Request) {
	var app int64
	if v := r.URL.Query().Get("app_id"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id <= 0 {
			s.ErrorPage(w, r, http.StatusBadRequest, "app_id must be a positive integer.")
			return
		}
		app = id
	}
	pending, _, err := projections.PendingErasures(r.Context(), s.ReadModel, app, 0, 1000)
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.Render(w, r, http.StatusOK, "ops_erasures.html", map[string]any{"App": app, "Erasures": pending})
}
