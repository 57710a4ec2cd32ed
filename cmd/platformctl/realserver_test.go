package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/node"
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
