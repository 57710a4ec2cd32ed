package apiref_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/openapi"
	"github.com/healthtech/partner-open-platform/portal/apiref"
)

// The reference page is whole and self-consistent: every in-page link has
// its target, no script is inline, and the parts a partner looks for are
// there.
func TestReferenceBodies(t *testing.T) {
	b, err := apiref.Render(openapi.Spec, "/portal/assets")
	if err != nil {
		t.Fatal(err)
	}
	index, signer := string(b.Index), string(b.Signer)
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile(` id="([^"]+)"`).FindAllStringSubmatch(index, -1) {
		if ids[m[1]] {
			t.Errorf("id %q appears twice", m[1])
		}
		ids[m[1]] = true
	}
	links := regexp.MustCompile(` href="#([^"]+)"`).FindAllStringSubmatch(index, -1)
	if len(links) < 100 {
		t.Fatalf("only %d in-page links", len(links))
	}
	for _, m := range links {
		if !ids[m[1]] {
			t.Errorf("link to #%s has no target", m[1])
		}
	}
	for _, want := range []string{
		`id="op-`,
		`<code class="path">/open/v1/channel/users</code>`,
		`<code class="path">health.report.created</code>`,
		`<code>VALIDATION_ERROR</code>`,
		`id="sign-scheme-m"`, `id="sign-scheme-h"`, `id="sign-webhook"`, `id="sign-plugin-launch"`,
		`hexadecimal MD5 of the concatenation app_key, timestamp, app_secret, request body`,
		`<a href="#sign-scheme-m">Scheme M</a>`,
		`<pre class="example"><code>{`,
	} {
		if !strings.Contains(index, want) {
			t.Errorf("the reference lacks %s", want)
		}
	}
	for name, body := range map[string]string{"reference": index, "signer": signer} {
		for _, m := range regexp.MustCompile(`<script[^>]*>([^<]*)</script>|<script[^>]*>`).FindAllStringSubmatch(body, -1) {
			if !strings.Contains(m[0], ` src="`) || !strings.HasSuffix(m[0], "</script>") || m[1] != "" {
				t.Errorf("%s: inline script %q", name, m[0])
			}
		}
		if regexp.MustCompile(`(?i)\son[a-z]+=`).MatchString(body) {
			t.Errorf("%s: inline event handler", name)
		}
		if strings.Contains(body, ` style=`) {
			t.Errorf("%s: inline style attribute (blocked by the CSP)", name)
		}
	}
	for _, want := range []string{
		`<script src="/portal/assets/signer.js" defer></script>`,
		`data-scheme-h-paths="[&#34;/open/v1/health-reports/`,
		`<label for="app_secret">App secret</label> <input id="app_secret" name="app_secret" type="password"`,
	} {
		if !strings.Contains(signer, want) {
			t.Errorf("the signer lacks %s", want)
		}
	}
	// The signer's inputs are in no form: nothing can submit the secret.
	if strings.Contains(signer, "<form") {
		t.Error("the signer has a <form>: the secret could be submitted")
	}
}
