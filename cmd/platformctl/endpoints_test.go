package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/node"
)

// The endpoints commands drive the partner routes of a real node with the
// app's own credentials (scheme H): the default endpoint is listed, an
// added endpoint's secret is printed once, the endpoint can be changed,
// rotated, activated, tested and deleted, and another app's credentials
// see a missing endpoint.
func TestEndpointsAgainstARealNode(t *testing.T) {
	n, err := node.Open(context.Background(), node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	srv := httptest.NewServer(n.Handler)
	defer srv.Close()
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer hooks.Close()
	ctl := func(env map[string]string, args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(append([]string{"--server", srv.URL, "--token", n.AdminToken}, args...), &out, &errb, func(k string) string { return env[k] })
		return out.String(), errb.String(), code
	}
	newApp := func(name string) map[string]string {
		out, errOut, code := ctl(nil, "--json", "apps", "create", "--name", name, "--webhook-url", hooks.URL+"/default")
		if code != 0 {
			t.Fatalf("create app: %d %s %s", code, out, errOut)
		}
		var cr struct {
			AppKey    string `json:"app_key"`
			AppSecret string `json:"app_secret"`
		}
		if err := json.Unmarshal([]byte(out), &cr); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return map[string]string{"PLATFORM_APP_KEY": cr.AppKey, "PLATFORM_APP_SECRET": cr.AppSecret}
	}
	app := newApp("endpoints app")

	if _, errOut, code := ctl(nil, "endpoints", "list"); code != 2 || !strings.Contains(errOut, "--app-key") {
		t.Fatalf("without credentials: %d %s", code, errOut)
	}
	out, errOut, code := ctl(app, "endpoints", "list")
	if code != 0 || !strings.Contains(out, hooks.URL+"/default") || !strings.Contains(out, "app_webhook_secret") {
		t.Fatalf("list: %d %s %s", code, out, errOut)
	}

	out, errOut, code = ctl(app, "--json", "endpoints", "create", "--url", hooks.URL+"/own", "--event", "user.*")
	if code != 0 || !strings.Contains(errOut, "shown only once") {
		t.Fatalf("create: %d %s %s", code, out, errOut)
	}
	var created endpointView
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.EndpointID <= 0 || !strings.HasPrefix(created.WebhookSecret, "whsec_") {
		t.Fatalf("create output %s (%v)", out, err)
	}
	id := strconv.FormatInt(created.EndpointID, 10)
	if out, _, code = ctl(app, "endpoints", "list"); code != 0 || !strings.Contains(out, hooks.URL+"/own") || strings.Contains(out, "whsec_") {
		t.Fatalf("list after create: %d\n%s", code, out)
	}
	if out, _, code = ctl(app, "endpoints", "update", id, "--disable", "--all-events"); code != 0 || !strings.Contains(out, `"enabled": false`) || !strings.Contains(out, `"events": []`) {
		t.Fatalf("update: %d\n%s", code, out)
	}
	if _, errOut, code = ctl(app, "endpoints", "test", id); code != 1 || !strings.Contains(errOut, "WEBHOOK_ENDPOINT_DISABLED") {
		t.Fatalf("test of a disabled endpoint: %d %s", code, errOut)
	}
	if out, _, code = ctl(app, "endpoints", "update", id, "--enable"); code != 0 || !strings.Contains(out, `"enabled": true`) {
		t.Fatalf("enable: %d\n%s", code, out)
	}
	if out, _, code = ctl(app, "endpoints", "test", id); code != 0 || !strings.Contains(out, "webhook.test") {
		t.Fatalf("test: %d\n%s", code, out)
	}
	if out, _, code = ctl(app, "endpoints", "rotate-secret", id); code != 0 || !strings.Contains(out, `"pending_webhook_secret": "whsec_`) {
		t.Fatalf("rotate: %d\n%s", code, out)
	}
	if out, _, code = ctl(app, "endpoints", "activate-secret", id); code != 0 || !strings.Contains(out, `"pending_secret": false`) {
		t.Fatalf("activate: %d\n%s", code, out)
	}
	if out, _, code = ctl(app, "endpoints", "rotate-secret", "0"); code != 0 || !strings.Contains(out, `"default": true`) {
		t.Fatalf("rotate the default endpoint: %d\n%s", code, out)
	}

	other := newApp("other app")
	if _, errOut, code = ctl(other, "endpoints", "show", id); code != 1 || !strings.Contains(errOut, "WEBHOOK_ENDPOINT_NOT_FOUND") {
		t.Fatalf("another app's endpoint: %d %s", code, errOut)
	}
	if out, _, code = ctl(app, "endpoints", "delete", id); code != 0 || strings.TrimSpace(out) != "ok" {
		t.Fatalf("delete: %d\n%s", code, out)
	}
	if _, errOut, code = ctl(app, "endpoints", "show", id); code != 1 || !strings.Contains(errOut, "WEBHOOK_ENDPOINT_NOT_FOUND") {
		t.Fatalf("deleted endpoint: %d %s", code, errOut)
	}
	if _, _, code = ctl(app, "endpoints", "show", "-1"); code != 2 {
		t.Fatalf("negative id: %d", code)
	}
}
