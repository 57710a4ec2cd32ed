package portal

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
)

// Destructive actions (deleting an endpoint, rotating a secret, revealing
// the production credentials, which retires the sandbox app) take two
// steps: the first post of the form answers a confirmation page and
// changes nothing; its button posts the same form again with confirm=yes.
// This works without JavaScript, and a stray click or a replayed form
// without the field never destroys anything.

// confirmField is the form field that carries the confirmation.
const confirmField = "confirm"

// confirmData is the confirmation page.
type confirmData struct {
	Title   string // "Delete endpoint 3?"
	Warning string // what cannot be undone
	Action  string // the form's action (the same path)
	Button  string // the confirming button's label
	Cancel  string // where Cancel leads
}

// confirmFirst runs next only when the form carries confirm=yes; any other
// post of it answers the confirmation page (200, nothing appended). ask
// builds the page from the request, or reports false when the thing named
// is not the caller's (then the one 404 page, like next would answer).
func (s *Server) confirmFirst(ask func(r *http.Request) (confirmData, bool), next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, err := formValues(w, r); err != nil {
			s.ErrorPage(w, r, http.StatusBadRequest, "The form could not be read.")
			return
		}
		d, ok := ask(r)
		if !ok {
			s.NotFound(w, r)
			return
		}
		if r.PostForm.Get(confirmField) == "yes" {
			next(w, r)
			return
		}
		d.Action = r.URL.EscapedPath()
		s.Render(w, r, http.StatusOK, "confirm.html", d)
	}
}

// askEndpoint builds the confirmation of an action on one owned endpoint.
func (s *Server) askEndpoint(verb, warning string) func(r *http.Request) (confirmData, bool) {
	return func(r *http.Request) (confirmData, bool) {
		app, ep, ok := s.ownedEndpoint(r)
		if !ok {
			return confirmData{}, false
		}
		id := strconv.FormatInt(ep.EndpointID, 10)
		return confirmData{Title: verb + " endpoint " + id + "?", Warning: warning + " (" + ep.URL + ")",
			Button: verb + " endpoint " + id, Cancel: endpointsPath(app.AppID)}, true
	}
}

// askApp builds the confirmation of an action on one owned app.
func (s *Server) askApp(title, warning, button string) func(r *http.Request) (confirmData, bool) {
	return func(r *http.Request) (confirmData, bool) {
		app, ok := s.ownApp(r)
		if !ok {
			return confirmData{}, false
		}
		id := strconv.FormatInt(app.AppID, 10)
		return confirmData{Title: title + " of application " + id + "?", Warning: warning, Button: button,
			Cancel: "/portal/apps/" + id}, true
	}
}

// catalogPage is the path of the portal's event catalog page when one is
// registered (a GET route without parameters naming event types), else "".
func (s *Server) catalogPage() string {
	for _, rt := range s.Routes() {
		method, p, _ := strings.Cut(rt.Pattern, " ")
		if method == http.MethodGet && !strings.Contains(p, "{") && !strings.Contains(p, "/ops/") &&
			(strings.Contains(p, "event-types") || strings.HasSuffix(p, "/catalog") || strings.HasSuffix(p, "/events")) {
			return p
		}
	}
	return ""
}

// decidedShown bounds the decided reviews the operators' page lists.
const decidedShown = 50

// decidedApps are the sandbox apps whose review was decided, the latest
// decision first.
func decidedApps(all []domain.App) []domain.App {
	var out []domain.App
	for _, a := range all {
		if a.Review != "" && !a.ReviewRequested && !a.ReviewedAt.IsZero() {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(x, y domain.App) int { return y.ReviewedAt.Compare(x.ReviewedAt) })
	if len(out) > decidedShown {
		out = out[:decidedShown]
	}
	return out
}

// when shows a time in the portal's zone (Config.Location) with its UTC
// offset, e.g. "2026-11-23 16:00:05 +08:00"; a pointer to a time works too.
func (s *Server) when(t any) string {
	switch v := t.(type) {
	case time.Time:
		if v.IsZero() {
			return ""
		}
		return v.In(s.zone()).Format("2006-01-02 15:04:05 -07:00")
	case *time.Time:
		if v == nil {
			return ""
		}
		return s.when(*v)
	}
	return ""
}

// zone is the zone pages show times in and read the times typed in forms in.
func (s *Server) zone() *time.Location {
	if s.cfg.Location == nil {
		return time.UTC
	}
	return s.cfg.Location
}

// ZoneName names the portal's zone for people: "UTC+08:00 (Asia/Shanghai)".
func (s *Server) ZoneName() string {
	_, off := time.Now().In(s.zone()).Zone()
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	return fmt.Sprintf("UTC%s%02d:%02d (%s)", sign, off/3600, off%3600/60, s.zone())
}

// Favicon serves the portal's icon at the site's root (/favicon.ico,
// where browsers ask for it whatever page they show), cacheable for a day.
func Favicon() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		b, err := assetFS.ReadFile("assets/favicon.ico")
		if err != nil {
			http.Error(w, "no icon", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "image/x-icon")
		w.Header().Set("Cache-Control", "public, max-age=86400")
		_, _ = w.Write(b)
	})
}

// decisionMail is the subject and body of a review decision's mail.
func decisionMail(what string, approve bool, notes, next string) (string, string) {
	verb := "rejected"
	if approve {
		verb = "approved"
	}
	body := "Your " + what + " was " + verb + " by the platform's review."
	if notes != "" {
		body += "\n\nThe reviewer's note: " + notes
	}
	if next != "" {
		body += "\n\n" + next
	}
	return "Review of your " + what + ": " + verb, body + "\n"
}
