package partneropen

import "context"

// DefaultEndpointID is the app's default webhook endpoint (its
// webhook_url), signed with the app's webhook secret; every other endpoint
// signs with its own secret.
const DefaultEndpointID int64 = 0

// ListWebhookEndpoints lists the app's webhook endpoints, the default one
// (DefaultEndpointID) first while it has a URL. No secret is listed.
func (cl *Client) ListWebhookEndpoints(ctx context.Context) (*WebhookEndpointList, error) {
	var out WebhookEndpointList
	return &out, cl.do(ctx, op("listMyWebhookEndpoints", authApp), &out)
}

// GetWebhookEndpoint reads one endpoint (DefaultEndpointID for the default one).
func (cl *Client) GetWebhookEndpoint(ctx context.Context, endpointID int64) (*WebhookEndpoint, error) {
	var out WebhookEndpoint
	return &out, cl.do(ctx, op("getMyWebhookEndpoint", authApp, id(endpointID)), &out)
}

// CreateWebhookEndpoint adds an endpoint; the answer's WebhookSecret signs
// its deliveries and is shown this once. The client sends an
// Idempotency-Key and re-sends it on retries, so a retried call adds one
// endpoint.
func (cl *Client) CreateWebhookEndpoint(ctx context.Context, req WebhookEndpointCreate, opts ...WriteOption) (*NewWebhookEndpoint, error) {
	c := apply(op("createMyWebhookEndpoint", authApp), opts)
	c.body = req
	var out NewWebhookEndpoint
	return &out, cl.do(ctx, c, &out)
}

// UpdateWebhookEndpoint changes the fields set in req and answers the
// endpoint after the change. To subscribe to every event again, pass
// ClearFields("events"); a Description pointing at "" clears the
// endpoint's description.
func (cl *Client) UpdateWebhookEndpoint(ctx context.Context, endpointID int64, req WebhookEndpointUpdate, opts ...WriteOption) (*WebhookEndpoint, error) {
	c := apply(op("updateMyWebhookEndpoint", authApp, id(endpointID)), opts)
	c.body = req
	var out WebhookEndpoint
	return &out, cl.do(ctx, c, &out)
}

// DeleteWebhookEndpoint removes an endpoint; for the default one it clears
// the app's webhook_url.
func (cl *Client) DeleteWebhookEndpoint(ctx context.Context, endpointID int64, opts ...WriteOption) error {
	return cl.do(ctx, apply(op("deleteMyWebhookEndpoint", authApp, id(endpointID)), opts), nil)
}

// RotateWebhookEndpointSecret issues a pending secret for the endpoint,
// shown this once (PendingWebhookSecret). Deliveries stay signed with the
// current secret until ActivateWebhookEndpointSecret: install the new
// secret in the receiver first, then activate.
func (cl *Client) RotateWebhookEndpointSecret(ctx context.Context, endpointID int64, opts ...WriteOption) (*RotatedWebhookEndpoint, error) {
	var out RotatedWebhookEndpoint
	return &out, cl.do(ctx, apply(op("rotateMyWebhookEndpointSecret", authApp, id(endpointID)), opts), &out)
}

// ActivateWebhookEndpointSecret makes the endpoint's pending secret the
// only one that signs.
func (cl *Client) ActivateWebhookEndpointSecret(ctx context.Context, endpointID int64, opts ...WriteOption) (*WebhookEndpoint, error) {
	var out WebhookEndpoint
	return &out, cl.do(ctx, apply(op("activateMyWebhookEndpointSecret", authApp, id(endpointID)), opts), &out)
}

// SendWebhookEndpointTest queues one webhook.test delivery to the endpoint.
func (cl *Client) SendWebhookEndpointTest(ctx context.Context, endpointID int64, opts ...WriteOption) (*WebhookTestQueued, error) {
	var out WebhookTestQueued
	return &out, cl.do(ctx, apply(op("sendMyWebhookEndpointTest", authApp, id(endpointID)), opts), &out)
}
