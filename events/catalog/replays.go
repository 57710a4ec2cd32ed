package catalog

import (
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// WebhookReplayRequested opens a replay: the app's events of the named
// types, from a point of the log up to its head when asked (Until), are to
// be delivered again to one of its endpoints. After is where reading starts
// (exclusive); events before From (when set) or recorded before Since or
// after Before (when set) are passed over. Nothing in it is personal.
type WebhookReplayRequested struct {
	ReplayID    int64           `json:"replay_id"`
	AppID       int64           `json:"app_id"`
	EndpointID  int64           `json:"endpoint_id"`
	Events      []string        `json:"events"`
	Since       *time.Time      `json:"since,omitempty"`
	Cursor      string          `json:"cursor,omitempty"`
	Before      *time.Time      `json:"until,omitempty"`
	After       events.Position `json:"after"`
	From        events.Position `json:"from"`
	Until       events.Position `json:"until_position"`
	RequestedBy string          `json:"requested_by"`
	RequestedAt time.Time       `json:"requested_at"`
}

// EventType names the event in the log.
func (WebhookReplayRequested) EventType() string { return "webhook.replay_requested" }

// WebhookReplayProgressed is a replay's checkpoint: every event of the log
// up to Position is handled, with the running counts so far. A replay that
// resumes on any node starts after it.
type WebhookReplayProgressed struct {
	ReplayID  int64           `json:"replay_id"`
	Position  events.Position `json:"position"`
	Matched   int64           `json:"matched"`
	Queued    int64           `json:"queued"`
	Delivered int64           `json:"delivered"`
	Erased    int64           `json:"erased"`
}

// EventType names the event in the log.
func (WebhookReplayProgressed) EventType() string { return "webhook.replay_progressed" }

// WebhookReplayCompleted ends a replay that reached its end point.
type WebhookReplayCompleted struct {
	ReplayID  int64           `json:"replay_id"`
	AppID     int64           `json:"app_id"`
	Position  events.Position `json:"position"`
	Matched   int64           `json:"matched"`
	Queued    int64           `json:"queued"`
	Delivered int64           `json:"delivered"`
	Erased    int64           `json:"erased"`
	At        time.Time       `json:"at"`
}

// EventType names the event in the log.
func (WebhookReplayCompleted) EventType() string { return "webhook.replay_completed" }

// WebhookReplayCanceled ends a replay before its end point, at its
// partner's request; deliveries it already queued stay queued.
type WebhookReplayCanceled struct {
	ReplayID   int64     `json:"replay_id"`
	AppID      int64     `json:"app_id"`
	CanceledBy string    `json:"canceled_by"`
	At         time.Time `json:"at"`
}

// EventType names the event in the log.
func (WebhookReplayCanceled) EventType() string { return "webhook.replay_canceled" }
