package portal_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/portal"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
)

const password = "correct horse battery"

// configs runs a test on the embedded and the Postgres configuration.
func configs(t *testing.T, cfg node.Config, test func(t *testing.T, cfg node.Config)) {
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		c := cfg
		c.DataDir = t.TempDir()
		test(t, c)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		c := cfg
		c.DataDir, c.PostgresURL = t.TempDir(), pgtest.New(t)
		test(t, c)
	})
}

// clock is a settable clock for session expiry.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func head(t *testing.T, p *portaltest.Platform) events.Position {
	t.Helper()
	pos, err := p.Node.Events.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return pos
}

func TestSignUpSignInSignOut(t *testing.T) {
	configs(t, node.Config{}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		b := p.Browser()
		email := portaltest.Email(t, "Ada")
		id := b.SignUp(strings.ToUpper(email), password)
		dash := b.Get("/portal/")
		if dash.Status != http.StatusOK || dash.H1() != "Dashboard" || !strings.Contains(dash.Text(), "Status: pending review") ||
			!strings.Contains(dash.Text(), "Signed in as "+email) || id <= 0 {
			t.Fatalf("dashboard after sign-up (id %d): %d %q %s", id, dash.Status, dash.H1(), dash.Text())
		}
		out := b.Post("/portal/signout", nil)
		if out.Status != http.StatusSeeOther || out.Location() != "/portal/signin" {
			t.Fatalf("sign-out: %d %s", out.Status, out.Location())
		}
		if got := b.Get("/portal/signin"); !strings.Contains(got.Text(), "You are signed out.") {
			t.Errorf("no sign-out notice: %s", got.Text())
		}
		if got := b.Get("/portal/"); got.H1() != "Developer portal" {
			t.Fatalf("after sign-out the home page is %q", got.H1())
		}
		in := b.SignIn(email, password)
		if in.Status != http.StatusSeeOther || in.Location() != "/portal/" {
			t.Fatalf("sign-in: %d %s %s", in.Status, in.Location(), in.Text())
		}
		if got := b.Get("/portal/"); got.H1() != "Dashboard" {
			t.Fatalf("after sign-in the home page is %q", got.H1())
		}
		// A copy of the signed-out cookie is worth nothing: the session's
		// end is recorded on the developer's stream.
		stolen := b.Cookie(portal.CookieName)
		b.Post("/portal/signout", nil)
		thief := p.Browser()
		u, _ := url.Parse(p.Srv.URL + "/portal/")
		thief.Client.Jar.SetCookies(u, []*http.Cookie{{Name: stolen.Name, Value: stolen.Value, Path: "/portal/"}})
		if got := thief.Get("/portal/"); got.H1() != "Developer portal" {
			t.Fatalf("a signed-out session's cookie still signs in: %q", got.H1())
		}
	})
}

func TestWrongPasswordAndUnknownEmailAnswerAlike(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir()})
	email := portaltest.Email(t, "Bo")
	p.Developer(email, false)
	b := p.Browser()
	wrong := b.SignIn(email, "not the password")
	unknown := b.SignIn(portaltest.Email(t, "nobody"), "not the password")
	for _, pg := range []portaltest.Page{wrong, unknown} {
		if pg.Status != http.StatusUnauthorized || !strings.Contains(pg.Text(), "Email or password is wrong.") {
			t.Fatalf("refused sign-in: %d %s", pg.Status, pg.Text())
		}
	}
	if b.Cookie(portal.CookieName) == nil {
		t.Fatal("no session cookie")
	}
	if got := b.Get("/portal/"); got.H1() != "Developer portal" {
		t.Fatalf("a refused sign-in signed in: %q", got.H1())
	}
}

func TestLockoutAfterFailures(t *testing.T) {
	configs(t, node.Config{Portal: node.PortalConfig{LockoutFailures: 3, LockoutPeriod: 10 * time.Minute}}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		email := portaltest.Email(t, "Cy")
		p.Developer(email, false)
		b := p.Browser()
		if got := b.Get("/portal/signin"); !strings.Contains(got.Text(), "After 3 failed attempts an account is locked for 10 minutes.") {
			t.Fatalf("the sign-in page does not state the lockout policy: %s", got.Text())
		}
		for i := 1; i <= 3; i++ {
			got := b.SignIn(email, "wrong password "+string(rune('a'+i)))
			locked := strings.Contains(got.Text(), "It is locked for 10 minutes")
			if got.Status != http.StatusUnauthorized || locked != (i == 3) {
				t.Fatalf("failure %d: %d locked=%v %s", i, got.Status, locked, got.Text())
			}
		}
		// Now even the right password is not checked.
		got := b.SignIn(email, password)
		if got.Status != http.StatusTooManyRequests || !strings.Contains(got.Text(), "It is locked for 10 minutes") {
			t.Fatalf("locked account: %d %s", got.Status, got.Text())
		}
		if b.Get("/portal/").H1() != "Developer portal" {
			t.Fatal("a locked account signed in")
		}
		// Another account is not affected.
		other := portaltest.Email(t, "Di")
		p.Developer(other, false)
		if got := p.Browser().SignIn(other, password); got.Status != http.StatusSeeOther {
			t.Fatalf("another account: %d %s", got.Status, got.Text())
		}
		// An unknown address locks exactly alike: the page cannot tell
		// whether it has an account.
		ghost := portaltest.Email(t, "ghost")
		var last portaltest.Page
		for range 4 {
			last = b.SignIn(ghost, "whatever it is")
		}
		if last.Status != http.StatusTooManyRequests || !strings.Contains(last.Text(), "It is locked for 10 minutes") {
			t.Fatalf("unknown address after 4 failures: %d %s", last.Status, last.Text())
		}
	})
}

func TestClientAddressLimit(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir(), Portal: node.PortalConfig{AddressLimit: 3}})
	b := p.Browser()
	var statuses []int
	for i := range 5 {
		statuses = append(statuses, b.SignIn(portaltest.Email(t, "x"+string(rune('a'+i))), "whatever it is").Status)
	}
	if statuses[2] != http.StatusUnauthorized || statuses[3] != http.StatusTooManyRequests || statuses[4] != http.StatusTooManyRequests {
		t.Fatalf("statuses of 5 sign-ins from one address with a limit of 3 a minute: %v", statuses)
	}
}

func TestDuplicateEmail(t *testing.T) {
	configs(t, node.Config{}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		email := portaltest.Email(t, "Eve")
		_, id := p.Developer(email, false)
		op := p.Operator()

		// A taken address and a new one answer alike, and nobody is signed
		// in by either; the taken one's owner is told by mail instead.
		b := p.Browser()
		b.Get("/portal/signup")
		taken := b.Post("/portal/signup", url.Values{"email": {"  " + strings.ToUpper(email) + " "}, "password": {"someone else's password"}})
		fresh := portaltest.Email(t, "Eli")
		created := b.Post("/portal/signup", url.Values{"email": {fresh}, "password": {password}})
		if taken.Status != http.StatusOK || created.Status != taken.Status || taken.Text() != created.Text() ||
			!strings.Contains(taken.Text(), "Check your mail") || strings.Contains(taken.Text(), "already") {
			t.Fatalf("sign-up answers differ or are wrong:\n%d %s\n%d %s", taken.Status, taken.Text(), created.Status, created.Text())
		}
		if got := b.Get("/portal/"); got.H1() != "Developer portal" {
			t.Fatalf("a sign-up signed the browser in: %q", got.H1())
		}
		// The owner's mail: someone tried, with a reset link that works
		// (and the intruder's password does not).
		tok := resetToken(t, op, email)
		portaltest.WaitAccount(t, p.Node, fresh, password)
		waitFor(t, "the new account in the directory", func() bool { return len(p.Node.Developers.List("")) >= 2 })
		if got := p.Node.Developers.List(""); len(got) != 2 {
			t.Fatalf("developers after a sign-up with a taken address: %+v", got)
		}
		box := op.Get("/portal/ops/outbox").Text()
		if !strings.Contains(box, "Someone tried to sign up with your address") || !strings.Contains(box, "Your developer portal account") {
			t.Fatalf("outbox after the sign-ups: %s", box)
		}
		if got := b.SignIn(email, "someone else's password"); got.Status != http.StatusUnauthorized {
			t.Fatalf("the intruder's password signs in: %d", got.Status)
		}
		if got := b.Post("/portal/password/reset", url.Values{"token": {tok}, "password": {"the owner's new one"}}); got.Status != http.StatusSeeOther {
			t.Fatalf("reset with the sign-up notice's link: %d %s", got.Status, got.Text())
		}
		if got := b.SignIn(email, "the owner's new one"); got.Status != http.StatusSeeOther {
			t.Fatalf("sign-in after reset: %d", got.Status)
		}
		if dev, err := p.Node.Portal.Developers.Load(context.Background(), id); err != nil || dev.Email != email {
			t.Fatalf("owner account: %+v %v", dev, err)
		}

		// Concurrent sign-ups of one new address: exactly one account.
		fresh = portaltest.Email(t, "Fay")
		const n = 8
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, errs[i] = p.Node.Portal.Developers.SignUp(context.Background(), fresh, password, "")
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, domain.ErrEmailTaken):
				t.Fatalf("concurrent sign-up: %v", err)
			}
		}
		if ok != 1 {
			t.Fatalf("%d of %d concurrent sign-ups of one address succeeded", ok, n)
		}
	})
}

func TestSignUpValidation(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir()})
	b := p.Browser()
	b.Get("/portal/signup")
	before := head(t, p)
	for _, c := range []struct{ email, password, want string }{
		{"not-an-email", password, "must be an email address"},
		{"", password, "is required"},
		{"Name <a@example.com>", password, "must be an email address"},
		{portaltest.Email(t, "short"), "short", "at least 10 characters"},
		{portaltest.Email(t, "long"), strings.Repeat("p", 257), "at most 256 bytes"},
	} {
		got := b.Post("/portal/signup", url.Values{"email": {c.email}, "password": {c.password}})
		if got.Status != http.StatusBadRequest || !strings.Contains(got.Text(), c.want) {
			t.Errorf("sign-up %q/%d chars: %d %s", c.email, len(c.password), got.Status, got.Text())
		}
	}
	if after := head(t, p); after != before {
		t.Fatalf("refused sign-ups appended: head %v -> %v", before, after)
	}
}

func TestCookieFlagsAndSecurityHeaders(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir()})
	b := p.Browser()
	for _, path := range []string{"/portal/", "/portal/signin", "/portal/signup", "/portal/no-such-page", "/portal/ops/signin"} {
		got := b.Get(path)
		h := got.Header
		csp := h.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") ||
			!strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		if h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") == "" ||
			h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: headers %v", path, h)
		}
		if h.Get(httpRequestID) == "" {
			t.Errorf("%s: no request id", path)
		}
	}
	if got := b.Get("/portal/no-such-page"); got.Status != http.StatusNotFound || got.H1() != "Not Found" {
		t.Errorf("missing page: %d %q", got.Status, got.H1())
	}
	// The cookie as the server set it at sign-in.
	gus := portaltest.Email(t, "Gus")
	b.SignUp(gus, password)
	b.Post("/portal/signout", nil)
	res := b.SignIn(gus, password)
	var set string
	for _, c := range res.Header.Values("Set-Cookie") {
		if strings.HasPrefix(c, portal.CookieName+"=") {
			set = c
		}
	}
	for _, want := range []string{"Path=/portal/", "HttpOnly", "Secure", "SameSite=Lax"} {
		if !strings.Contains(set, want) {
			t.Errorf("session cookie %q lacks %s", set, want)
		}
	}
	// Development over plain http: no Secure flag, and only when asked.
	dev := portaltest.Start(t, node.Config{DataDir: t.TempDir(), Portal: node.PortalConfig{InsecureCookies: true}})
	res = dev.Browser().Get("/portal/signin")
	if c := res.Header.Get("Set-Cookie"); strings.Contains(c, "Secure") || !strings.Contains(c, "HttpOnly") {
		t.Errorf("insecure-cookies mode: %q", c)
	}
	// The asset is served, and is the only place CSS comes from.
	if css := b.Get("/portal/assets/portal.css"); css.Status != http.StatusOK || !strings.Contains(css.Header.Get("Content-Type"), "text/css") {
		t.Errorf("stylesheet: %d %s", css.Status, css.Header.Get("Content-Type"))
	}
}

const httpRequestID = "X-Request-Id"

// TestTemplatesHaveNoInlineScript keeps every embedded template free of
// inline script, inline event handlers and style attributes (the CSP would
// block them; a page that relied on them would break).
func TestTemplatesHaveNoInlineScript(t *testing.T) {
	bad := regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>\s*[^<\s]|\son[a-z]+\s*=|\sstyle\s*=|javascript:|<style`)
	err := filepath.WalkDir("templates", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if m := bad.Find(raw); m != nil {
			t.Errorf("%s: %q", path, m)
		}
		if strings.Contains(string(raw), "<script") && !regexp.MustCompile(`<script src="/portal/assets/[^"]+"></script>`).Match(raw) {
			t.Errorf("%s: a script that is not an embedded asset", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCSRFRefusedAndNothingAppended posts every state-changing form of the
// accounts and operator pages without a token and with a wrong one.
func TestCSRFRefusedAndNothingAppended(t *testing.T) {
	configs(t, node.Config{}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		devEmail := portaltest.Email(t, "Hal")
		dev, id := p.Developer(devEmail, false)
		op := p.Operator()
		anon := p.Browser()
		anon.Get("/portal/signin")
		forms := []struct {
			b    *portaltest.Browser
			path string
			form url.Values
		}{
			{anon, "/portal/signup", url.Values{"email": {portaltest.Email(t, "new")}, "password": {password}}},
			{anon, "/portal/signin", url.Values{"email": {devEmail}, "password": {password}}},
			{anon, "/portal/password/forgot", url.Values{"email": {devEmail}}},
			{anon, "/portal/password/reset", url.Values{"token": {"1.x"}, "password": {password}}},
			{anon, "/portal/ops/signin", url.Values{"token": {p.Node.AdminToken}}},
			{dev, "/portal/signout", url.Values{"everywhere": {"1"}}},
			{op, "/portal/ops/developers/" + itoa(id) + "/review", url.Values{"decision": {"approved"}}},
			{op, "/portal/ops/signout", nil},
		}
		for _, f := range forms {
			before := head(t, p)
			for name, token := range map[string]string{"missing": "", "wrong": wrongToken(f.b.CSRF)} {
				form := url.Values{}
				for k, v := range f.form {
					form[k] = v
				}
				if token != "" {
					form.Set("csrf_token", token)
				}
				got := f.b.PostRaw(f.path, form)
				if got.Status != http.StatusForbidden || !strings.Contains(got.Text(), "The form expired or did not come from this portal") {
					t.Errorf("POST %s with a %s CSRF token: %d %s", f.path, name, got.Status, got.Text())
				}
			}
			// A token from another session is just as wrong.
			form := url.Values{"csrf_token": {anon.CSRF}}
			if f.b != anon {
				if got := f.b.PostRaw(f.path, form); got.Status != http.StatusForbidden {
					t.Errorf("POST %s with another session's token: %d", f.path, got.Status)
				}
			}
			if after := head(t, p); after != before {
				t.Errorf("POST %s refused for CSRF appended: head %v -> %v", f.path, before, after)
			}
		}
		// Still signed in, still pending: nothing happened.
		if got := dev.Get("/portal/"); got.H1() != "Dashboard" || !strings.Contains(got.Text(), "pending review") {
			t.Fatalf("after refused forms: %q %s", got.H1(), got.Text())
		}
		// A cross-site Origin is refused even with the right token.
		req, _ := http.NewRequest(http.MethodPost, p.Srv.URL+"/portal/signout", strings.NewReader(url.Values{"csrf_token": {dev.CSRF}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "https://evil.example")
		res, err := dev.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("cross-site origin: %d", res.StatusCode)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestSessionExpires(t *testing.T) {
	c := &clock{now: time.Now()}
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir(), Now: c.Now, Portal: node.PortalConfig{SessionIdle: 30 * time.Minute, SessionMax: 2 * time.Hour}})
	b, _ := p.Developer(portaltest.Email(t, "Ida"), false)
	// Used every 20 minutes, the session outlives the idle limit...
	for range 5 {
		c.Add(20 * time.Minute)
		if got := b.Get("/portal/"); got.H1() != "Dashboard" {
			t.Fatalf("active session ended early: %q", got.H1())
		}
	}
	// ...but not the absolute one.
	c.Add(25 * time.Minute)
	if got := b.Get("/portal/"); got.H1() != "Developer portal" || !strings.Contains(got.Text(), "Your session expired") {
		t.Fatalf("after 2h05m: %q %s", got.H1(), got.Text())
	}
	// And an idle one ends after 30 minutes.
	b2, _ := p.Developer(portaltest.Email(t, "Jo"), false)
	c.Add(31 * time.Minute)
	if got := b2.Get("/portal/"); got.H1() != "Developer portal" {
		t.Fatalf("idle session still valid: %q", got.H1())
	}
}

func TestOperatorReviewVisibleToDeveloper(t *testing.T) {
	configs(t, node.Config{}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		dev, id := p.Developer(portaltest.Email(t, "Kim"), false)
		op := p.Operator()
		list := op.Get("/portal/ops/developers")
		if list.Status != http.StatusOK || list.H1() != "Developer review" || !strings.Contains(list.Body, `id="developer-`+itoa(id)+`"`) {
			t.Fatalf("pending list: %d %q %s", list.Status, list.H1(), list.Text())
		}
		// A rejection needs a reason.
		got := op.Post("/portal/ops/developers/"+itoa(id)+"/review", url.Values{"decision": {"rejected"}})
		if got.Status != http.StatusBadRequest || !strings.Contains(got.Text(), "is required when rejecting") {
			t.Fatalf("rejection without reason: %d %s", got.Status, got.Text())
		}
		got = op.Post("/portal/ops/developers/"+itoa(id)+"/review", url.Values{"decision": {"rejected"}, "reason": {"Company registration missing"}})
		if got.Status != http.StatusSeeOther {
			t.Fatalf("reject: %d %s", got.Status, got.Text())
		}
		if d := dev.Get("/portal/"); !strings.Contains(d.Text(), "Status: rejected.") || !strings.Contains(d.Text(), "Reason: Company registration missing") {
			t.Fatalf("developer after rejection: %s", d.Text())
		}
		got = op.Post("/portal/ops/developers/"+itoa(id)+"/review", url.Values{"decision": {"approved"}, "reason": {"Registration received"}})
		if got.Status != http.StatusSeeOther {
			t.Fatalf("approve: %d %s", got.Status, got.Text())
		}
		if d := dev.Get("/portal/"); !strings.Contains(d.Text(), "Status: approved.") {
			t.Fatalf("developer after approval: %s", d.Text())
		}
		if all := op.Get("/portal/ops/developers?status=approved"); !strings.Contains(all.Body, `id="developer-`+itoa(id)+`"`) {
			t.Fatalf("approved list lacks the developer: %s", all.Text())
		}
		// A developer is not an operator, and an unknown id is a 404.
		if got := dev.Get("/portal/ops/developers"); got.Status != http.StatusSeeOther || got.Location() != "/portal/ops/signin" {
			t.Fatalf("developer on the operator page: %d %s", got.Status, got.Location())
		}
		if got := op.Post("/portal/ops/developers/999999/review", url.Values{"decision": {"approved"}}); got.Status != http.StatusNotFound {
			t.Fatalf("unknown developer: %d", got.Status)
		}
		// A wrong operator token does not sign in.
		nobody := p.Browser()
		nobody.Get("/portal/ops/signin")
		if got := nobody.Post("/portal/ops/signin", url.Values{"token": {"adm_wrong"}}); got.Status != http.StatusUnauthorized {
			t.Fatalf("wrong operator token: %d", got.Status)
		}
	})
}

func TestNamedOperatorRolesAndRevocation(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir()})
	_, id := p.Developer(portaltest.Email(t, "Lu"), false)
	support, err := operatorsCreate(p, "Sam", "support")
	if err != nil {
		t.Fatal(err)
	}
	b := p.Browser()
	b.SignInOperator(support.Token)
	if got := b.Get("/portal/ops/developers"); got.Status != http.StatusOK {
		t.Fatalf("support reads the list: %d", got.Status)
	}
	before := head(t, p)
	if got := b.Post("/portal/ops/developers/"+itoa(id)+"/review", url.Values{"decision": {"approved"}}); got.Status != http.StatusForbidden {
		t.Fatalf("support reviews: %d %s", got.Status, got.Text())
	}
	if got := b.Get("/portal/ops/outbox"); got.Status != http.StatusForbidden {
		t.Fatalf("support reads the outbox (reset links): %d", got.Status)
	}
	if after := head(t, p); after != before {
		t.Fatal("a refused review appended")
	}
	// Revoking the operator ends the portal session.
	if err := operatorsRevoke(p, support.OperatorID); err != nil {
		t.Fatal(err)
	}
	if got := b.Get("/portal/ops/developers"); got.Status != http.StatusSeeOther {
		t.Fatalf("revoked operator's session: %d", got.Status)
	}
}

func randomKey(t *testing.T) string {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(k)
}

// wrongToken is token with its first character changed (to another one:
// "x" + token[1:] is the same token when it starts with x).
func wrongToken(token string) string {
	if strings.HasPrefix(token, "x") {
		return "y" + token[1:]
	}
	return "x" + token[1:]
}
