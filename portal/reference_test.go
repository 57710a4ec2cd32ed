package portal_test

import (
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
)

// The API reference and the signer are public pages of the real node,
// served under the portal's CSP (no inline script) and headers, the same for
// a visitor and a signed-in developer; the signer's script is an embedded
// asset, and the signer page holds its inputs in no form.
func TestReferencePages(t *testing.T) {
	configs(t, node.Config{}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		// Visitors arriving together (the page is rendered once, on first
		// view) all get the same complete page content.
		var wg sync.WaitGroup
		bodies := make([]string, 6)
		for i := range bodies {
			b := p.Browser()
			path := []string{"/portal/reference", "/portal/reference/signer"}[i%2]
			wg.Add(1)
			go func() {
				defer wg.Done()
				// The page's main part; the head carries each visitor's own CSRF token.
				if got := b.Get(path); got.Status == http.StatusOK && strings.Contains(got.Body, "</main>") {
					bodies[i] = got.Body[strings.Index(got.Body, "<main>"):strings.Index(got.Body, "</main>")]
				}
			}()
		}
		wg.Wait()
		for i := range bodies {
			if bodies[i] == "" || bodies[i] != bodies[i%2] {
				t.Fatalf("concurrent visitor %d got another page (or none)", i)
			}
		}
		visitor := p.Browser()
		dev, _ := p.Developer(portaltest.Email(t, "Ref"), false)
		for _, b := range []*portaltest.Browser{visitor, dev} {
			ref := b.Get("/portal/reference")
			if ref.Status != http.StatusOK || ref.H1() != "API reference" {
				t.Fatalf("GET /portal/reference: %d %q", ref.Status, ref.H1())
			}
			securityHeaders(t, ref)
			for _, want := range []string{"POST /open/v1/channel/users", "Webhook events", "channel-users",
				"Scheme M (channel users, orders, verify-use)", "Webhook signature (both webhook families)",
				"hexadecimal MD5 of the concatenation app_key, timestamp, app_secret, request body"} {
				if !strings.Contains(ref.Text(), want) {
					t.Errorf("the reference lacks %q", want)
				}
			}
			if !strings.Contains(ref.Body, `<link rel="stylesheet" href="/portal/assets/reference.css">`) {
				t.Error("the reference does not load its stylesheet")
			}
			// A tag page: the partner operations of the tag with their
			// examples, no admin operation, no link to the operators' pages.
			users := b.Get("/portal/reference/channel-users")
			if users.Status != http.StatusOK || users.H1() != "channel-users · API reference" {
				t.Fatalf("GET /portal/reference/channel-users: %d %q", users.Status, users.H1())
			}
			securityHeaders(t, users)
			for _, want := range []string{"POST /open/v1/channel/users", "VALIDATION_ERROR", "client.registerChannelUser(req)",
				"client.RegisterUser(ctx, req)", "client.register_user(req)", `-H "X-App-Id: $APP_ID"`} {
				if !strings.Contains(users.Text(), want) {
					t.Errorf("the channel-users page lacks %q", want)
				}
			}
			for _, page := range []string{"/portal/reference", "/portal/reference/channel-users", "/portal/reference/webhooks",
				"/portal/reference/orders", "/portal/reference/schemas", "/portal/reference/webhook-events"} {
				got := b.Get(page)
				if got.Status != http.StatusOK {
					t.Fatalf("GET %s: %d", page, got.Status)
				}
				if strings.Contains(got.Body, "/portal/ops/reference") || strings.Contains(got.Body, `class="path">/admin/`) {
					t.Errorf("%s shows an admin operation or links the operators' reference", page)
				}
			}
			if missing := b.Get("/portal/reference/admin"); missing.Status != http.StatusNotFound {
				t.Errorf("GET /portal/reference/admin: %d, want 404 (admin is not a partner page)", missing.Status)
			}
			// The operators' reference: not for visitors or developers.
			for _, page := range []string{"/portal/ops/reference", "/portal/ops/reference/admin"} {
				if got := b.Get(page); got.Status != http.StatusSeeOther || got.Location() != "/portal/ops/signin" {
					t.Errorf("GET %s as a non-operator: %d %q, want a redirect to the operator sign-in", page, got.Status, got.Location())
				}
			}
			signer := b.Get("/portal/reference/signer")
			if signer.Status != http.StatusOK || signer.H1() != "Request signer" {
				t.Fatalf("GET /portal/reference/signer: %d %q", signer.Status, signer.H1())
			}
			securityHeaders(t, signer)
			if !strings.Contains(signer.Body, `<script src="/portal/assets/signer.js" defer></script>`) {
				t.Error("the signer page does not load signer.js")
			}
			// The one form on the page is the layout's sign-out (for a
			// developer): the signer's inputs are outside every form.
			main := signer.Body[strings.Index(signer.Body, `<div id="signer"`):]
			main = main[:strings.Index(main, "</main>")]
			if strings.Contains(main, "<form") {
				t.Error("the signer's inputs are inside a form: the secret could be submitted")
			}
			for _, page := range []portaltest.Page{ref, signer} {
				for _, m := range regexp.MustCompile(`<script[^>]*>`).FindAllString(page.Body, -1) {
					if !strings.Contains(m, ` src="/portal/assets/`) {
						t.Errorf("script not from the portal's assets: %s", m)
					}
				}
				if regexp.MustCompile(`(?i)<[^>]+\son[a-z]+=`).MatchString(page.Body) {
					t.Error("inline event handler")
				}
			}
		}
		js := visitor.Get("/portal/assets/signer.js")
		if js.Status != http.StatusOK || !strings.Contains(js.Header.Get("Content-Type"), "javascript") ||
			!strings.Contains(js.Body, "window.PortalSigner") {
			t.Fatalf("GET /portal/assets/signer.js: %d %q", js.Status, js.Header.Get("Content-Type"))
		}
		if css := visitor.Get("/portal/assets/reference.css"); css.Status != http.StatusOK || !strings.Contains(css.Header.Get("Content-Type"), "text/css") {
			t.Fatalf("GET /portal/assets/reference.css: %d %q", css.Status, css.Header.Get("Content-Type"))
		}
		// Operators find their reference in their navigation.
		ops := p.Operator()
		opsRef := ops.Get("/portal/ops/reference")
		if opsRef.Status != http.StatusOK || opsRef.H1() != "Operators' API reference" {
			t.Fatalf("GET /portal/ops/reference as operator: %d %q", opsRef.Status, opsRef.H1())
		}
		if !strings.Contains(opsRef.Body, `<a href="/portal/ops/reference">Admin API reference</a>`) {
			t.Error("the operators' navigation does not link their reference")
		}
		admin := ops.Get("/portal/ops/reference/admin")
		if admin.Status != http.StatusOK || !strings.Contains(admin.Text(), "POST /admin/v1/apps") || !strings.Contains(admin.Text(), "Operator token") {
			t.Fatalf("GET /portal/ops/reference/admin: %d", admin.Status)
		}
		if js := visitor.Get("/portal/assets/reference.js"); js.Status != http.StatusOK || !strings.Contains(js.Header.Get("Content-Type"), "javascript") {
			t.Fatalf("GET /portal/assets/reference.js: %d %q", js.Status, js.Header.Get("Content-Type"))
		}
		// The footer links every page to the reference.
		if home := visitor.Get("/portal/signin"); !strings.Contains(home.Body, `<a href="/portal/reference">API reference</a>`) {
			t.Error("the layout does not link the API reference")
		}
	})
}

func securityHeaders(t *testing.T, p portaltest.Page) {
	t.Helper()
	csp := p.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("CSP %q", csp)
	}
	if p.Header.Get("X-Frame-Options") != "DENY" || p.Header.Get("X-Content-Type-Options") != "nosniff" || p.Header.Get("Referrer-Policy") == "" {
		t.Errorf("headers %v", p.Header)
	}
	if !strings.Contains(p.Header.Get("Content-Type"), "text/html") {
		t.Errorf("Content-Type %q", p.Header.Get("Content-Type"))
	}
}
