package portal

import (
	"bytes"
	"encoding/json"
	"html/template"
	"net/http"
	"regexp"

	"github.com/healthtech/partner-open-platform/internal/eventtypes"
)

// The event catalog is a public page, like the API reference: it shows
// GET /open/v1/event-types (public too), which holds no app's data.
func init() {
	addRoutes(func(s *Server) {
		s.Public("GET /portal/event-types", s.eventTypesPage)
	})
}

// eventTypeView is a catalogued type with its schema and example indented
// for reading.
type eventTypeView struct {
	eventtypes.Type
	// About is the description with its `code` spans as <code>.
	About template.HTML
	Shown []versionView
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// codeSpans escapes text and shows its backquoted spans as code, so no
// literal markdown reaches the page.
func codeSpans(text string) template.HTML {
	return template.HTML(codeSpan.ReplaceAllString(template.HTMLEscapeString(text), "<code>$1</code>")) //nolint:gosec // escaped above
}

type versionView struct {
	Version         int
	Schema, Example string
}

func indentJSON(raw []byte) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

func (s *Server) eventTypesPage(w http.ResponseWriter, r *http.Request) {
	all := eventtypes.All()
	views := make([]eventTypeView, len(all))
	for i, t := range all {
		v := eventTypeView{Type: t, About: codeSpans(t.Description)}
		for _, ver := range t.Versions {
			v.Shown = append(v.Shown, versionView{Version: ver.Version, Schema: indentJSON(ver.Schema), Example: indentJSON(ver.Example)})
		}
		views[i] = v
	}
	s.Render(w, r, http.StatusOK, "event_types.html", views)
}
