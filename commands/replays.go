package commands

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// KindReplay is the id kind of webhook replays.
const KindReplay = "webhook_replay"

// A replay's status.
const (
	ReplayRunning   = "RUNNING"
	ReplayCompleted = "COMPLETED"
	ReplayCanceled  = "CANCELED"
)

// ReplayInput is a partner's request for a replay. Exactly one of Since and
// Cursor names the start; After and From are where the log is read from
// for it (resolved by the caller: the log's start for Since, the feed
// position of Cursor), Before an optional end time.
type ReplayInput struct {
	EndpointID int64
	Events     []string
	Since      *time.Time
	Cursor     *string
	Before     *time.Time
	After      events.Position
	From       events.Position
}

// Replay is a replay as its partner sees it.
type Replay struct {
	ReplayID   int64
	AppID      int64
	EndpointID int64
	Events     []string
	Since      *time.Time
	Cursor     string
	Before     *time.Time
	Status     string
	// Reached is the log position every event up to which is handled;
	// Until is where the replay ends (the log's head when it was asked).
	Reached, Until                     events.Position
	Matched, Queued, Delivered, Erased int64
	RequestedAt                        time.Time
	EndedAt                            *time.Time
	// Request is the replay's opening event, for its runner.
	Request catalog.WebhookReplayRequested
	// Version is how many events the stream holds.
	Version uint64
}

// replayState is one replay folded from its stream.
type replayState struct {
	r Replay
}

func (s *replayState) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.WebhookReplayRequested:
		s.r = Replay{
			ReplayID: p.ReplayID, AppID: p.AppID, EndpointID: p.EndpointID, Events: p.Events, Since: p.Since,
			Cursor: p.Cursor, Before: p.Before, Status: ReplayRunning, Reached: p.After, Until: p.Until,
			RequestedAt: p.RequestedAt, Request: *p,
		}
	case *catalog.WebhookReplayProgressed:
		s.r.Reached = p.Position
		s.r.Matched, s.r.Queued, s.r.Delivered, s.r.Erased = p.Matched, p.Queued, p.Delivered, p.Erased
	case *catalog.WebhookReplayCompleted:
		s.r.Status, s.r.Reached = ReplayCompleted, p.Position
		s.r.Matched, s.r.Queued, s.r.Delivered, s.r.Erased = p.Matched, p.Queued, p.Delivered, p.Erased
		at := p.At
		s.r.EndedAt = &at
	case *catalog.WebhookReplayCanceled:
		s.r.Status = ReplayCanceled
		at := p.At
		s.r.EndedAt = &at
	}
}

// Replays handles webhook replays: a partner asks for one, reads its
// progress and cancels it; the webhook replay runner records its
// checkpoints and its end.
type Replays struct {
	streams
	ids *Allocator
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// NewReplays builds the replay command handler.
func NewReplays(store events.Store, reg *events.Registry, ids *Allocator) *Replays {
	return &Replays{streams: streams{store, reg}, ids: ids}
}

func (r *Replays) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// validateReplay vets a replay request against the webhook event names and
// the clock: at least one event (a name partners receive, a prefix
// wildcard matching one, or "*"), exactly one of since and cursor, no time
// in the future and an end after the start.
func validateReplay(in ReplayInput, now time.Time) error {
	v := &domain.ValidationError{}
	switch {
	case len(in.Events) == 0:
		v.Add("events", "is required: name at least one event type, such as user.profile.updated, or a prefix wildcard such as health.report.*")
	case len(in.Events) > 50:
		v.Add("events", "must name at most 50 events")
	}
	names := replayableEvents()
	for i, e := range in.Events {
		if !slices.ContainsFunc(names, func(n string) bool {
			return e == "*" || e == n || (strings.HasSuffix(e, ".*") && strings.HasPrefix(n, e[:len(e)-1]))
		}) {
			v.Add(fmt.Sprintf("events[%d]", i), "must be a webhook event type (see the event catalog) or a prefix wildcard matching one")
		}
	}
	switch {
	case in.Since != nil && in.Cursor != nil:
		v.Add("since", "give since or cursor, not both")
	case in.Since == nil && in.Cursor == nil:
		v.Add("since", "is required unless cursor is given")
	case in.Since != nil && in.Since.After(now):
		v.Add("since", "must not be in the future")
	}
	if in.Before != nil {
		if in.Before.After(now) {
			v.Add("until", "must not be in the future")
		} else if in.Since != nil && !in.Before.After(*in.Since) {
			v.Add("until", "must be after since")
		}
	}
	if in.EndpointID < 0 {
		v.Add("endpoint_id", "must be an endpoint id of the app (0: the default endpoint)")
	}
	return v.Err()
}

// replayableEvents are the webhook event names a replay can select: every
// one partners receive but the test event, which goes to one endpoint
// when asked and is not part of the app's history.
func replayableEvents() []string {
	return slices.DeleteFunc(catalog.WebhookEventNames(), func(n string) bool { return n == "webhook.test" })
}

// decideRequestReplay opens replay id of the app's endpoint: the endpoint
// must exist and be enabled.
func decideRequestReplay(app *appState, id int64, in ReplayInput, until events.Position, by string, now time.Time) (events.Payload, error) {
	e, err := app.endpoint(in.EndpointID)
	if err != nil {
		return nil, err
	}
	if e.disabled {
		return nil, domain.ErrEndpointDisabled
	}
	ev := catalog.WebhookReplayRequested{
		ReplayID: id, AppID: app.appID, EndpointID: in.EndpointID, Events: in.Events, Since: utc(in.Since),
		Before: utc(in.Before), After: in.After, From: in.From, Until: until, RequestedBy: by, RequestedAt: now.UTC(),
	}
	if in.Cursor != nil {
		ev.Cursor = *in.Cursor
	}
	return ev, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// Request opens a replay and answers it as its partner reads it. Bad input
// appends nothing.
func (r *Replays) Request(ctx context.Context, appID int64, in ReplayInput, meta Meta) (Replay, events.Position, error) {
	now := r.now()
	if err := validateReplay(in, now); err != nil {
		return Replay{}, events.Position{}, err
	}
	app := &appState{}
	if _, _, err := r.load(ctx, domain.AppStream(appID), app.apply); err != nil {
		return Replay{}, events.Position{}, err
	}
	if err := app.found(); err != nil {
		return Replay{}, events.Position{}, err
	}
	if _, err := decideRequestReplay(app, 0, in, events.Position{}, meta.Actor, now); err != nil {
		return Replay{}, events.Position{}, err
	}
	// The end is the head now: everything the partner may have seen
	// before asking, and nothing after (live deliveries carry that).
	until, err := r.store.Head(ctx)
	if err != nil {
		return Replay{}, events.Position{}, err
	}
	id, err := r.ids.Next(ctx, KindReplay)
	if err != nil {
		return Replay{}, events.Position{}, err
	}
	ev, err := decideRequestReplay(app, id, in, until, meta.Actor, now)
	if err != nil {
		return Replay{}, events.Position{}, err
	}
	meta.AppID = appID
	res, err := r.append(ctx, domain.ReplayStream(id), 0, meta, ev)
	if err != nil {
		return Replay{}, events.Position{}, err
	}
	st := &replayState{}
	req := ev.(catalog.WebhookReplayRequested)
	st.apply(events.Envelope{Payload: &req})
	st.r.Version = 1
	return st.r, res.Position, nil
}

// Get reads a replay of the app (appID 0: any app, for its runner);
// another app's is ErrReplayNotFound, as a missing one.
func (r *Replays) Get(ctx context.Context, appID, id int64) (Replay, error) {
	st := &replayState{}
	v, _, err := r.load(ctx, domain.ReplayStream(id), st.apply)
	if err != nil {
		return Replay{}, err
	}
	if st.r.ReplayID == 0 || (appID != 0 && st.r.AppID != appID) {
		return Replay{}, domain.ErrReplayNotFound
	}
	st.r.Version = v
	return st.r, nil
}

// decideCancelReplay ends a running replay; canceling a canceled one
// changes nothing, a completed one is ErrReplayFinished.
func decideCancelReplay(st *replayState, appID int64, by string, now time.Time) ([]events.Payload, error) {
	if st.r.ReplayID == 0 || st.r.AppID != appID {
		return nil, domain.ErrReplayNotFound
	}
	switch st.r.Status {
	case ReplayCanceled:
		return nil, nil
	case ReplayCompleted:
		return nil, domain.ErrReplayFinished
	}
	return []events.Payload{catalog.WebhookReplayCanceled{ReplayID: st.r.ReplayID, AppID: appID, CanceledBy: by, At: now.UTC()}}, nil
}

// Cancel stops the app's replay id; what it already queued stays queued.
func (r *Replays) Cancel(ctx context.Context, appID, id int64, meta Meta) (events.Position, error) {
	meta.AppID = appID
	return execute(ctx, r.streams, replay[*replayState]{func() *replayState { return &replayState{} }}, domain.ReplayStream(id), &meta, func(st *replayState) ([]events.Payload, error) {
		return decideCancelReplay(st, appID, meta.Actor, r.now())
	})
}

// decideReplayCheckpoint records the runner's progress while the replay
// runs (domain.ErrReplayStopped once it does not); a checkpoint that does not
// move the position forward records nothing.
func decideReplayCheckpoint(st *replayState, c domain.ReplayCounts, done bool, now time.Time) ([]events.Payload, error) {
	if st.r.ReplayID == 0 {
		return nil, domain.ErrReplayNotFound
	}
	if st.r.Status != ReplayRunning {
		return nil, domain.ErrReplayStopped
	}
	if done {
		return []events.Payload{catalog.WebhookReplayCompleted{
			ReplayID: st.r.ReplayID, AppID: st.r.AppID, Position: c.Position,
			Matched: c.Matched, Queued: c.Queued, Delivered: c.Delivered, Erased: c.Erased, At: now.UTC(),
		}}, nil
	}
	if !st.r.Reached.Less(c.Position) {
		return nil, nil
	}
	return []events.Payload{catalog.WebhookReplayProgressed{
		ReplayID: st.r.ReplayID, Position: c.Position, Matched: c.Matched, Queued: c.Queued, Delivered: c.Delivered, Erased: c.Erased,
	}}, nil
}

// Checkpoint records the runner's progress through replay id, or its
// completion when done; domain.ErrReplayStopped once the replay was canceled.
func (r *Replays) Checkpoint(ctx context.Context, id int64, c domain.ReplayCounts, done bool, meta Meta) (events.Position, error) {
	return execute(ctx, r.streams, replay[*replayState]{func() *replayState { return &replayState{} }}, domain.ReplayStream(id), &meta, func(st *replayState) ([]events.Payload, error) {
		meta.AppID = st.r.AppID
		return decideReplayCheckpoint(st, c, done, r.now())
	})
}
