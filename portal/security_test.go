package portal_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/portal"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
)

// hostileNext are next values that must never lead out of the portal.
var hostileNext = []string{
	"/portal/..%2F%5Cevil.example",
	"/portal/../%5Cevil.example",
	`/portal/..\evil.example`,
	"/portal/%2e%2e/%2e%2e//evil.example",
	"/portal/%252e%252e%252f%252fevil.example",
	"//evil.example",
	`/\evil.example`,
	"https://evil.example/portal/",
	"/portal/%0d%0aLocation:%20https://evil.example",
}

// TestSignInRedirectStaysInsidePortal: whatever next a sign-in link
// carries, a correct sign-in (developer or operator) lands inside the
// portal, and a hostile next falls back to the default page.
func TestSignInRedirectStaysInsidePortal(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir(), Portal: node.PortalConfig{AddressLimit: 1000}})
	email := portaltest.Email(t, "Rex")
	p.Developer(email, false)
	for _, next := range hostileNext {
		b := p.Browser()
		page := b.Get("/portal/signin?next=" + url.QueryEscape(next))
		if strings.Contains(page.Body, "evil") {
			t.Errorf("next %q: the sign-in form carries it: %s", next, page.Body)
		}
		// Posted straight, as a forged form would.
		got := b.Post("/portal/signin", url.Values{"email": {email}, "password": {password}, "next": {next}})
		if loc := got.Header.Get("Location"); got.Status != http.StatusSeeOther || loc != "/portal/" {
			t.Errorf("developer sign-in with next %q: %d Location %q, want /portal/", next, got.Status, loc)
		}

		op := p.Browser()
		op.Get("/portal/ops/signin?next=" + url.QueryEscape(next))
		got = op.Post("/portal/ops/signin", url.Values{"token": {p.Node.AdminToken}, "next": {next}})
		if loc := got.Header.Get("Location"); got.Status != http.StatusSeeOther || loc != "/portal/ops/developers" {
			t.Errorf("operator sign-in with next %q: %d Location %q, want /portal/ops/developers", next, got.Status, loc)
		}
	}
	// A next inside the portal is kept (the link the sign-in wall made).
	b := p.Browser()
	if got := b.Get("/portal/apps"); got.Status != http.StatusSeeOther || got.Header.Get("Location") != "/portal/signin?next=%2Fportal%2Fapps" {
		t.Fatalf("sign-in wall: %d %q", got.Status, got.Header.Get("Location"))
	}
	page := b.Get("/portal/signin?next=%2Fportal%2Fapps")
	if !strings.Contains(page.Body, `name="next" value="/portal/apps"`) {
		t.Fatalf("the form does not carry next: %s", page.Body)
	}
	if got := b.Post("/portal/signin", url.Values{"email": {email}, "password": {password}, "next": {"/portal/apps"}}); got.Header.Get("Location") != "/portal/apps" {
		t.Fatalf("sign-in with next /portal/apps: %d %q", got.Status, got.Header.Get("Location"))
	}
}

// postWithHost submits a form as b would, with a Host header of the
// client's choosing.
func postWithHost(t *testing.T, b *portaltest.Browser, host, path string, form url.Values) portaltest.Page {
	t.Helper()
	form.Set("csrf_token", b.CSRF)
	req, err := http.NewRequest(http.MethodPost, b.Base+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// Go's cookie jar files cookies under req.Host: send the session by hand.
	req.AddCookie(b.Cookie(portal.CookieName))
	client := &http.Client{Transport: b.Client.Transport, CheckRedirect: b.Client.CheckRedirect}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return portaltest.Page{Status: res.StatusCode, Header: res.Header, Body: string(raw)}
}

// TestMailLinksNeverComeFromHost: the links in every mail the portal sends
// (reset, sign-up welcome, sign-up notice to a taken address's owner)
// start with the configured origin, or the node's default without one,
// whatever Host the request that caused them named.
func TestMailLinksNeverComeFromHost(t *testing.T) {
	for _, tc := range []struct{ base, want string }{
		{"", node.DefaultPortalBaseURL + "/portal/"},
		{"https://open.example.com/", "https://open.example.com/portal/"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			p := portaltest.Start(t, node.Config{DataDir: t.TempDir(), Portal: node.PortalConfig{BaseURL: tc.base}})
			email := portaltest.Email(t, "Sam")
			b := p.Browser()
			b.Get("/portal/signup")
			if got := postWithHost(t, b, "attacker.example", "/portal/signup", url.Values{"email": {email}, "password": {password}}); got.Status != http.StatusOK {
				t.Fatalf("sign-up: %d %s", got.Status, got.Text())
			}
			b.Get("/portal/signup")
			if got := postWithHost(t, b, "attacker.example", "/portal/signup", url.Values{"email": {email}, "password": {password}}); got.Status != http.StatusOK {
				t.Fatalf("second sign-up: %d", got.Status)
			}
			b.Get("/portal/password/forgot")
			if got := postWithHost(t, b, "attacker.example:443", "/portal/password/forgot", url.Values{"email": {email}}); got.Status != http.StatusOK {
				t.Fatalf("forgot: %d", got.Status)
			}
			op := p.Operator()
			resetTokens(t, op, email, 2) // the sign-up notice's and the reset's
			box := op.Get("/portal/ops/outbox").Text()
			if strings.Contains(box, "attacker") {
				t.Fatalf("a mail links to the request's Host: %s", box)
			}
			for _, want := range []string{tc.want + "signin", tc.want + "password/reset?token="} {
				if !strings.Contains(box, want) {
					t.Fatalf("no link %s in the outbox: %s", want, box)
				}
			}
			if n := strings.Count(box, "://"); n != strings.Count(box, tc.want[:len(tc.want)-len("/portal/")]+"/portal/") {
				t.Fatalf("a link with another origin in the outbox: %s", box)
			}
		})
	}
}

// TestResetEndsEveryOutstandingToken: ask twice (T1, T2), reset with T2;
// T1 no longer sets the password, and neither token works after a later
// change; with Postgres, T1 is refused on another node too.
func TestResetEndsEveryOutstandingToken(t *testing.T) {
	configs(t, node.Config{}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		email := portaltest.Email(t, "Tia")
		p.Developer(email, false)
		op := p.Operator()
		b := p.Browser()
		b.Get("/portal/password/forgot")
		b.Post("/portal/password/forgot", url.Values{"email": {email}})
		t1 := resetToken(t, op, email)
		b.Post("/portal/password/forgot", url.Values{"email": {email}})
		toks := resetTokens(t, op, email, 2)
		t2 := toks[0]
		if t2 == t1 || toks[1] != t1 {
			t.Fatalf("tokens %v, first %s", toks, t1)
		}
		if got := b.Post("/portal/password/reset", url.Values{"token": {t2}, "password": {"the second passphrase"}}); got.Status != http.StatusSeeOther {
			t.Fatalf("reset with T2: %d %s", got.Status, got.Text())
		}
		before := head(t, p)
		got := b.Post("/portal/password/reset", url.Values{"token": {t1}, "password": {"an attacker's passphrase"}})
		if got.Status != http.StatusBadRequest || !strings.Contains(got.Text(), "invalid, used or expired") {
			t.Fatalf("reset with T1 after T2: %d %s", got.Status, got.Text())
		}
		if after := head(t, p); after != before {
			t.Fatalf("a refused reset appended: %v -> %v", before, after)
		}
		if got := b.SignIn(email, "an attacker's passphrase"); got.Status != http.StatusUnauthorized {
			t.Fatalf("T1's password signs in: %d", got.Status)
		}
		if got := b.SignIn(email, "the second passphrase"); got.Status != http.StatusSeeOther {
			t.Fatalf("T2's password: %d", got.Status)
		}
	})
}

// TestOperatorSignOutEndsCopiedSession: after an operator signs out, a
// copy of the session cookie loads no ops page and approves nobody.
func TestOperatorSignOutEndsCopiedSession(t *testing.T) {
	configs(t, node.Config{}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		_, id := p.Developer(portaltest.Email(t, "Uma"), false)
		op := p.Operator()
		stolen := op.Cookie(portal.CookieName)
		thief := p.Browser()
		u, _ := url.Parse(p.Srv.URL + "/portal/")
		thief.Client.Jar.SetCookies(u, []*http.Cookie{{Name: stolen.Name, Value: stolen.Value, Path: "/portal/"}})
		if got := thief.Get("/portal/ops/developers"); got.Status != http.StatusOK {
			t.Fatalf("the copied cookie before sign-out: %d", got.Status)
		}
		if got := op.Post("/portal/ops/signout", nil); got.Status != http.StatusSeeOther || got.Location() != "/portal/ops/signin" {
			t.Fatalf("sign-out: %d %s", got.Status, got.Location())
		}
		thief.Client.Jar.SetCookies(u, []*http.Cookie{{Name: stolen.Name, Value: stolen.Value, Path: "/portal/"}})
		if got := thief.Get("/portal/ops/developers"); got.Status != http.StatusSeeOther || got.Location() != "/portal/ops/signin" {
			t.Fatalf("the copied cookie after sign-out loads ops pages: %d %s", got.Status, got.Location())
		}
		thief.Client.Jar.SetCookies(u, []*http.Cookie{{Name: stolen.Name, Value: stolen.Value, Path: "/portal/"}})
		before := head(t, p)
		if got := thief.Post("/portal/ops/developers/"+itoa(id)+"/review", url.Values{"decision": {"approved"}}); got.Status != http.StatusForbidden {
			t.Fatalf("the copied cookie after sign-out approves: %d %s", got.Status, got.Text())
		}
		if after := head(t, p); after != before {
			t.Fatalf("a refused review appended: %v -> %v", before, after)
		}
		// Signing in again works, with a new session.
		if got := p.Operator().Get("/portal/ops/developers"); got.Status != http.StatusOK {
			t.Fatalf("a new operator sign-in: %d", got.Status)
		}
	})
}

// TestSignOutAndResetHoldAcrossNodes: two nodes sharing Postgres; an
// operator signed out on A is signed out on B, and a reset on A ends the
// older token on B.
func TestSignOutAndResetHoldAcrossNodes(t *testing.T) {
	db := pgtest.New(t)
	key := randomKey(t)
	cfg := func() node.Config {
		return node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db, MasterKey: key, AdminToken: "adm_portal_cluster"}
	}
	a := portaltest.Start(t, cfg())
	b := portaltest.Start(t, cfg())

	opA := a.Operator()
	cookie := opA.Cookie(portal.CookieName)
	onB := b.Browser()
	u, _ := url.Parse(b.Srv.URL + "/portal/")
	onB.Client.Jar.SetCookies(u, []*http.Cookie{{Name: cookie.Name, Value: cookie.Value, Path: "/portal/"}})
	if got := onB.Get("/portal/ops/developers"); got.Status != http.StatusOK {
		t.Fatalf("node B with node A's operator cookie: %d", got.Status)
	}
	opA.Post("/portal/ops/signout", nil)
	onB.Client.Jar.SetCookies(u, []*http.Cookie{{Name: cookie.Name, Value: cookie.Value, Path: "/portal/"}})
	if got := onB.Get("/portal/ops/developers"); got.Status != http.StatusSeeOther {
		t.Fatalf("node B after sign-out on A: %d", got.Status)
	}

	email := portaltest.Email(t, "Val")
	a.Developer(email, false)
	opB := b.Operator()
	dev := a.Browser()
	dev.Get("/portal/password/forgot")
	dev.Post("/portal/password/forgot", url.Values{"email": {email}})
	resetToken(t, opB, email)
	dev.Post("/portal/password/forgot", url.Values{"email": {email}})
	toks := resetTokens(t, opB, email, 2)
	if got := dev.Post("/portal/password/reset", url.Values{"token": {toks[0]}, "password": {"the second passphrase"}}); got.Status != http.StatusSeeOther {
		t.Fatalf("reset on A: %d", got.Status)
	}
	onBDev := b.Browser()
	onBDev.Get("/portal/password/forgot")
	if got := onBDev.Post("/portal/password/reset", url.Values{"token": {toks[1]}, "password": {"an attacker's passphrase"}}); got.Status != http.StatusBadRequest {
		t.Fatalf("the older token on B after a reset on A: %d", got.Status)
	}
}

// TestConcurrentResetsWithTwoTokens: two outstanding tokens used at once,
// many times over: exactly one reset wins, every other use is refused.
func TestConcurrentResetsWithTwoTokens(t *testing.T) {
	configs(t, node.Config{}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		email := portaltest.Email(t, "Wes")
		p.Developer(email, false)
		devs := p.Node.Portal.Developers
		ctx := context.Background()
		t1, _, err := devs.RequestReset(ctx, email, "")
		if err != nil {
			t.Fatal(err)
		}
		t2, _, err := devs.RequestReset(ctx, email, "")
		if err != nil {
			t.Fatal(err)
		}
		const n = 8
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tok := t1
				if i%2 == 1 {
					tok = t2
				}
				_, errs[i] = devs.ResetPassword(ctx, tok, "passphrase number "+itoa(int64(i)), "")
			}()
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won < 0:
				won = i
			case err == nil:
				t.Fatalf("two resets won: %d and %d", won, i)
			case !errors.Is(err, domain.ErrResetTokenInvalid):
				t.Fatalf("reset %d: %v", i, err)
			}
		}
		if won < 0 {
			t.Fatal("no reset won")
		}
		if _, err := devs.Authenticate(ctx, email, "passphrase number "+itoa(int64(won))); err != nil {
			t.Fatalf("the winner's password: %v", err)
		}
	})
}
