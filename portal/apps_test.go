package portal_test

import (
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
)

// credentials are what a credentials page showed.
type credentials struct {
	AppID                            int64
	AppKey, AppSecret, WebhookSecret string
	PluginAppID                      string
}

var (
	appIDRe    = regexp.MustCompile(`<dd class="app-id">(\d+)</dd>`)
	appKeyRe   = regexp.MustCompile(`<code class="app-key">([^<]+)</code>`)
	secretRe   = regexp.MustCompile(`aria-label="([^"]+)">.*?<code class="secret-value">([^<]+)</code>`)
	pluginIDRe = regexp.MustCompile(`<code class="plugin-app-id">([^<]+)</code>`)
)

// shown reads the credentials a page shows.
func shown(t *testing.T, p portaltest.Page) credentials {
	t.Helper()
	var c credentials
	if m := appIDRe.FindStringSubmatch(p.Body); m != nil {
		c.AppID, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := appKeyRe.FindStringSubmatch(p.Body); m != nil {
		c.AppKey = m[1]
	}
	if m := pluginIDRe.FindStringSubmatch(p.Body); m != nil {
		c.PluginAppID = m[1]
	}
	for _, m := range secretRe.FindAllStringSubmatch(p.Body, -1) {
		switch m[1] {
		case "AppSecret":
			c.AppSecret = m[2]
		case "Webhook secret":
			c.WebhookSecret = m[2]
		}
	}
	return c
}

// call makes a scheme M call with the credentials (the test's own
// signature: MD5 of key, timestamp, secret and body) and returns the status.
func call(t *testing.T, p *portaltest.Platform, c credentials, path string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.Srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set("X-App-Id", strconv.FormatInt(c.AppID, 10))
	req.Header.Set("X-Timestamp", ts)
	req.Header.Set("X-Signature", fmt.Sprintf("%x", md5.Sum([]byte(c.AppKey+ts+c.AppSecret))))
	res, err := p.Srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// eventCount is the number of events in the log.
func eventCount(t *testing.T, p *portaltest.Platform) int {
	t.Helper()
	n := 0
	for from := (events.Position{}); ; {
		recs, err := p.Node.Events.ReadAll(context.Background(), from, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) == 0 {
			return n
		}
		n += len(recs)
		from = recs[len(recs)-1].Position
	}
}

// actorsOf lists "type by actor" of a stream's events as operators read
// them in the admin history (GET /admin/v1/history), in order.
func actorsOf(t *testing.T, p *portaltest.Platform, stream string) []string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.Srv.URL+"/admin/v1/history?stream="+url.QueryEscape(stream), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+p.Node.AdminToken)
	res, err := p.Srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Data struct {
			Events []struct {
				Type     string `json:"type"`
				Metadata struct {
					Actor string `json:"actor"`
				} `json:"metadata"`
			} `json:"events"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("history of %s: %d %v", stream, res.StatusCode, err)
	}
	var out []string
	for _, e := range body.Data.Events {
		out = append(out, e.Type+" by "+e.Metadata.Actor)
	}
	return out
}

// createApp creates an app through the form and returns what the
// credentials page showed.
func createApp(t *testing.T, b *portaltest.Browser, name string, scopes ...string) credentials {
	t.Helper()
	b.Get("/portal/apps/new")
	page := b.Post("/portal/apps", url.Values{"name": {name}, "purpose": {"Sync our members' reports"}, "scopes": scopes})
	if page.Status != http.StatusCreated {
		t.Fatalf("create app %s: %d %s", name, page.Status, page.Text())
	}
	return shown(t, page)
}

const webhooksRoute = "/open/v1/webhooks/events" // needs the webhooks scope

func TestAppLifecycleInThePortal(t *testing.T) {
	configs(t, node.Config{}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		b, devID := p.Developer(portaltest.Email(t, "apps"), false)

		// Not yet approved: no creation.
		if got := b.Get("/portal/apps/new"); got.Status != http.StatusForbidden {
			t.Fatalf("creation form before approval: %d", got.Status)
		}
		before := eventCount(t, p)
		if got := b.Post("/portal/apps", url.Values{"name": {"x"}, "purpose": {"y"}, "scopes": {"orders"}}); got.Status != http.StatusForbidden {
			t.Fatalf("creation before approval: %d", got.Status)
		}
		if n := eventCount(t, p); n != before {
			t.Fatalf("a refused creation appended %d events", n-before)
		}
		portaltest.Approve(t, p.Node, devID)

		// The form: every scope offered, none ticked; purpose and a scope required.
		form := b.Get("/portal/apps/new")
		if form.Status != http.StatusOK || form.H1() != "Create an application" || strings.Contains(form.Body, " checked") {
			t.Fatalf("creation form: %d %q ticked=%v", form.Status, form.H1(), strings.Contains(form.Body, " checked"))
		}
		for _, sc := range domain.Scopes {
			if !strings.Contains(form.Body, `<label for="scope-`+sc+`">`+sc+`</label>`) {
				t.Fatalf("scope %s not offered", sc)
			}
		}
		before = eventCount(t, p)
		for name, f := range map[string]url.Values{
			"no scope":   {"name": {"Clinic"}, "purpose": {"sync"}},
			"no purpose": {"name": {"Clinic"}, "scopes": {"orders"}},
			"bad scope":  {"name": {"Clinic"}, "purpose": {"sync"}, "scopes": {"everything"}},
		} {
			if got := b.Post("/portal/apps", f); got.Status != http.StatusBadRequest || got.H1() != "Create an application" {
				t.Fatalf("%s: %d %q", name, got.Status, got.H1())
			}
		}
		if n := eventCount(t, p); n != before {
			t.Fatalf("refused creations appended %d events", n-before)
		}

		// Created: credentials once, on a page nobody stores.
		b.Get("/portal/apps/new")
		created := b.Post("/portal/apps", url.Values{"name": {"Clinic"}, "purpose": {"Sync our members' reports"}, "scopes": {"webhooks", "orders"}})
		sb := shown(t, created)
		if created.Status != http.StatusCreated || created.Header.Get("Cache-Control") != "no-store" ||
			!strings.Contains(created.Header.Get("Content-Security-Policy"), "script-src 'self'") ||
			sb.AppID == 0 || !strings.HasPrefix(sb.AppKey, "ak_") || !strings.HasPrefix(sb.AppSecret, "as_") || !strings.HasPrefix(sb.WebhookSecret, "whsec_") {
			t.Fatalf("created: %d %v %+v", created.Status, created.Header, sb)
		}
		if got := call(t, p, sb, webhooksRoute); got != http.StatusOK {
			t.Fatalf("sandbox call: %d", got)
		}
		if got := call(t, p, sb, "/open/v1/channel/users/0?channel_user_id=u-1"); got != http.StatusForbidden {
			t.Fatalf("an undeclared scope: %d", got)
		}

		// The app page: id always, secrets never again.
		page := b.Get(fmt.Sprintf("/portal/apps/%d", sb.AppID))
		if page.Status != http.StatusOK || shown(t, page).AppID != sb.AppID || strings.Contains(page.Body, sb.AppSecret) ||
			strings.Contains(page.Body, sb.WebhookSecret) || !strings.Contains(page.Text(), "Sync our members' reports") {
			t.Fatalf("app page: %d %s", page.Status, page.Text())
		}
		if list := b.Get("/portal/apps"); !strings.Contains(list.Body, fmt.Sprintf(`<a href="/portal/apps/%d">`, sb.AppID)) {
			t.Fatalf("app list: %s", list.Text())
		}

		// Rotation: the new secret once, the old one refused.
		rotated := b.Post(fmt.Sprintf("/portal/apps/%d/secret", sb.AppID), confirmed)
		next := shown(t, rotated)
		if rotated.Status != http.StatusOK || next.AppSecret == "" || next.AppSecret == sb.AppSecret || next.WebhookSecret != "" {
			t.Fatalf("rotation: %d %+v", rotated.Status, next)
		}
		if got := call(t, p, sb, webhooksRoute); got != http.StatusUnauthorized {
			t.Fatalf("old secret after rotation: %d", got)
		}
		sb.AppSecret = next.AppSecret
		if got := call(t, p, sb, webhooksRoute); got != http.StatusOK {
			t.Fatalf("new secret: %d", got)
		}

		// Review request, with a host mini-program for the plugin.
		asked := b.Post(fmt.Sprintf("/portal/apps/%d/review", sb.AppID), url.Values{"host_app_id": {"wx0123456789abcdef"}})
		if asked.Status != http.StatusSeeOther || asked.Location() != fmt.Sprintf("/portal/apps/%d", sb.AppID) {
			t.Fatalf("review request: %d %s", asked.Status, asked.Text())
		}
		if page := b.Get(asked.Location()); !strings.Contains(page.Text(), "Review is completed within 5 business days") ||
			!strings.Contains(page.Text(), "wx0123456789abcdef") {
			t.Fatalf("after the request: %s", page.Text())
		}

		// The operator approves.
		ops := p.Operator()
		queue := ops.Get("/portal/ops/apps")
		if queue.Status != http.StatusOK || queue.H1() != "Application review" || !strings.Contains(queue.Body, fmt.Sprintf(`id="app-%d"`, sb.AppID)) {
			t.Fatalf("review queue: %d %s", queue.Status, queue.Text())
		}
		decided := ops.Post(fmt.Sprintf("/portal/ops/apps/%d/review", sb.AppID), url.Values{"decision": {"approve"}, "reason": {"documents checked"}})
		if decided.Status != http.StatusSeeOther || strings.Contains(decided.Body, "as_") {
			t.Fatalf("approval: %d %s", decided.Status, decided.Text())
		}
		if queue := ops.Get("/portal/ops/apps"); strings.Contains(queue.Body, fmt.Sprintf(`id="app-%d"`, sb.AppID)) {
			t.Fatalf("decided app still queued: %s", queue.Text())
		}
		// The sandbox keeps working until the developer takes the production set.
		if got := call(t, p, sb, webhooksRoute); got != http.StatusOK {
			t.Fatalf("sandbox after approval: %d", got)
		}
		page = b.Get(fmt.Sprintf("/portal/apps/%d", sb.AppID))
		if !strings.Contains(page.Text(), "Review: approved") || !strings.Contains(page.Body, "Reveal production credentials") || shown(t, page).PluginAppID == "" {
			t.Fatalf("approved app page: %s", page.Text())
		}

		// The production app is the developer's, but its secrets come only
		// through the reveal.
		prodID := shown(t, page).AppID
		if m := regexp.MustCompile(`Production app: <a href="/portal/apps/(\d+)">`).FindStringSubmatch(page.Body); m != nil {
			prodID, _ = strconv.ParseInt(m[1], 10, 64)
		}
		if got := b.Post(fmt.Sprintf("/portal/apps/%d/secret", prodID), confirmed); prodID == sb.AppID || got.Status != http.StatusConflict || shown(t, got).AppSecret != "" {
			t.Fatalf("rotating the production app %d before the reveal: %d", prodID, got.Status)
		}

		// Production credentials, once; the sandbox set retired.
		revealed := b.Post(fmt.Sprintf("/portal/apps/%d/production", sb.AppID), confirmed)
		prod := shown(t, revealed)
		if revealed.Status != http.StatusOK || revealed.Header.Get("Cache-Control") != "no-store" || prod.AppID == sb.AppID ||
			prod.AppSecret == "" || prod.WebhookSecret == "" || !strings.HasPrefix(prod.PluginAppID, "plg") {
			t.Fatalf("reveal: %d %+v %s", revealed.Status, prod, revealed.Text())
		}
		if got := call(t, p, prod, webhooksRoute); got != http.StatusOK {
			t.Fatalf("production call: %d", got)
		}
		if got := call(t, p, sb, webhooksRoute); got != http.StatusUnauthorized {
			t.Fatalf("retired sandbox call: %d", got)
		}
		again := b.Post(fmt.Sprintf("/portal/apps/%d/production", sb.AppID), confirmed)
		if again.Status != http.StatusConflict || shown(t, again).AppSecret != "" || strings.Contains(again.Body, prod.AppSecret) {
			t.Fatalf("second reveal: %d %s", again.Status, again.Text())
		}
		for _, path := range []string{fmt.Sprintf("/portal/apps/%d", sb.AppID), fmt.Sprintf("/portal/apps/%d", prod.AppID), "/portal/apps"} {
			got := b.Get(path)
			if got.Status != http.StatusOK || strings.Contains(got.Body, prod.AppSecret) || strings.Contains(got.Body, prod.WebhookSecret) {
				t.Fatalf("%s after the reveal: %d", path, got.Status)
			}
		}
		if got := b.Get(fmt.Sprintf("/portal/apps/%d", prod.AppID)); shown(t, got).AppID != prod.AppID || !strings.Contains(got.Text(), prod.PluginAppID) {
			t.Fatalf("production app page: %s", got.Text())
		}
		// A lost production secret is rotated, not revealed again.
		rot := shown(t, b.Post(fmt.Sprintf("/portal/apps/%d/secret", prod.AppID), confirmed))
		if rot.AppSecret == "" || rot.AppSecret == prod.AppSecret {
			t.Fatalf("production rotation after the reveal: %+v", rot)
		}
		if got := call(t, p, credentials{AppID: prod.AppID, AppKey: prod.AppKey, AppSecret: rot.AppSecret}, webhooksRoute); got != http.StatusOK {
			t.Fatalf("rotated production secret: %d", got)
		}

		// Every change is on the log with its actor.
		dev := fmt.Sprintf("developer:%d", devID)
		want := []string{"app.created by " + dev, "app.secret_rotated by " + dev, "app.review_requested by " + dev,
			"app.reviewed by operator", "app.production_credentials_revealed by " + dev}
		got := actorsOf(t, p, domain.AppStream(sb.AppID))
		if len(got) != len(want) {
			t.Fatalf("sandbox app history %v", got)
		}
		for i := range want {
			if !strings.HasPrefix(got[i], want[i]) {
				t.Fatalf("sandbox app history %v, want %v", got, want)
			}
		}

		// And the developer's actions on the app are in the audit listing.
		wantAudit := "app.created|app.secret_rotated|app.review_requested|app.production_credentials_revealed"
		var listed []string
		waitFor(t, "the audit facts of the app", func() bool {
			status, data, err := admin(p, "GET", "/admin/v1/audit?actor="+dev+"&subject="+domain.AppStream(sb.AppID), nil)
			if err != nil || status != http.StatusOK {
				t.Fatalf("audit: %d %v", status, err)
			}
			var page struct {
				Facts []struct {
					Action string `json:"action"`
				} `json:"facts"`
			}
			_ = json.Unmarshal(data, &page)
			listed = listed[:0]
			for _, f := range page.Facts {
				listed = append(listed, f.Action)
			}
			return strings.Join(listed, "|") == wantAudit
		})
	})
}

func TestAnotherDevelopersAppIsNotFound(t *testing.T) {
	configs(t, node.Config{}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		alice, _ := p.Developer(portaltest.Email(t, "alice"), true)
		bob, _ := p.Developer(portaltest.Email(t, "bob"), true)
		mine := createApp(t, alice, "Alice's", "orders")
		missing := bob.Get("/portal/apps/999999999")
		if missing.Status != http.StatusNotFound {
			t.Fatalf("missing app: %d", missing.Status)
		}
		before := eventCount(t, p)
		for _, path := range []string{fmt.Sprintf("/portal/apps/%d", mine.AppID), "/portal/apps/abc", "/portal/apps/-1"} {
			if got := bob.Get(path); got.Status != http.StatusNotFound || got.Text() != missing.Text() {
				t.Fatalf("GET %s by another developer: %d %q", path, got.Status, got.H1())
			}
			for _, action := range []string{"/secret", "/review", "/production"} {
				if got := bob.Post(path+action, nil); got.Status != http.StatusNotFound || got.H1() != missing.H1() {
					t.Fatalf("POST %s%s by another developer: %d %q", path, action, got.Status, got.H1())
				}
			}
		}
		if strings.Contains(bob.Get("/portal/apps").Body, strconv.FormatInt(mine.AppID, 10)+"</a>") {
			t.Fatal("another developer's app is listed")
		}
		if n := eventCount(t, p); n != before {
			t.Fatalf("tampered URLs appended %d events", n-before)
		}
		if got := call(t, p, mine, webhooksRoute); got != http.StatusForbidden { // orders only: scope refused, credentials intact
			t.Fatalf("alice's credentials after bob's attempts: %d", got)
		}
	})
}

func TestAppFormsRefuseWithoutCSRF(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir()})
	b, _ := p.Developer(portaltest.Email(t, "csrf"), true)
	app := createApp(t, b, "Clinic", "orders")
	ops := p.Operator()
	ops.Get("/portal/ops/apps")
	before := eventCount(t, p)
	for _, c := range []struct {
		b    *portaltest.Browser
		path string
		form url.Values
	}{
		{b, "/portal/apps", url.Values{"name": {"x"}, "purpose": {"y"}, "scopes": {"orders"}}},
		{b, fmt.Sprintf("/portal/apps/%d/secret", app.AppID), nil},
		{b, fmt.Sprintf("/portal/apps/%d/authentication", app.AppID), url.Values{"signing": {"scheme-h"}}},
		{b, fmt.Sprintf("/portal/apps/%d/review", app.AppID), nil},
		{b, fmt.Sprintf("/portal/apps/%d/production", app.AppID), nil},
		{ops, fmt.Sprintf("/portal/ops/apps/%d/review", app.AppID), url.Values{"decision": {"approve"}}},
	} {
		for _, token := range []string{"", "forged-" + c.b.CSRF} {
			f := url.Values{}
			for k, v := range c.form {
				f[k] = v
			}
			if token != "" {
				f.Set("csrf_token", token)
			}
			if got := c.b.PostRaw(c.path, f); got.Status != http.StatusForbidden {
				t.Fatalf("POST %s with token %q: %d", c.path, token, got.Status)
			}
		}
	}
	if n := eventCount(t, p); n != before {
		t.Fatalf("refused forms appended %d events", n-before)
	}
}

// TestProductionRevealedOnceAcrossBrowsers: the developer signed in twice
// (two sessions) reveals at the same moment; one page shows the
// credentials, the other the refusal.
func TestProductionRevealedOnceAcrossBrowsers(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir()})
	email := portaltest.Email(t, "twice")
	b1, devID := p.Developer(email, true)
	_ = devID
	b2 := p.Browser()
	if got := b2.SignIn(email, "correct horse battery"); got.Status != http.StatusSeeOther {
		t.Fatalf("second sign-in: %d", got.Status)
	}
	sb := createApp(t, b1, "Clinic", "orders")
	if got := b1.Post(fmt.Sprintf("/portal/apps/%d/review", sb.AppID), nil); got.Status != http.StatusSeeOther {
		t.Fatalf("review request: %d", got.Status)
	}
	ops := p.Operator()
	ops.Get("/portal/ops/apps")
	if got := ops.Post(fmt.Sprintf("/portal/ops/apps/%d/review", sb.AppID), url.Values{"decision": {"approve"}}); got.Status != http.StatusSeeOther {
		t.Fatalf("approval: %d", got.Status)
	}
	path := fmt.Sprintf("/portal/apps/%d", sb.AppID)
	b1.Get(path)
	b2.Get(path)
	var wg sync.WaitGroup
	pages := make([]portaltest.Page, 2)
	for i, b := range []*portaltest.Browser{b1, b2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pages[i] = b.Post(path+"/production", confirmed)
		}()
	}
	wg.Wait()
	ok, refused := 0, 0
	for _, pg := range pages {
		switch {
		case pg.Status == http.StatusOK && shown(t, pg).AppSecret != "":
			ok++
		case pg.Status == http.StatusConflict && shown(t, pg).AppSecret == "":
			refused++
		}
	}
	if ok != 1 || refused != 1 {
		t.Fatalf("two reveals: %d and %d", pages[0].Status, pages[1].Status)
	}
}

// callH makes a scheme H call (the test's own HMAC-SHA-256 signature) and
// returns the status.
func callH(t *testing.T, p *portaltest.Platform, c credentials, path string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.Srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts, nonce := strconv.FormatInt(time.Now().Unix(), 10), strconv.FormatInt(time.Now().UnixNano(), 36)
	empty := sha256.Sum256(nil)
	m := hmac.New(sha256.New, []byte(c.AppSecret))
	m.Write([]byte("GET\n" + path + "\n" + ts + "\n" + nonce + "\n" + hex.EncodeToString(empty[:])))
	req.Header.Set("X-App-Key", c.AppKey)
	req.Header.Set("X-Timestamp", ts)
	req.Header.Set("X-Nonce", nonce)
	req.Header.Set("X-Signature", hex.EncodeToString(m.Sum(nil)))
	res, err := p.Srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// A developer sets the app to require scheme H on its settings page:
// scheme M calls are then refused (401), scheme H ones pass, the change is
// an event by the developer, and a bad choice changes nothing.
func TestAppRequiresSchemeHFromThePortal(t *testing.T) {
	configs(t, node.Config{}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		b, dev := p.Developer(portaltest.Email(t, "signing"), true)
		app := createApp(t, b, "Signer", "orders")
		page := fmt.Sprintf("/portal/apps/%d", app.AppID)
		detail := "/open/v1/order/detail?order_code=PO1"
		if got := call(t, p, app, detail); got != http.StatusNotFound {
			t.Fatalf("scheme M by default: %d", got)
		}
		if got := b.Get(page); !strings.Contains(got.Text(), "Scheme M (the spec's default) or scheme H.") {
			t.Fatalf("the settings page does not show the default: %s", got.Text())
		}
		before := eventCount(t, p)
		if got := b.Post(page+"/authentication", url.Values{"signing": {"scheme-m-only"}}); got.Status != http.StatusUnprocessableEntity {
			t.Fatalf("unknown choice: %d", got.Status)
		}
		if n := eventCount(t, p); n != before {
			t.Fatalf("a refused choice appended %d events", n-before)
		}
		if got := b.Post(page+"/authentication", url.Values{"signing": {"scheme-h"}}); got.Status != http.StatusSeeOther {
			t.Fatalf("require scheme H: %d %s", got.Status, got.Text())
		}
		if got := b.Get(page); !strings.Contains(got.Text(), "Scheme H only: scheme M requests are refused (401).") {
			t.Fatalf("the settings page does not show scheme H only: %s", got.Text())
		}
		if got := call(t, p, app, detail); got != http.StatusUnauthorized {
			t.Errorf("scheme M once scheme H is required: %d, want 401", got)
		}
		if got := callH(t, p, app, detail); got != http.StatusNotFound {
			t.Errorf("scheme H once required: %d, want 404 (past authentication)", got)
		}
		want := "app.authentication_set by developer:" + strconv.FormatInt(dev, 10)
		if got := actorsOf(t, p, domain.AppStream(app.AppID)); got[len(got)-1] != want {
			t.Errorf("app history ends with %v, want %s", got, want)
		}
		b.Post(page+"/authentication", url.Values{"signing": {"default"}})
		if got := call(t, p, app, detail); got != http.StatusNotFound {
			t.Errorf("scheme M after the default is restored: %d", got)
		}
	})
}
