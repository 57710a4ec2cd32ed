package commands

import (
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

var replayNow = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func replayInput(mod func(*ReplayInput)) ReplayInput {
	since := replayNow.Add(-time.Hour)
	in := ReplayInput{Events: []string{"user.profile.updated", "health.report.*"}, Since: &since}
	if mod != nil {
		mod(&in)
	}
	return in
}

// Given any request, when it names unknown events, both or neither of
// since and cursor, or a time in the future, then it is refused on that
// field; a well-formed one passes.
func TestValidateReplay(t *testing.T) {
	future := replayNow.Add(time.Minute)
	cursor := "12-12"
	cases := map[string]struct {
		in    ReplayInput
		field string
	}{
		"no events":          {replayInput(func(in *ReplayInput) { in.Events = nil }), "events"},
		"unknown event":      {replayInput(func(in *ReplayInput) { in.Events = []string{"user.nope"} }), "events[0]"},
		"test event":         {replayInput(func(in *ReplayInput) { in.Events = []string{"webhook.test"} }), "events[0]"},
		"wildcard of none":   {replayInput(func(in *ReplayInput) { in.Events = []string{"billing.*"} }), "events[0]"},
		"both starts":        {replayInput(func(in *ReplayInput) { in.Cursor = &cursor }), "since"},
		"no start":           {replayInput(func(in *ReplayInput) { in.Since = nil }), "since"},
		"since in future":    {replayInput(func(in *ReplayInput) { in.Since = &future }), "since"},
		"until in future":    {replayInput(func(in *ReplayInput) { in.Before = &future }), "until"},
		"until before since": {replayInput(func(in *ReplayInput) { b := in.Since.Add(-time.Second); in.Before = &b }), "until"},
		"negative endpoint":  {replayInput(func(in *ReplayInput) { in.EndpointID = -1 }), "endpoint_id"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { thenInvalid(t, validateReplay(c.in, replayNow), c.field) })
	}
	for name, in := range map[string]ReplayInput{
		"since":    replayInput(nil),
		"cursor":   replayInput(func(in *ReplayInput) { in.Since, in.Cursor = nil, &cursor }),
		"all":      replayInput(func(in *ReplayInput) { in.Events = []string{"*"} }),
		"until":    replayInput(func(in *ReplayInput) { in.Before = &replayNow }),
		"all time": replayInput(func(in *ReplayInput) { zero := time.Unix(0, 0); in.Since = &zero }),
	} {
		if err := validateReplay(in, replayNow); err != nil {
			t.Errorf("%s: refused %v", name, err)
		}
	}
}

// Given an app, when a replay names its default endpoint, then the replay
// is requested with the range and the requester; an endpoint it does not
// have (another app's looks the same) or a disabled one is refused.
func TestDecideRequestReplay(t *testing.T) {
	app := given(t, &appState{}, sandboxApp, catalog.AppWebhookEndpointAdded{AppID: 9, EndpointID: 4, URL: "https://b.example/h"},
		catalog.AppWebhookEndpointDisabled{AppID: 9, EndpointID: 4})
	in := replayInput(nil)
	in.After = events.Position{Commit: 0}
	until := events.Position{Commit: 50, Prepare: 50}
	got, err := decideRequestReplay(app, 3, in, until, "app:9", replayNow)
	since := in.Since.UTC()
	then(t, []events.Payload{got}, err, catalog.WebhookReplayRequested{ReplayID: 3, AppID: 9, EndpointID: 0, Events: in.Events,
		Since: &since, Until: until, RequestedBy: "app:9", RequestedAt: replayNow})

	in.EndpointID = 77
	_, err = decideRequestReplay(app, 3, in, until, "app:9", replayNow)
	thenError(t, nil, err, domain.ErrEndpointNotFound)
	in.EndpointID = 4
	_, err = decideRequestReplay(app, 3, in, until, "app:9", replayNow)
	thenError(t, nil, err, domain.ErrEndpointDisabled)
}

func requested(id, app int64) catalog.WebhookReplayRequested {
	return catalog.WebhookReplayRequested{ReplayID: id, AppID: app, Events: []string{"*"}, Until: events.Position{Commit: 9, Prepare: 9}}
}

// Given a running replay, when its app cancels it, then it is canceled;
// again: nothing more; another app: not found; a completed one: finished.
func TestDecideCancelReplay(t *testing.T) {
	running := given(t, &replayState{}, requested(5, 9))
	got, err := decideCancelReplay(running, 9, "app:9", replayNow)
	then(t, got, err, catalog.WebhookReplayCanceled{ReplayID: 5, AppID: 9, CanceledBy: "app:9", At: replayNow})

	got, err = decideCancelReplay(running, 8, "app:8", replayNow)
	thenError(t, got, err, domain.ErrReplayNotFound)

	canceled := given(t, &replayState{}, requested(5, 9), catalog.WebhookReplayCanceled{ReplayID: 5, AppID: 9})
	got, err = decideCancelReplay(canceled, 9, "app:9", replayNow)
	then(t, got, err)

	done := given(t, &replayState{}, requested(5, 9), catalog.WebhookReplayCompleted{ReplayID: 5, AppID: 9})
	got, err = decideCancelReplay(done, 9, "app:9", replayNow)
	thenError(t, got, err, domain.ErrReplayFinished)

	got, err = decideCancelReplay(&replayState{}, 9, "app:9", replayNow)
	thenError(t, got, err, domain.ErrReplayNotFound)
}

// Given a running replay, when the runner reports progress, then a
// checkpoint is recorded only when it moves forward, the end completes it,
// and once the replay was canceled the runner is told to stop.
func TestDecideReplayCheckpoint(t *testing.T) {
	at := func(n uint64) events.Position { return events.Position{Commit: n, Prepare: n} }
	running := given(t, &replayState{}, requested(5, 9), catalog.WebhookReplayProgressed{ReplayID: 5, Position: at(4), Matched: 2})
	c := domain.ReplayCounts{Position: at(6), Matched: 3, Queued: 2, Delivered: 1, Erased: 1}
	got, err := decideReplayCheckpoint(running, c, false, replayNow)
	then(t, got, err, catalog.WebhookReplayProgressed{ReplayID: 5, Position: at(6), Matched: 3, Queued: 2, Delivered: 1, Erased: 1})

	got, err = decideReplayCheckpoint(running, domain.ReplayCounts{Position: at(4), Matched: 2}, false, replayNow)
	then(t, got, err)

	got, err = decideReplayCheckpoint(running, c, true, replayNow)
	then(t, got, err, catalog.WebhookReplayCompleted{ReplayID: 5, AppID: 9, Position: at(6), Matched: 3, Queued: 2, Delivered: 1, Erased: 1, At: replayNow})

	canceled := given(t, &replayState{}, requested(5, 9), catalog.WebhookReplayCanceled{ReplayID: 5, AppID: 9})
	got, err = decideReplayCheckpoint(canceled, c, false, replayNow)
	thenError(t, got, err, domain.ErrReplayStopped)
	got, err = decideReplayCheckpoint(canceled, c, true, replayNow)
	thenError(t, got, err, domain.ErrReplayStopped)
}
