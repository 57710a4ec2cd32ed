package apiref_test

import (
	"html"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/openapi"
	"github.com/healthtech/partner-open-platform/internal/openapi/openapitest"
	"github.com/healthtech/partner-open-platform/portal/apiref"
)

var (
	renderOnce sync.Once
	rendered   apiref.Bodies
	renderErr  error
)

func render(t *testing.T) apiref.Bodies {
	t.Helper()
	renderOnce.Do(func() {
		rendered, renderErr = apiref.Render(openapi.Spec, "/portal/assets", "/portal/reference", "/portal/ops/reference")
	})
	if renderErr != nil {
		t.Fatal(renderErr)
	}
	return rendered
}

var articleRE = regexp.MustCompile(`<article class="op" id="([^"]+)">\s*<h3><span class="method m-(\w+)">\w+</span> <code class="path">([^<]+)</code></h3>`)

// articles lists the operations a page shows, as "METHOD path", with the
// article's HTML.
func articles(body string) map[string]string {
	out := map[string]string{}
	locs := articleRE.FindAllStringSubmatchIndex(body, -1)
	for i, l := range locs {
		end := len(body)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		out[body[l[4]:l[5]]+" "+html.UnescapeString(body[l[6]:l[7]])] = body[l[0]:end]
	}
	return out
}

// The two references split the document: every partner operation is on
// exactly one partner tag page and on no operator page, every other
// operation (admin, uploader, internal, node, the plugin's own calls) on
// exactly one operator page and on no partner page; no partner page
// links to an admin route or to the operators' reference.
func TestReferencesSplitTheDocument(t *testing.T) {
	b := render(t)
	doc := openapitest.Doc(t)
	partnerSeen, opsSeen := map[string]int{}, map[string]int{}
	for name, p := range b.Pages {
		body := string(p.Body)
		if strings.Contains(body, `href="/portal/ops`) || strings.Contains(body, `class="path">/admin/`) {
			t.Errorf("partner page %s shows an admin operation or links the operators' reference", name)
		}
		if name == "webhook-events" {
			continue
		}
		for k := range articles(body) {
			partnerSeen[k]++
		}
	}
	for _, body := range []string{string(b.Index)} {
		if strings.Contains(body, `href="/portal/ops`) || strings.Contains(body, `<code>/admin/`) {
			t.Error("the partner index lists an admin operation or links the operators' reference")
		}
	}
	for _, p := range b.OpsPages {
		for k := range articles(string(p.Body)) {
			opsSeen[k]++
		}
	}
	partners, operators := 0, 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			k := method + " " + path
			isPartner := false
			for _, req := range *op.Security {
				for n := range req {
					isPartner = isPartner || n == "AppId" || n == "schemeH" || n == "oauthClient" || n == "oauthBearer"
				}
			}
			if len(*op.Security) == 0 && strings.HasPrefix(path, "/open/v1/") {
				isPartner = true
			}
			if strings.HasPrefix(path, "/admin/") && isPartner {
				t.Errorf("%s counts as a partner operation", k)
			}
			if isPartner {
				partners++
				if partnerSeen[k] != 1 || opsSeen[k] != 0 {
					t.Errorf("partner operation %s: on %d partner pages, %d operator pages", k, partnerSeen[k], opsSeen[k])
				}
			} else {
				operators++
				if opsSeen[k] != 1 || partnerSeen[k] != 0 {
					t.Errorf("operation %s: on %d operator pages, %d partner pages", k, opsSeen[k], partnerSeen[k])
				}
			}
		}
	}
	if partners < 40 || operators < 40 {
		t.Errorf("%d partner and %d operator operations", partners, operators)
	}
	if len(partnerSeen) != partners {
		t.Errorf("partner pages show %d operations, the document has %d partner operations", len(partnerSeen), partners)
	}
}

// Every partner operation has a curl example and one example per SDK, in
// that order, none empty; the curl example signs as its scheme requires.
func TestEveryPartnerOperationHasExamples(t *testing.T) {
	b := render(t)
	panel := regexp.MustCompile(`<div class="example-panel" data-lang="(\w+)"><p class="lang">[^<]+</p><pre class="code lang-\w+"><code>([^<]+)</code></pre></div>`)
	n := 0
	for name, p := range b.Pages {
		if name == "webhook-events" || name == "schemas" {
			continue
		}
		for k, art := range articles(string(p.Body)) {
			n++
			var langs []string
			for _, m := range panel.FindAllStringSubmatch(art, -1) {
				langs = append(langs, m[1])
				if strings.TrimSpace(m[2]) == "" {
					t.Errorf("%s: empty %s example", k, m[1])
				}
				if m[1] != "curl" {
					continue
				}
				code := html.UnescapeString(m[2])
				if !strings.Contains(code, "curl -sS") || !strings.Contains(code, "$PLATFORM_URL") {
					t.Errorf("%s: curl example %q", k, code)
				}
				switch {
				case strings.Contains(art, `>Scheme M</a>`):
					if !strings.Contains(code, `-H "X-App-Id: $APP_ID" -H "X-Timestamp: $TS" -H "X-Signature: $SIG"`) || !strings.Contains(code, "openssl dgst -md5") {
						t.Errorf("%s: the scheme M example does not sign: %s", k, code)
					}
				case strings.Contains(art, `>Scheme H</a>`):
					if !strings.Contains(code, `-H "X-Nonce: $NONCE"`) || !strings.Contains(code, `openssl dgst -sha256 -hmac "$APP_SECRET"`) {
						t.Errorf("%s: the scheme H example does not sign: %s", k, code)
					}
				}
			}
			if strings.Join(langs, ",") != "curl,go,js,python,java" {
				t.Errorf("%s: examples %v", k, langs)
			}
		}
	}
	if n < 40 {
		t.Errorf("only %d partner operations checked", n)
	}
}

// The pages are whole and self-consistent: every in-page link has its
// target, every link into another page of the reference names one that
// exists and an id on it, no script is inline, and the parts a partner
// looks for are there.
func TestReferenceBodies(t *testing.T) {
	b := render(t)
	for _, side := range []struct {
		base  string
		index string
		pages map[string]apiref.Page
	}{{"/portal/reference", string(b.Index), b.Pages}, {"/portal/ops/reference", string(b.OpsIndex), b.OpsPages}} {
		all := map[string]string{side.base: side.index}
		for name, p := range side.pages {
			all[side.base+"/"+name] = string(p.Body)
		}
		ids := map[string]map[string]bool{}
		for url, body := range all {
			ids[url] = map[string]bool{}
			for _, m := range regexp.MustCompile(` id="([^"]+)"`).FindAllStringSubmatch(body, -1) {
				if ids[url][m[1]] {
					t.Errorf("%s: id %q appears twice", url, m[1])
				}
				ids[url][m[1]] = true
			}
		}
		links := 0
		for url, body := range all {
			for _, m := range regexp.MustCompile(` href="([^"#]*)#([^"]+)"`).FindAllStringSubmatch(body, -1) {
				target := m[1]
				if target == "" {
					target = url
				}
				if _, ours := all[target]; !ours {
					continue
				}
				links++
				if got, ok := ids[target]; !ok || !got[m[2]] {
					t.Errorf("%s: link to %s#%s has no target", url, target, m[2])
				}
			}
			for _, m := range regexp.MustCompile(`<script[^>]*>([^<]*)</script>|<script[^>]*>`).FindAllStringSubmatch(body, -1) {
				if !strings.Contains(m[0], ` src="`) || !strings.HasSuffix(m[0], "</script>") || m[1] != "" {
					t.Errorf("%s: inline script %q", url, m[0])
				}
			}
			if regexp.MustCompile(`(?i)\son[a-z]+=`).MatchString(body) {
				t.Errorf("%s: inline event handler", url)
			}
			if strings.Contains(body, ` style=`) {
				t.Errorf("%s: inline style attribute (blocked by the CSP)", url)
			}
			// Literal Markdown showing through: **bold** or [text](link) outside code.
			text := regexp.MustCompile(`(?s)<pre.*?</pre>|<code>.*?</code>`).ReplaceAllString(body, "")
			if m := regexp.MustCompile(`\*\*\w|\]\((?:https?:|/|#)`).FindString(text); m != "" {
				t.Errorf("%s: literal Markdown %q", url, m)
			}
		}
		if links < 100 {
			t.Errorf("%s: only %d links within the reference", side.base, links)
		}
	}
	index := string(b.Index)
	for _, want := range []string{
		`href="/portal/reference/channel-users#op-registerchanneluser"`,
		`<li id="op-registerchanneluser">`, // a former anchor lands on the operation's entry
		`id="sign-scheme-m"`, `id="sign-scheme-h"`, `id="sign-webhook"`, `id="sign-plugin-launch"`,
		`hexadecimal MD5 of the concatenation app_key, timestamp, app_secret, request body`,
		`<script src="/portal/assets/reference.js" defer></script>`,
		`href="/portal/reference/webhook-events"`, `href="/portal/reference/schemas"`,
	} {
		if !strings.Contains(index, want) {
			t.Errorf("the partner index lacks %s", want)
		}
	}
	users := string(b.Pages["channel-users"].Body)
	for _, want := range []string{
		`<code class="path">/open/v1/channel/users</code>`,
		`<code>VALIDATION_ERROR</code>`,
		`<a href="/portal/reference#sign-scheme-m">Scheme M</a>`,
		`<pre class="example"><code>{`,
		`data-lang="curl"`, `data-lang="java"`,
		// Error answers are folded, their status and codes in sight.
		`<details class="resp resp-error">
<summary><span class="status s4">422</span> <span class="codes">Codes: `,
		`<details class="more"><summary>More</summary>`,
	} {
		if !strings.Contains(users, want) {
			t.Errorf("the channel-users page lacks %s", want)
		}
	}
	if hooks := string(b.Pages["webhook-events"].Body); !strings.Contains(hooks, `<code class="path">health.report.created</code>`) {
		t.Error("the webhook events page lacks health.report.created")
	}
	if !strings.Contains(string(b.OpsPages["admin"].Body), `<a href="/portal/ops/reference#security-admintoken">Operator token</a>`) {
		t.Error("the operators' admin page does not link the operator token scheme")
	}
	signer := string(b.Signer)
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
