package portal

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/projections"
)

func init() {
	addRoutes(func(s *Server) {
		s.Developer("GET /portal/apps/{appId}/access-log", s.accessLogPage)
	})
}

// accessLogPageSize is how many accesses one page shows.
const accessLogPageSize = 50

// accessLookups are the access log's lookups for the portal (as the API's
// GET /open/v1/access-log has them): a user's app from its stream's first
// event, an operator's role from the directory.
func (s *Server) accessLookups() projections.AccessLookups {
	return projections.AccessLookups{
		UserApp: func(ctx context.Context, openUserID int64) (int64, error) {
			recs, err := s.Events.ReadStream(ctx, domain.UserStream(openUserID), 0, 1)
			if err != nil || len(recs) == 0 {
				return 0, err
			}
			var meta struct {
				AppID int64 `json:"app_id"`
			}
			err = json.Unmarshal(recs[0].Meta, &meta)
			return meta.AppID, err
		},
		Role: func(actor string) string {
			if actor == auth.BootstrapActor {
				return auth.RoleAdmin
			}
			id, err := strconv.ParseInt(strings.TrimPrefix(actor, "operator:"), 10, 64)
			if err != nil || s.Operators == nil {
				return ""
			}
			op, ok := s.Operators.ByID(id)
			if !ok {
				return ""
			}
			return op.Role
		},
	}
}

// accessLogPage shows the developer who read the app's users' data and
// why: the app's own report pulls and the operators' reveals, by user and
// date, a page at a time (docs/erasure.md, "Access transparency").
func (s *Server) accessLogPage(w http.ResponseWriter, r *http.Request) {
	app, ok := s.ownApp(r)
	if !ok {
		s.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	f := projections.AccessFilter{App: app.AppID, Limit: accessLogPageSize}
	var problems []string
	if v := q.Get("open_user_id"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id <= 0 {
			problems = append(problems, "open_user_id must be a positive integer")
		}
		f.User = id
	}
	for _, p := range []struct {
		name string
		into *time.Time
		days int
	}{{"from", &f.From, 0}, {"to", &f.To, 1}} {
		if v := q.Get(p.name); v != "" {
			t, err := time.ParseInLocation(time.DateOnly, v, time.UTC)
			if err != nil {
				problems = append(problems, p.name+" must be a date (YYYY-MM-DD)")
			}
			*p.into = t.AddDate(0, 0, p.days) // "to" takes in the whole day
		}
	}
	if v := q.Get("after"); v != "" {
		after, err := strconv.ParseInt(v, 10, 64)
		if err != nil || after < 0 {
			problems = append(problems, "after must be a cursor of this page")
		}
		f.After = after
	}
	data := map[string]any{"App": app, "Filter": q}
	if len(problems) > 0 {
		data["Problems"] = problems
		s.Render(w, r, http.StatusBadRequest, "apps_access_log.html", data)
		return
	}
	entries, next, err := projections.AccessLog(r.Context(), s.ReadModel, s.accessLookups(), f)
	if errors.Is(err, domain.ErrUserNotFound) {
		s.NotFound(w, r) // another app's user, as a missing one
		return
	}
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	data["Accesses"], data["Next"] = entries, next
	s.Render(w, r, http.StatusOK, "apps_access_log.html", data)
}
