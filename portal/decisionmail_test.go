package portal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
)

// openPlatform opens a node on cfg and serves it; close stops both (the
// test restarts the node on the same data).
func openPlatform(t *testing.T, cfg node.Config) (p *portaltest.Platform, close func()) {
	t.Helper()
	if cfg.Portal.Passwords.Time == 0 {
		cfg.Portal.Passwords = portaltest.FastPasswords
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n, err := node.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p = &portaltest.Platform{T: t, Node: n, Srv: httptest.NewTLSServer(n.Handler)}
	done := false
	close = func() {
		if done {
			return
		}
		done = true
		p.Srv.Close()
		if err := n.Close(); err != nil {
			t.Errorf("close node: %v", err)
		}
	}
	t.Cleanup(close)
	return p, close
}

// adminJSON sends an admin API request with the bootstrap token and
// returns the status and the decoded envelope.
func adminJSON(t *testing.T, p *portaltest.Platform, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, p.Srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.Node.AdminToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := p.Srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var env map[string]any
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	return res.StatusCode, env
}

// decisionMails are the subjects of the review mails queued for a
// developer, once every decision in the log has been looked at.
func decisionMails(t *testing.T, n *node.Node, devID int64) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.WaitDecisionMails(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range n.Developers.Outbox(false) {
		if m.DeveloperID == devID && strings.HasPrefix(m.Subject, "Review of your") {
			out = append(out, m.Subject)
		}
	}
	return out
}

func developerStream(t *testing.T, p *portaltest.Platform, id int64) int {
	t.Helper()
	recs, err := p.Node.Events.ReadStream(context.Background(), domain.DeveloperStream(id), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// An operator reviews a developer's qualification through the admin API as
// through the ops pages: bad input and a repeated decision append nothing,
// a rejection may be replaced by an approval, both are audit facts, and the
// developer gets exactly one mail per decision, also after a restart of
// the node (the mails come from the decision events, keyed by event id).
func TestDeveloperReviewByAdminAPIMailsEachDecisionOnce(t *testing.T) {
	configs(t, node.Config{}, func(t *testing.T, cfg node.Config) {
		p, stop := openPlatform(t, cfg)
		email := portaltest.Email(t, "papers")
		_, id := p.Developer(email, false)
		review := fmt.Sprintf("/admin/v1/developers/%d/review", id)
		n := developerStream(t, p, id)

		if st, env := adminJSON(t, p, "POST", review, `{"decision":"reject"}`); st != 422 || env["code"] != "VALIDATION_ERROR" ||
			env["errors"].(map[string]any)["notes"] == nil {
			t.Fatalf("rejection without notes: %d %v", st, env)
		}
		if st, env := adminJSON(t, p, "POST", review, `{"decision":"approved"}`); st != 422 || env["errors"].(map[string]any)["decision"] == nil {
			t.Fatalf("unknown decision: %d %v", st, env)
		}
		if st, env := adminJSON(t, p, "POST", "/admin/v1/developers/999999/review", `{"decision":"approve"}`); st != 404 || env["code"] != "DEVELOPER_NOT_FOUND" {
			t.Fatalf("unknown developer: %d %v", st, env)
		}
		if st, env := adminJSON(t, p, "GET", "/admin/v1/developers/999999", ""); st != 404 || env["code"] != "DEVELOPER_NOT_FOUND" {
			t.Fatalf("unknown developer read: %d %v", st, env)
		}
		if after := developerStream(t, p, id); after != n {
			t.Fatalf("refused reviews appended %d events", after-n)
		}
		if st, env := adminJSON(t, p, "GET", "/admin/v1/developers?status=pending_review", ""); st != 200 || !strings.Contains(fmt.Sprint(env["data"]), email) {
			t.Fatalf("pending queue: %d %v", st, env)
		}

		if st, env := adminJSON(t, p, "POST", review, `{"decision":"reject","notes":"papers missing"}`); st != 200 || env["data"].(map[string]any)["status"] != "rejected" {
			t.Fatalf("reject: %d %v", st, env)
		}
		n = developerStream(t, p, id)
		if st, env := adminJSON(t, p, "POST", review, `{"decision":"reject","notes":"papers missing"}`); st != 409 || env["code"] != "ALREADY_REVIEWED" {
			t.Fatalf("the same decision again: %d %v", st, env)
		}
		if after := developerStream(t, p, id); after != n {
			t.Fatalf("a repeated decision appended %d events", after-n)
		}
		// The papers arrive: the rejection is replaced.
		if st, env := adminJSON(t, p, "POST", review, `{"decision":"approve","notes":"papers received"}`); st != 200 || env["data"].(map[string]any)["status"] != "approved" {
			t.Fatalf("approve after rejection: %d %v", st, env)
		}
		st, env := adminJSON(t, p, "GET", fmt.Sprintf("/admin/v1/developers/%d", id), "")
		got := env["data"].(map[string]any)
		if st != 200 || got["status"] != "approved" || got["reason"] != "papers received" || got["reviewed_by"] != "operator:bootstrap" || got["email"] != email {
			t.Fatalf("developer after review: %d %v", st, env)
		}
		// The audit read model follows the log: wait until it has both decisions.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := p.Node.WaitCaughtUp(ctx); err != nil {
			t.Fatal(err)
		}
		q := url.Values{"action": {"developer.reviewed"}, "subject": {domain.DeveloperStream(id)}}
		st, env = adminJSON(t, p, "GET", "/admin/v1/audit?"+q.Encode(), "")
		if facts := fmt.Sprint(env["data"]); st != 200 || strings.Count(facts, "operator:bootstrap") != 2 {
			t.Fatalf("audit facts of the two decisions: %d %v", st, env)
		}

		want := []string{"Review of your developer account: approved", "Review of your developer account: rejected"}
		if got := decisionMails(t, p.Node, id); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("mails after two decisions: %q, want %q", got, want)
		}
		stop()
		p, _ = openPlatform(t, cfg)
		if got := decisionMails(t, p.Node, id); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("mails after a restart: %q, want %q", got, want)
		}
	})
}

// A decision in the ops pages is mailed once too: the page no longer mails
// itself, the decision's event does.
func TestOpsPageDecisionMailsOnce(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir()})
	_, id := p.Developer(portaltest.Email(t, "page"), false)
	ops := p.Operator()
	if got := ops.Post(fmt.Sprintf("/portal/ops/developers/%d/review", id), url.Values{"decision": {"rejected"}, "reason": {"no papers"}}); got.Status != http.StatusSeeOther {
		t.Fatalf("reject in the page: %d %s", got.Status, got.Text())
	}
	if got := decisionMails(t, p.Node, id); fmt.Sprint(got) != "[Review of your developer account: rejected]" {
		t.Fatalf("mails after a page decision: %q", got)
	}
}

// App and provider decisions taken through the admin API mail their
// developer once each, like the ops pages' (whose mails come from the
// same events); an app or provider without a developer mails nobody.
func TestAppAndProviderDecisionsByAdminAPIMailOnce(t *testing.T) {
	configs(t, node.Config{}, func(t *testing.T, cfg node.Config) {
		p, _ := openPlatform(t, cfg)
		_, devID := p.Developer(portaltest.Email(t, "apps"), true)
		creds := devApp(t, p, devID, "Mailed")
		ctx := context.Background()
		if _, err := p.Node.Portal.Apps.RequestReview(ctx, creds.AppID, "", commands.Meta{Actor: commands.DeveloperActor(devID)}); err != nil {
			t.Fatal(err)
		}
		provID, _, err := p.Node.Portal.Benefits.RegisterProvider(ctx, commands.ProviderInput{AppID: creds.AppID, Name: "Clinic", Type: "SERVICE_PROVIDER",
			Contact: "010-1", DeveloperID: devID}, commands.Meta{Actor: commands.DeveloperActor(devID)})
		if err != nil {
			t.Fatal(err)
		}
		if st, env := adminJSON(t, p, "POST", fmt.Sprintf("/admin/v1/apps/%d/review", creds.AppID), `{"decision":"reject","notes":"no privacy policy"}`); st != 200 {
			t.Fatalf("app review: %d %v", st, env)
		}
		if st, env := adminJSON(t, p, "POST", fmt.Sprintf("/admin/v1/service-providers/%d/review", provID), `{"decision":"approve"}`); st != 200 {
			t.Fatalf("provider review: %d %v", st, env)
		}
		// Final: the second decision is refused and mails nothing.
		if st, env := adminJSON(t, p, "POST", fmt.Sprintf("/admin/v1/service-providers/%d/review", provID), `{"decision":"reject"}`); st != 409 || env["code"] != "ALREADY_REVIEWED" {
			t.Fatalf("second provider review: %d %v", st, env)
		}
		want := fmt.Sprint([]string{
			fmt.Sprintf("Review of your service provider %d (Clinic): approved", provID),
			fmt.Sprintf("Review of your application %d (Mailed): rejected", creds.AppID),
			"Review of your developer account: approved",
		})
		if got := decisionMails(t, p.Node, devID); fmt.Sprint(got) != want {
			t.Fatalf("mails: %q, want %s", got, want)
		}
		var body string
		for _, m := range p.Node.Developers.Outbox(false) {
			if strings.HasPrefix(m.Subject, "Review of your application") && m.DeveloperID == devID {
				body = m.Body
			}
		}
		if !strings.Contains(body, "The reviewer's note: no privacy policy") || !strings.Contains(body, "Request the review again") {
			t.Fatalf("app decision mail body: %s", body)
		}
	})
}

// A restarted embedded node resumes the review decision mails where its
// last run left them: it does not read the whole log again for the few
// decisions in it (an embedded log has no index by type, so every start
// read every event, seconds of CPU and the log's pages resident on a large
// log), and it mails no decision twice.
func TestRestartResumesDecisionMailsWithoutReadingTheLogAgain(t *testing.T) {
	cfg := node.Config{DataDir: t.TempDir()}
	p, stop := openPlatform(t, cfg)
	email := portaltest.Email(t, "resume")
	_, id := p.Developer(email, false)
	review := fmt.Sprintf("/admin/v1/developers/%d/review", id)
	if st, env := adminJSON(t, p, "POST", review, `{"decision":"approve","notes":"papers received"}`); st != 200 {
		t.Fatalf("approve: %d %v", st, env)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.Node.WaitDecisionMails(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{"Review of your developer account: approved"}
	if got := decisionMails(t, p.Node, id); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("mails after the decision: %q, want %q", got, want)
	}
	stop()

	p, _ = openPlatform(t, cfg)
	if err := p.Node.WaitDecisionMails(ctx); err != nil {
		t.Fatal(err)
	}
	head, err := p.Node.Events.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	read := testutil.ToFloat64(p.Node.Metrics.ProjectionEvents.WithLabelValues("review_decision_mails"))
	if read >= float64(head.Commit)/2 {
		t.Fatalf("the restarted node read %.0f of the log's %d events again for the decision mails", read, head.Commit)
	}
	if got := decisionMails(t, p.Node, id); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("mails after a restart: %q, want %q", got, want)
	}
}
