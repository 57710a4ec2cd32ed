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
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
)

// `developers` lists the qualification queue and decides it through the
// admin API of a real node, as the ops pages do: a rejection needs notes,
// the same decision again is 409, a rejection may be replaced by an
// approval, and each decision mails the developer once (the outbox shows it).
func TestDevelopersAgainstARealNode(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir()})
	srv := httptest.NewServer(p.Node.Handler)
	defer srv.Close()
	ctl := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(append([]string{"--server", srv.URL, "--token", p.Node.AdminToken}, args...), &out, &errb, func(string) string { return "" })
		return out.String(), errb.String(), code
	}
	email := portaltest.Email(t, "ctl-dev")
	_, devID := p.Developer(email, false)
	id := strconv.FormatInt(devID, 10)

	if out, errOut, code := ctl("developers", "list", "--status", "pending_review"); code != 0 || !strings.Contains(out, email) || !strings.Contains(out, "pending_review") {
		t.Fatalf("pending queue: %d %s %s", code, out, errOut)
	}
	if _, errOut, code := ctl("developers", "review", id, "--decision", "reject"); code != 1 || !strings.Contains(errOut, "VALIDATION_ERROR") || !strings.Contains(errOut, "notes") {
		t.Fatalf("reject without notes: %d %s", code, errOut)
	}
	if out, errOut, code := ctl("developers", "review", id, "--decision", "reject", "--notes", "licence missing"); code != 0 || !strings.Contains(out, `"status": "rejected"`) {
		t.Fatalf("reject: %d %s %s", code, out, errOut)
	}
	if _, errOut, code := ctl("developers", "review", id, "--decision", "reject", "--notes", "licence missing"); code != 1 || !strings.Contains(errOut, "ALREADY_REVIEWED") {
		t.Fatalf("the same decision again: %d %s", code, errOut)
	}
	if out, errOut, code := ctl("developers", "review", id, "--decision", "approve"); code != 0 || !strings.Contains(out, `"status": "approved"`) {
		t.Fatalf("approve after the rejection: %d %s %s", code, out, errOut)
	}
	if out, _, code := ctl("developers", "show", id); code != 0 || !strings.Contains(out, `"reviewed_by": "operator:bootstrap"`) {
		t.Fatalf("show: %d %s", code, out)
	}
	if _, errOut, code := ctl("developers", "show", "999999"); code != 1 || !strings.Contains(errOut, "DEVELOPER_NOT_FOUND") {
		t.Fatalf("unknown developer: %d %s", code, errOut)
	}
	for _, args := range [][]string{{"developers"}, {"developers", "review", id}, {"developers", "review", "0", "--decision", "approve"},
		{"developers", "review", id, "--decision", "approved"}, {"developers", "list", "--status", "maybe"}, {"developers", "show"}, {"developers", "nope"}} {
		if _, errOut, code := ctl(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.Node.WaitDecisionMails(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Node.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	out, _, _ := ctl("outbox")
	if strings.Count(out, "Subject: Review of your developer account: rejected") != 1 || strings.Count(out, "Subject: Review of your developer account: approved") != 1 {
		t.Fatalf("decision mails in the outbox:\n%s", out)
	}
}

// `replay` starts, follows and cancels a webhook replay of a real node with
// the app's own credentials: the events the app's receiver already got are
// delivered again under their ids; a finished replay cannot be canceled;
// another app's replay is not found.
func TestReplayAgainstARealNode(t *testing.T) {
	n, err := node.Open(context.Background(), node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	srv := httptest.NewServer(n.Handler)
	defer srv.Close()
	var mu sync.Mutex
	got := map[string]int{} // deliveries received per X-Webhook-Id
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.Header.Get("X-Webhook-Id")]++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hooks.Close()
	received := func() (ids, total int) {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range got {
			total += c
		}
		return len(got), total
	}
	ctl := func(env map[string]string, args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(append([]string{"--server", srv.URL, "--token", n.AdminToken}, args...), &out, &errb, func(k string) string { return env[k] })
		return out.String(), errb.String(), code
	}
	newApp := func(name string) map[string]string {
		out, errOut, code := ctl(nil, "--json", "apps", "create", "--name", name, "--webhook-url", hooks.URL+"/default", "--webhook-event", "user.*")
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
	app, other := newApp("replayed"), newApp("other")

	// A user with a family group and a member: two user.* webhooks.
	api, err := newClient(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	api.sign = partnerCreds{key: app["PLATFORM_APP_KEY"], secret: app["PLATFORM_APP_SECRET"]}.signH
	if _, err := api.do(context.Background(), "POST", "/open/v1/channel/users", json.RawMessage(`{"channel_user_id":"ctl-1","user":{"name":"Li Lei"},`+
		`"family_groups":[{"app_group_id":1,"name":"Home"}],"family_members":[{"app_user_id":"m1","app_group_id":1,"name":"Dad","relationship":"FATHER"}]}`)); err != nil {
		t.Fatal(err)
	}
	var live int
	for i := 0; i < 400; i++ {
		if live, _ = received(); live >= 2 {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if live < 2 {
		t.Fatalf("live deliveries: %d", live)
	}

	if _, errOut, code := ctl(nil, "replay", "status", "1"); code != 2 || !strings.Contains(errOut, "--app-key") {
		t.Fatalf("without credentials: %d %s", code, errOut)
	}
	if _, errOut, code := ctl(app, "replay", "start", "--event", "user.*", "--since", "not-a-time"); code != 1 || !strings.Contains(errOut, "VALIDATION_ERROR") || !strings.Contains(errOut, "since") {
		t.Fatalf("bad since: %d %s", code, errOut)
	}
	out, errOut, code := ctl(app, "--json", "replay", "start", "--event", "user.*", "--since", "1970-01-01T00:00:00Z")
	var rp struct {
		ReplayID  int64  `json:"replay_id"`
		Status    string `json:"status"`
		Matched   int    `json:"matched"`
		Delivered int    `json:"delivered"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rp) != nil || rp.ReplayID <= 0 {
		t.Fatalf("start: %d %s %s", code, out, errOut)
	}
	id := strconv.FormatInt(rp.ReplayID, 10)
	for i := 0; i < 400 && !(rp.Status == "COMPLETED" && rp.Delivered == rp.Matched); i++ {
		time.Sleep(25 * time.Millisecond)
		if out, errOut, code = ctl(app, "--json", "replay", "status", id); code != 0 || json.Unmarshal([]byte(out), &rp) != nil {
			t.Fatalf("status: %d %s %s", code, out, errOut)
		}
	}
	if rp.Status != "COMPLETED" || rp.Matched < live || rp.Delivered != rp.Matched {
		t.Fatalf("replay did not complete: %s", out)
	}
	ids, total := received()
	if ids != live || total < 2*live {
		t.Fatalf("the receiver got %d ids in %d deliveries; want the %d live ids again under the same ids", ids, total, live)
	}
	if _, errOut, code := ctl(app, "replay", "cancel", id); code != 1 || !strings.Contains(errOut, "REPLAY_FINISHED") {
		t.Fatalf("cancel a completed replay: %d %s", code, errOut)
	}
	for _, args := range [][]string{{"replay", "status", id}, {"replay", "cancel", id}} {
		if _, errOut, code := ctl(other, args...); code != 1 || !strings.Contains(errOut, "REPLAY_NOT_FOUND") {
			t.Fatalf("another app's replay (%v): %d %s", args, code, errOut)
		}
	}
	for _, args := range [][]string{{"replay"}, {"replay", "start", "--since", "1970-01-01T00:00:00Z"}, {"replay", "start", "--event", "user.*"},
		{"replay", "start", "--event", "user.*", "--since", "1970-01-01T00:00:00Z", "--cursor", "1-1"}, {"replay", "status"}, {"replay", "status", "x"},
		{"replay", "cancel", "0"}, {"replay", "nope"}} {
		if _, errOut, code := ctl(app, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
}

// `endpoints create|update --description` set and clear an endpoint's
// description on a real node; the list shows it; a description too long is
// the server's 422 (exit 1).
func TestEndpointDescriptionAgainstARealNode(t *testing.T) {
	n, err := node.Open(context.Background(), node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	srv := httptest.NewServer(n.Handler)
	defer srv.Close()
	ctl := func(env map[string]string, args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(append([]string{"--server", srv.URL, "--token", n.AdminToken}, args...), &out, &errb, func(k string) string { return env[k] })
		return out.String(), errb.String(), code
	}
	out, errOut, code := ctl(nil, "--json", "apps", "create", "--name", "described")
	var cr struct {
		AppKey    string `json:"app_key"`
		AppSecret string `json:"app_secret"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &cr) != nil {
		t.Fatalf("create app: %d %s %s", code, out, errOut)
	}
	app := map[string]string{"PLATFORM_APP_KEY": cr.AppKey, "PLATFORM_APP_SECRET": cr.AppSecret}
	out, errOut, code = ctl(app, "--json", "endpoints", "create", "--url", "http://127.0.0.1:9/hook", "--description", "ERP bridge")
	var created endpointView
	if code != 0 || json.Unmarshal([]byte(out), &created) != nil || created.Description != "ERP bridge" {
		t.Fatalf("create: %d %s %s", code, out, errOut)
	}
	id := strconv.FormatInt(created.EndpointID, 10)
	if out, _, code = ctl(app, "endpoints", "list"); code != 0 || !strings.Contains(out, "DESCRIPTION") || !strings.Contains(out, "ERP bridge") {
		t.Fatalf("list: %d %s", code, out)
	}
	if _, errOut, code = ctl(app, "endpoints", "update", id, "--description", strings.Repeat("d", 257)); code != 1 || !strings.Contains(errOut, "description") {
		t.Fatalf("too long: %d %s", code, errOut)
	}
	if out, _, code = ctl(app, "endpoints", "update", id, "--description", ""); code != 0 || !strings.Contains(out, `"description": ""`) {
		t.Fatalf("clear: %d %s", code, out)
	}
}
