package catalog

// Webhook endpoints beside an app's default one. They
// live in the app's stream, so the app aggregate decides them alone (the
// endpoint count, ids unique per app) and the app directory that signs and
// routes webhooks learns them from the same events. The default endpoint
// (endpoint_id 0) keeps its own events: app.created, app.webhook_configured
// and the app.webhook_secret_* pair; only enabling and disabling, which it
// never had, use the endpoint events with endpoint_id 0.

// AppWebhookEndpointAdded adds an endpoint with its own URL, subscription
// (none: every event) and webhook secret, sealed with the master key.
type AppWebhookEndpointAdded struct {
	AppID               int64    `json:"app_id"`
	EndpointID          int64    `json:"endpoint_id"`
	URL                 string   `json:"url"`
	Events              []string `json:"events,omitempty"`
	SealedWebhookSecret string   `json:"sealed_webhook_secret"`
	// Description is the partner's note of what the endpoint is for.
	Description string `json:"description,omitempty"`
}

// EventType names the event in the log.
func (AppWebhookEndpointAdded) EventType() string { return "app.webhook_endpoint_added" }

// AppWebhookEndpointUpdated records an added endpoint's URL and
// subscription after a change (both, whatever changed).
type AppWebhookEndpointUpdated struct {
	AppID      int64    `json:"app_id"`
	EndpointID int64    `json:"endpoint_id"`
	URL        string   `json:"url"`
	Events     []string `json:"events,omitempty"`
}

// EventType names the event in the log.
func (AppWebhookEndpointUpdated) EventType() string { return "app.webhook_endpoint_updated" }

// AppWebhookEndpointDescribed sets the partner's note of what an endpoint
// (0: the default one) is for; "" clears it.
type AppWebhookEndpointDescribed struct {
	AppID       int64  `json:"app_id"`
	EndpointID  int64  `json:"endpoint_id"`
	Description string `json:"description"`
}

// EventType names the event in the log.
func (AppWebhookEndpointDescribed) EventType() string { return "app.webhook_endpoint_described" }

// AppWebhookEndpointDisabled stops new deliveries to an endpoint (0: the
// default one); deliveries already queued are attempted and fail as
// "endpoint disabled" until it is enabled again or they are resent.
type AppWebhookEndpointDisabled struct {
	AppID      int64 `json:"app_id"`
	EndpointID int64 `json:"endpoint_id"`
}

// EventType names the event in the log.
func (AppWebhookEndpointDisabled) EventType() string { return "app.webhook_endpoint_disabled" }

// AppWebhookEndpointEnabled lets a disabled endpoint receive deliveries again.
type AppWebhookEndpointEnabled struct {
	AppID      int64 `json:"app_id"`
	EndpointID int64 `json:"endpoint_id"`
}

// EventType names the event in the log.
func (AppWebhookEndpointEnabled) EventType() string { return "app.webhook_endpoint_enabled" }

// AppWebhookEndpointRemoved deletes an added endpoint; its id is never reused.
type AppWebhookEndpointRemoved struct {
	AppID      int64 `json:"app_id"`
	EndpointID int64 `json:"endpoint_id"`
}

// EventType names the event in the log.
func (AppWebhookEndpointRemoved) EventType() string { return "app.webhook_endpoint_removed" }

// AppWebhookEndpointSecretIssued issues a pending secret for an added
// endpoint, sealed with the master key; its active secret keeps signing
// until activation (the default endpoint uses app.webhook_secret_issued).
type AppWebhookEndpointSecretIssued struct {
	AppID                      int64  `json:"app_id"`
	EndpointID                 int64  `json:"endpoint_id"`
	SealedPendingWebhookSecret string `json:"sealed_pending_webhook_secret"`
}

// EventType names the event in the log.
func (AppWebhookEndpointSecretIssued) EventType() string {
	return "app.webhook_endpoint_secret_issued"
}

// AppWebhookEndpointSecretActivated makes an added endpoint's pending
// secret the one that signs.
type AppWebhookEndpointSecretActivated struct {
	AppID      int64 `json:"app_id"`
	EndpointID int64 `json:"endpoint_id"`
}

// EventType names the event in the log.
func (AppWebhookEndpointSecretActivated) EventType() string {
	return "app.webhook_endpoint_secret_activated"
}

// AppWebhookTestRequested asks for one webhook.test delivery to one
// endpoint (0: the default one); the dispatcher turns it into that
// delivery like any other source event, so it is idempotent and replayable.
type AppWebhookTestRequested struct {
	AppID      int64 `json:"app_id"`
	EndpointID int64 `json:"endpoint_id"`
}

// EventType names the event in the log.
func (AppWebhookTestRequested) EventType() string { return "app.webhook_test_requested" }

// AppSandboxEventTriggered asks for one sample webhook event of a given
// type for a sandbox app, so a partner can exercise its receiver before
// real traffic (the local development loop's trigger). The dispatcher
// renders it exactly as the real event of that type, with sample data,
// for every endpoint that takes that type, and it enters the app's feed.
type AppSandboxEventTriggered struct {
	AppID int64  `json:"app_id"`
	Event string `json:"event"`
}

// EventType names the event in the log.
func (AppSandboxEventTriggered) EventType() string { return "app.sandbox_event_triggered" }
