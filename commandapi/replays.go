package commandapi

import (
	"context"
	"net/http"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

func (a *API) replayRoutes() []Route {
	return []Route{
		{Method: "POST", Path: "/open/v1/webhooks/replays", Handle: a.partner(a.requestReplay)},
		{Method: "GET", Path: "/open/v1/webhooks/replays/:replayId", Handle: a.partner(a.showReplay)},
		{Method: "POST", Path: "/open/v1/webhooks/replays/:replayId/cancel", Handle: a.partner(a.cancelReplay)},
	}
}

// requestReplay opens a replay of the app's past webhook events to one endpoint.
func (a *API) requestReplay(c *call) error {
	var in commands.ReplayInput
	if err := c.decode(func(o *httpapi.Object) {
		if id := o.Int("endpoint_id"); id.Set && !id.Null {
			in.EndpointID = id.Value
		}
		in.Events = o.Strings("events")
		if t := o.Time("since", a.Location); t.Set && !t.Null {
			in.Since = &t.Value
		}
		if t := o.Time("until", a.Location); t.Set && !t.Null {
			in.Before = &t.Value
		}
		if s := o.String("cursor"); s.Set && !s.Null {
			in.Cursor = &s.Value
		}
	}); err != nil {
		return err
	}
	if in.Cursor != nil {
		after, from, err := a.cursorStart(c.r.Context(), c.app.AppID, *in.Cursor)
		if err != nil {
			return err
		}
		in.After, in.From = after, from
	}
	if err := c.claim(); err != nil {
		return err
	}
	rp, pos, err := a.Replays.Request(c.r.Context(), c.app.AppID, in, c.meta)
	if err != nil {
		return err
	}
	c.config.Watermarks.Wrote(c.app.AppID, pos)
	httpapi.OK(c.w, http.StatusAccepted, a.replayView(rp))
	return nil
}

// cursorStart turns a feed cursor (GET /open/v1/webhooks/events) into
// where a replay reads the log: the events whose feed entry comes after
// the cursor are those from the source of the first such entry on. With no
// entry after it yet, every event after the cursor's position is one.
func (a *API) cursorStart(ctx context.Context, appID int64, cursor string) (after, from events.Position, err error) {
	pos, ok := httpapi.ParseCursor(cursor)
	if !ok || cursor == "" {
		v := &domain.ValidationError{}
		v.Add("cursor", "must be a cursor returned by GET /open/v1/webhooks/events")
		return events.Position{}, events.Position{}, v
	}
	next, err := a.Deliveries.Deliveries(ctx, domain.DeliveryFilter{AppID: appID, After: pos, Limit: 1, Feed: true, WithoutBodies: true})
	if err != nil {
		return events.Position{}, events.Position{}, err
	}
	if len(next) == 0 {
		return pos, events.Position{}, nil
	}
	src := next[0].SourcePosition
	// Reading resumes after a position just before src: no event lies
	// between the two, on every adapter (embedded: Commit = Prepare, a
	// lower Prepare reads from Commit on; EventStoreDB: byte offsets).
	if src.Prepare > 0 {
		return events.Position{Commit: src.Commit, Prepare: src.Prepare - 1}, src, nil
	}
	return events.Position{}, src, nil
}

// showReplay answers a replay's progress.
func (a *API) showReplay(c *call) error {
	ids, err := c.ids("replayId")
	if err != nil {
		return err
	}
	rp, err := a.Replays.Get(c.r.Context(), c.app.AppID, ids[0])
	if err != nil {
		return err
	}
	httpapi.OK(c.w, http.StatusOK, a.replayView(rp))
	return nil
}

// cancelReplay stops a running replay.
func (a *API) cancelReplay(c *call) error {
	ids, err := c.ids("replayId")
	if err != nil {
		return err
	}
	if err := c.claim(); err != nil {
		return err
	}
	pos, err := a.Replays.Cancel(c.r.Context(), c.app.AppID, ids[0], c.meta)
	if err != nil {
		return err
	}
	rp, err := a.Replays.Get(c.r.Context(), c.app.AppID, ids[0])
	if err != nil {
		return err
	}
	c.answer(pos, false, a.replayView(rp))
	return nil
}

// replayView is a replay as the API shows it.
func (a *API) replayView(rp commands.Replay) map[string]any {
	at := func(t *time.Time) any {
		if t == nil {
			return nil
		}
		return t.In(a.Location).Format(time.RFC3339)
	}
	out := map[string]any{
		"replay_id": rp.ReplayID, "endpoint_id": rp.EndpointID, "events": rp.Events, "status": rp.Status,
		"since": at(rp.Since), "until": at(rp.Before), "cursor": nil,
		"matched": rp.Matched, "queued": rp.Queued, "delivered": rp.Delivered, "erased": rp.Erased,
		"cursor_reached": httpapi.FormatCursor(rp.Reached), "end_cursor": httpapi.FormatCursor(rp.Until),
		"requested_at": at(&rp.RequestedAt), "ended_at": at(rp.EndedAt),
	}
	if rp.Cursor != "" {
		out["cursor"] = rp.Cursor
	}
	return out
}
