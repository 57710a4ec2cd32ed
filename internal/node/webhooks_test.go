package node_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// receiver is a partner's webhook endpoint written from the spec alone: it
// verifies the signature with its own code, rejects stale timestamps, and
// answers with the status the test scripts.
type receiver struct {
	t      testing.TB
	srv    *httptest.Server
	secret string

	mu       sync.Mutex
	got      []webhook
	statuses []int // answers for the next requests; 200 once exhausted
	arrived  chan struct{}
}

type webhook struct {
	ID, Event, Timestamp, Signature string
	Body                            []byte
	Verified                        bool
}

func newReceiver(t testing.TB) *receiver {
	r := &receiver{t: t, arrived: make(chan struct{}, 1000)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	ts := req.Header.Get("X-Webhook-Timestamp")
	mac := hmac.New(sha256.New, []byte(r.secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	got, _ := hex.DecodeString(req.Header.Get("X-Webhook-Signature"))
	sec, _ := strconv.ParseInt(ts, 10, 64)
	fresh := time.Since(time.Unix(sec, 0)).Abs() <= 300*time.Second
	verified := hmac.Equal(got, mac.Sum(nil)) && fresh && req.Method == http.MethodPost
	r.mu.Lock()
	r.got = append(r.got, webhook{ID: req.Header.Get("X-Webhook-Id"), Event: req.Header.Get("X-Webhook-Event"), Timestamp: ts,
		Signature: req.Header.Get("X-Webhook-Signature"), Body: body, Verified: verified})
	status := http.StatusOK
	if len(r.statuses) > 0 {
		status, r.statuses = r.statuses[0], r.statuses[1:]
	}
	r.mu.Unlock()
	if !verified {
		status = http.StatusUnauthorized
	}
	w.WriteHeader(status)
	r.arrived <- struct{}{}
}

func (r *receiver) script(statuses ...int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statuses = append(r.statuses, statuses...)
}

// waitFor blocks until n webhooks have arrived in total.
func (r *receiver) waitFor(n int) []webhook {
	r.t.Helper()
	deadline := time.After(waitBound)
	for {
		r.mu.Lock()
		if len(r.got) >= n {
			out := append([]webhook(nil), r.got...)
			r.mu.Unlock()
			return out
		}
		have := len(r.got)
		r.mu.Unlock()
		select {
		case <-r.arrived:
		case <-deadline:
			r.t.Fatalf("waited for %d webhooks, got %d", n, have)
		}
	}
}

// quiet asserts that no further webhook arrives for a while.
func (r *receiver) quiet(total int, d time.Duration) {
	r.t.Helper()
	time.Sleep(d)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) != total {
		r.t.Fatalf("expected %d webhooks, got %d", total, len(r.got))
	}
}

// fakeClock moves the dispatcher through the retry schedule on command.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Until(t time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !t.After(c.now) {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{t, ch})
	return ch
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	keep := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			keep = append(keep, w)
		}
	}
	c.waiters = keep
}

func (p *platform) configureWebhook(a *app, url string, evs ...string) {
	p.t.Helper()
	body := map[string]any{"webhook_url": url}
	if evs != nil {
		body["webhook_events"] = evs
	}
	if res := p.admin("PATCH", fmt.Sprintf("/admin/v1/apps/%d", a.ID), body); res.Status != http.StatusOK {
		p.t.Fatalf("configure webhook: %d %s", res.Status, res.Raw)
	}
}

type userWebhook struct {
	Event         string          `json:"event"`
	DeliveryID    string          `json:"delivery_id"`
	AppID         int64           `json:"app_id"`
	OpenUserID    int64           `json:"open_user_id"`
	ChannelUserID string          `json:"channel_user_id"`
	OccurredAt    string          `json:"occurred_at"`
	Data          json.RawMessage `json:"data"`
}

func TestChannelUserWebhooksAreSignedAndFiltered(t *testing.T) {
	t.Parallel()
	readModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback = true
		p := start(t, cfg)
		a := p.createApp("partner")
		rcv := newReceiver(t)
		rcv.secret = a.WebhookSecret
		p.configureWebhook(a, rcv.srv.URL+"/hooks", "user.family_member.*", "user.profile.updated")

		var reg registerData
		a.expect("POST", "/open/v1/channel/users", registerBody("u-1"), http.StatusCreated, "0").data(t, &reg)
		user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
		a.expect("PATCH", user, map[string]any{"nickname": "n"}, http.StatusOK, "0")
		a.expect("DELETE", fmt.Sprintf("%s/family-members/%d", user, reg.FamilyMembers[1].MemberID), nil, http.StatusOK, "0")

		// Two member creations, one profile update, one member deletion; the
		// group events are not subscribed.
		got := rcv.waitFor(4)
		rcv.quiet(4, 300*time.Millisecond)
		counts := map[string]int{}
		for _, w := range got {
			if !w.Verified {
				t.Fatalf("signature or timestamp did not verify: %+v", w)
			}
			var body userWebhook
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
		var all []feedItem
		after := ""
		for range 10 {
			page := a.feedPage(after, 2)
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

type feedItem struct {
	Cursor     string          `json:"cursor"`
	DeliveryID string          `json:"delivery_id"`
	Event      string          `json:"event"`
	Payload    json.RawMessage `json:"payload"`
}

type feedPage struct {
	Events     []feedItem `json:"events"`
	NextCursor string     `json:"next_cursor"`
	HasMore    bool       `json:"has_more"`
}

// feedPage reads the feed, waiting (bounded) for deliveries the dispatcher creates asynchronously.
func (a *app) feedPage(after string, limit int) feedPage {
	a.p.t.Helper()
	var page feedPage
	a.expect("GET", fmt.Sprintf("/open/v1/webhooks/events?after=%s&limit=%d", after, limit), nil, http.StatusOK, "0").data(a.p.t, &page)
	return page
}

type deliveryView struct {
	DeliveryID string `json:"delivery_id"`
	Event      string `json:"event"`
	Status     string `json:"status"`
	Attempts   int    `json:"attempts"`
	AttemptLog []struct {
		Attempt    int    `json:"attempt"`
		StatusCode *int   `json:"status_code"`
		Outcome    string `json:"outcome"`
	} `json:"attempt_log"`
}

// waitDelivery polls the delivery log until the delivery reaches status.
func (p *platform) waitDelivery(id, status string) deliveryView {
	p.t.Helper()
	return p.waitAttempts(id, status, 0)
}

// waitAttempts polls the delivery log until the delivery reaches status
// with attempts recorded attempts (any number if 0): a status alone (say
// retrying) may still be the previous attempt's.
func (p *platform) waitAttempts(id, status string, attempts int) deliveryView {
	p.t.Helper()
	deadline := time.Now().Add(waitBound)
	var v deliveryView
	for time.Now().Before(deadline) {
		res := p.admin("GET", "/admin/v1/deliveries/"+id, nil)
		if res.Status == http.StatusOK {
			res.data(p.t, &v)
			if v.Status == status && (attempts == 0 || v.Attempts == attempts) {
				return v
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.t.Fatalf("delivery %s never reached %s with %d attempts: %+v", id, status, attempts, v)
	return v
}

func TestRetryScheduleAbandonAndResend(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	p := start(t, node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true, WebhookClock: clock})
	a := p.createApp("partner")
	rcv := newReceiver(t)
	rcv.secret = a.WebhookSecret
	p.configureWebhook(a, rcv.srv.URL, "user.profile.updated")
	var reg registerData
	a.expect("POST", "/open/v1/channel/users", registerBody("u-1"), http.StatusCreated, "0").data(t, &reg)
	rcv.script(500, 503, 404, 302, 500, 500) // six failures: the first attempt and five retries
	a.expect("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID), map[string]any{"nickname": "n"}, http.StatusOK, "0")

	first := rcv.waitFor(1)[0]
	schedule := []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour}
	for i, d := range schedule {
		// The attempt just posted is recorded (its retry scheduled) before
		// the clock moves: "retrying" alone may still be the previous one.
		p.waitAttempts(first.ID, "retrying", i+1)
		clock.Advance(d - time.Second)
		rcv.quiet(i+1, 100*time.Millisecond) // not before its time
		clock.Advance(time.Second)
		got := rcv.waitFor(i + 2)
		if last := got[i+1]; last.ID != first.ID || string(last.Body) != string(first.Body) || !last.Verified {
			t.Fatalf("retry %d changed id or bytes: %+v", i+1, last)
		}
	}
	v := p.waitDelivery(first.ID, "abandoned")
	if v.Attempts != 6 || len(v.AttemptLog) != 6 || *v.AttemptLog[3].StatusCode != 302 || v.AttemptLog[5].Outcome != "abandoned" {
		t.Fatalf("delivery log %+v", v)
	}
	clock.Advance(24 * time.Hour)
	rcv.quiet(6, 200*time.Millisecond) // no automatic redelivery after abandonment

	// Resend: operator, then the partner itself; same id, same bytes.
	if res := p.admin("POST", "/admin/v1/deliveries/"+first.ID+"/resend", nil); res.Status != http.StatusAccepted {
		t.Fatalf("resend: %d %s", res.Status, res.Raw)
	}
	again := rcv.waitFor(7)[6]
	if again.ID != first.ID || string(again.Body) != string(first.Body) {
		t.Fatalf("resend changed the delivery: %+v", again)
	}
	p.waitDelivery(first.ID, "delivered")
	a.expect("POST", "/open/v1/webhooks/deliveries/"+first.ID+"/resend", nil, http.StatusAccepted, "0")
	if w := rcv.waitFor(8)[7]; w.ID != first.ID {
		t.Fatalf("partner resend %+v", w)
	}
	other := p.createApp("other")
	other.expect("POST", "/open/v1/webhooks/deliveries/"+first.ID+"/resend", nil, http.StatusNotFound, "DELIVERY_NOT_FOUND")
	other.expect("GET", "/open/v1/webhooks/deliveries/"+first.ID, nil, http.StatusNotFound, "DELIVERY_NOT_FOUND")
	var mine deliveryView
	deadline := time.Now().Add(waitBound)
	for time.Now().Before(deadline) && mine.Attempts != 8 {
		a.expect("GET", "/open/v1/webhooks/deliveries/"+first.ID, nil, http.StatusOK, "0").data(t, &mine)
		time.Sleep(20 * time.Millisecond)
	}
	if mine.Attempts != 8 || mine.Status != "delivered" || len(mine.AttemptLog) != 8 {
		t.Fatalf("partner's view %+v", mine)
	}
}

func TestRetrySurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clock := newFakeClock()
	p := start(t, node.Config{DataDir: dir, WebhookAllowLoopback: true, WebhookClock: clock})
	a := p.createApp("partner")
	rcv := newReceiver(t)
	rcv.secret = a.WebhookSecret
	p.configureWebhook(a, rcv.srv.URL, "user.profile.updated")
	var reg registerData
	a.expect("POST", "/open/v1/channel/users", registerBody("u-1"), http.StatusCreated, "0").data(t, &reg)
	rcv.script(500)
	a.expect("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID), map[string]any{"nickname": "n"}, http.StatusOK, "0")
	first := rcv.waitFor(1)[0]
	p.waitDelivery(first.ID, "retrying")
	p.stop()

	clock.Advance(time.Minute)
	q := start(t, node.Config{DataDir: dir, WebhookAllowLoopback: true, WebhookClock: clock})
	second := rcv.waitFor(2)[1]
	if second.ID != first.ID || string(second.Body) != string(first.Body) || !second.Verified {
		t.Fatalf("after restart: %+v, before: %+v", second, first)
	}
	q.waitDelivery(first.ID, "delivered")
	rcv.quiet(2, 200*time.Millisecond)
}

func TestInternalTargetsAreRefusedAndNotRetried(t *testing.T) {
	t.Parallel()
	p := start(t, node.Config{DataDir: t.TempDir()})
	a := p.createApp("partner")
	for _, url := range []string{"http://example.com/hook", "https://127.0.0.1/hook", "https://[::1]/hook", "https://169.254.169.254/latest", "https://10.1.2.3/x", "https://user:pw@example.com/"} {
		res := p.admin("PATCH", fmt.Sprintf("/admin/v1/apps/%d", a.ID), map[string]any{"webhook_url": url})
		if res.Status != http.StatusUnprocessableEntity || res.Env.Errors["webhook_url"] == nil {
			t.Fatalf("%s: %d %s", url, res.Status, res.Raw)
		}
	}
	if res := p.admin("POST", "/admin/v1/apps", map[string]any{"name": "x", "webhook_url": "https://192.168.1.1/"}); res.Status != http.StatusUnprocessableEntity {
		t.Fatalf("create with a private URL: %d", res.Status)
	}

	// A target that became internal after configuration (here: a node that
	// allowed loopback, then one that does not) is refused at connect time,
	// once, without retries.
	dir := t.TempDir()
	clock := newFakeClock()
	dev := start(t, node.Config{DataDir: dir, WebhookAllowLoopback: true, WebhookClock: clock})
	b := dev.createApp("partner")
	rcv := newReceiver(t)
	dev.configureWebhook(b, rcv.srv.URL, "user.profile.updated")
	var reg registerData
	b.expect("POST", "/open/v1/channel/users", registerBody("u-1"), http.StatusCreated, "0").data(t, &reg)
	dev.stop()
	prod := start(t, node.Config{DataDir: dir, WebhookClock: clock})
	b.p = prod
	b.expect("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID), map[string]any{"nickname": "n"}, http.StatusOK, "0")
	var list struct {
		Deliveries []deliveryView `json:"deliveries"`
	}
	deadline := time.Now().Add(waitBound)
	for time.Now().Before(deadline) && len(list.Deliveries) == 0 {
		prod.admin("GET", fmt.Sprintf("/admin/v1/deliveries?app_id=%d&event=user.profile.updated&status=abandoned", b.ID), nil).data(t, &list)
		time.Sleep(20 * time.Millisecond)
	}
	if len(list.Deliveries) != 1 {
		t.Fatalf("refused delivery not abandoned: %+v", list)
	}
	v := prod.waitDelivery(list.Deliveries[0].DeliveryID, "abandoned")
	if v.Attempts != 1 || v.AttemptLog[0].Outcome != "refused" {
		t.Fatalf("refused delivery %+v", v)
	}
	clock.Advance(time.Hour)
	rcv.quiet(0, 200*time.Millisecond)
}

// registeredMembers starts an embedded node, registers one user of a new
// app (two members: the user and the one in registerBody) and returns the
// log's two user.family_member.created events.
func registeredMembers(t *testing.T) (*platform, *app, []events.Recorded) {
	t.Helper()
	p := start(t, node.Config{DataDir: t.TempDir()})
	a := p.createApp("partner")
	a.expect("POST", "/open/v1/channel/users", registerBody("u-1"), http.StatusCreated, "0")
	if err := p.node.WaitCaughtUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	recs, err := p.node.Events.ReadAll(context.Background(), events.Position{}, 0)
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
	if err := p.node.Dispatcher.CreateBatch(context.Background(), batch); err != nil {
		t.Fatalf("a batch holding an event twice: %v", err)
	}
	if err := p.node.WaitCaughtUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Deliveries []deliveryView `json:"deliveries"`
	}
	p.admin("GET", fmt.Sprintf("/admin/v1/deliveries?app_id=%d&event=user.family_member.created", a.ID), nil).data(t, &list)
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
			if err := p.node.Dispatcher.Create(context.Background(), member); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := p.node.WaitCaughtUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Deliveries []deliveryView `json:"deliveries"`
	}
	// The register created two members: two deliveries, however often the
	// dispatcher sees their events.
	deadline := time.Now().Add(waitBound)
	for time.Now().Before(deadline) && len(list.Deliveries) < 2 {
		p.admin("GET", fmt.Sprintf("/admin/v1/deliveries?app_id=%d&event=user.family_member.created", a.ID), nil).data(t, &list)
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	p.admin("GET", fmt.Sprintf("/admin/v1/deliveries?app_id=%d&event=user.family_member.created", a.ID), nil).data(t, &list)
	if len(list.Deliveries) != 2 || list.Deliveries[0].DeliveryID == list.Deliveries[1].DeliveryID {
		t.Fatalf("deliveries %+v", list.Deliveries)
	}
}
