package partneropen

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// Bodies shaped as the OpenAPI x-webhooks schemas, one per event type.
var eventBodies = map[string]string{
	"health.report.created":      `{"event":"health.report.created","open_user_id":7,"channel_user_id":"u-7","open_report_id":90017,"report_type":"BLOOD_PRESSURE","occurred_at":"2026-11-23T10:00:00+08:00","delivery_id":"d-1"}`,
	"health.report.updated":      `{"event":"health.report.updated","open_user_id":7,"channel_user_id":"u-7","open_report_id":90017,"report_type":"BLOOD_PRESSURE","occurred_at":"2026-11-23T10:00:00+08:00","delivery_id":"d-2"}`,
	"plugin.report.ready":        `{"event":"plugin.report.ready","delivery_id":"d-3","app_id":1,"measurement_no":"PM0000000000000001","third_user_id":null,"platform_user_id":null,"report_type":"blood_pressure","report_url":null,"metadata":"m","occurred_at":"2026-11-23T10:00:00+08:00"}`,
	"order.shipped":              `{"event":"order.shipped","delivery_id":"d-4","app_id":1,"order_code":"PO1","third_order_id":"T1","logistics_company":"SF","tracking_number":"SF1","shipped_at":"2026-11-23 10:00:00","complete":true,"items":[],"occurred_at":"2026-11-23T10:00:00+08:00"}`,
	"user.profile.updated":       `{"event":"user.profile.updated","delivery_id":"d-5","app_id":1,"open_user_id":7,"channel_user_id":"u-7","occurred_at":"x","data":{"changed_fields":["name"]}}`,
	"user.family_group.created":  `{"event":"user.family_group.created","delivery_id":"d-6","app_id":1,"open_user_id":7,"channel_user_id":"u-7","occurred_at":"x","data":{"family_group_id":3,"app_group_id":1,"name":"Home","created":true}}`,
	"user.family_group.deleted":  `{"event":"user.family_group.deleted","delivery_id":"d-7","app_id":1,"open_user_id":7,"channel_user_id":"u-7","occurred_at":"x","data":{"family_group_id":3,"app_group_id":1}}`,
	"user.family_member.created": `{"event":"user.family_member.created","delivery_id":"d-8","app_id":1,"open_user_id":7,"channel_user_id":"u-7","occurred_at":"x","data":{"member_id":4,"app_user_id":"m1"}}`,
	"user.family_member.updated": `{"event":"user.family_member.updated","delivery_id":"d-9","app_id":1,"open_user_id":7,"channel_user_id":"u-7","occurred_at":"x","data":{"member_id":4,"app_user_id":"m1"}}`,
	"user.family_member.deleted": `{"event":"user.family_member.deleted","delivery_id":"d-10","app_id":1,"open_user_id":7,"channel_user_id":"u-7","occurred_at":"x","data":{"member_id":4,"app_user_id":"m1"}}`,
	"webhook.test":               `{"event":"webhook.test","delivery_id":"d-11","app_id":1,"endpoint_id":12,"occurred_at":"2026-11-23T10:00:00+08:00","data":{"message":"test"}}`,
	"user.erased":                `{"event":"user.erased","delivery_id":"d-12","app_id":1,"open_user_id":7,"occurred_at":"2026-11-23T10:00:00+08:00","data":{"erased_at":"2026-11-23T10:00:00+08:00","acknowledge_path":"/open/v1/erasures/7/acknowledge"}}`,
}

func TestParseEventCoversEveryDocumentedEventType(t *testing.T) {
	d := loadDoc(t)
	for name := range d.Webhooks {
		body, ok := eventBodies[name]
		if !ok {
			t.Errorf("x-webhooks event %s has no test body (and maybe no typed parsing)", name)
			continue
		}
		ev, err := ParseEvent([]byte(body))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		set := 0
		for _, p := range []bool{ev.HealthReport != nil, ev.PluginReportReady != nil, ev.OrderShipped != nil,
			ev.ProfileUpdated != nil, ev.FamilyGroupCreated != nil, ev.FamilyGroupDeleted != nil,
			ev.FamilyMemberCreated != nil, ev.FamilyMemberUpdated != nil, ev.FamilyMemberDeleted != nil, ev.Test != nil,
			ev.UserErased != nil} {
			if p {
				set++
			}
		}
		if ev.Type != name || ev.DeliveryID == "" || set != 1 {
			t.Errorf("%s: type %q delivery %q, %d typed bodies set", name, ev.Type, ev.DeliveryID, set)
		}
	}
	if len(d.Webhooks) != len(eventBodies) {
		t.Errorf("document has %d webhook events, test has %d", len(d.Webhooks), len(eventBodies))
	}
	ev, _ := ParseEvent([]byte(eventBodies["health.report.created"]))
	if ev.HealthReport.OpenReportID != 90017 || ev.HealthReport.ChannelUserID != "u-7" {
		t.Errorf("report event %+v", ev.HealthReport)
	}
	ev, _ = ParseEvent([]byte(eventBodies["user.family_group.created"]))
	if ev.FamilyGroupCreated.FamilyGroupID != 3 || ev.ChannelUser.OpenUserID != 7 {
		t.Errorf("group event %+v", ev.FamilyGroupCreated)
	}
}

func TestParseEventRejectsUnknownAndMalformed(t *testing.T) {
	if _, err := ParseEvent([]byte(`{"event":"made.up","delivery_id":"x"}`)); !errors.Is(err, ErrUnknownEvent) {
		t.Errorf("unknown event: %v", err)
	}
	if _, err := ParseEvent([]byte(`not json`)); err == nil {
		t.Error("non-JSON accepted")
	}
	if _, err := ParseEvent([]byte(`{"event":"user.family_member.created","delivery_id":"x"}`)); err == nil {
		t.Error("channel-user event without data accepted")
	}
}

func TestVerifyRequestOverRawBytes(t *testing.T) {
	secret := "whsec_test"
	// Whitespace and key order as sent: re-serialising would break the signature.
	body := []byte("{ \"event\":\"health.report.created\", \"open_user_id\":7,\"channel_user_id\":\"u\",\"open_report_id\":1,\"report_type\":\"BP\",\"occurred_at\":\"x\",\"delivery_id\":\"d\" }")
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	sig := SignWebhook(secret, ts, body)
	var got *Event
	var verr error
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _, verr = VerifyRequest(secret, r)
		if verr != nil {
			w.WriteHeader(401)
		}
	}))
	defer srv.Close()
	post := func(sig string) int {
		req, _ := http.NewRequest("POST", srv.URL, bytes.NewReader(body))
		req.Header.Set("X-Webhook-Timestamp", ts)
		req.Header.Set("X-Webhook-Signature", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(sig); code != 200 || got == nil || got.HealthReport.DeliveryID != "d" {
		t.Fatalf("valid webhook: %d %v", code, verr)
	}
	flipped := sig[:63] + "0"
	if sig[63] == '0' {
		flipped = sig[:63] + "1"
	}
	if code := post(flipped); code != 401 || !errors.Is(verr, ErrBadSignature) {
		t.Fatalf("bad signature: %d %v", code, verr)
	}
	if code := post("zz"); code != 401 || !errors.Is(verr, ErrBadSignature) {
		t.Fatalf("malformed signature: %d %v", code, verr)
	}
}

func TestVerifyWebhookRejectsMalformedTimestamps(t *testing.T) {
	body := []byte(`{}`)
	for _, ts := range []string{"", "-1", "1e9", "12345678901234", " ", "0x10"} {
		if err := VerifyWebhook("s", ts, SignWebhook("s", ts, body), body); !errors.Is(err, ErrStaleTimestamp) {
			t.Errorf("timestamp %q: %v", ts, err)
		}
	}
}
