package admin_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/projections"
)

func TestAppsAdmin(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})

	// Without the token: 401, nothing appended.
	req, _ := http.NewRequest("POST", p.Srv.URL+"/admin/v1/apps", strings.NewReader(`{"name":"x"}`))
	req.Header.Set("Authorization", "Bearer wrong")
	if res := p.Send(req); res.Status != http.StatusUnauthorized || res.Code() != "HTTP_401" {
		t.Fatalf("wrong token: %d %s", res.Status, res.Raw)
	}
	if n := p.EventCount(); n != 0 {
		t.Fatalf("unauthorised admin call appended %d events", n)
	}
	if res := p.Admin("POST", "/admin/v1/apps", map[string]any{"name": ""}); res.Status != 422 || res.Env.Errors["name"] == nil {
		t.Fatalf("empty name: %d %s", res.Status, res.Raw)
	}
	if res := p.Admin("POST", "/admin/v1/apps", map[string]any{"name": "x", "environment": "staging", "webhook_events": []string{"Bad Name"}}); res.Status != 422 || res.Env.Errors["environment"] == nil || res.Env.Errors["webhook_events[0]"] == nil {
		t.Fatalf("bad fields: %d %s", res.Status, res.Raw)
	}

	a := p.CreateApp("partner")
	if a.ID <= 0 || !strings.HasPrefix(a.Key, "ak_") || len(a.Secret) < 32 || len(a.WebhookSecret) < 32 || a.Secret == a.WebhookSecret {
		t.Fatalf("credentials %+v", a)
	}

	// Secrets are never returned after creation, and never stored in clear.
	for _, path := range []string{"/admin/v1/apps", fmt.Sprintf("/admin/v1/apps/%d", a.ID), fmt.Sprintf("/admin/v1/history?stream=app-%d", a.ID), "/admin/v1/events"} {
		res := p.Admin("GET", path, nil)
		if res.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", path, res.Status, res.Raw)
		}
		if strings.Contains(string(res.Raw), a.Secret) || strings.Contains(string(res.Raw), a.WebhookSecret) {
			t.Fatalf("%s reveals a secret: %s", path, res.Raw)
		}
	}
	var got struct {
		AppID       int64  `json:"app_id"`
		Name        string `json:"name"`
		AppKey      string `json:"app_key"`
		Environment string `json:"environment"`
	}
	p.Admin("GET", fmt.Sprintf("/admin/v1/apps/%d", a.ID), nil).Data(t, &got)
	if got.AppID != a.ID || got.Name != "partner" || got.AppKey != a.Key || got.Environment != "sandbox" {
		t.Fatalf("app %+v", got)
	}
	if res := p.Admin("GET", "/admin/v1/apps/4242", nil); res.Status != 404 || res.Code() != "APP_NOT_FOUND" {
		t.Fatalf("missing app: %d %s", res.Status, res.Raw)
	}

	// Rotation: the old secret stops working at once, the new one works.
	a.Expect("GET", "/open/v1/channel/users/0?channel_user_id=x", nil, http.StatusNotFound, "USER_NOT_FOUND")
	var rotated struct {
		Secret string `json:"app_secret"`
	}
	res := p.Admin("POST", fmt.Sprintf("/admin/v1/apps/%d/rotate-secret", a.ID), nil)
	if res.Status != http.StatusOK {
		t.Fatalf("rotate: %d %s", res.Status, res.Raw)
	}
	res.Data(t, &rotated)
	a.Expect("GET", "/open/v1/channel/users/0?channel_user_id=x", nil, http.StatusUnauthorized, "HTTP_401")
	a.Secret = rotated.Secret
	a.Expect("GET", "/open/v1/channel/users/0?channel_user_id=x", nil, http.StatusNotFound, "USER_NOT_FOUND")
}

func TestHistoryShowsAStreamInOrder(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	a := p.CreateApp("partner")
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
	a.Expect("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID), map[string]any{"nickname": "n"}, http.StatusOK, "0")
	var h struct {
		Events []struct {
			Type     string          `json:"type"`
			Revision uint64          `json:"revision"`
			Time     string          `json:"time"`
			Data     json.RawMessage `json:"data"`
			Metadata struct {
				AppID     int64  `json:"app_id"`
				Actor     string `json:"actor"`
				RequestID string `json:"request_id"`
			} `json:"metadata"`
		} `json:"events"`
	}
	p.Admin("GET", fmt.Sprintf("/admin/v1/history?stream=user-%d", reg.OpenUserID), nil).Data(t, &h)
	want := []string{"user.registered", "user.family_group.created", "user.family_member.created", "user.family_member.created", "user.profile.updated"}
	if len(h.Events) != len(want) {
		t.Fatalf("history %+v", h)
	}
	for i, e := range h.Events {
		if e.Type != want[i] || e.Revision != uint64(i) || e.Metadata.AppID != a.ID || e.Metadata.Actor != fmt.Sprintf("app:%d", a.ID) || e.Metadata.RequestID == "" {
			t.Fatalf("event %d: %+v", i, e)
		}
		if _, err := time.Parse(time.RFC3339Nano, e.Time); err != nil {
			t.Fatalf("time %q", e.Time)
		}
	}
	if res := p.Admin("GET", "/admin/v1/history", nil); res.Status != 422 {
		t.Fatalf("history without stream: %d", res.Status)
	}
}

func TestRebuildReproducesTheReadModel(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
		user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
		a.Expect("DELETE", fmt.Sprintf("%s/family-members/%d", user, reg.FamilyMembers[0].MemberID), nil, http.StatusOK, "0")
		want := a.Snapshot(user)

		if res := p.Admin("POST", "/admin/v1/projections/read_models/rebuild", nil); res.Status != http.StatusAccepted {
			t.Fatalf("rebuild: %d %s", res.Status, res.Raw)
		}
		// The node stays ready while its read models are rebuilt.
		if res := p.Admin("GET", "/readyz", nil); res.Status != http.StatusOK {
			t.Fatalf("readyz during a rebuild: %d %s", res.Status, res.Raw)
		}
		if err := p.Node.WaitCaughtUp(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := a.Snapshot(user); fmt.Sprintf("%+v", harness.Deref(got)) != fmt.Sprintf("%+v", harness.Deref(want)) {
			t.Fatalf("after rebuild\n got %+v\nwant %+v", harness.Deref(got), harness.Deref(want))
		}
		var st struct {
			Projections []struct {
				Name    string  `json:"name"`
				Applied uint64  `json:"events_applied"`
				Ready   bool    `json:"ready"`
				Percent float64 `json:"percent"`
			} `json:"projections"`
		}
		p.Admin("GET", "/admin/v1/projections", nil).Data(t, &st)
		for _, s := range st.Projections {
			if s.Name == "users" && (s.Applied == 0 || !s.Ready || s.Percent != 100) {
				t.Fatalf("stats after rebuild %+v", s)
			}
		}

		// One read model alone: the users read model is rebuilt, the delivery log
		// keeps its rows and its checkpoint.
		before := p.Node.ReadModelRunners[projections.ReadModelDeliveries].Position()
		if res := p.Admin("POST", "/admin/v1/projections/users/rebuild", nil); res.Status != http.StatusAccepted {
			t.Fatalf("rebuild users: %d %s", res.Status, res.Raw)
		}
		if got := p.Node.ReadModelRunners[projections.ReadModelDeliveries].Position(); got.Less(before) {
			t.Fatalf("rebuilding users moved the deliveries family back from %s to %s", before, got)
		}
		if got := a.Snapshot(user); fmt.Sprintf("%+v", harness.Deref(got)) != fmt.Sprintf("%+v", harness.Deref(want)) {
			t.Fatalf("after rebuilding users\n got %+v\nwant %+v", harness.Deref(got), harness.Deref(want))
		}
		if res := p.Admin("POST", "/admin/v1/projections/nope/rebuild", nil); res.Status != 404 {
			t.Fatalf("unknown projection: %d", res.Status)
		}
	})
}

func TestOperationalEndpoints(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	a := p.CreateApp("partner")
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0")
	for _, path := range []string{"/healthz", "/readyz", "/openapi.yaml"} {
		res, err := http.Get(p.Srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("X-Request-Id") == "" {
			t.Fatalf("%s: %d", path, res.StatusCode)
		}
	}
	if err := p.Node.WaitCaughtUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(p.Srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{
		`platform_http_request_duration_seconds_bucket{method="POST",route="/open/v1/channel/users",status="201"`,
		`platform_event_store_append_seconds_count{outcome="ok"}`,
		`platform_projection_events_total{projection="users"}`,
		`platform_projection_lag_seconds{projection="apps"}`,
		`platform_follower_events_behind{kind="projection",name="users"}`,
		`platform_follower_oldest_unapplied_seconds{kind="projection",name="benefits"}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// A caller's sane request id is echoed; an unsafe one is replaced.
	req, _ := http.NewRequest("GET", p.Srv.URL+"/healthz", nil)
	req.Header.Set("X-Request-Id", "abc-123")
	if r := p.Send(req); r.Header.Get("X-Request-Id") != "abc-123" {
		t.Fatalf("request id %q", r.Header.Get("X-Request-Id"))
	}
	req.Header.Set("X-Request-Id", "bad id <script>")
	if r := p.Send(req); r.Header.Get("X-Request-Id") == "bad id <script>" {
		t.Fatal("unsafe request id echoed")
	}
}
