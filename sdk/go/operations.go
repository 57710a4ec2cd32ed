package partneropen

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// route is one partner operation of the OpenAPI document; every client
// method goes through this table, which the drift test compares with the
// document. idem marks the writes that accept an Idempotency-Key.
type route struct {
	method, path string
	idem         bool
}

// routes maps operationId to method and path template.
var routes = map[string]route{
	"registerChannelUser":        {http.MethodPost, "/open/v1/channel/users", true},
	"getChannelUserSnapshot":     {http.MethodGet, "/open/v1/channel/users/{openUserId}", false},
	"updateChannelUser":          {http.MethodPatch, "/open/v1/channel/users/{openUserId}", true},
	"upsertFamilyGroup":          {http.MethodPost, "/open/v1/channel/users/{openUserId}/family-groups", true},
	"dissolveFamilyGroup":        {http.MethodDelete, "/open/v1/channel/users/{openUserId}/family-groups/{groupId}", true},
	"upsertFamilyMember":         {http.MethodPost, "/open/v1/channel/users/{openUserId}/family-members", true},
	"deleteFamilyMember":         {http.MethodDelete, "/open/v1/channel/users/{openUserId}/family-members/{memberId}", true},
	"listMyDeliveries":           {http.MethodGet, "/open/v1/webhooks/deliveries", false},
	"getMyDelivery":              {http.MethodGet, "/open/v1/webhooks/deliveries/{deliveryId}", false},
	"resendMyDelivery":           {http.MethodPost, "/open/v1/webhooks/deliveries/{deliveryId}/resend", true},
	"acknowledgeErasure":         {http.MethodPost, "/open/v1/erasures/{openUserId}/acknowledge", true},
	"listMyAccessLog":            {http.MethodGet, "/open/v1/access-log", false},
	"rotateMyWebhookSecret":      {http.MethodPost, "/open/v1/webhooks/secret/rotate", false},
	"activateMyWebhookSecret":    {http.MethodPost, "/open/v1/webhooks/secret/activate", false},
	"webhookEventFeed":           {http.MethodGet, "/open/v1/webhooks/events", false},
	"pullHealthReport":           {http.MethodGet, "/open/v1/health-reports/{openReportId}", false},
	"getDailyReport":             {http.MethodGet, "/v1/health/daily-report", false},
	"sandboxMockMeasure":         {http.MethodPost, "/sandbox/mock/measure", true},
	"oauthToken":                 {http.MethodPost, "/oauth/token", false},
	"oauthRevoke":                {http.MethodPost, "/oauth/revoke", false},
	"createOrder":                {http.MethodPost, "/open/v1/order/create", true},
	"getOrderDetail":             {http.MethodGet, "/open/v1/order/detail", false},
	"sandboxShippedCallbackTest": {http.MethodPost, "/open/v1/order/shipped-callback-test", true},
	"registerOwnServiceProvider": {http.MethodPost, "/open/v1/service-providers", true},
	"batchIssueBenefitCards":     {http.MethodPost, "/open/v1/benefit-cards/batch-issue", true},
	"verifyBenefitUse":           {http.MethodPost, "/open/v1/benefit-cards/verify-use", true},
	"getBenefitCard":             {http.MethodGet, "/open/v1/benefit-cards/detail", false},
	"listFulfillments":           {http.MethodGet, "/open/v1/benefit-cards/fulfillments", false},
	"rateFulfillment":            {http.MethodPost, "/open/v1/benefit-cards/fulfillments/{recordId}/rating", true},
	"requestWebhookReplay":       {http.MethodPost, "/open/v1/webhooks/replays", true},
	"getWebhookReplay":           {http.MethodGet, "/open/v1/webhooks/replays/{replayId}", false},
	"cancelWebhookReplay":        {http.MethodPost, "/open/v1/webhooks/replays/{replayId}/cancel", true},
	"triggerSandboxEvent":        {http.MethodPost, "/open/v1/webhooks/sandbox-events", true},

	"listMyWebhookEndpoints":          {http.MethodGet, "/open/v1/webhooks/endpoints", false},
	"createMyWebhookEndpoint":         {http.MethodPost, "/open/v1/webhooks/endpoints", true},
	"getMyWebhookEndpoint":            {http.MethodGet, "/open/v1/webhooks/endpoints/{endpointId}", false},
	"updateMyWebhookEndpoint":         {http.MethodPatch, "/open/v1/webhooks/endpoints/{endpointId}", true},
	"deleteMyWebhookEndpoint":         {http.MethodDelete, "/open/v1/webhooks/endpoints/{endpointId}", true},
	"rotateMyWebhookEndpointSecret":   {http.MethodPost, "/open/v1/webhooks/endpoints/{endpointId}/secret/rotate", true},
	"activateMyWebhookEndpointSecret": {http.MethodPost, "/open/v1/webhooks/endpoints/{endpointId}/secret/activate", true},
	"sendMyWebhookEndpointTest":       {http.MethodPost, "/open/v1/webhooks/endpoints/{endpointId}/test", true},
}

// op builds a call for an operation, filling path parameters in order.
func op(id string, a auth, params ...string) call {
	r, ok := routes[id]
	if !ok {
		panic("partneropen: unknown operation " + id)
	}
	p := r.path
	for _, v := range params {
		i, j := strings.IndexByte(p, '{'), strings.IndexByte(p, '}')
		p = p[:i] + url.PathEscape(v) + p[j+1:]
	}
	return call{method: r.method, path: p, auth: a, takesKey: r.idem}
}

// id formats an integer path parameter.
func id(n int64) string { return strconv.FormatInt(n, 10) }

// WriteOption adjusts one write call.
type WriteOption func(*call)

// WithIdempotencyKey sends key as the call's Idempotency-Key instead of the
// one the client generates, for a caller that stores it to repeat the same
// write later; the client re-sends it on each retry of the call.
func WithIdempotencyKey(key string) WriteOption { return func(c *call) { c.idemKey = key } }

// ClearFields sends the named fields as JSON null, which the PATCH of a
// user reads as "clear it" (nickname, avatar, phone, email, birth_date); an
// omitted field is left unchanged, so nil pointers alone cannot clear.
func ClearFields(names ...string) WriteOption {
	return func(c *call) { c.clear = append(c.clear, names...) }
}

// apply runs write options on a call.
func apply(c call, opts []WriteOption) call {
	for _, o := range opts {
		o(&c)
	}
	return c
}

// RegisterUser registers a channel user with optional groups and members
// (POST /open/v1/channel/users); a repeat returns the existing mapping.
func (cl *Client) RegisterUser(ctx context.Context, req RegisterRequest, opts ...WriteOption) (*RegisterResult, error) {
	c := apply(op("registerChannelUser", authApp), opts)
	c.body = req
	var out RegisterResult
	return &out, cl.do(ctx, c, &out)
}

// SnapshotQuery narrows GetSnapshot; both fields are optional.
type SnapshotQuery struct {
	// UpdatedAfter (ISO 8601) limits family_members to those changed since.
	UpdatedAfter string
	// ChannelUserID looks the user up when the open_user_id is not stored.
	ChannelUserID string
}

// GetSnapshot reads a user's full snapshot (GET /open/v1/channel/users/{openUserId}).
func (cl *Client) GetSnapshot(ctx context.Context, openUserID int64, q SnapshotQuery) (*Snapshot, error) {
	c := op("getChannelUserSnapshot", authApp, id(openUserID))
	c.query = url.Values{}
	if q.UpdatedAfter != "" {
		c.query.Set("updated_after", q.UpdatedAfter)
	}
	if q.ChannelUserID != "" {
		c.query.Set("channel_user_id", q.ChannelUserID)
	}
	var out Snapshot
	return &out, cl.do(ctx, c, &out)
}

// UpdateUser changes only the fields set in patch (PATCH /open/v1/channel/users/{openUserId}).
func (cl *Client) UpdateUser(ctx context.Context, openUserID int64, patch UserPatch, opts ...WriteOption) error {
	c := apply(op("updateChannelUser", authApp, id(openUserID)), opts)
	c.body = patch
	return cl.do(ctx, c, nil)
}

// UpsertFamilyGroup creates or renames a family group keyed by app_group_id.
func (cl *Client) UpsertFamilyGroup(ctx context.Context, openUserID int64, g FamilyGroupInput, opts ...WriteOption) (*FamilyGroupUpsertResult, error) {
	c := apply(op("upsertFamilyGroup", authApp, id(openUserID)), opts)
	c.body = g
	var out FamilyGroupUpsertResult
	return &out, cl.do(ctx, c, &out)
}

// DissolveFamilyGroup dissolves a group and soft-deletes its members; irreversible.
func (cl *Client) DissolveFamilyGroup(ctx context.Context, openUserID, familyGroupID int64, opts ...WriteOption) error {
	return cl.do(ctx, apply(op("dissolveFamilyGroup", authApp, id(openUserID), id(familyGroupID)), opts), nil)
}

// UpsertFamilyMember creates or updates a member keyed by app_user_id.
func (cl *Client) UpsertFamilyMember(ctx context.Context, openUserID int64, m FamilyMemberUpsertInput, opts ...WriteOption) (*FamilyMemberUpsertResult, error) {
	c := apply(op("upsertFamilyMember", authApp, id(openUserID)), opts)
	c.body = m
	var out FamilyMemberUpsertResult
	return &out, cl.do(ctx, c, &out)
}

// DeleteFamilyMember soft-deletes a member.
func (cl *Client) DeleteFamilyMember(ctx context.Context, openUserID, memberID int64, opts ...WriteOption) error {
	return cl.do(ctx, apply(op("deleteFamilyMember", authApp, id(openUserID), id(memberID)), opts), nil)
}

// CreateOrder submits a purchase order; it starts in PENDING_REVIEW.
func (cl *Client) CreateOrder(ctx context.Context, req OrderCreateRequest, opts ...WriteOption) (*OrderCreateResult, error) {
	c := apply(op("createOrder", authApp), opts)
	c.body = req
	var out OrderCreateResult
	return &out, cl.do(ctx, c, &out)
}

// GetOrder reads an order of this app by its order code.
func (cl *Client) GetOrder(ctx context.Context, orderCode string) (*Order, error) {
	c := op("getOrderDetail", authApp)
	c.query = url.Values{"order_code": {orderCode}}
	var out Order
	return &out, cl.do(ctx, c, &out)
}

// SandboxShipOrder triggers a demonstration shipment of an order (sandbox only; not to be relied on).
func (cl *Client) SandboxShipOrder(ctx context.Context, req SandboxShipmentRequest, opts ...WriteOption) (*ShipmentResult, error) {
	c := apply(op("sandboxShippedCallbackTest", authApp), opts)
	c.body = req
	var out ShipmentResult
	return &out, cl.do(ctx, c, &out)
}

// TriggerSandboxEvent causes a sample webhook event of type event (sandbox
// apps only): it is delivered and enters the feed like the real event.
func (cl *Client) TriggerSandboxEvent(ctx context.Context, event string, opts ...WriteOption) (*SandboxEventTriggered, error) {
	c := apply(op("triggerSandboxEvent", authApp), opts)
	c.body = SandboxEventRequest{Event: event}
	var out SandboxEventTriggered
	return &out, cl.do(ctx, c, &out)
}

// PullHealthReport reads a report's full snapshot with scheme H.
func (cl *Client) PullHealthReport(ctx context.Context, openReportID int64) (*HealthReport, error) {
	var out HealthReport
	return &out, cl.do(ctx, op("pullHealthReport", authH, id(openReportID)), &out)
}

// SandboxMockMeasure asks the sandbox to send plugin.report.ready (scheme H).
func (cl *Client) SandboxMockMeasure(ctx context.Context, req MockMeasureRequest, opts ...WriteOption) (*Measurement, error) {
	c := apply(op("sandboxMockMeasure", authH), opts)
	c.body = req
	var out Measurement
	return &out, cl.do(ctx, c, &out)
}

// RegisterServiceProvider registers this app as a benefit service provider.
func (cl *Client) RegisterServiceProvider(ctx context.Context, req ProviderRegistration, opts ...WriteOption) (*ProviderRegistered, error) {
	c := apply(op("registerOwnServiceProvider", authApp), opts)
	c.body = req
	var out ProviderRegistered
	return &out, cl.do(ctx, c, &out)
}

// BatchIssueCards issues benefit cards (channel partners).
func (cl *Client) BatchIssueCards(ctx context.Context, req BatchIssueRequest, opts ...WriteOption) (*IssuedCards, error) {
	c := apply(op("batchIssueBenefitCards", authApp), opts)
	c.body = req
	var out IssuedCards
	return &out, cl.do(ctx, c, &out)
}

// VerifyUse consumes uses of a benefit item on a card; irreversible.
func (cl *Client) VerifyUse(ctx context.Context, req VerifyUseRequest, opts ...WriteOption) (*VerifyUseResult, error) {
	c := apply(op("verifyBenefitUse", authApp), opts)
	c.body = req
	var out VerifyUseResult
	return &out, cl.do(ctx, c, &out)
}

// GetBenefitCard reads a card by number.
func (cl *Client) GetBenefitCard(ctx context.Context, cardNumber string) (*Card, error) {
	c := op("getBenefitCard", authApp)
	c.query = url.Values{"card_number": {cardNumber}}
	var out Card
	return &out, cl.do(ctx, c, &out)
}

// ListFulfillments lists fulfillment records with ids above after, as the
// provider that verified them (role "provider", the default when empty) or
// the issuer of the cards ("issuer"); limit 0 means the server's default.
func (cl *Client) ListFulfillments(ctx context.Context, role string, after int64, limit int) (*FulfillmentList, error) {
	c := op("listFulfillments", authApp)
	c.query = url.Values{}
	setIf(c.query, "role", role)
	if after > 0 {
		c.query.Set("after", id(after))
	}
	if limit > 0 {
		c.query.Set("limit", strconv.Itoa(limit))
	}
	var out FulfillmentList
	return &out, cl.do(ctx, c, &out)
}

// AllFulfillments iterates fulfillment records page by page (keyed by the
// last record id) until an empty page; the first error is yielded and ends
// the loop.
func (cl *Client) AllFulfillments(ctx context.Context, role string, limit int) iter.Seq2[Fulfillment, error] {
	return func(yield func(Fulfillment, error) bool) {
		var after int64
		for {
			page, err := cl.ListFulfillments(ctx, role, after, limit)
			if err != nil {
				yield(Fulfillment{}, err)
				return
			}
			if len(page.Fulfillments) == 0 {
				return
			}
			for _, f := range page.Fulfillments {
				if !yield(f, nil) {
					return
				}
			}
			last := page.Fulfillments[len(page.Fulfillments)-1].FulfillmentRecordID
			if last <= after {
				return // a server not honouring after would loop forever
			}
			after = last
		}
	}
}

// RateFulfillment records the user's rating of a fulfillment.
func (cl *Client) RateFulfillment(ctx context.Context, recordID int64, req RatingRequest, opts ...WriteOption) (*RatingResult, error) {
	c := apply(op("rateFulfillment", authApp, id(recordID)), opts)
	c.body = req
	var out RatingResult
	return &out, cl.do(ctx, c, &out)
}

// setIf sets a query parameter when v is not empty.
func setIf(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

// DeliveryFilter narrows ListDeliveries; empty fields are not sent.
type DeliveryFilter struct {
	// Status is a delivery status (pending, delivered, abandoned, ...).
	Status string
	// Event is an event type.
	Event string
	// From and To bound the creation time (RFC 3339).
	From, To string
	// After is the cursor of the previous page's last entry.
	After string
	// Limit is the page size; 0 means the server's default.
	Limit int
}

// ListDeliveries reads one page of this app's webhook delivery log.
func (cl *Client) ListDeliveries(ctx context.Context, f DeliveryFilter) (*DeliveryPage, error) {
	c := op("listMyDeliveries", authApp)
	c.query = url.Values{}
	setIf(c.query, "status", f.Status)
	setIf(c.query, "event", f.Event)
	setIf(c.query, "from", f.From)
	setIf(c.query, "to", f.To)
	setIf(c.query, "after", f.After)
	if f.Limit > 0 {
		c.query.Set("limit", strconv.Itoa(f.Limit))
	}
	var out DeliveryPage
	return &out, cl.do(ctx, c, &out)
}

// AllDeliveries iterates the delivery log page by page from f.After; the
// loop stops at the first error, which is yielded.
func (cl *Client) AllDeliveries(ctx context.Context, f DeliveryFilter) iter.Seq2[Delivery, error] {
	return func(yield func(Delivery, error) bool) {
		for {
			page, err := cl.ListDeliveries(ctx, f)
			if err != nil {
				yield(Delivery{}, err)
				return
			}
			for _, d := range page.Deliveries {
				if !yield(d, nil) {
					return
				}
			}
			if page.NextCursor == nil || *page.NextCursor == "" || len(page.Deliveries) == 0 {
				return
			}
			f.After = *page.NextCursor
		}
	}
}

// GetDelivery reads one delivery with its body and attempt log.
func (cl *Client) GetDelivery(ctx context.Context, deliveryID string) (*DeliveryDetail, error) {
	var out DeliveryDetail
	return &out, cl.do(ctx, op("getMyDelivery", authApp, deliveryID), &out)
}

// ResendDelivery asks the platform to deliver a webhook again.
func (cl *Client) ResendDelivery(ctx context.Context, deliveryID string, opts ...WriteOption) (*ResendResult, error) {
	var out ResendResult
	return &out, cl.do(ctx, apply(op("resendMyDelivery", authApp, deliveryID), opts), &out)
}

// AcknowledgeErasure tells the platform that the app erased its copies of
// a person the platform erased (the user.erased webhook names them by
// openUserID). Idempotent: a repeat answers the first acknowledgement.
// Another app's erasure or an unknown id is an *APIError with code
// ERASURE_NOT_FOUND.
func (cl *Client) AcknowledgeErasure(ctx context.Context, openUserID int64, opts ...WriteOption) (*ErasureAcknowledgement, error) {
	var out ErasureAcknowledgement
	return &out, cl.do(ctx, apply(op("acknowledgeErasure", authApp, id(openUserID)), opts), &out)
}

// AccessLogFilter narrows ListAccessLog; every field is optional. From and
// To are ISO 8601 times, After the last seq seen (AccessLogPage.NextAfter).
type AccessLogFilter struct {
	OpenUserID int64
	From, To   string
	After      int64
	Limit      int
}

// ListAccessLog reads one page of who accessed this app's users' data and
// why: the app's own report pulls and the platform operators' reveals.
func (cl *Client) ListAccessLog(ctx context.Context, f AccessLogFilter) (*AccessLogPage, error) {
	c := op("listMyAccessLog", authApp)
	c.query = url.Values{}
	if f.OpenUserID > 0 {
		c.query.Set("open_user_id", id(f.OpenUserID))
	}
	setIf(c.query, "from", f.From)
	setIf(c.query, "to", f.To)
	if f.After > 0 {
		c.query.Set("after", id(f.After))
	}
	if f.Limit > 0 {
		c.query.Set("limit", strconv.Itoa(f.Limit))
	}
	var out AccessLogPage
	return &out, cl.do(ctx, c, &out)
}

// ReplayWebhooks asks for the app's past webhook events of req.Events,
// since req.Since or after the feed cursor req.Cursor (exactly one), to be
// delivered again to one endpoint under their original delivery ids; the
// replay runs in the background (poll GetWebhookReplay).
func (cl *Client) ReplayWebhooks(ctx context.Context, req WebhookReplayRequest, opts ...WriteOption) (*WebhookReplay, error) {
	c := apply(op("requestWebhookReplay", authApp), opts)
	c.body = req
	var out WebhookReplay
	return &out, cl.do(ctx, c, &out)
}

// GetWebhookReplay reads a replay's status and counts.
func (cl *Client) GetWebhookReplay(ctx context.Context, replayID int64) (*WebhookReplay, error) {
	var out WebhookReplay
	return &out, cl.do(ctx, op("getWebhookReplay", authApp, id(replayID)), &out)
}

// CancelWebhookReplay stops a running replay; what it queued is still sent.
func (cl *Client) CancelWebhookReplay(ctx context.Context, replayID int64, opts ...WriteOption) (*WebhookReplay, error) {
	var out WebhookReplay
	return &out, cl.do(ctx, apply(op("cancelWebhookReplay", authApp, id(replayID)), opts), &out)
}

// RotateWebhookSecret creates a pending webhook secret for the default
// endpoint; deliveries stay signed with the current secret until
// ActivateWebhookSecret.
func (cl *Client) RotateWebhookSecret(ctx context.Context) (*PendingWebhookSecret, error) {
	var out PendingWebhookSecret
	return &out, cl.do(ctx, op("rotateMyWebhookSecret", authApp), &out)
}

// ActivateWebhookSecret makes the pending webhook secret the only one.
func (cl *Client) ActivateWebhookSecret(ctx context.Context) (*WebhookSecretActivated, error) {
	var out WebhookSecretActivated
	return &out, cl.do(ctx, op("activateMyWebhookSecret", authApp), &out)
}

// ListEvents reads one page of this app's event feed after a cursor.
func (cl *Client) ListEvents(ctx context.Context, after string, limit int) (*FeedPage, error) {
	return cl.WaitEvents(ctx, after, limit, 0)
}

// MaxFeedWait is the longest wait the platform accepts in WaitEvents.
const MaxFeedWait = 20 * time.Second

// WaitEvents is ListEvents as a long-poll: when nothing follows after, the
// platform holds the request until an event arrives or wait (whole
// seconds, at most MaxFeedWait; 0: answer at once) ends, and answers an
// empty page then. Call it again with NextCursor to follow the feed. A
// platform without long-polls answers at once: an empty page well before
// wait means pause before the next call. The client's HTTP timeout, if
// any, must exceed wait.
func (cl *Client) WaitEvents(ctx context.Context, after string, limit int, wait time.Duration) (*FeedPage, error) {
	c := op("webhookEventFeed", authApp)
	c.query = url.Values{}
	setIf(c.query, "after", after)
	if limit > 0 {
		c.query.Set("limit", strconv.Itoa(limit))
	}
	if s := int64(min(wait, MaxFeedWait) / time.Second); s > 0 {
		c.query.Set("wait", strconv.FormatInt(s, 10))
	}
	var out FeedPage
	return &out, cl.do(ctx, c, &out)
}

// AllEvents iterates the event feed from after until a page is not full;
// a poller keeps the last cursor and calls again later.
func (cl *Client) AllEvents(ctx context.Context, after string, limit int) iter.Seq2[FeedEvent, error] {
	return func(yield func(FeedEvent, error) bool) {
		for {
			page, err := cl.ListEvents(ctx, after, limit)
			if err != nil {
				yield(FeedEvent{}, err)
				return
			}
			for _, e := range page.Events {
				if !yield(e, nil) {
					return
				}
			}
			if !page.HasMore || len(page.Events) == 0 || page.NextCursor == after {
				return
			}
			after = page.NextCursor
		}
	}
}

// Token obtains an OAuth access token (client credentials, HTTP Basic with
// the app key and secret) for the daily report.
func (cl *Client) Token(ctx context.Context) (*TokenResponse, error) {
	c := op("oauthToken", authNone)
	var out TokenResponse
	return &out, cl.form(ctx, c, url.Values{"grant_type": {"client_credentials"}, "scope": {"daily_report"}}, &out)
}

// RevokeToken revokes an access token.
func (cl *Client) RevokeToken(ctx context.Context, token string) error {
	return cl.form(ctx, op("oauthRevoke", authNone), url.Values{"token": {token}}, nil)
}

// DailyReportQuery selects whose daily report to read and for which date.
type DailyReportQuery struct {
	// OpenUserID or ChannelUserID names the user.
	OpenUserID int64
	// ChannelUserID is the partner's own user id.
	ChannelUserID string
	// Date is Y-m-d; empty means the server's default.
	Date string
}

// DailyReport reads a user's daily report with a bearer token from Token.
func (cl *Client) DailyReport(ctx context.Context, accessToken string, q DailyReportQuery) (*DailyReport, error) {
	c := op("getDailyReport", authBearer)
	c.bearer = accessToken
	c.query = url.Values{}
	if q.OpenUserID != 0 {
		c.query.Set("open_user_id", id(q.OpenUserID))
	}
	setIf(c.query, "channel_user_id", q.ChannelUserID)
	setIf(c.query, "date", q.Date)
	var out DailyReport
	return &out, cl.do(ctx, c, &out)
}

// form posts an OAuth form with HTTP Basic client authentication; OAuth
// answers are not enveloped, so out receives the whole body.
func (cl *Client) form(ctx context.Context, c call, v url.Values, out any) error {
	body := []byte(v.Encode())
	for attempt := 0; ; attempt++ {
		resp, raw, err := cl.sendForm(ctx, c, body)
		if err != nil {
			return err
		}
		if resp.StatusCode < 300 {
			if out == nil {
				return nil
			}
			if err := json.Unmarshal(raw, out); err != nil {
				return fmt.Errorf("partneropen: decode %s: %w", c.path, err)
			}
			return nil
		}
		apiErr := decodeError(resp, raw)
		// Token requests create nothing a repeat would duplicate.
		if !apiErr.Temporary() || attempt >= cl.retry.MaxRetries {
			return apiErr
		}
		if err := cl.sleep(ctx, cl.backoff(attempt, apiErr.RetryAfter)); err != nil {
			return fmt.Errorf("partneropen: waiting to retry %s: %w", c.path, err)
		}
	}
}
