package portal_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/webhooks"
)

// receiver is a webhook receiver on loopback that records what it gets
// and answers 200 with its own name (the log shows it as the excerpt).
type receiver struct {
	name string
	srv  *httptest.Server
	mu   sync.Mutex
	got  []received
}

type received struct {
	id, event, ts, sig string
	body               []byte
}

func newReceiver(t *testing.T, name string) *receiver {
	r := &receiver{name: name}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{req.Header.Get("X-Webhook-Id"), req.Header.Get("X-Webhook-Event"),
			req.Header.Get("X-Webhook-Timestamp"), req.Header.Get("X-Webhook-Signature"), body})
		r.mu.Unlock()
		fmt.Fprintf(w, "ok from %s", name)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) all() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// await waits (bounded) until the receiver has n webhooks.
func (r *receiver) await(t *testing.T, n int) []received {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if got := r.all(); len(got) >= n {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("receiver %s got %d webhooks, want %d", r.name, len(r.all()), n)
	return nil
}

// verify checks a webhook as a receiver must: its signature with the
// endpoint's secret, and the body's delivery_id against X-Webhook-Id.
func verify(t *testing.T, w received, secret string) {
	t.Helper()
	if want := webhooks.Sign(secret, w.ts, w.body); w.sig != want {
		t.Errorf("%s %s: signature does not verify with the endpoint's secret", w.event, w.id)
	}
	var body struct {
		DeliveryID string `json:"delivery_id"`
		Event      string `json:"event"`
	}
	if err := json.Unmarshal(w.body, &body); err != nil || body.DeliveryID != w.id || body.Event != w.event {
		t.Errorf("body %s does not repeat X-Webhook-Id %s and X-Webhook-Event %s", w.body, w.id, w.event)
	}
}

var secretPattern = regexp.MustCompile(`whsec_[A-Za-z0-9_-]+`)

// devApp creates an app owned by a developer through the app command, as
// the portal's app pages do.
func devApp(t *testing.T, p *portaltest.Platform, devID int64, name string) commands.Credentials {
	t.Helper()
	creds, err := p.Node.Portal.Apps.Create(context.Background(), commands.CreateApp{Name: name, Scopes: domain.DefaultScopes, DeveloperID: devID, Purpose: "endpoint tests"},
		commands.Meta{Actor: commands.DeveloperActor(devID)})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Node.Dispatcher.AppsReady.WaitFor(context.Background(), creds.Position); err != nil {
		t.Fatal(err)
	}
	return creds
}

// addEndpoint adds an endpoint through the page and returns its id and secret.
func addEndpoint(t *testing.T, b *portaltest.Browser, appID int64, u, evs string) (int64, string) {
	t.Helper()
	list := fmt.Sprintf("/portal/apps/%d/endpoints", appID)
	b.Get(list)
	page := b.Post(list, url.Values{"url": {u}, "events": {evs}})
	if page.Status != http.StatusOK || !strings.Contains(page.Header.Get("Cache-Control"), "no-store") {
		t.Fatalf("add endpoint: %d %q %s", page.Status, page.Header.Get("Cache-Control"), page.Text())
	}
	secret := secretPattern.FindString(page.Body)
	m := regexp.MustCompile(`Webhook secret of endpoint (\d+)`).FindStringSubmatch(page.H1())
	if secret == "" || m == nil {
		t.Fatalf("add endpoint shows no secret: %q %s", page.H1(), page.Text())
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	return id, secret
}

// registerUser registers a channel user through the partner API (scheme M),
// which appends user.family_group.created and two user.family_member.created.
func registerUser(t *testing.T, p *portaltest.Platform, creds commands.Credentials, channelUserID string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"channel_user_id": channelUserID, "user": map[string]any{"name": "Li"},
		"family_groups": []any{map[string]any{"app_group_id": 10, "name": "Home"}},
		"family_members": []any{map[string]any{"app_user_id": "self", "app_group_id": 10, "name": "Li", "relationship": "SELF"},
			map[string]any{"app_user_id": "wife", "app_group_id": 10, "name": "Han", "relationship": "SPOUSE"}},
	})
	req, _ := http.NewRequest(http.MethodPost, p.Srv.URL+"/open/v1/channel/users", bytes.NewReader(body))
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-App-Id", strconv.FormatInt(creds.AppID, 10))
	req.Header.Set("X-Timestamp", ts)
	req.Header.Set("X-Signature", fmt.Sprintf("%x", md5.Sum([]byte(creds.AppKey+ts+creds.AppSecret+string(body)))))
	res, err := p.Srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("register: %d %s", res.StatusCode, raw)
	}
}

func eventNames(rs []received) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.event)
	}
	slices.Sort(out)
	return out
}

func endpointDeliveries(t *testing.T, p *portaltest.Platform, appID, endpointID int64) []projections.Delivery {
	t.Helper()
	ds, err := p.Node.ReadModel.Deliveries(context.Background(), domain.DeliveryFilter{AppID: appID, EndpointID: &endpointID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// streamLength counts an app stream's events, to prove a refusal appended nothing.
func streamLength(t *testing.T, p *portaltest.Platform, appID int64) int {
	t.Helper()
	recs, err := p.Node.Events.ReadStream(context.Background(), domain.AppStream(appID), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// Two endpoints of one app with different subscriptions and secrets: each
// receiver gets only its events, each verifies its own signature; a
// secret rotates without breaking its receiver; the test event and resend
// show in the endpoint's delivery log with every attempt.
func TestEndpointsDeliverWithTheirOwnSubscriptionsAndSecrets(t *testing.T) {
	configs(t, node.Config{WebhookAllowLoopback: true}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		b, devID := p.Developer(portaltest.Email(t, "hooks"), true)
		creds := devApp(t, p, devID, "Clinic")
		list := fmt.Sprintf("/portal/apps/%d/endpoints", creds.AppID)

		page := b.Get(list)
		if page.Status != http.StatusOK || page.H1() != "Webhook endpoints of Clinic" || !strings.Contains(page.Text(), "No endpoints yet") ||
			!strings.Contains(page.Header.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Fatalf("endpoint list: %d %q %s", page.Status, page.H1(), page.Text())
		}
		groups, members := newReceiver(t, "groups"), newReceiver(t, "members")
		gID, gSecret := addEndpoint(t, b, creds.AppID, groups.srv.URL+"/hook", "user.family_group.*")
		mID, mSecret := addEndpoint(t, b, creds.AppID, members.srv.URL+"/hook", "user.family_member.created")
		if gID <= 0 || mID <= 0 || gID == mID || gSecret == mSecret {
			t.Fatalf("endpoints %d and %d, secrets distinct: %v", gID, mID, gSecret != mSecret)
		}
		page = b.Get(list)
		for _, want := range []string{groups.srv.URL + "/hook", "user.family_group.*", "user.family_member.created"} {
			if !strings.Contains(page.Text(), want) {
				t.Fatalf("endpoint list lacks %q: %s", want, page.Text())
			}
		}
		if secretPattern.MatchString(page.Body) {
			t.Fatal("the endpoint list shows a secret again")
		}

		registerUser(t, p, creds, "u-1")
		gotG, gotM := groups.await(t, 1), members.await(t, 2)
		if e := eventNames(gotG); !slices.Equal(e, []string{"user.family_group.created"}) {
			t.Fatalf("groups endpoint got %v", e)
		}
		if e := eventNames(gotM); !slices.Equal(e, []string{"user.family_member.created", "user.family_member.created"}) {
			t.Fatalf("members endpoint got %v", e)
		}
		for _, w := range gotG {
			verify(t, w, gSecret)
		}
		for _, w := range gotM {
			verify(t, w, mSecret)
			if webhooks.Sign(gSecret, w.ts, w.body) == w.sig {
				t.Fatal("another endpoint's secret verifies a webhook")
			}
		}
		// The app's feed keeps one entry per event, whatever the endpoints.
		feed, err := p.Node.ReadModel.Deliveries(context.Background(), domain.DeliveryFilter{AppID: creds.AppID, Feed: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range feed {
			if d.EndpointID != domain.DefaultEndpointID || d.Status != domain.DeliverySkipped {
				t.Fatalf("feed entry %+v: the app has no default endpoint, so it is skipped there", d)
			}
		}

		// Rotation overlap: the pending secret signs nothing until activated.
		rot := b.Post(fmt.Sprintf("%s/%d/rotate", list, gID), confirmed)
		newSecret := secretPattern.FindString(rot.Body)
		if rot.Status != http.StatusOK || newSecret == "" || newSecret == gSecret || !strings.Contains(rot.Text(), "pending") {
			t.Fatalf("rotate: %d %s", rot.Status, rot.Text())
		}
		if page = b.Get(list); !strings.Contains(page.Text(), "new secret pending activation") {
			t.Fatalf("list after rotation: %s", page.Text())
		}
		if res := b.Post(fmt.Sprintf("%s/%d/test", list, gID), nil); res.Status != http.StatusSeeOther || res.Location() != list {
			t.Fatalf("send test: %d %s", res.Status, res.Text())
		}
		test := groups.await(t, 2)[1]
		if test.event != domain.TestEvent {
			t.Fatalf("test event arrived as %q", test.event)
		}
		verify(t, test, gSecret) // still the old secret: the receiver is not broken
		if res := b.Post(fmt.Sprintf("%s/%d/activate", list, gID), nil); res.Status != http.StatusSeeOther {
			t.Fatalf("activate: %d %s", res.Status, res.Text())
		}
		b.Post(fmt.Sprintf("%s/%d/test", list, gID), nil)
		verify(t, groups.await(t, 3)[2], newSecret)
		if again := b.Post(fmt.Sprintf("%s/%d/activate", list, gID), nil); again.Status != http.StatusConflict {
			t.Fatalf("activate without a pending secret: %d", again.Status)
		}

		// The delivery log: every attempt with status, latency and excerpt; filters.
		logPath := fmt.Sprintf("%s/%d/deliveries", list, gID)
		var log portaltest.Page
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if log = b.Get(logPath); strings.Count(log.Body, `class="attempt"`) == 3 {
				break
			}
		}
		if log.Status != http.StatusOK || log.H1() != fmt.Sprintf("Delivery log of endpoint %d", gID) || strings.Count(log.Body, `class="attempt"`) != 3 ||
			!strings.Contains(log.Text(), "ok from groups") || !strings.Contains(log.Text(), "200") || !strings.Contains(log.Text(), " ms") {
			t.Fatalf("delivery log: %d %q %s", log.Status, log.H1(), log.Text())
		}
		// Newest first: the second test event, the first, then the group event.
		var order []string
		for _, m := range regexp.MustCompile(`<section class="delivery" id="delivery-([^"]+)"`).FindAllStringSubmatch(log.Body, -1) {
			order = append(order, m[1])
		}
		if sent := groups.await(t, 3); !slices.Equal(order, []string{sent[2].id, sent[1].id, sent[0].id}) || strings.Contains(log.Body, `rel="next"`) {
			t.Fatalf("delivery log order %v, want newest first of %s %s %s (and no older page)", order, sent[0].id, sent[1].id, sent[2].id)
		}
		if f := b.Get(logPath + "?event=webhook.test&status=delivered"); strings.Count(f.Body, `class="delivery"`) != 2 || strings.Contains(f.Text(), "user.family_group.created") {
			t.Fatalf("filter by event and status: %s", f.Text())
		}
		// The filter reads times in the portal's zone (the platform's, Asia/Shanghai by default).
		future := time.Now().In(time.FixedZone("+08:00", 8*3600)).Add(time.Hour).Format("2006-01-02T15:04")
		if f := b.Get(logPath + "?from=" + future); !strings.Contains(f.Text(), "No deliveries match") {
			t.Fatalf("filter by time: %s", f.Text())
		}
		if f := b.Get(logPath + "?to=" + future + "&status=abandoned"); !strings.Contains(f.Text(), "No deliveries match") {
			t.Fatalf("filter by status: %s", f.Text())
		}
		if f := b.Get(logPath + "?from=yesterday"); f.Status != http.StatusBadRequest {
			t.Fatalf("a bad time filter: %d", f.Status)
		}
		// Another endpoint's log holds only its deliveries.
		if f := b.Get(fmt.Sprintf("%s/%d/deliveries", list, mID)); strings.Count(f.Body, `class="delivery"`) != 2 || strings.Contains(f.Text(), "webhook.test") {
			t.Fatalf("members endpoint log: %s", f.Text())
		}

		// Resend: the same delivery id and bytes again.
		first := gotG[0]
		res := b.Post(fmt.Sprintf("%s/deliveries/%s/resend", fmt.Sprintf("%s/%d", list, gID), first.id), nil)
		if res.Status != http.StatusSeeOther || res.Location() != logPath {
			t.Fatalf("resend: %d %s", res.Status, res.Text())
		}
		again := groups.await(t, 4)[3]
		if again.id != first.id || !bytes.Equal(again.body, first.body) {
			t.Fatalf("resent %s %s, first %s %s", again.id, again.body, first.id, first.body)
		}
		verify(t, again, newSecret)
		// A delivery of another endpoint is not resent through this one.
		if res := b.Post(fmt.Sprintf("%s/%d/deliveries/%s/resend", list, gID, gotM[0].id), nil); res.Status != http.StatusNotFound {
			t.Fatalf("resend of another endpoint's delivery: %d", res.Status)
		}

		// Disabled: no new deliveries; deleted: gone.
		if res := b.Post(fmt.Sprintf("%s/%d/disable", list, mID), nil); res.Status != http.StatusSeeOther {
			t.Fatalf("disable: %d %s", res.Status, res.Text())
		}
		before := len(endpointDeliveries(t, p, creds.AppID, mID))
		registerUser(t, p, creds, "u-2")
		groups.await(t, 5) // the second user's group event: its deliveries are all created
		if after := len(endpointDeliveries(t, p, creds.AppID, mID)); after != before {
			t.Fatalf("a disabled endpoint got %d new deliveries", after-before)
		}
		if res := b.Post(fmt.Sprintf("%s/%d/test", list, mID), nil); res.Status != http.StatusConflict {
			t.Fatalf("test event to a disabled endpoint: %d", res.Status)
		}
		if res := b.Post(fmt.Sprintf("%s/%d/delete", list, mID), confirmed); res.Status != http.StatusSeeOther {
			t.Fatalf("delete: %d %s", res.Status, res.Text())
		}
		if page = b.Get(list); strings.Contains(page.Text(), members.srv.URL) {
			t.Fatalf("a deleted endpoint is listed: %s", page.Text())
		}
		if f := b.Get(fmt.Sprintf("%s/%d/deliveries", list, mID)); f.Status != http.StatusNotFound {
			t.Fatalf("a deleted endpoint's log: %d", f.Status)
		}

		// Every change is audited with the developer as actor. The audit
		// read model is projected asynchronously: wait (bounded) for its last fact.
		wanted := []string{"app.webhook_endpoint_added", "app.webhook_endpoint_secret_issued", "app.webhook_endpoint_secret_activated",
			"app.webhook_test_requested", "webhook.delivery.resend_requested", "app.webhook_endpoint_disabled", "app.webhook_endpoint_removed"}
		var actions []string
		for range 600 {
			facts, err := p.Node.ReadModel.AuditFacts(context.Background(), projections.AuditFilter{Actor: commands.DeveloperActor(devID), Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			actions = actions[:0]
			for _, f := range facts {
				actions = append(actions, f.Action)
			}
			if slices.Contains(actions, wanted[len(wanted)-1]) {
				break
			}
			time.Sleep(25 * time.Millisecond)
		}
		for _, want := range wanted {
			if !slices.Contains(actions, want) {
				t.Errorf("audit of developer %d lacks %s: %v", devID, want, actions)
			}
		}
	})
}

// Another developer's app or endpoint is a 404 exactly like a missing one,
// on every page and form, and appends nothing; forms without or with a
// wrong CSRF token are refused and append nothing.
func TestEndpointsTenancyAndCSRF(t *testing.T) {
	configs(t, node.Config{WebhookAllowLoopback: true}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		owner, ownerID := p.Developer(portaltest.Email(t, "owner"), true)
		other, otherID := p.Developer(portaltest.Email(t, "other"), true)
		mine := devApp(t, p, ownerID, "Mine")
		theirs := devApp(t, p, otherID, "Theirs")
		hook := newReceiver(t, "hook")
		epID, _ := addEndpoint(t, owner, mine.AppID, hook.srv.URL+"/a", "")
		theirEp, _ := addEndpoint(t, other, theirs.AppID, hook.srv.URL+"/b", "")

		missing := other.Get("/portal/apps/999999/endpoints")
		if missing.Status != http.StatusNotFound {
			t.Fatalf("a missing app: %d", missing.Status)
		}
		base := fmt.Sprintf("/portal/apps/%d/endpoints", mine.AppID)
		ep := fmt.Sprintf("%s/%d", base, epID)
		n := streamLength(t, p, mine.AppID)
		for _, path := range []string{base, ep + "/edit", ep + "/deliveries", fmt.Sprintf("%s/%d/edit", base, theirEp)} {
			got := other.Get(path)
			if got.Status != missing.Status || got.H1() != missing.H1() {
				t.Errorf("GET %s by another developer: %d %q, want the missing page %d %q", path, got.Status, got.H1(), missing.Status, missing.H1())
			}
		}
		// The owner asking for another app's endpoint id under their own app: 404 too.
		if got := owner.Get(fmt.Sprintf("%s/%d/edit", base, theirEp)); got.Status != http.StatusNotFound {
			t.Errorf("another app's endpoint under the owner's app: %d", got.Status)
		}
		for _, path := range []string{base, ep, ep + "/disable", ep + "/enable", ep + "/delete", ep + "/rotate", ep + "/activate", ep + "/test",
			ep + "/deliveries/x/resend"} {
			got := other.Post(path, url.Values{"url": {"https://evil.example/x"}})
			if got.Status != http.StatusNotFound || got.H1() != missing.H1() {
				t.Errorf("POST %s by another developer: %d %q", path, got.Status, got.H1())
			}
		}
		for _, path := range []string{base, ep + "/disable", ep + "/rotate", ep + "/test"} {
			if got := owner.PostRaw(path, url.Values{"url": {"https://a.example/x"}}); got.Status != http.StatusForbidden {
				t.Errorf("POST %s without a CSRF token: %d", path, got.Status)
			}
			if got := owner.PostRaw(path, url.Values{"csrf_token": {"forged"}, "url": {"https://a.example/x"}}); got.Status != http.StatusForbidden {
				t.Errorf("POST %s with a wrong CSRF token: %d", path, got.Status)
			}
		}
		if after := streamLength(t, p, mine.AppID); after != n {
			t.Fatalf("refused requests appended %d events to the app", after-n)
		}
		// Bad input is shown beside the form and appends nothing.
		owner.Get(base)
		bad := owner.Post(base, url.Values{"url": {"ftp://x"}, "events": {"Not An Event"}})
		if bad.Status != http.StatusBadRequest || !strings.Contains(bad.Text(), "must be an event name") {
			t.Fatalf("bad endpoint: %d %s", bad.Status, bad.Text())
		}
		if after := streamLength(t, p, mine.AppID); after != n {
			t.Fatalf("a refused endpoint appended %d events", after-n)
		}
		// Not signed in: sent to sign in.
		if got := p.Browser().Get(base); got.Status != http.StatusSeeOther || got.Location() != "/portal/signin" {
			t.Fatalf("anonymous: %d %s", got.Status, got.Location())
		}
	})
}

// Concurrent adds never pass the endpoint limit, and concurrent tests of
// one endpoint each become their own delivery.
func TestEndpointsConcurrentAddsAndTests(t *testing.T) {
	p := portaltest.Start(t, node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true})
	_, devID := p.Developer(portaltest.Email(t, "busy"), true)
	creds := devApp(t, p, devID, "Busy")
	hook := newReceiver(t, "busy")
	apps := p.Node.Portal.Apps
	meta := commands.Meta{Actor: commands.DeveloperActor(devID)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ok, full int
	for i := range domain.MaxEndpoints + 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := apps.AddEndpoint(context.Background(), creds.AppID, commands.EndpointInput{URL: fmt.Sprintf("%s/%d", hook.srv.URL, i)}, meta)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, domain.ErrTooManyEndpoints):
				full++
			default:
				t.Errorf("add: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok != domain.MaxEndpoints || full != 5 {
		t.Fatalf("%d added, %d refused; want %d and 5", ok, full, domain.MaxEndpoints)
	}
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			app, _ := p.Node.Apps.ByID(creds.AppID)
			if _, err := apps.SendTestEvent(context.Background(), creds.AppID, app.Endpoints[0].EndpointID, meta); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got := hook.await(t, 3)
	ids := map[string]bool{}
	for _, w := range got {
		ids[w.id] = true
	}
	if len(ids) != 3 {
		t.Fatalf("3 tests gave %d distinct deliveries", len(ids))
	}
}
