package webhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/node"
)

func TestChannelUserWebhooksAreSignedAndFiltered(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback = true
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		rcv := harness.NewReceiver(t)
		rcv.Secret = a.WebhookSecret
		p.ConfigureWebhook(a, rcv.Srv.URL+"/hooks", "user.family_member.*", "user.profile.updated")

		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
		user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
		a.Expect("PATCH", user, map[string]any{"nickname": "n"}, http.StatusOK, "0")
		a.Expect("DELETE", fmt.Sprintf("%s/family-members/%d", user, reg.FamilyMembers[1].MemberID), nil, http.StatusOK, "0")

		// Two member creations, one profile update, one member deletion; the
		// group events are not subscribed.
		got := rcv.WaitFor(4)
		rcv.Quiet(4, 300*time.Millisecond)
		counts := map[string]int{}
		for _, w := range got {
			if !w.Verified {
				t.Fatalf("signature or timestamp did not verify: %+v", w)
			}
			var body harness.UserWebhook
			if err := json.Unmarshal(w.Body, &body); err != nil {
				t.Fatal(err)
			}
			if body.DeliveryID != w.ID || body.Event != w.Event || body.AppID != a.ID || body.OpenUserID != reg.OpenUserID || body.ChannelUserID != "u-1" {
				t.Fatalf("body %s does not match headers %+v", w.Body, w)
			}
			if _, err := time.Parse(time.RFC3339, body.OccurredAt); err != nil {
				t.Fatalf("occurred_at %q", body.OccurredAt)
			}
			counts[w.Event]++
		}
		want := map[string]int{"user.family_member.created": 2, "user.profile.updated": 1, "user.family_member.deleted": 1}
		if fmt.Sprint(counts) != fmt.Sprint(want) {
			t.Fatalf("events %v, want %v", counts, want)
		}

		// The feed holds every partner-visible event, subscribed or not, with
		// the same bytes the webhooks carried, in order, page by page.
		var all []harness.FeedItem
		after := ""
		for range 10 {
			page := a.FeedPage(after, 2)
			all = append(all, page.Events...)
			if !page.HasMore {
				break
			}
			after = page.NextCursor
		}
		types := []string{}
		for _, e := range all {
			types = append(types, e.Event)
		}
		wantTypes := []string{"user.family_group.created", "user.family_member.created", "user.family_member.created", "user.profile.updated", "user.family_member.deleted"}
		if fmt.Sprint(types) != fmt.Sprint(wantTypes) {
			t.Fatalf("feed %v, want %v", types, wantTypes)
		}
		for _, w := range got {
			found := false
			for _, e := range all {
				if e.DeliveryID == w.ID {
					found = true
					if string(e.Payload) != string(w.Body) {
						t.Fatalf("feed payload %s differs from webhook body %s", e.Payload, w.Body)
					}
				}
			}
			if !found {
				t.Fatalf("delivery %s missing from the feed", w.ID)
			}
		}
	})
}

func TestRetryScheduleAbandonAndResend(t *testing.T) {
	t.Parallel()
	clock := harness.NewFakeClock()
	p := harness.Start(t, node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true, WebhookClock: clock})
	a := p.CreateApp("partner")
	rcv := harness.NewReceiver(t)
	rcv.Secret = a.WebhookSecret
	p.ConfigureWebhook(a, rcv.Srv.URL, "user.profile.updated")
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
	rcv.Script(500, 503, 404, 302, 500, 500) // six failures: the first attempt and five retries
	a.Expect("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID), map[string]any{"nickname": "n"}, http.StatusOK, "0")

	first := rcv.WaitFor(1)[0]
	schedule := []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour}
	for i, d := range schedule {
		// The attempt just posted is recorded (its retry scheduled) before
		// the clock moves: "retrying" alone may still be the previous one.
		p.WaitAttempts(first.ID, "retrying", i+1)
		clock.Advance(d - time.Second)
		rcv.Quiet(i+1, 100*time.Millisecond) // not before its time
		clock.Advance(time.Second)
		got := rcv.WaitFor(i + 2)
		if last := got[i+1]; last.ID != first.ID || string(last.Body) != string(first.Body) || !last.Verified {
			t.Fatalf("retry %d changed id or bytes: %+v", i+1, last)
		}
	}
	v := p.WaitDelivery(first.ID, "abandoned")
	if v.Attempts != 6 || len(v.AttemptLog) != 6 || *v.AttemptLog[3].StatusCode != 302 || v.AttemptLog[5].Outcome != "abandoned" {
		t.Fatalf("delivery log %+v", v)
	}
	clock.Advance(24 * time.Hour)
	rcv.Quiet(6, 200*time.Millisecond) // no automatic redelivery after abandonment

	// Resend: operator, then the partner itself; same id, same bytes.
	if res := p.Admin("POST", "/admin/v1/deliveries/"+first.ID+"/resend", nil); res.Status != http.StatusAccepted {
		t.Fatalf("resend: %d %s", res.Status, res.Raw)
	}
	again := rcv.WaitFor(7)[6]
	if again.ID != first.ID || string(again.Body) != string(first.Body) {
		t.Fatalf("resend changed the delivery: %+v", again)
	}
	p.WaitDelivery(first.ID, "delivered")
	a.Expect("POST", "/open/v1/webhooks/deliveries/"+first.ID+"/resend", nil, http.StatusAccepted, "0")
	if w := rcv.WaitFor(8)[7]; w.ID != first.ID {
		t.Fatalf("partner resend %+v", w)
	}
	other := p.CreateApp("other")
	other.Expect("POST", "/open/v1/webhooks/deliveries/"+first.ID+"/resend", nil, http.StatusNotFound, "DELIVERY_NOT_FOUND")
	other.Expect("GET", "/open/v1/webhooks/deliveries/"+first.ID, nil, http.StatusNotFound, "DELIVERY_NOT_FOUND")
	var mine harness.DeliveryView
	deadline := time.Now().Add(harness.WaitBound)
	for time.Now().Before(deadline) && mine.Attempts != 8 {
		a.Expect("GET", "/open/v1/webhooks/deliveries/"+first.ID, nil, http.StatusOK, "0").Data(t, &mine)
		time.Sleep(20 * time.Millisecond)
	}
	if mine.Attempts != 8 || mine.Status != "delivered" || len(mine.AttemptLog) != 8 {
		t.Fatalf("partner's view %+v", mine)
	}
}

func TestRetrySurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := harness.NewFakeClock()
	p := harness.Start(t, node.Config{DataDir: dir, WebhookAllowLoopback: true, WebhookClock: clock})
	a := p.CreateApp("partner")
	rcv := harness.NewReceiver(t)
	rcv.Secret = a.WebhookSecret
	p.ConfigureWebhook(a, rcv.Srv.URL, "user.profile.updated")
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
	rcv.Script(500)
	a.Expect("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID), map[string]any{"nickname": "n"}, http.StatusOK, "0")
	first := rcv.WaitFor(1)[0]
	p.WaitDelivery(first.ID, "retrying")
	p.Stop()

	clock.Advance(time.Minute)
	q := harness.Start(t, node.Config{DataDir: dir, WebhookAllowLoopback: true, WebhookClock: clock})
	second := rcv.WaitFor(2)[1]
	if second.ID != first.ID || string(second.Body) != string(first.Body) || !second.Verified {
		t.Fatalf("after restart: %+v, before: %+v", second, first)
	}
	q.WaitDelivery(first.ID, "delivered")
	rcv.Quiet(2, 200*time.Millisecond)
}

func TestInternalTargetsAreRefusedAndNotRetried(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	a := p.CreateApp("partner")
	for _, url := range []string{"http://example.com/hook", "https://127.0.0.1/hook", "https://[::1]/hook", "https://169.254.169.254/latest", "https://10.1.2.3/x", "https://user:pw@example.com/"} {
		res := p.Admin("PATCH", fmt.Sprintf("/admin/v1/apps/%d", a.ID), map[string]any{"webhook_url": url})
		if res.Status != http.StatusUnprocessableEntity || res.Env.Errors["webhook_url"] == nil {
			t.Fatalf("%s: %d %s", url, res.Status, res.Raw)
		}
	}
	if res := p.Admin("POST", "/admin/v1/apps", map[string]any{"name": "x", "webhook_url": "https://192.168.1.1/"}); res.Status != http.StatusUnprocessableEntity {
		t.Fatalf("create with a private URL: %d", res.Status)
	}

	// A target that became internal after configuration (here: a node that
	// allowed loopback, then one that does not) is refused at connect time,
	// once, without retries.
	dir := t.TempDir()
	clock := harness.NewFakeClock()
	dev := harness.Start(t, node.Config{DataDir: dir, WebhookAllowLoopback: true, WebhookClock: clock})
	b := dev.CreateApp("partner")
	rcv := harness.NewReceiver(t)
	dev.ConfigureWebhook(b, rcv.Srv.URL, "user.profile.updated")
	var reg harness.RegisterData
	b.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
	dev.Stop()
	prod := harness.Start(t, node.Config{DataDir: dir, WebhookClock: clock})
	b.P = prod
	b.Expect("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID), map[string]any{"nickname": "n"}, http.StatusOK, "0")
	var list struct {
		Deliveries []harness.DeliveryView `json:"deliveries"`
	}
	deadline := time.Now().Add(harness.WaitBound)
	for time.Now().Before(deadline) && len(list.Deliveries) == 0 {
		prod.Admin("GET", fmt.Sprintf("/admin/v1/deliveries?app_id=%d&event=user.profile.updated&status=abandoned", b.ID), nil).Data(t, &list)
		time.Sleep(20 * time.Millisecond)
	}
	if len(list.Deliveries) != 1 {
		t.Fatalf("refused delivery not abandoned: %+v", list)
	}
	v := prod.WaitDelivery(list.Deliveries[0].DeliveryID, "abandoned")
	if v.Attempts != 1 || v.AttemptLog[0].Outcome != "refused" {
		t.Fatalf("refused delivery %+v", v)
	}
	clock.Advance(time.Hour)
	rcv.Quiet(0, 200*time.Millisecond)
}

// registeredMembers starts an embedded node, registers one user of a new
// app (two members: the user and the one in RegisterBody) and returns the
// log's two user.family_member.created events.
func registeredMembers(t *testing.T) (*harness.Platform, *harness.App, []events.Recorded) {
	t.Helper()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	a := p.CreateApp("partner")
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0")
	if err := p.Node.WaitCaughtUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	recs, err := p.Node.Events.ReadAll(context.Background(), events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var members []events.Recorded
	for _, r := range recs {
		if r.Type == "user.family_member.created" {
			members = append(members, r)
		}
	}
	if len(members) != 2 {
		t.Fatalf("%d member events, want 2", len(members))
	}
	return p, a, members
}

// A Kafka topic can hold an event twice (the relay re-publishes what it
// produced before a crash), and both copies can arrive in one batch: the
// batch still makes each delivery once, instead of failing at every retry.
func TestOneEventTwiceInABatchMakesOneDelivery(t *testing.T) {
	t.Parallel()
	p, a, members := registeredMembers(t)
	batch := []events.Recorded{members[0], members[1], members[0], members[1], members[0]}
	if err := p.Node.Dispatcher.CreateBatch(context.Background(), batch); err != nil {
		t.Fatalf("a batch holding an event twice: %v", err)
	}
	if err := p.Node.WaitCaughtUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Deliveries []harness.DeliveryView `json:"deliveries"`
	}
	p.Admin("GET", fmt.Sprintf("/admin/v1/deliveries?app_id=%d&event=user.family_member.created", a.ID), nil).Data(t, &list)
	if len(list.Deliveries) != 2 || list.Deliveries[0].DeliveryID == list.Deliveries[1].DeliveryID {
		t.Fatalf("deliveries %+v", list.Deliveries)
	}
}

func TestDuplicateSourceEventsMakeOneDelivery(t *testing.T) {
	t.Parallel()
	p, a, members := registeredMembers(t)
	member := members[0]
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Node.Dispatcher.Create(context.Background(), member); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := p.Node.WaitCaughtUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Deliveries []harness.DeliveryView `json:"deliveries"`
	}
	// The register created two members: two deliveries, however often the
	// dispatcher sees their events.
	deadline := time.Now().Add(harness.WaitBound)
	for time.Now().Before(deadline) && len(list.Deliveries) < 2 {
		p.Admin("GET", fmt.Sprintf("/admin/v1/deliveries?app_id=%d&event=user.family_member.created", a.ID), nil).Data(t, &list)
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	p.Admin("GET", fmt.Sprintf("/admin/v1/deliveries?app_id=%d&event=user.family_member.created", a.ID), nil).Data(t, &list)
	if len(list.Deliveries) != 2 || list.Deliveries[0].DeliveryID == list.Deliveries[1].DeliveryID {
		t.Fatalf("deliveries %+v", list.Deliveries)
	}
}
