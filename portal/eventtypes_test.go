package portal_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/eventtypes"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
)

// The event catalog page is public and shows every catalogued type with
// its description (code spans as code, no literal markdown), its schema
// and its example; an app's page and every page's footer link to it.
func TestEventCatalogPage(t *testing.T) {
	configs(t, node.Config{}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		visitor := p.Browser()
		page := visitor.Get("/portal/event-types")
		if page.Status != http.StatusOK {
			t.Fatalf("catalog page: %d", page.Status)
		}
		main := page.Body[strings.Index(page.Body, "<main>"):strings.Index(page.Body, "</main>")]
		for _, para := range strings.Split(main, `<p class="event-description">`)[1:] {
			if text := para[:strings.Index(para, "</p>")]; strings.Contains(text, "`") {
				t.Errorf("literal markdown (a backquote) in a description: %s", text)
			}
		}
		shown := html.UnescapeString(main)
		for _, typ := range eventtypes.All() {
			if !strings.Contains(main, `<section class="event-type" id="`+typ.Name+`"`) || !strings.Contains(main, `<a href="#`+typ.Name+`">`) {
				t.Errorf("%s: no section or no link to it", typ.Name)
			}
			for _, v := range typ.Versions {
				var ex, sc bytes.Buffer
				_ = json.Indent(&ex, v.Example, "", "  ")
				_ = json.Indent(&sc, v.Schema, "", "  ")
				if !strings.Contains(shown, ex.String()) || !strings.Contains(shown, sc.String()) {
					t.Errorf("%s v%d: example or schema not shown", typ.Name, v.Version)
				}
			}
		}
		if !strings.Contains(main, "<code>created=true</code>") {
			t.Error("code spans of the descriptions are not shown as code")
		}
		if !strings.Contains(page.Body, `<a href="/portal/event-types">`) {
			t.Error("no footer link to the catalog")
		}
		b, _ := p.Developer(portaltest.Email(t, "catalog"), true)
		app := createApp(t, b, "Catalog reader", "orders")
		if got := b.Get(fmt.Sprintf("/portal/apps/%d", app.AppID)); !strings.Contains(got.Body[strings.Index(got.Body, "<main>"):], `<a href="/portal/event-types">`) {
			t.Error("the app page does not link to the event catalog")
		}
	})
}
