// Package portaltest drives the developer portal in tests as a browser
// would (cookies, CSRF tokens from the forms, redirects not followed so
// tests see them), against a real node served over TLS, and signs
// developers and operators in through the real pages and commands.
package portaltest

import (
	"context"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// FastPasswords are argon2id costs small enough for tests under -race
// (still argon2id, still memory-hard); production uses the defaults.
var FastPasswords = commands.PasswordParams{Time: 1, Memory: 1024, Threads: 1, Concurrent: 4}

// Platform is one node served over HTTPS (so Secure cookies behave as in
// production).
type Platform struct {
	T    testing.TB
	Node *node.Node
	Srv  *httptest.Server
}

// Start opens a node with cfg (fast password hashing unless set) and
// serves it over TLS until the test ends.
func Start(t testing.TB, cfg node.Config) *Platform {
	t.Helper()
	if cfg.Portal.Passwords.Time == 0 {
		cfg.Portal.Passwords = FastPasswords
	}
	if cfg.Logger == nil {
		out := io.Discard
		if os.Getenv("PLATFORM_TEST_LOGS") == "1" {
			out = os.Stderr
		}
		cfg.Logger = slog.New(slog.NewTextHandler(out, nil))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n, err := node.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &Platform{T: t, Node: n, Srv: httptest.NewTLSServer(n.Handler)}
	t.Cleanup(func() {
		p.Srv.Close()
		if err := n.Close(); err != nil {
			t.Errorf("close node: %v", err)
		}
	})
	return p
}

// Browser is one visitor: its own cookie jar, CSRF token from the pages it
// loaded.
type Browser struct {
	T      testing.TB
	Base   string
	Client *http.Client
	// CSRF is the token of the last page that carried one.
	CSRF string
	// node, when set, is the platform's node: SignUp waits on it for the
	// account (sign-up is background work after the page answered).
	node *node.Node
	// stale: a POST redirected (sign-in, sign-out may have replaced the
	// session), so the next Post loads a page for a fresh token first.
	stale bool
}

// Browser makes a new visitor of p.
func (p *Platform) Browser() *Browser {
	b := NewBrowser(p.T, p.Srv.URL, p.Srv.Client().Transport)
	b.node = p.Node
	return b
}

// NewBrowser makes a visitor of the portal at base over transport.
func NewBrowser(t testing.TB, base string, transport http.RoundTripper) *Browser {
	jar, _ := cookiejar.New(nil)
	// A bound for a hung server, not a latency check: the first view of
	// the API reference renders it (about a CPU-second under -race), which
	// on a loaded two-core machine took over 30 s of wall time.
	return &Browser{T: t, Base: base, Client: &http.Client{
		Transport: transport, Jar: jar, Timeout: 3 * time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// Page is a response as a test sees it.
type Page struct {
	Status int
	Header http.Header
	Body   string
}

// Location is the redirect target's path.
func (p Page) Location() string {
	u, err := url.Parse(p.Header.Get("Location"))
	if err != nil {
		return p.Header.Get("Location")
	}
	return u.Path
}

// H1 is the page's first heading text.
func (p Page) H1() string {
	m := regexp.MustCompile(`(?s)<h1[^>]*>(.*?)</h1>`).FindStringSubmatch(p.Body)
	if m == nil {
		return ""
	}
	return strings.TrimSpace(html.UnescapeString(regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[1], "")))
}

// Text is the page's text without tags, for Contains checks.
func (p Page) Text() string {
	return html.UnescapeString(strings.Join(strings.Fields(stripTags(p.Body, " ")), " "))
}

// stripTags replaces every tag (what `<[^>]+>` matches) with sep. A plain
// scan rather than a regular expression: the API reference page is large,
// and tests under -race read its text many times.
func stripTags(s, sep string) string {
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.IndexByte(s[i+1:], '>')
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		if j == 0 { // "<>" is no tag
			b.WriteString(s[:i+2])
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		b.WriteString(sep)
		s = s[i+1+j+1:]
	}
}

var csrfInput = regexp.MustCompile(`name="csrf-token" content="([^"]+)"`)

func (b *Browser) do(req *http.Request) Page {
	b.T.Helper()
	res, err := b.Client.Do(req)
	if err != nil {
		b.T.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		b.T.Fatal(err)
	}
	p := Page{Status: res.StatusCode, Header: res.Header, Body: string(raw)}
	if req.Method == http.MethodPost && res.StatusCode >= 300 && res.StatusCode < 400 {
		b.stale = true
	}
	if m := csrfInput.FindStringSubmatch(p.Body); m != nil {
		b.CSRF = html.UnescapeString(m[1])
	}
	return p
}

// Get loads a page.
func (b *Browser) Get(path string) Page {
	b.T.Helper()
	req, err := http.NewRequest(http.MethodGet, b.Base+path, nil)
	if err != nil {
		b.T.Fatal(err)
	}
	return b.do(req)
}

// Post submits a form with the current CSRF token (loading the portal's
// home first if no token is known yet, or the session may have changed).
func (b *Browser) Post(path string, form url.Values) Page {
	b.T.Helper()
	if b.CSRF == "" || b.stale {
		b.stale = false
		if home := b.Get("/portal/"); home.Status == http.StatusSeeOther {
			b.Get(home.Location())
		}
	}
	f := url.Values{}
	for k, v := range form {
		f[k] = v
	}
	f.Set("csrf_token", b.CSRF)
	return b.PostRaw(path, f)
}

// PostRaw submits a form as given (no CSRF token added).
func (b *Browser) PostRaw(path string, form url.Values) Page {
	b.T.Helper()
	req, err := http.NewRequest(http.MethodPost, b.Base+path, strings.NewReader(form.Encode()))
	if err != nil {
		b.T.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// Cookie returns the browser's cookie for the portal (nil: none).
func (b *Browser) Cookie(name string) *http.Cookie {
	u, _ := url.Parse(b.Base + "/portal/")
	for _, c := range b.Client.Jar.Cookies(u) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// SignUp creates a developer account through the sign-up page (which
// answers "check your mail" and signs nobody in), signs the browser in
// with it and returns its id.
func (b *Browser) SignUp(email, password string) int64 {
	b.T.Helper()
	b.Get("/portal/signup")
	p := b.Post("/portal/signup", url.Values{"email": {email}, "password": {password}})
	if p.Status != http.StatusOK || p.H1() != "Check your mail" {
		b.T.Fatalf("sign up %s: status %d: %s", email, p.Status, p.Text())
	}
	if b.node != nil {
		WaitAccount(b.T, b.node, email, password)
	}
	if in := b.SignIn(email, password); in.Status != http.StatusSeeOther {
		b.T.Fatalf("sign in after sign-up %s: status %d: %s", email, in.Status, in.Text())
	}
	dash := b.Get("/portal/")
	m := regexp.MustCompile(`<dt>Developer id</dt><dd>(\d+)</dd>`).FindStringSubmatch(dash.Body)
	if m == nil {
		b.T.Fatalf("sign up %s: dashboard shows no developer id: %s", email, dash.Text())
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	if b.node != nil {
		waitSignUpMail(b.T, b.node, id)
	}
	return id
}

// waitSignUpMail waits (bounded) until the sign-up's mail to developer id
// is in the outbox: the background sign-up appends it after the account,
// and a test counting events from here must count only its own.
func waitSignUpMail(t testing.TB, n *node.Node, id int64) {
	t.Helper()
	for range 1500 { // up to 15 s
		for _, m := range n.Developers.Outbox(false) {
			if m.DeveloperID == id {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the sign-up mail of developer %d was not queued", id)
}

// WaitAccount waits (bounded) until a signed-up account exists and takes
// its password: sign-up completes in the background after its page.
func WaitAccount(t testing.TB, n *node.Node, email, password string) {
	t.Helper()
	for range 1500 { // up to 15 s
		if _, err := n.Portal.Developers.Authenticate(context.Background(), email, password); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the account of %s was not created", email)
}

// SignIn signs the browser in as a developer through the sign-in page.
func (b *Browser) SignIn(email, password string) Page {
	b.T.Helper()
	b.Get("/portal/signin")
	return b.Post("/portal/signin", url.Values{"email": {email}, "password": {password}})
}

// SignInOperator signs the browser in with an operator token.
func (b *Browser) SignInOperator(token string) {
	b.T.Helper()
	b.Get("/portal/ops/signin")
	if p := b.Post("/portal/ops/signin", url.Values{"token": {token}}); p.Status != http.StatusSeeOther {
		b.T.Fatalf("operator sign-in: status %d: %s", p.Status, p.Text())
	}
}

// Developer signs up a new developer in a new browser and, when approved
// is set, has the bootstrap operator approve it through the command; it
// returns the signed-in browser and the developer's id.
func (p *Platform) Developer(email string, approved bool) (*Browser, int64) {
	p.T.Helper()
	b := p.Browser()
	id := b.SignUp(email, "correct horse battery")
	if approved {
		Approve(p.T, p.Node, id)
	}
	return b, id
}

// Approve approves a developer through the review command, as the
// bootstrap operator.
func Approve(t testing.TB, n *node.Node, id int64) {
	t.Helper()
	if _, err := n.Portal.Developers.Review(context.Background(), id, catalog.DeveloperApproved, "approved by test",
		commands.Meta{Actor: "operator:bootstrap"}); err != nil {
		t.Fatalf("approve developer %d: %v", id, err)
	}
	// The decision's mail is appended by a follower of the log: wait for
	// it, so that a test counting events from here counts only its own.
	if err := n.WaitDecisionMails(context.Background()); err != nil {
		t.Fatalf("approve developer %d: the decision's mail: %v", id, err)
	}
}

// Operator returns a browser signed in as the bootstrap operator.
func (p *Platform) Operator() *Browser {
	p.T.Helper()
	b := p.Browser()
	b.SignInOperator(p.Node.AdminToken)
	return b
}

// Email returns a fresh address for a test.
func Email(t testing.TB, name string) string {
	return fmt.Sprintf("%s-%d@example.com", strings.ToLower(name), time.Now().UnixNano())
}
