package portal_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
)

// confirmed is the field a destructive action's second step posts.
var confirmed = url.Values{"confirm": {"yes"}}

// From an app's page a developer reaches its endpoints, each endpoint's
// delivery log and a test event; the delivery log lists newest first,
// opens each payload and draws the last 24 hours.
func TestAppPageLeadsToWebhooks(t *testing.T) {
	configs(t, node.Config{WebhookAllowLoopback: true}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		b, devID := p.Developer(portaltest.Email(t, "lead"), true)
		creds := devApp(t, p, devID, "Clinic")
		appPath := fmt.Sprintf("/portal/apps/%d", creds.AppID)
		if page := b.Get(appPath); page.Status != http.StatusOK || !strings.Contains(page.Body, `href="`+appPath+`/endpoints"`) ||
			!strings.Contains(page.Text(), "No webhook endpoint yet") {
			t.Fatalf("app page without endpoints: %d %s", page.Status, page.Text())
		}
		rcv := newReceiver(t, "lead")
		epID, _ := addEndpoint(t, b, creds.AppID, rcv.srv.URL+"/hook", "")
		page := b.Get(appPath)
		logPath := fmt.Sprintf("%s/endpoints/%d/deliveries", appPath, epID)
		testAction := fmt.Sprintf("%s/endpoints/%d/test", appPath, epID)
		if !strings.Contains(page.Body, `href="`+logPath+`"`) || !strings.Contains(page.Body, `action="`+testAction+`"`) ||
			!strings.Contains(page.Text(), fmt.Sprintf("Send test event to endpoint %d", epID)) {
			t.Fatalf("app page lacks the endpoint's log and test event: %s", page.Body)
		}
		// Two test events from the app page: the log shows the later first.
		for range 2 {
			if got := b.Post(testAction, nil); got.Status != http.StatusSeeOther {
				t.Fatalf("test event: %d %s", got.Status, got.Text())
			}
		}
		rcv.await(t, 2)
		awaitDelivered(t, p, creds.AppID, epID, 2)
		ds := endpointDeliveries(t, p, creds.AppID, epID)
		log := b.Get(logPath)
		ids := regexp.MustCompile(`id="delivery-([^"]+)"`).FindAllStringSubmatch(log.Body, -1)
		if log.Status != http.StatusOK || len(ids) != 2 || len(ds) != 2 {
			t.Fatalf("log: %d, %d rows, %d deliveries: %s", log.Status, len(ids), len(ds), log.Text())
		}
		// endpointDeliveries lists oldest first (cursor order).
		if ids[0][1] != ds[1].DeliveryID || ids[1][1] != ds[0].DeliveryID {
			t.Fatalf("log order %v, want newest (%s) first", ids, ds[1].DeliveryID)
		}
		text := log.Text()
		for _, want := range []string{"Payload of delivery " + ds[0].DeliveryID, `"delivery_id": "` + ds[0].DeliveryID + `"`,
			"100.0% of 2 attempts delivered", "Last 24 hours", "Times are shown in UTC+08:00 (Asia/Shanghai)", "+08:00"} {
			if !strings.Contains(text, want) && !strings.Contains(log.Body, want) {
				t.Errorf("log lacks %q: %s", want, text)
			}
		}
		if !strings.Contains(log.Body, `<svg class="chart"`) || strings.Count(log.Body, `class="bar-ok"`) < 1 {
			t.Errorf("log draws no chart: %s", log.Body)
		}
		if strings.Contains(log.Body, " UTC<") {
			t.Error("the log still shows UTC times")
		}
	})
}

// awaitDelivered waits (bounded) for n delivered deliveries of an endpoint.
func awaitDelivered(t *testing.T, p *portaltest.Platform, appID, endpointID int64, n int) {
	t.Helper()
	for range 1000 {
		done := 0
		for _, d := range endpointDeliveries(t, p, appID, endpointID) {
			if d.Status == domain.DeliveryDelivered {
				done++
			}
		}
		if done >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("endpoint %d: fewer than %d delivered", endpointID, n)
}

// Deleting an endpoint, rotating a secret and revealing the production
// credentials ask first: the first post answers a confirmation page and
// appends nothing; only its button (confirm=yes) acts. Another
// developer's endpoint is a 404 at both steps.
func TestDestructiveActionsConfirmFirst(t *testing.T) {
	configs(t, node.Config{WebhookAllowLoopback: true}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		b, devID := p.Developer(portaltest.Email(t, "careful"), true)
		other, _ := p.Developer(portaltest.Email(t, "other"), true)
		creds := devApp(t, p, devID, "Clinic")
		rcv := newReceiver(t, "careful")
		epID, _ := addEndpoint(t, b, creds.AppID, rcv.srv.URL+"/hook", "")
		list := fmt.Sprintf("/portal/apps/%d/endpoints", creds.AppID)
		n := streamLength(t, p, creds.AppID)
		for _, c := range []struct{ path, h1, button string }{
			{fmt.Sprintf("%s/%d/delete", list, epID), fmt.Sprintf("Confirm: Delete endpoint %d?", epID), fmt.Sprintf("Delete endpoint %d", epID)},
			{fmt.Sprintf("%s/%d/rotate", list, epID), fmt.Sprintf("Confirm: Rotate the secret of endpoint %d?", epID), fmt.Sprintf("Rotate the secret of endpoint %d", epID)},
			{fmt.Sprintf("/portal/apps/%d/secret", creds.AppID), fmt.Sprintf("Confirm: Rotate the app secret of application %d?", creds.AppID), "Rotate app secret"},
			{fmt.Sprintf("/portal/apps/%d/production", creds.AppID), fmt.Sprintf("Confirm: Reveal the production credentials of application %d?", creds.AppID), "Reveal production credentials"},
		} {
			for _, form := range []url.Values{nil, {"confirm": {"no"}}} {
				page := b.Post(c.path, form)
				if page.Status != http.StatusOK || page.H1() != c.h1 || !strings.Contains(page.Body, `action="`+c.path+`"`) ||
					!strings.Contains(page.Body, `name="confirm" value="yes"`) || !strings.Contains(page.Text(), c.button) ||
					secretPattern.MatchString(page.Body) {
					t.Fatalf("POST %s %v: %d %q %s", c.path, form, page.Status, page.H1(), page.Text())
				}
			}
			if got := other.Post(c.path, confirmed); got.Status != http.StatusNotFound {
				t.Fatalf("POST %s by another developer: %d", c.path, got.Status)
			}
			if got := other.Post(c.path, nil); got.Status != http.StatusNotFound {
				t.Fatalf("POST %s by another developer without confirm: %d", c.path, got.Status)
			}
		}
		if after := streamLength(t, p, creds.AppID); after != n {
			t.Fatalf("unconfirmed or refused posts appended %d events", after-n)
		}
		if page := b.Get(list); !strings.Contains(page.Body, fmt.Sprintf(`id="endpoint-%d"`, epID)) {
			t.Fatal("an unconfirmed delete removed the endpoint")
		}
		if got := b.Post(fmt.Sprintf("%s/%d/delete", list, epID), confirmed); got.Status != http.StatusSeeOther {
			t.Fatalf("confirmed delete: %d %s", got.Status, got.Text())
		}
		if page := b.Get(list); strings.Contains(page.Body, fmt.Sprintf(`id="endpoint-%d"`, epID)) {
			t.Fatal("a confirmed delete left the endpoint")
		}
		if after := streamLength(t, p, creds.AppID); after != n+1 {
			t.Fatalf("the confirmed delete appended %d events, want 1", after-n)
		}
	})
}

// Operators' review buttons look different (approve primary, reject
// danger); a decided application leaves the queue and shows its decision
// with who and when, and a second decision is refused with the spec's
// code and appends nothing.
func TestReviewDecisionsAreDistinctAndFinal(t *testing.T) {
	configs(t, node.Config{}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		email := portaltest.Email(t, "review")
		b, devID := p.Developer(email, true)
		creds := devApp(t, p, devID, "Reviewed")
		b.Get(fmt.Sprintf("/portal/apps/%d", creds.AppID))
		if got := b.Post(fmt.Sprintf("/portal/apps/%d/review", creds.AppID), nil); got.Status != http.StatusSeeOther {
			t.Fatalf("request review: %d %s", got.Status, got.Text())
		}
		ops := p.Operator()
		queue := ops.Get("/portal/ops/apps")
		if !strings.Contains(queue.Body, fmt.Sprintf(`value="approve" class="primary">Approve application %d<`, creds.AppID)) ||
			!strings.Contains(queue.Body, fmt.Sprintf(`value="reject" class="danger">Reject application %d<`, creds.AppID)) {
			t.Fatalf("review buttons not distinct: %s", queue.Body)
		}
		review := fmt.Sprintf("/portal/ops/apps/%d/review", creds.AppID)
		if got := ops.Post(review, url.Values{"decision": {"reject"}, "reason": {"no privacy policy"}}); got.Status != http.StatusSeeOther {
			t.Fatalf("reject: %d %s", got.Status, got.Text())
		}
		queue = ops.Get("/portal/ops/apps")
		if strings.Contains(queue.Body, fmt.Sprintf("Approve application %d", creds.AppID)) {
			t.Fatal("the decided application still offers Approve")
		}
		row := regexp.MustCompile(fmt.Sprintf(`(?s)<tr id="decided-%d">.*?</tr>`, creds.AppID)).FindString(queue.Body)
		for _, want := range []string{"rejected", "no privacy policy", "operator:bootstrap", "&#43;08:00"} {
			if !strings.Contains(row, want) {
				t.Errorf("decided row lacks %q: %q", want, row)
			}
		}
		// The developer is told through the outbox, with the reviewer's note.
		mail := outboxRow(t, ops, fmt.Sprintf("Review of your application %d (Reviewed): rejected", creds.AppID))
		if !strings.Contains(mail, email) || !strings.Contains(mail, "The reviewer&#39;s note: no privacy policy") {
			t.Fatalf("decision mail: %s", mail)
		}
		n := streamLength(t, p, creds.AppID)
		again := ops.Post(review, url.Values{"decision": {"approve"}})
		if again.Status != http.StatusConflict {
			t.Fatalf("second decision in the portal: %d %s", again.Status, again.Text())
		}
		req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/admin/v1/apps/%d/review", p.Srv.URL, creds.AppID), strings.NewReader(`{"decision":"approve"}`))
		req.Header.Set("Authorization", "Bearer "+p.Node.AdminToken)
		req.Header.Set("Content-Type", "application/json")
		res, err := p.Srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusConflict || !strings.Contains(string(raw), "ALREADY_REVIEWED") {
			t.Fatalf("second decision by the admin API: %d %s", res.StatusCode, raw)
		}
		if after := streamLength(t, p, creds.AppID); after != n {
			t.Fatalf("refused decisions appended %d events", after-n)
		}
	})
}

// The developer review shows who decided and when; the buttons look
// different and the one repeating the decision is gone.
func TestDeveloperDecisionShownWithWhoAndWhen(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir()})
	email := portaltest.Email(t, "dev")
	_, id := p.Developer(email, false)
	ops := p.Operator()
	list := ops.Get("/portal/ops/developers")
	if !strings.Contains(list.Body, fmt.Sprintf(`class="primary">Approve developer %d<`, id)) || !strings.Contains(list.Body, fmt.Sprintf(`class="danger">Reject developer %d<`, id)) {
		t.Fatalf("developer review buttons: %s", list.Body)
	}
	if got := ops.Post(fmt.Sprintf("/portal/ops/developers/%d/review", id), url.Values{"decision": {"approved"}, "reason": {"ok"}}); got.Status != http.StatusSeeOther {
		t.Fatalf("approve: %d", got.Status)
	}
	row := regexp.MustCompile(fmt.Sprintf(`(?s)<tr id="developer-%d">.*?</tr>`, id)).FindString(ops.Get("/portal/ops/developers?status=all").Body)
	if !strings.Contains(row, "by operator:bootstrap at ") || !strings.Contains(row, "&#43;08:00") || strings.Contains(row, "Approve developer") ||
		!strings.Contains(row, "Reject developer") {
		t.Fatalf("decided developer row: %s", row)
	}
	if mail := outboxRow(t, ops, "Review of your developer account: approved"); !strings.Contains(mail, email) {
		t.Fatalf("decision mail: %s", mail)
	}
}

// outboxRow is the operators' outbox row of the mail with subject (bounded wait).
func outboxRow(t *testing.T, ops *portaltest.Browser, subject string) string {
	t.Helper()
	var box string
	for range 250 {
		box = ops.Get("/portal/ops/outbox").Body
		for _, row := range regexp.MustCompile(`(?s)<tr id="mail-.*?</tr>`).FindAllString(box, -1) {
			if strings.Contains(row, subject) {
				return row
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no mail %q in the outbox: %s", subject, box)
	return ""
}

// The site's icon is served where browsers ask for it, and the landing
// page's title says its name once.
func TestFaviconAndLandingTitle(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir()})
	res, err := p.Srv.Client().Get(p.Srv.URL + "/favicon.ico")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "image/x-icon" || len(raw) < 22 || string(raw[:4]) != "\x00\x00\x01\x00" {
		t.Fatalf("favicon: %d %q %d bytes", res.StatusCode, res.Header.Get("Content-Type"), len(raw))
	}
	page := p.Browser().Get("/portal/")
	title := regexp.MustCompile(`<title>([^<]*)</title>`).FindStringSubmatch(page.Body)
	if title == nil || strings.Count(title[1], "Developer portal") != 1 {
		t.Fatalf("landing title: %v", title)
	}
}

// Once the person a delivery is about is erased, the log no longer opens
// its payload: it says it was redacted, and the body's data is gone from
// the page.
func TestDeliveryLogRedactsErasedPayloads(t *testing.T) {
	configs(t, node.Config{WebhookAllowLoopback: true}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		b, devID := p.Developer(portaltest.Email(t, "erase"), true)
		creds := devApp(t, p, devID, "Clinic")
		rcv := newReceiver(t, "erase")
		epID, _ := addEndpoint(t, b, creds.AppID, rcv.srv.URL+"/hook", "user.family_group.created")
		registerUser(t, p, creds, "u-erased")
		rcv.await(t, 1)
		awaitDelivered(t, p, creds.AppID, epID, 1)
		d := endpointDeliveries(t, p, creds.AppID, epID)[0]
		logPath := fmt.Sprintf("/portal/apps/%d/endpoints/%d/deliveries", creds.AppID, epID)
		if log := b.Get(logPath); !strings.Contains(log.Text(), "Payload of delivery "+d.DeliveryID) || !strings.Contains(log.Text(), `"channel_user_id": "u-erased"`) {
			t.Fatalf("log before erasure: %s", log.Text())
		}
		openUserID := strings.TrimPrefix(d.Subject, "user-")
		req, _ := http.NewRequest(http.MethodPost, p.Srv.URL+"/admin/v1/channel-users/"+openUserID+"/erase", strings.NewReader(`{"reason":"ticket 9"}`))
		req.Header.Set("Authorization", "Bearer "+p.Node.AdminToken)
		req.Header.Set("Content-Type", "application/json")
		res, err := p.Srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("erase user %s: %d %s", openUserID, res.StatusCode, raw)
		}
		var log portaltest.Page
		for range 250 {
			if log = b.Get(logPath); strings.Contains(log.Text(), "Payload redacted") {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		row := regexp.MustCompile(`(?s)<section class="delivery" id="delivery-` + regexp.QuoteMeta(d.DeliveryID) + `".*?</section>`).FindString(log.Body)
		if !strings.Contains(row, "Payload redacted: the person it was about was erased.") || strings.Contains(row, "Payload of delivery") ||
			strings.Contains(log.Body, "u-erased") {
			t.Fatalf("log after erasure: %s", row)
		}
	})
}
