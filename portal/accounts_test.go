package portal_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/portal"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
)

// configs runs a test on the embedded and the Postgres configuration.
func configs(t *testing.T, test func(t *testing.T, cfg node.Config)) {
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		test(t, node.Config{DataDir: t.TempDir()})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		test(t, node.Config{DataDir: t.TempDir(), PostgresURL: pgtest.New(t)})
	})
}

func TestSignUpSignInSignOut(t *testing.T) {
	configs(t, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		b := p.Browser()
		email := portaltest.Email(t, "Ada")
		id := b.SignUp(strings.ToUpper(email), "correct horse battery")
		dash := b.Get("/portal/")
		if dash.Status != http.StatusOK || dash.H1() != "Dashboard" || !strings.Contains(dash.Text(), "Status: pending review") ||
			!strings.Contains(dash.Text(), "Signed in as "+email) {
			t.Fatalf("dashboard after sign-up: %d %q %s", dash.Status, dash.H1(), dash.Text())
		}
		if id <= 0 {
			t.Fatalf("developer id %d", id)
		}
		out := b.Post("/portal/signout", nil)
		if out.Status != http.StatusSeeOther || out.Location() != "/portal/signin" {
			t.Fatalf("sign-out: %d %s", out.Status, out.Location())
		}
		if got := b.Get("/portal/"); got.H1() != "Developer portal" {
			t.Fatalf("after sign-out the home page is %q", got.H1())
		}
		in := b.SignIn(email, "correct horse battery")
		if in.Status != http.StatusSeeOther || in.Location() != "/portal/" {
			t.Fatalf("sign-in: %d %s %s", in.Status, in.Location(), in.Text())
		}
		if got := b.Get("/portal/"); got.H1() != "Dashboard" {
			t.Fatalf("after sign-in the home page is %q", got.H1())
		}
		_ = portal.CookieName
		_ = url.Values{}
	})
}
