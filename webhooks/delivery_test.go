package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
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
		ev := attempted(t, d, fail)
		if ev.Outcome != domain.OutcomeRetry || ev.Attempt != i+1 || !ev.NextAttemptAt.Equal(at.Add(wait)) {
			t.Fatalf("failure %d: %+v", i+1, ev)
		}
		d.apply(events.Envelope{Payload: &ev})
	}
	if ev := attempted(t, d, fail); ev.Outcome != domain.OutcomeAbandoned || ev.NextAttemptAt != nil || ev.Attempt != 6 {
		t.Fatalf("sixth failure: %+v", ev)
	}
	dl := created(true)
	for range DefaultSchedule {
		ev := attempted(t, dl, fail)
		dl.apply(events.Envelope{Payload: &ev})
	}
	if ev := attempted(t, dl, fail); ev.Outcome != domain.OutcomeDeadLetter {
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
		if ev := attempted(t, created(false), c.r); ev.Outcome != c.want {
			t.Errorf("%+v: %s, want %s", c.r, ev.Outcome, c.want)
		}
	}
	// A resend restarts the schedule.
	d.apply(events.Envelope{Payload: &catalog.DeliveryAttempted{Attempt: 6, Outcome: domain.OutcomeAbandoned}})
	if ev, err := decideResend(d, 0, "operator", at); err != nil || ev == nil {
		t.Fatalf("resend: %v %v", ev, err)
	} else {
		d.apply(events.Envelope{Payload: ev})
	}
	if ev := attempted(t, d, fail); ev.Outcome != domain.OutcomeRetry || ev.Attempt != 7 || !ev.NextAttemptAt.Equal(at.Add(time.Minute)) {
		t.Fatalf("after resend: %+v", ev)
	}
}

// attempted is decideAttempt's event for a delivery that exists.
func attempted(t *testing.T, d *delivery, r result) catalog.DeliveryAttempted {
	t.Helper()
	ev, err := decideAttempt(d, r, DefaultSchedule)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// Given a delivery's stream and the app's state, when the dispatcher has
// listed it, then it is POSTed only if it is still due, its app is not
// suspended and its body was not erased; nothing is decided otherwise.
func TestDecideSend(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	given := func(ps ...events.Payload) *delivery {
		d := &delivery{}
		for _, p := range ps {
			d.apply(events.Envelope{Payload: p, Metadata: events.Metadata{OccurredAt: at}})
		}
		return d
	}
	created := &catalog.DeliveryCreated{DeliveryID: "d", AppID: 1, Deliver: true, Body: `{"a":1}`}
	retryAt := at.Add(time.Minute)
	retry := &catalog.DeliveryAttempted{Attempt: 1, Outcome: domain.OutcomeRetry, NextAttemptAt: &retryAt}
	delivered := &catalog.DeliveryAttempted{Attempt: 1, Outcome: domain.OutcomeDelivered}
	for _, c := range []struct {
		name      string
		d         *delivery
		now       time.Time
		suspended bool
		want      error
	}{
		{"never created", given(), at, false, domain.ErrDeliveryNotFound},
		{"pending", given(created), at, false, nil},
		{"skipped at creation", given(&catalog.DeliveryCreated{DeliveryID: "d", Body: "{}"}), at, false, errNotDue},
		{"retrying, before its next attempt", given(created, retry), retryAt.Add(-time.Second), false, errNotDue},
		{"retrying, at its next attempt", given(created, retry), retryAt, false, nil},
		{"delivered", given(created, delivered), at.Add(time.Hour), false, errNotDue},
		{"its app suspended", given(created), at, true, errAppSuspended},
		{"its body erased", given(&catalog.DeliveryCreated{DeliveryID: "d", AppID: 1, Deliver: true}), at, false, errBodyErased},
	} {
		if err := decideSend(c.d, c.now, c.suspended); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := decideAttempt(given(), result{at: at, statusCode: 200}, DefaultSchedule); !errors.Is(err, domain.ErrDeliveryNotFound) {
		t.Errorf("attempt of a delivery never created: %v", err)
	}
}

// Given a delivery, when an app or an operator resends it, then another
// app's delivery is not found (an app never learns it exists), a pending one
// decides nothing, and any other is queued again by whoever asked.
func TestDecideResend(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := &delivery{}
	d.apply(events.Envelope{Payload: &catalog.DeliveryCreated{DeliveryID: "d", AppID: 1, Deliver: true, Body: "{}"}})
	if ev, err := decideResend(d, 1, "app:1", at); err != nil || ev != nil {
		t.Fatalf("pending: %v %v, want nothing decided", ev, err)
	}
	d.apply(events.Envelope{Payload: &catalog.DeliveryAttempted{Attempt: 1, Outcome: domain.OutcomeRefused}})
	if ev, err := decideResend(d, 2, "app:2", at); !errors.Is(err, domain.ErrDeliveryNotFound) || ev != nil {
		t.Fatalf("another app's: %v %v, want DELIVERY_NOT_FOUND", ev, err)
	}
	for _, by := range []struct {
		app   int64
		actor string
	}{{1, "app:1"}, {0, "operator:7"}} {
		ev, err := decideResend(d, by.app, by.actor, at)
		if err != nil || ev == nil || ev.DeliveryID != "d" || ev.RequestedBy != by.actor || !ev.At.Equal(at) {
			t.Fatalf("resend by %s: %+v %v", by.actor, ev, err)
		}
	}
	if _, err := decideResend(&delivery{}, 0, "operator:7", at); !errors.Is(err, domain.ErrDeliveryNotFound) {
		t.Fatalf("never created: %v", err)
	}
}
