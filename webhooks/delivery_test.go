package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

func TestSubscribed(t *testing.T) {
	cases := []struct {
		sub   []string
		event string
		want  bool
	}{
		{nil, "health.report.created", true},
		{[]string{"health.report.*"}, "health.report.updated", true},
		{[]string{"health.report.*"}, "health.reports", false},
		{[]string{"health.report.*"}, "health.report", false},
		{[]string{"user.profile.updated"}, "user.profile.updated", true},
		{[]string{"user.profile.updated"}, "user.profile.updated.v2", false},
		{[]string{"user.*"}, "user.family_member.created", true},
		{[]string{"order.shipped", "plugin.*"}, "plugin.report.ready", true},
	}
	for _, c := range cases {
		if got := Subscribed(c.sub, c.event); got != c.want {
			t.Errorf("Subscribed(%v, %s) = %v", c.sub, c.event, got)
		}
	}
}

func TestSignMatchesTheSpec(t *testing.T) {
	m := hmac.New(sha256.New, []byte("whsec_x"))
	m.Write([]byte("1700000000.{\"a\":1}"))
	if got, want := Sign("whsec_x", "1700000000", []byte(`{"a":1}`)), fmt.Sprintf("%x", m.Sum(nil)); got != want {
		t.Fatalf("Sign %s, want %s", got, want)
	}
}

func TestDeliveryIDIsStablePerAppAndEvent(t *testing.T) {
	a, b := DeliveryID(1, "e1"), DeliveryID(1, "e1")
	if a != b || a == DeliveryID(2, "e1") || a == DeliveryID(1, "e2") {
		t.Fatal("delivery ids are not a function of (app, event)")
	}
}

// Given a delivery with these attempts, when an attempt has this result,
// then this outcome and next time are recorded.
func TestDecideAttemptFollowsTheSchedule(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	created := func(deadLetter bool) *delivery {
		d := &delivery{}
		d.apply(events.Envelope{Payload: &catalog.DeliveryCreated{DeliveryID: "d", Deliver: true, DeadLetter: deadLetter}})
		return d
	}
	fail := result{at: at, statusCode: 500}
	d := created(false)
	for i, wait := range DefaultSchedule {
		ev := decideAttempt(d, fail, DefaultSchedule)
		if ev.Outcome != domain.OutcomeRetry || ev.Attempt != i+1 || !ev.NextAttemptAt.Equal(at.Add(wait)) {
			t.Fatalf("failure %d: %+v", i+1, ev)
		}
		d.apply(events.Envelope{Payload: &ev})
	}
	if ev := decideAttempt(d, fail, DefaultSchedule); ev.Outcome != domain.OutcomeAbandoned || ev.NextAttemptAt != nil || ev.Attempt != 6 {
		t.Fatalf("sixth failure: %+v", ev)
	}
	dl := created(true)
	for range DefaultSchedule {
		ev := decideAttempt(dl, fail, DefaultSchedule)
		dl.apply(events.Envelope{Payload: &ev})
	}
	if ev := decideAttempt(dl, fail, DefaultSchedule); ev.Outcome != domain.OutcomeDeadLetter {
		t.Fatalf("plugin event after retries: %+v", ev)
	}
	for _, c := range []struct {
		r    result
		want string
	}{
		{result{at: at, statusCode: 204}, domain.OutcomeDelivered},
		{result{at: at, statusCode: 299}, domain.OutcomeDelivered},
		{result{at: at, statusCode: 302}, domain.OutcomeRetry},
		{result{at: at, err: "timeout"}, domain.OutcomeRetry},
		{result{at: at, err: "refused", refused: true}, domain.OutcomeRefused},
	} {
		if ev := decideAttempt(created(false), c.r, DefaultSchedule); ev.Outcome != c.want {
			t.Errorf("%+v: %s, want %s", c.r, ev.Outcome, c.want)
		}
	}
	// A resend restarts the schedule.
	d.apply(events.Envelope{Payload: &catalog.DeliveryAttempted{Attempt: 6, Outcome: domain.OutcomeAbandoned}})
	if ev, err := decideResend(d, "operator", at); err != nil || ev == nil {
		t.Fatalf("resend: %v %v", ev, err)
	} else {
		d.apply(events.Envelope{Payload: ev})
	}
	if ev := decideAttempt(d, fail, DefaultSchedule); ev.Outcome != domain.OutcomeRetry || ev.Attempt != 7 || !ev.NextAttemptAt.Equal(at.Add(time.Minute)) {
		t.Fatalf("after resend: %+v", ev)
	}
}
