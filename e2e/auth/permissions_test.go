package auth_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// signedWith verifies a received webhook with secret, as a receiver
// written to the spec does.
func signedWith(w harness.Webhook, secret string) bool {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(w.Timestamp + "."))
	mac.Write(w.Body)
	got, err := hex.DecodeString(w.Signature)
	return err == nil && hmac.Equal(got, mac.Sum(nil))
}

// An app created without scopes gets the documented default set and no
// other scope; declaring scopes replaces the grant.
func TestDefaultScopesAreEnforced(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	a := p.CreateAppWith(map[string]any{"name": "least"})
	if got, want := p.ReadApp(a).Scopes, []string{"channel_users", "health_reports", "orders", "webhooks"}; !slices.Equal(got, want) {
		t.Fatalf("default scopes %v, want %v", got, want)
	}
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0")
	a.Expect("GET", "/open/v1/webhooks/events", nil, http.StatusOK, "0")
	before := p.EventCount()
	a.Expect("POST", "/open/v1/benefit-cards/verify-use", map[string]any{"card_number": "X", "benefit_item_id": 1}, http.StatusForbidden, "SCOPE_NOT_GRANTED")
	a.Expect("POST", "/open/v1/service-providers", map[string]any{"name": "n", "type": "SERVICE_PROVIDER", "contact": "c"}, http.StatusForbidden, "SCOPE_NOT_GRANTED")
	if after := p.EventCount(); after != before {
		t.Fatalf("a refused call appended %d events", after-before)
	}

	if res := p.Admin("PUT", fmt.Sprintf("/admin/v1/apps/%d/scopes", a.ID), map[string]any{"scopes": []string{"webhooks", "benefits", "webhooks"}}); res.Status != http.StatusOK {
		t.Fatalf("declare: %d %s", res.Status, res.Raw)
	}
	a.Expect("GET", "/open/v1/channel/users/0?channel_user_id=u-1", nil, http.StatusForbidden, "SCOPE_NOT_GRANTED")
	a.Expect("GET", "/open/v1/webhooks/events", nil, http.StatusOK, "0")
	if got := p.ReadApp(a).Scopes; !slices.Equal(got, []string{"benefits", "webhooks"}) {
		t.Fatalf("declared scopes %v", got)
	}
	// Declaring none grants the default set again.
	if res := p.Admin("PUT", fmt.Sprintf("/admin/v1/apps/%d/scopes", a.ID), map[string]any{"scopes": []string{}}); res.Status != http.StatusOK {
		t.Fatalf("declare none: %d %s", res.Status, res.Raw)
	}
	a.Expect("GET", "/open/v1/channel/users/0?channel_user_id=u-1", nil, http.StatusOK, "0")
}

// A suspended app is refused with 403 APP_SUSPENDED and its webhooks are
// not attempted; resuming sends the held delivery, without a used retry.
func TestSuspendedAppIsRefusedAndItsWebhooksWait(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		cfg.WebhookAllowLoopback = true
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		rcv := harness.NewReceiver(t)
		rcv.Secret = a.WebhookSecret
		p.ConfigureWebhook(a, rcv.Srv.URL+"/hooks", "user.profile.updated")

		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
		user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
		a.Expect("PATCH", user, map[string]any{"nickname": "n"}, http.StatusOK, "0")
		first := rcv.WaitFor(1)[0]
		p.WaitDelivery(first.ID, "delivered")

		suspend := fmt.Sprintf("/admin/v1/apps/%d/suspend", a.ID)
		if res := p.Admin("POST", suspend, map[string]any{"reason": "contract paused"}); res.Status != http.StatusOK {
			t.Fatalf("suspend: %d %s", res.Status, res.Raw)
		}
		if v := p.ReadApp(a); !v.Suspended || v.SuspensionReason != "contract paused" {
			t.Fatalf("app after suspension %+v", v)
		}
		before := p.EventCount()
		a.Expect("PATCH", user, map[string]any{"nickname": "m"}, http.StatusForbidden, "APP_SUSPENDED")
		a.Expect("GET", "/open/v1/webhooks/events", nil, http.StatusForbidden, "APP_SUSPENDED")
		if after := p.EventCount(); after != before {
			t.Fatalf("a suspended app's call appended %d events", after-before)
		}

		// A resend while suspended queues the delivery, which waits.
		if res := p.Admin("POST", "/admin/v1/deliveries/"+first.ID+"/resend", nil); res.Status != http.StatusAccepted {
			t.Fatalf("resend: %d %s", res.Status, res.Raw)
		}
		rcv.Quiet(1, 1500*time.Millisecond)
		if v := p.WaitDelivery(first.ID, "pending"); v.Attempts != 1 {
			t.Fatalf("held delivery was attempted: %+v", v)
		}

		if res := p.Admin("POST", fmt.Sprintf("/admin/v1/apps/%d/resume", a.ID), nil); res.Status != http.StatusOK {
			t.Fatalf("resume: %d %s", res.Status, res.Raw)
		}
		again := rcv.WaitFor(2)[1]
		if again.ID != first.ID || !again.Verified || string(again.Body) != string(first.Body) {
			t.Fatalf("after resume %+v", again)
		}
		if v := p.WaitDelivery(first.ID, "delivered"); v.Attempts != 2 {
			t.Fatalf("delivery after resume %+v", v)
		}
		a.Expect("PATCH", user, map[string]any{"nickname": "m"}, http.StatusOK, "0")
		if w := rcv.WaitFor(3)[2]; !w.Verified || w.Event != "user.profile.updated" {
			t.Fatalf("webhook after resume %+v", w)
		}
	})
}

// Rotating the webhook secret issues a pending secret; the old one signs
// until the partner activates the new one, then only the new one does.
func TestWebhookSecretRotation(t *testing.T) {
	t.Parallel()
	cfg := node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true}
	p := harness.Start(t, cfg)
	a := p.CreateApp("partner")
	rcv := harness.NewReceiver(t)
	rcv.Secret = a.WebhookSecret
	p.ConfigureWebhook(a, rcv.Srv.URL+"/hooks", "user.profile.updated")
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
	user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)

	// The partner rotates; the pending secret is returned once.
	var pending struct {
		Secret string `json:"pending_webhook_secret"`
	}
	a.Expect("POST", "/open/v1/webhooks/secret/rotate", nil, http.StatusOK, "0").Data(t, &pending)
	if pending.Secret == "" || pending.Secret == a.WebhookSecret || pending.Secret == a.Secret {
		t.Fatalf("pending secret %q", pending.Secret)
	}
	if !p.ReadApp(a).WebhookPending {
		t.Fatal("the app does not show a pending secret")
	}
	a.Expect("PATCH", user, map[string]any{"nickname": "before"}, http.StatusOK, "0")
	w := rcv.WaitFor(1)[0]
	if !w.Verified || !signedWith(w, a.WebhookSecret) || signedWith(w, pending.Secret) {
		t.Fatalf("before activation the old secret must sign: %+v", w)
	}

	// Activation by the operator: the new secret signs, the old one no longer verifies.
	if res := p.Admin("POST", fmt.Sprintf("/admin/v1/apps/%d/webhook-secret/activate", a.ID), nil); res.Status != http.StatusOK {
		t.Fatalf("activate: %d %s", res.Status, res.Raw)
	}
	if p.ReadApp(a).WebhookPending {
		t.Fatal("still pending after activation")
	}
	a.Expect("PATCH", user, map[string]any{"nickname": "after"}, http.StatusOK, "0")
	w = rcv.WaitFor(2)[1]
	if w.Verified || signedWith(w, a.WebhookSecret) || !signedWith(w, pending.Secret) {
		t.Fatalf("after activation only the new secret must sign: %+v", w)
	}
	a.Expect("POST", "/open/v1/webhooks/secret/activate", nil, http.StatusConflict, "NO_PENDING_WEBHOOK_SECRET")
}
