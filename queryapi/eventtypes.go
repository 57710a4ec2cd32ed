package queryapi

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/eventtypes"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// eventTypeRoutes serve the webhook event catalog. They are public, like
// /openapi.yaml: the catalog is the same for every app and holds no
// tenant data (it is the contract the OpenAPI document's x-webhooks
// already publishes), and a receiver's build or a code generator should
// read it without the app's secret.
func eventTypeRoutes() []httpapi.Route {
	return []httpapi.Route{
		{Method: "GET", Path: "/open/v1/event-types", Handle: listEventTypes},
		{Method: "GET", Path: "/open/v1/event-types/:type", Handle: getEventType},
	}
}

// eventTypeSummary is a type as the list shows it: no schemas or examples,
// which the type's own route returns.
type eventTypeSummary struct {
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Current     int    `json:"current_version"`
	Versions    []int  `json:"versions"`
}

// catalogCache: the catalog changes only with a release.
const catalogCache = "public, max-age=300"

func listEventTypes(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if err := httpapi.CheckParams(r, ps); err != nil {
		httpapi.Error(w, r, err)
		return
	}
	all := eventtypes.All()
	out := make([]eventTypeSummary, len(all))
	for i, t := range all {
		s := eventTypeSummary{Name: t.Name, Title: t.Title, Description: t.Description, Current: t.Current}
		for _, v := range t.Versions {
			s.Versions = append(s.Versions, v.Version)
		}
		out[i] = s
	}
	w.Header().Set("Cache-Control", catalogCache)
	httpapi.OK(w, http.StatusOK, map[string]any{"event_types": out})
}

func getEventType(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if err := httpapi.CheckParams(r, ps); err != nil {
		httpapi.Error(w, r, err)
		return
	}
	t, ok := eventtypes.Lookup(ps.ByName("type"))
	if !ok {
		httpapi.Error(w, r, domain.ErrEventTypeNotFound)
		return
	}
	w.Header().Set("Cache-Control", catalogCache)
	httpapi.OK(w, http.StatusOK, t)
}
