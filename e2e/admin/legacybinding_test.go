package admin_test

import (
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
	"github.com/healthtech/partner-open-platform/events/catalog"
	keystore "github.com/healthtech/partner-open-platform/internal/datakeys"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// A binding written by the release before hashed names sits on a stream
// named after the channel_user_id, its event holding the id in clear.
// Registering that id again finds the bound user and writes no second
// binding; admin event pages show the stream by its hashed name and the id
// redacted; an auditor's reveal shows them, and its audit fact names the
// hashed stream only.
func TestLegacyBindingInAdminReads(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		// The log as the old release left it: a block of user ids
		// reserved and the binding of app 1's user 999999, the id in clear
		// in the stream's name and its event (written before the first
		// start of this release, which so records that legacy bindings
		// may exist).
		const id = "legacy.person@example.com"
		legacy := domain.LegacyBindingStream(1, id)
		old, err := bolt.Open(filepath.Join(cfg.DataDir, "events.db"))
		if err != nil {
			t.Fatal(err)
		}
		registry := catalog.Registry()
		for _, w := range []struct {
			stream string
			p      events.Payload
		}{
			{domain.IDStream("user"), catalog.IDBlockReserved{Kind: "user", First: 1, Last: 50}},
			{legacy, catalog.ChannelUserBound{AppID: 1, ChannelUserID: id, OpenUserID: 999999}},
		} {
			ev, err := registry.Encode(w.p, events.Metadata{AppID: 1})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := old.Append(t.Context(), w.stream, events.NoStream(), ev); err != nil {
				t.Fatal(err)
			}
		}
		old.Close()
		if _, _, err := secrets.LoadOrCreateKeyFile(filepath.Join(cfg.DataDir, "master.key")); err != nil {
			t.Fatal(err)
		}
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		if a.ID != 1 {
			t.Fatalf("app id %d, want 1", a.ID)
		}
		hashed := p.Node.Pseudonyms.BindingStream(a.ID, id)
		if _, err := p.Node.Keys.Backend().Get(t.Context(), node.LegacyBindingsFlag); err != nil {
			t.Fatalf("a log with users must be flagged as possibly holding legacy bindings: %v", err)
		}

		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody(id), http.StatusCreated, "0").Data(t, &reg)
		if reg.OpenUserID != 999999 {
			t.Fatalf("register of a legacy-bound id: %+v, want its open_user_id 999999", reg)
		}
		if recs, _ := p.Node.StoredEvents.ReadStream(t.Context(), hashed, 0, 0); len(recs) != 0 {
			t.Fatalf("a second binding was written: %d events", len(recs))
		}
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody(id), http.StatusOK, "0")

		for _, path := range []string{"/admin/v1/events?limit=10000", "/admin/v1/history?stream=" + url.QueryEscape(legacy)} {
			res := p.Admin("GET", path, nil)
			harness.ExpectCode(t, path, res, 200, "0")
			body := string(res.Raw)
			if strings.Contains(strings.ReplaceAll(body, url.QueryEscape(legacy), ""), "legacy.person") || !strings.Contains(body, hashed) {
				t.Fatalf("%s shows the channel_user_id or not the hashed name: %s", path, res.Raw)
			}
		}
		_, auditorTok := p.Operator("Aud", "auditor")
		res := p.As(auditorTok, "GET", "/admin/v1/history?reveal=true&reason=DPO+check&stream="+url.QueryEscape(legacy), nil)
		harness.ExpectCode(t, "reveal", res, 200, "0")
		if !strings.Contains(string(res.Raw), `"stream":"`+legacy+`"`) {
			t.Fatalf("a reveal shows the stored name: %s", res.Raw)
		}
		audit := p.As(auditorTok, "GET", "/admin/v1/audit", nil)
		harness.ExpectCode(t, "audit", audit, 200, "0")
		if strings.Contains(string(audit.Raw), "legacy.person") || !strings.Contains(string(audit.Raw), hashed) {
			t.Fatalf("the reveal's audit fact: %s", audit.Raw)
		}
		// Erasing that user frees the legacy binding: the id registers
		// again as a new person, bound under its hashed name.
		if res := p.Admin("POST", "/admin/v1/channel-users/999999/erase", map[string]any{"reason": "ticket 5"}); res.Status != http.StatusOK {
			t.Fatalf("erase: %d %s", res.Status, res.Raw)
		}
		recs, err := p.Node.StoredEvents.ReadStream(t.Context(), legacy, 0, 0)
		if err != nil || len(recs) != 2 || recs[1].Type != "channel_user.unbound" || strings.Contains(string(recs[1].Data), "legacy.person") {
			t.Fatalf("legacy binding after the erasure: %+v %v", recs, err)
		}
		var again harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody(id), http.StatusCreated, "0").Data(t, &again)
		if again.OpenUserID == 999999 {
			t.Fatalf("re-register after erasure: %+v", again)
		}
		if recs, _ := p.Node.StoredEvents.ReadStream(t.Context(), hashed, 0, 0); len(recs) != 1 {
			t.Fatalf("hashed binding after the re-register: %d events", len(recs))
		}
	})
}

// A log begun with this release is decided, once, to hold no legacy
// bindings (registers then skip that read), and deciding appends nothing
// to the log; a restart keeps the decision.
func TestFreshLogHasNoLegacyBindings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for range 2 {
		p := harness.Start(t, node.Config{DataDir: dir})
		if _, err := p.Node.Keys.Backend().Get(t.Context(), node.LegacyBindingsFlag); !errors.Is(err, keystore.ErrNotFound) {
			t.Fatalf("legacy bindings flag on a fresh log: %v", err)
		}
		if _, err := p.Node.Keys.Backend().Get(t.Context(), node.PseudonymSecret); err != nil {
			t.Fatalf("pseudonym secret: %v", err)
		}
		if n := p.EventCount(); n != 0 {
			t.Fatalf("a start appended %d events", n)
		}
		p.Stop()
	}
}
