package portal_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
)

// The default endpoint (id 0, the app's webhook) is visible on the
// endpoints page of an app created without a webhook URL, with the secret
// that signs it; the developer gives it a URL there, after which it is
// listed as an endpoint signed with the app's webhook secret and its
// deliveries verify with that secret. Another developer cannot touch it.
func TestDefaultEndpointVisibleAndEditable(t *testing.T) {
	configs(t, node.Config{WebhookAllowLoopback: true}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		b, devID := p.Developer(portaltest.Email(t, "default"), true)
		other, _ := p.Developer(portaltest.Email(t, "intruder"), true)
		creds := devApp(t, p, devID, "Clinic")
		list := fmt.Sprintf("/portal/apps/%d/endpoints", creds.AppID)

		page := b.Get(list)
		if page.Status != http.StatusOK || !strings.Contains(page.Text(), "Default endpoint (id 0)") ||
			!strings.Contains(page.Text(), "has no URL yet") || !strings.Contains(page.Text(), "signs with the app's webhook secret") {
			t.Fatalf("endpoints page of an app without a webhook URL: %d %s", page.Status, page.Text())
		}
		if edit := b.Get(list + "/0/edit"); edit.Status != http.StatusOK || edit.H1() != "Edit endpoint 0" {
			t.Fatalf("edit page of the default endpoint: %d %q", edit.Status, edit.H1())
		}
		n := streamLength(t, p, creds.AppID)
		if got := other.Post(list+"/0", url.Values{"url": {"https://evil.example/x"}}); got.Status != http.StatusNotFound {
			t.Fatalf("another developer set the default endpoint: %d", got.Status)
		}
		if got := other.Get(list + "/0/edit"); got.Status != http.StatusNotFound {
			t.Fatalf("another developer's edit page: %d", got.Status)
		}
		if bad := b.Post(list+"/0", url.Values{"url": {"ftp://x"}}); bad.Status != http.StatusBadRequest {
			t.Fatalf("a bad URL for the default endpoint: %d %s", bad.Status, bad.Text())
		}
		if after := streamLength(t, p, creds.AppID); after != n {
			t.Fatalf("refused requests appended %d events", after-n)
		}

		hook := newReceiver(t, "default")
		saved := b.Post(list+"/0", url.Values{"url": {hook.srv.URL + "/hook"}, "events": {"user.family_group.*"}})
		if saved.Status != http.StatusSeeOther {
			t.Fatalf("set the default endpoint's URL: %d %s", saved.Status, saved.Text())
		}
		page = b.Get(list)
		row := page.Body[strings.Index(page.Body, `id="endpoint-0"`):]
		if strings.Contains(page.Text(), "has no URL yet") || !strings.Contains(row, hook.srv.URL+"/hook") || !strings.Contains(row, `class="signed-with">the app`) {
			t.Fatalf("endpoints page after the URL was set: %s", page.Text())
		}
		own := newReceiver(t, "own")
		addEndpoint(t, b, creds.AppID, own.srv.URL+"/hook", "user.family_group.*")
		if page = b.Get(list); !strings.Contains(page.Text(), "its own secret") {
			t.Fatalf("an added endpoint does not say which secret signs it: %s", page.Text())
		}
		registerUser(t, p, creds, "u-1")
		verify(t, hook.await(t, 1)[0], creds.WebhookSecret)
	})
}
