package erasure_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// pendingErasures is GET /admin/v1/erasures as an operator reads it.
type pendingErasures struct {
	Erasures []struct {
		AppID        int64  `json:"app_id"`
		OpenUserID   int64  `json:"open_user_id"`
		ErasedBy     string `json:"erased_by"`
		Reason       string `json:"reason"`
		Acknowledged bool   `json:"acknowledged"`
	} `json:"erasures"`
}

// An erasure reaches the partner (GDPR Art. 19): the app that held the
// person receives one signed user.erased webhook naming them by the
// open_user_id it already has and nothing personal; an app that did not
// hold them receives nothing. The operators' list shows the erasure until
// the app acknowledges it; the acknowledgement (scheme H) is one audit
// fact however many times, and however concurrently, it is sent; another
// app's erasure, a person who is not erased, an unknown id and a body with
// fields are refused and append nothing.
func TestErasureReachesTheAppThatHeldThePerson(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback = true
		p := harness.Start(t, cfg)
		holder, bystander := p.CreateApp("holder"), p.CreateApp("bystander")
		rh, rb := harness.NewReceiver(t), harness.NewReceiver(t)
		rh.Secret, rb.Secret = holder.WebhookSecret, bystander.WebhookSecret
		p.ConfigureWebhook(holder, rh.Srv.URL, "user.erased")
		p.ConfigureWebhook(bystander, rb.Srv.URL) // every event
		var gone, other harness.RegisterData
		holder.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("erased-partner-id-9"), http.StatusCreated, "0").Data(t, &gone)
		bystander.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("kept-partner-id"), http.StatusCreated, "0").Data(t, &other)
		_, auditor := p.Operator("Aud", "auditor")

		erase := fmt.Sprintf("/admin/v1/channel-users/%d/erase", gone.OpenUserID)
		if res := p.Admin("POST", erase, map[string]any{"reason": "PIPL request ticket 77"}); res.Status != http.StatusOK {
			t.Fatalf("erase: %d %s", res.Status, res.Raw)
		}

		got := rh.WaitFor(1)[0]
		if !got.Verified || got.Event != "user.erased" {
			t.Fatalf("holder's webhook: event %q verified %v: %s", got.Event, got.Verified, got.Body)
		}
		var body struct {
			Event      string `json:"event"`
			DeliveryID string `json:"delivery_id"`
			AppID      int64  `json:"app_id"`
			OpenUserID int64  `json:"open_user_id"`
			OccurredAt string `json:"occurred_at"`
			Data       struct {
				ErasedAt        string `json:"erased_at"`
				AcknowledgePath string `json:"acknowledge_path"`
			} `json:"data"`
		}
		if err := json.Unmarshal(got.Body, &body); err != nil {
			t.Fatal(err)
		}
		ack := fmt.Sprintf("/open/v1/erasures/%d/acknowledge", gone.OpenUserID)
		if body.Event != "user.erased" || body.DeliveryID != got.ID || body.AppID != holder.ID || body.OpenUserID != gone.OpenUserID ||
			body.Data.AcknowledgePath != ack || body.Data.ErasedAt == "" || body.OccurredAt == "" {
			t.Fatalf("user.erased body %s (delivery header %s)", got.Body, got.ID)
		}
		for _, personal := range []string{"erased-partner-id-9", "channel_user_id", "PIPL", "reason"} {
			if strings.Contains(string(got.Body), personal) {
				t.Fatalf("user.erased carries %q: %s", personal, got.Body)
			}
		}
		// The delivery log keeps the notice readable (a retry or resend
		// sends the same bytes), although the person's key is gone.
		if d := p.WaitDelivery(got.ID, "delivered"); d.Event != "user.erased" {
			t.Fatalf("delivery %+v", d)
		}

		list := func(app int64) pendingErasures {
			t.Helper()
			res := p.As(auditor, "GET", fmt.Sprintf("/admin/v1/erasures?app_id=%d", app), nil)
			harness.ExpectCode(t, "pending erasures", res, http.StatusOK, "0")
			var page pendingErasures
			res.Data(t, &page)
			return page
		}
		pending := list(holder.ID)
		if len(pending.Erasures) != 1 || pending.Erasures[0].OpenUserID != gone.OpenUserID || pending.Erasures[0].AppID != holder.ID ||
			pending.Erasures[0].Acknowledged || pending.Erasures[0].Reason != "PIPL request ticket 77" {
			t.Fatalf("pending erasures of the holder: %+v", pending)
		}
		if n := len(list(bystander.ID).Erasures); n != 0 {
			t.Fatalf("the bystander has %d pending erasures, want none", n)
		}

		// Refusals append nothing.
		before := p.EventCount()
		for _, c := range []struct {
			app    *harness.App
			path   string
			body   any
			status int
			code   string
		}{
			{bystander, ack, nil, http.StatusNotFound, "ERASURE_NOT_FOUND"},
			{holder, fmt.Sprintf("/open/v1/erasures/%d/acknowledge", other.OpenUserID), nil, http.StatusNotFound, "ERASURE_NOT_FOUND"},
			{bystander, fmt.Sprintf("/open/v1/erasures/%d/acknowledge", other.OpenUserID), nil, http.StatusNotFound, "ERASURE_NOT_FOUND"},
			{holder, "/open/v1/erasures/987654321/acknowledge", nil, http.StatusNotFound, "ERASURE_NOT_FOUND"},
			{holder, ack, []int{1}, http.StatusBadRequest, "HTTP_400"},
			{holder, "/open/v1/erasures/x/acknowledge", nil, http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		} {
			if res := c.app.DoH("POST", c.path, c.body); res.Status != c.status || res.Code() != c.code {
				t.Fatalf("POST %s as app %d: %d %s, want %d %s", c.path, c.app.ID, res.Status, res.Raw, c.status, c.code)
			}
		}
		if n := p.EventCount(); n != before {
			t.Fatalf("refused acknowledgements appended %d events", n-before)
		}

		// Concurrent duplicates: one fact, one answer.
		const n = 6
		answers := make([]harness.Response, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i] = holder.DoH("POST", ack, nil)
			}()
		}
		wg.Wait()
		var first map[string]any
		for i, res := range answers {
			if res.Status != http.StatusOK || res.Code() != "0" {
				t.Fatalf("acknowledge %d: %d %s", i, res.Status, res.Raw)
			}
			var a map[string]any
			res.Data(t, &a)
			if i == 0 {
				first = a
			}
			if fmt.Sprint(a) != fmt.Sprint(first) || a["open_user_id"] != float64(gone.OpenUserID) || a["acknowledged_at"] == "" {
				t.Fatalf("acknowledge %d answered %v, want %v", i, a, first)
			}
		}
		if res := holder.DoH("POST", ack, map[string]any{}); res.Status != http.StatusOK {
			t.Fatalf("a later acknowledge: %d %s", res.Status, res.Raw)
		}
		var facts []harness.AuditFact
		deadline := time.Now().Add(harness.WaitBound)
		for {
			res := p.As(auditor, "GET", "/admin/v1/audit?action=user.erasure_acknowledged", nil)
			harness.ExpectCode(t, "audit", res, http.StatusOK, "0")
			var page struct {
				Facts []harness.AuditFact `json:"facts"`
			}
			res.Data(t, &page)
			facts = page.Facts
			if len(facts) > 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if len(facts) != 1 || facts[0].Actor != fmt.Sprintf("app:%d", holder.ID) || facts[0].AppID != holder.ID ||
			len(facts[0].Subjects) != 1 || facts[0].Subjects[0] != fmt.Sprintf("user-%d", gone.OpenUserID) {
			t.Fatalf("acknowledgement facts %+v, want one by app %d", facts, holder.ID)
		}
		if n := len(list(holder.ID).Erasures); n != 0 {
			t.Fatalf("%d pending erasures after the acknowledgement, want none", n)
		}
		// The bystander (subscribed to everything) held nobody erased: its
		// own user's webhooks reached it, no user.erased did.
		time.Sleep(300 * time.Millisecond)
		for _, w := range rb.WaitFor(0) {
			if w.Event == "user.erased" || strings.Contains(string(w.Body), `"user.erased"`) {
				t.Fatalf("the bystander received %s", w.Body)
			}
		}
	})
}
