package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
)

// TestAgainstARealNode drives the CLI against the real handler of an
// embedded node: create, list, show, rotate, history and rebuild.
func TestAgainstARealNode(t *testing.T) {
	n, err := node.Open(context.Background(), node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	srv := httptest.NewServer(n.Handler)
	defer srv.Close()
	env := func(string) string { return "" }
	ctl := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(append([]string{"--server", srv.URL, "--token", n.AdminToken}, args...), &out, &errb, env)
		return out.String(), errb.String(), code
	}

	out, errOut, code := ctl("apps", "create", "--name", "cli app", "--environment", "production")
	if code != 0 {
		t.Fatalf("create: %d %s %s", code, out, errOut)
	}
	id := regexp.MustCompile(`app_id[=: ]+(\d+)`).FindStringSubmatch(out)
	if id == nil || !strings.Contains(out, "app_secret") {
		t.Fatalf("create output:\n%s", out)
	}
	if out, _, code = ctl("apps", "list"); code != 0 || !strings.Contains(out, "cli app") || strings.Contains(out, "as_") {
		t.Fatalf("list: %d\n%s", code, out)
	}
	if out, _, code = ctl("apps", "show", id[1]); code != 0 || !strings.Contains(out, "production") {
		t.Fatalf("show: %d\n%s", code, out)
	}
	if out, _, code = ctl("apps", "rotate-secret", id[1]); code != 0 || !strings.Contains(out, "as_") {
		t.Fatalf("rotate: %d\n%s", code, out)
	}
	if out, _, code = ctl("history", "app-"+id[1]); code != 0 || !strings.Contains(out, "app.created") || !strings.Contains(out, "app.secret_rotated") {
		t.Fatalf("history: %d\n%s", code, out)
	}
	if out, errOut, code = ctl("rebuild", "read_models"); code != 0 || !strings.Contains(out, "rebuilt") {
		t.Fatalf("rebuild: %d\n%s\n%s", code, out, errOut)
	}
	if _, errOut, code = ctl("apps", "show", "999"); code != 1 || !strings.Contains(errOut, "APP_NOT_FOUND") {
		t.Fatalf("missing app: %d %s", code, errOut)
	}
	if out, errOut, code = ctl("apps", "webhook", id[1], "--url", "ftp://x"); code != 1 || !strings.Contains(errOut, "webhook_url") {
		t.Fatalf("bad webhook url: %d %s %s", code, out, errOut)
	}
	if out, errOut, code = ctl("apps", "webhook", id[1], "--url", "http://127.0.0.1:9/hook", "--event", "user.*"); code != 0 {
		t.Fatalf("webhook: %d %s %s", code, out, errOut)
	}
	if out, _, code = ctl("apps", "show", id[1]); code != 0 || !strings.Contains(out, "http://127.0.0.1:9/hook") {
		t.Fatalf("show after webhook: %d\n%s", code, out)
	}
	if out, errOut, code = ctl("deliveries", "list", "--app", id[1]); code != 0 || !strings.Contains(out, "DELIVERY_ID") {
		t.Fatalf("deliveries list: %d %s %s", code, out, errOut)
	}
	if _, errOut, code = ctl("deliveries", "show", "no-such-id"); code != 1 || !strings.Contains(errOut, "DELIVERY_NOT_FOUND") {
		t.Fatalf("deliveries show missing: %d %s", code, errOut)
	}
	if out, errOut, code = ctl("goods", "create", "--code", "BP-1", "--name", "Monitor"); code != 0 || !strings.Contains(out, "goods_id") {
		t.Fatalf("goods create: %d %s %s", code, out, errOut)
	}
	if out, _, code = ctl("goods", "deactivate", "BP-1"); code != 0 {
		t.Fatalf("goods deactivate: %d %s", code, out)
	}
	if out, _, code = ctl("goods", "list"); code != 0 || !strings.Contains(out, "BP-1") || !strings.Contains(out, "false") {
		t.Fatalf("goods list: %d %s", code, out)
	}
	if _, errOut, code = ctl("orders", "approve", "PO2026010199"); code != 1 || !strings.Contains(errOut, "ORDER_NOT_FOUND") {
		t.Fatalf("orders approve missing: %d %s", code, errOut)
	}
	if out, _, code = ctl("apps", "review", id[1], "--decision", "approve"); code != 1 {
		t.Fatalf("review of a production app: %d %s", code, out)
	}
	out, _, _ = ctl("apps", "create", "--name", "sandbox app")
	sandbox := regexp.MustCompile(`app_id[=: ]+(\d+)`).FindStringSubmatch(out)
	if out, errOut, code = ctl("apps", "review", sandbox[1], "--decision", "approve"); code != 0 || !strings.Contains(out, "production") {
		t.Fatalf("apps review: %d %s %s", code, out, errOut)
	}
	if out, errOut, code = ctl("deliveries", "resend-matching", "--app", id[1], "--status", "abandoned"); code != 0 || !strings.Contains(out, "queued=0") {
		t.Fatalf("resend-matching: %d %s %s", code, out, errOut)
	}
}

// TestOperatorsAndAuditAgainstARealNode: operators are created, listed and
// revoked; an auditor's reveal needs --reason and is listed by `audit`.
func TestOperatorsAndAuditAgainstARealNode(t *testing.T) {
	n, err := node.Open(context.Background(), node.Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	srv := httptest.NewServer(n.Handler)
	defer srv.Close()
	ctl := func(token string, args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(append([]string{"--server", srv.URL, "--token", token}, args...), &out, &errb, func(string) string { return "" })
		return out.String(), errb.String(), code
	}
	out, errOut, code := ctl(n.AdminToken, "operators", "create", "--name", "Ada", "--role", "auditor")
	tok := regexp.MustCompile(`token: (opr_[0-9a-f]+)`).FindStringSubmatch(out)
	id := regexp.MustCompile(`operator_id: (\d+)`).FindStringSubmatch(out)
	if code != 0 || tok == nil || id == nil {
		t.Fatalf("create: %d\n%s\n%s", code, out, errOut)
	}
	if out, _, code = ctl(n.AdminToken, "operators", "list"); code != 0 || !strings.Contains(out, "Ada") || strings.Contains(out, tok[1]) {
		t.Fatalf("list: %d\n%s", code, out)
	}
	if _, errOut, code = ctl(tok[1], "history", "app-1", "--reveal"); code != 1 || !strings.Contains(errOut, "reason") {
		t.Fatalf("reveal without a reason: %d %s", code, errOut)
	}
	if _, errOut, code = ctl(tok[1], "history", "ids-operator", "--reveal", "--reason", "ticket 7"); code != 0 {
		t.Fatalf("reveal: %d %s", code, errOut)
	}
	if out, errOut, code = ctl(tok[1], "audit", "--actor", "operator:"+id[1]); code != 0 || !strings.Contains(out, "reveal.history") || !strings.Contains(out, "ticket 7") {
		t.Fatalf("audit: %d\n%s\n%s", code, out, errOut)
	}
	if _, errOut, code = ctl(tok[1], "operators", "list"); code != 1 || !strings.Contains(errOut, "ROLE_FORBIDDEN") {
		t.Fatalf("auditor lists operators: %d %s", code, errOut)
	}
	if out, errOut, code = ctl(n.AdminToken, "operators", "revoke", id[1]); code != 0 {
		t.Fatalf("revoke: %d %s %s", code, out, errOut)
	}
	if _, errOut, code = ctl(tok[1], "audit"); code != 1 || !strings.Contains(errOut, "HTTP_401") {
		t.Fatalf("revoked: %d %s", code, errOut)
	}
}

// TestOutboxAgainstARealNode: a password reset asked for in the portal of
// a node without SMTP waits in the outbox, and `platformctl outbox` prints
// it with its reset link, newest first; support operators are refused.
func TestOutboxAgainstARealNode(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir()})
	srv := httptest.NewServer(p.Node.Handler) // plain HTTP for the CLI; the browser uses p's TLS server
	defer srv.Close()
	ctl := func(token string, args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(append([]string{"--server", srv.URL, "--token", token}, args...), &out, &errb, func(string) string { return "" })
		return out.String(), errb.String(), code
	}
	if out, errOut, code := ctl(p.Node.AdminToken, "outbox"); code != 0 || !strings.Contains(out, "the outbox is empty") {
		t.Fatalf("empty: %d %s %s", code, out, errOut)
	}
	email := portaltest.Email(t, "Ctl")
	dev, devID := p.Developer(email, true)
	// apps show: a portal developer's app says whose it is and what for.
	dev.Get("/portal/apps/new")
	created := dev.Post("/portal/apps", url.Values{"name": {"Clinic"}, "purpose": {"Sync reports"}, "scopes": {"orders"}})
	appID := regexp.MustCompile(`<dd class="app-id">(\d+)</dd>`).FindStringSubmatch(created.Body)
	if created.Status != http.StatusCreated || appID == nil {
		t.Fatalf("portal app: %d %s", created.Status, created.Text())
	}
	if out, errOut, code := ctl(p.Node.AdminToken, "apps", "show", appID[1]); code != 0 ||
		!regexp.MustCompile(fmt.Sprintf(`(?m)^developer_id +%d$`, devID)).MatchString(out) || !regexp.MustCompile(`(?m)^purpose +Sync reports$`).MatchString(out) {
		t.Fatalf("apps show: %d %s %s", code, out, errOut)
	}
	b := p.Browser()
	b.Get("/portal/password/forgot")
	if got := b.Post("/portal/password/forgot", url.Values{"email": {email}}); got.Status != http.StatusOK {
		t.Fatalf("forgot: %d", got.Status)
	}
	// The outbox is a projection: poll (bounded) until the mail is listed.
	var out string
	for i := 0; i < 200 && !strings.Contains(out, "/portal/password/reset?token="); i++ {
		if i > 0 {
			time.Sleep(25 * time.Millisecond)
		}
		var errOut string
		var code int
		if out, errOut, code = ctl(p.Node.AdminToken, "outbox", "--status", "queued"); code != 0 {
			t.Fatalf("outbox: %d %s %s", code, out, errOut)
		}
	}
	if !strings.Contains(out, "To: "+email) || !regexp.MustCompile(`(?m)^mail \d+  queued  `).MatchString(out) ||
		!regexp.MustCompile(`/portal/password/reset\?token=\S+`).MatchString(out) {
		t.Fatalf("outbox output:\n%s", out)
	}
	if out, _, code := ctl(p.Node.AdminToken, "outbox", "--status", "sent"); code != 0 || !strings.Contains(out, "the outbox is empty") {
		t.Fatalf("sent only: %d %s", code, out)
	}
	if out, _, code := ctl(p.Node.AdminToken, "--json", "outbox"); code != 0 || !strings.Contains(out, `"mails": [`) || !strings.Contains(out, email) {
		t.Fatalf("json: %d %s", code, out)
	}
	if _, errOut, code := ctl(p.Node.AdminToken, "outbox", "--status", "lost"); code != 1 || !strings.Contains(errOut, "VALIDATION_ERROR") || !strings.Contains(errOut, "status:") {
		t.Fatalf("bad status: %d %s", code, errOut)
	}
	out, errOut, code := ctl(p.Node.AdminToken, "operators", "create", "--name", "Sue", "--role", "support")
	tok := regexp.MustCompile(`token: (opr_[0-9a-f]+)`).FindStringSubmatch(out)
	if code != 0 || tok == nil {
		t.Fatalf("create support operator: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := ctl(tok[1], "outbox"); code != 1 || !strings.Contains(errOut, "ROLE_FORBIDDEN") || strings.Contains(out, email) {
		t.Fatalf("support reads the outbox: %d %s %s", code, out, errOut)
	}
}

// TestResendMatchingPastTheServersCap: the server examines a bounded number
// of deliveries per bulk resend call and answers next_after; resend-matching
// follows it, so one run resends the whole backlog and prints the total.
func TestResendMatchingPastTheServersCap(t *testing.T) {
	n, err := node.Open(context.Background(), node.Config{DataDir: t.TempDir(), BulkResendCap: 50, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	srv := httptest.NewServer(n.Handler)
	defer srv.Close()
	ctl := func(args ...string) (string, string, int) {
		var out, errb bytes.Buffer
		code := run(append([]string{"--server", srv.URL, "--token", n.AdminToken}, args...), &out, &errb, func(string) string { return "" })
		return out.String(), errb.String(), code
	}
	out, errOut, code := ctl("apps", "create", "--name", "backlog")
	id := regexp.MustCompile(`app_id[=: ]+(\d+)`).FindStringSubmatch(out)
	if code != 0 || id == nil {
		t.Fatalf("create: %d %s %s", code, out, errOut)
	}
	appID, _ := strconv.ParseInt(id[1], 10, 64)
	// Suspended, the app's resent deliveries stay pending.
	if out, errOut, code = ctl("apps", "suspend", id[1], "--reason", "backlog"); code != 0 {
		t.Fatalf("suspend: %d %s %s", code, out, errOut)
	}
	// 130 deliveries recorded and never sent (the app has no URL).
	var parts []events.StreamAppend
	for i := range 130 {
		did := fmt.Sprintf("cli-%d-%03d", appID, i)
		ev, err := n.Registry.Encode(catalog.DeliveryCreated{DeliveryID: did, AppID: appID, Event: "user.profile.updated",
			SourceEventID: did, SourceStream: "cli-source", Body: `{"event":"user.profile.updated"}`},
			events.Metadata{AppID: appID, Actor: "dispatcher", OccurredAt: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, events.StreamAppend{Stream: domain.DeliveryStream(did), Expected: events.NoStream(), Events: []events.Proposed{ev}})
	}
	if _, err := events.AppendMulti(context.Background(), n.Events, parts...); err != nil {
		t.Fatal(err)
	}
	if err := n.WaitCaughtUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code = ctl("deliveries", "resend-matching", "--app", id[1], "--status", "skipped"); code != 0 || out != "queued=130\n" {
		t.Fatalf("resend-matching: %d %q %s", code, out, errOut)
	}
	if out, errOut, code = ctl("--json", "deliveries", "resend-matching", "--app", id[1]); code != 0 || !strings.Contains(out, `"queued": 0`) {
		t.Fatalf("resend-matching again (all pending): %d %q %s", code, out, errOut)
	}
}
