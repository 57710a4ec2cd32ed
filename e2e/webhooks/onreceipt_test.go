package webhooks_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// onReceipt is what a partner read while it held a webhook unanswered.
type onReceipt struct {
	id, event string
	body      []byte
	delivery  harness.Response // GET /open/v1/webhooks/deliveries/{X-Webhook-Id}
	feed      harness.Response // GET /open/v1/webhooks/events after the last cursor it read
	snapshot  harness.Response // GET /open/v1/channel/users/{id}
}

// TestAPartnerReadsWhatAWebhookAnnouncesOnReceipt: a partner that, on
// receiving a webhook and before answering it, reads the delivery by its
// X-Webhook-Id, its event feed and the user's snapshot finds the delivery
// (pending, with the webhook's bytes as its payload), the feed entry with
// the same bytes, and the profile the PATCH wrote, on the node that sent
// it and on another node.
func TestAPartnerReadsWhatAWebhookAnnouncesOnReceipt(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback = true
		p := harness.Start(t, cfg)
		readsOnReceipt(t, p, p)
	})
	t.Run("two nodes", func(t *testing.T) {
		t.Parallel()
		pa, pb := harness.TwoNodes(t, func(c *node.Config) { c.WebhookAllowLoopback = true })
		readsOnReceipt(t, pa, pb)
	})
}

// readsOnReceipt PATCHes a user on writer, one webhook at a time, and
// reads on reader from the receiver while each webhook is held.
func readsOnReceipt(t *testing.T, writer, reader *harness.Platform) {
	a := writer.CreateApp("partner")
	ra := a.On(reader)
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-receipt"), http.StatusCreated, "0").Data(t, &reg)
	user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
	// The reader's node must know the app before the receiver reads there.
	ra.Expect("GET", user, nil, http.StatusOK, "0")

	got := make(chan onReceipt, 1)
	cursor := ""
	read := func(path string) harness.Response {
		req := ra.Request("GET", path, nil, time.Now())
		res, err := reader.Client.Do(req)
		if err != nil {
			return harness.Response{Raw: []byte(err.Error())}
		}
		defer res.Body.Close()
		out := harness.Response{Status: res.StatusCode}
		out.Raw, _ = io.ReadAll(res.Body)
		_ = json.Unmarshal(out.Raw, &out.Env)
		return out
	}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		o := onReceipt{id: r.Header.Get("X-Webhook-Id"), event: r.Header.Get("X-Webhook-Event"), body: body}
		o.delivery = read("/open/v1/webhooks/deliveries/" + o.id)
		o.feed = read("/open/v1/webhooks/events?limit=1000&after=" + cursor)
		o.snapshot = read(user)
		got <- o
	}))
	t.Cleanup(rcv.Close)
	writer.ConfigureWebhook(a, rcv.URL, "user.profile.updated")

	for i := range 8 {
		nickname := fmt.Sprintf("nick-%d", i)
		a.Expect("PATCH", user, map[string]any{"nickname": nickname}, http.StatusOK, "0")
		var o onReceipt
		select {
		case o = <-got:
		case <-time.After(harness.WaitBound):
			t.Fatalf("PATCH %d: no webhook", i)
		}
		if o.event != "user.profile.updated" {
			t.Fatalf("PATCH %d: webhook %s", i, o.event)
		}

		var d struct {
			DeliveryID string          `json:"delivery_id"`
			Event      string          `json:"event"`
			Status     string          `json:"status"`
			Payload    json.RawMessage `json:"payload"`
		}
		if o.delivery.Status != http.StatusOK {
			t.Fatalf("PATCH %d: the delivery %s read on receipt: %d %s", i, o.id, o.delivery.Status, o.delivery.Raw)
		}
		o.delivery.Data(t, &d)
		if d.DeliveryID != o.id || d.Event != o.event || d.Status != "pending" || string(d.Payload) != string(o.body) {
			t.Fatalf("PATCH %d: the delivery read on receipt %s, want %s pending with payload %s", i, o.delivery.Env.Data, o.id, o.body)
		}

		var page harness.FeedPage
		if o.feed.Status != http.StatusOK {
			t.Fatalf("PATCH %d: the feed read on receipt: %d %s", i, o.feed.Status, o.feed.Raw)
		}
		o.feed.Data(t, &page)
		found := false
		for _, e := range page.Events {
			if e.DeliveryID == o.id {
				found = string(e.Payload) == string(o.body)
			}
		}
		if !found {
			t.Fatalf("PATCH %d: the feed read on receipt after %q holds no entry %s with the webhook's bytes: %s", i, cursor, o.id, o.feed.Env.Data)
		}
		cursor = page.NextCursor

		var s harness.Snapshot
		if o.snapshot.Status != http.StatusOK {
			t.Fatalf("PATCH %d: the snapshot read on receipt: %d %s", i, o.snapshot.Status, o.snapshot.Raw)
		}
		o.snapshot.Data(t, &s)
		if s.User.Nickname == nil || *s.User.Nickname != nickname {
			t.Fatalf("PATCH %d: the snapshot read on receipt has nickname %v, want %s", i, harness.Deref(s), nickname)
		}
	}
}
