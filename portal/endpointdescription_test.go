package portal_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
)

// A developer describes an endpoint on the endpoint pages: given when it
// is added, shown in the list, replaced on the edit page; a description
// too long or with a line break is shown as the field's error and changes
// nothing.
func TestEndpointDescriptionOnThePages(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true})
	b, devID := p.Developer(portaltest.Email(t, "describe"), true)
	creds := devApp(t, p, devID, "Described")
	list := fmt.Sprintf("/portal/apps/%d/endpoints", creds.AppID)
	b.Get(list)
	page := b.Post(list, url.Values{"url": {"http://127.0.0.1:9/hook"}, "events": {""}, "description": {"Billing <sync>"}})
	m := regexp.MustCompile(`Webhook secret of endpoint (\d+)`).FindStringSubmatch(page.H1())
	if page.Status != http.StatusOK || m == nil {
		t.Fatalf("add: %d %s", page.Status, page.Text())
	}
	row := regexp.MustCompile(`(?s)<tr id="endpoint-` + m[1] + `">.*?</tr>`).FindString(b.Get(list).Body)
	if !strings.Contains(row, `<span class="description">Billing &lt;sync&gt;</span>`) {
		t.Fatalf("list row: %s", row)
	}
	edit := fmt.Sprintf("/portal/apps/%d/endpoints/%s", creds.AppID, m[1])
	if form := b.Get(edit + "/edit"); !strings.Contains(form.Body, `value="Billing &lt;sync&gt;"`) {
		t.Fatalf("edit form: %s", form.Body)
	}
	n := streamLength(t, p, creds.AppID)
	for _, bad := range []string{strings.Repeat("x", 257), "two\nlines"} {
		got := b.Post(edit, url.Values{"url": {"http://127.0.0.1:9/hook"}, "events": {""}, "description": {bad}})
		if got.Status != http.StatusBadRequest || !strings.Contains(got.Text(), "must be") {
			t.Fatalf("bad description %q: %d %s", bad, got.Status, got.Text())
		}
		b.Get(edit + "/edit")
	}
	if after := streamLength(t, p, creds.AppID); after != n {
		t.Fatalf("refused descriptions appended %d events", after-n)
	}
	if got := b.Post(edit, url.Values{"url": {"http://127.0.0.1:9/hook"}, "events": {""}, "description": {"Billing (production)"}}); got.Status != http.StatusSeeOther {
		t.Fatalf("save: %d %s", got.Status, got.Text())
	}
	row = regexp.MustCompile(`(?s)<tr id="endpoint-` + m[1] + `">.*?</tr>`).FindString(b.Get(list).Body)
	if !strings.Contains(row, "Billing (production)") || strings.Contains(row, "sync") {
		t.Fatalf("list row after the edit: %s", row)
	}
}
