package domain

import (
	"errors"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// DefaultEndpointID names an app's default webhook endpoint: the app-level
// webhook URL, subscription and secret every app has had from the start
// (AppCreated.WebhookURL, PATCH /admin/v1/apps/:appId, the webhook-secret
// routes). Endpoints added later get positive ids from the id allocator, so
// 0 never collides with one, and deliveries recorded before endpoints
// existed (no endpoint_id) belong to it.
const DefaultEndpointID int64 = 0

// MaxEndpoints bounds an app's webhook endpoints (the default one
// included), so one app cannot multiply every event's deliveries without end.
const MaxEndpoints = 10

// MaxEndpointDescription bounds an endpoint's description, in characters:
// a label for a list, not a document.
const MaxEndpointDescription = 256

// TestEvent is the event type of the test webhook a developer sends to one
// endpoint to check its receiver; it is documented in the OpenAPI file and
// never appears in the app's event feed.
const TestEvent = "webhook.test"

// Endpoint is one webhook receiver of an app as the dispatcher needs it:
// where to POST, which events, and the secrets that sign (kept in memory
// only, like the app's secrets).
type Endpoint struct {
	EndpointID int64 // DefaultEndpointID for the app-level one
	URL        string
	Events     []string // none: every event
	Disabled   bool     // a disabled endpoint gets no new deliveries
	// Description is the partner's note of what the endpoint is for
	// (at most MaxEndpointDescription characters).
	Description string
	Secret      string // the active secret: the one that signs
	// PendingSecret is issued by a rotation and signs nothing until it is
	// activated, so the receiver can install it first.
	PendingSecret string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Endpoint returns the app's endpoint with the id; the default endpoint is
// found only while it has a URL.
func (a App) Endpoint(id int64) (Endpoint, bool) {
	if id == DefaultEndpointID {
		def := a.DefaultEndpoint()
		return def, def.URL != ""
	}
	for _, e := range a.Endpoints {
		if e.EndpointID == id {
			return e, true
		}
	}
	return Endpoint{}, false
}

// DefaultEndpoint is the app-level webhook seen as an endpoint (its URL
// may be empty: then it receives nothing).
func (a App) DefaultEndpoint() Endpoint {
	return Endpoint{
		EndpointID: DefaultEndpointID, URL: a.WebhookURL, Events: a.WebhookEvents, Disabled: a.WebhookDisabled, Description: a.WebhookDescription,
		Secret: a.WebhookSecret, PendingSecret: a.PendingWebhookSecret, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
	}
}

// WebhookEndpoints lists the app's endpoints that have a URL, the default
// one first, then the added ones by id.
func (a App) WebhookEndpoints() []Endpoint {
	out := make([]Endpoint, 0, len(a.Endpoints)+1)
	if def := a.DefaultEndpoint(); def.URL != "" {
		out = append(out, def)
	}
	return append(out, a.Endpoints...)
}

// Endpoint errors.
var (
	// ErrEndpointNotFound answers an endpoint id the app does not have
	// (another app's endpoint looks exactly the same).
	ErrEndpointNotFound = errors.New("webhook endpoint not found")
	// ErrTooManyEndpoints refuses an endpoint beyond MaxEndpoints.
	ErrTooManyEndpoints = errors.New("the app has the maximum number of webhook endpoints")
	// ErrEndpointDisabled refuses a test event to a disabled endpoint.
	ErrEndpointDisabled = errors.New("the webhook endpoint is disabled")
)

// Replay errors.
var (
	// ErrReplayNotFound answers a replay id the app does not have (another
	// app's replay looks exactly the same).
	ErrReplayNotFound = errors.New("webhook replay not found")
	// ErrReplayFinished refuses to cancel a replay that already completed.
	ErrReplayFinished = errors.New("the webhook replay already completed")
)

// ErrReplayStopped tells a replay's runner that the replay no longer runs
// (canceled or completed meanwhile): it stops without recording more.
var ErrReplayStopped = errors.New("the webhook replay no longer runs")

// ReplayCounts are a replay's running counts at a checkpoint: every event
// of the log up to Position is handled; Matched events were selected,
// Queued of them put in the endpoint's queue, Delivered of those answered
// 2xx, and Erased passed over because their person was erased.
type ReplayCounts struct {
	Position                           events.Position
	Matched, Queued, Delivered, Erased int64
}
