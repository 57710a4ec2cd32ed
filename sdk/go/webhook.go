package partneropen

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// WebhookTolerance is how far X-Webhook-Timestamp may be from now (spec: 300 s).
const WebhookTolerance = 300 * time.Second

// Webhook verification failures; a receiver answers 401 to ErrBadSignature
// and may answer 400 to ErrStaleTimestamp.
var (
	// ErrBadSignature: the signature is malformed or not the body's; answer 401.
	ErrBadSignature = errors.New("partneropen: webhook signature does not match")
	// ErrStaleTimestamp: the timestamp is missing, not decimal seconds, or
	// more than the tolerance from now (a replay); answer 400 or 401.
	ErrStaleTimestamp = errors.New("partneropen: webhook timestamp missing, malformed or outside the tolerance")
)

// VerifyOption adjusts VerifyWebhook, for tests and clock-skewed hosts.
type VerifyOption func(*verifyConfig)

type verifyConfig struct {
	now       time.Time
	tolerance time.Duration
}

// WithVerifyTime checks the timestamp against t instead of time.Now.
func WithVerifyTime(t time.Time) VerifyOption { return func(c *verifyConfig) { c.now = t } }

// WithTolerance replaces WebhookTolerance.
func WithTolerance(d time.Duration) VerifyOption { return func(c *verifyConfig) { c.tolerance = d } }

// SignWebhook is the X-Webhook-Signature of body at timestamp; receivers'
// tests use it to build signed requests.
func SignWebhook(secret, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// VerifyWebhook checks X-Webhook-Signature over the raw body bytes exactly
// as received, in constant time, and that X-Webhook-Timestamp is within
// the tolerance; it returns ErrBadSignature or ErrStaleTimestamp.
func VerifyWebhook(secret string, timestamp, signature string, body []byte, opts ...VerifyOption) error {
	cfg := verifyConfig{now: time.Now(), tolerance: WebhookTolerance}
	for _, o := range opts {
		o(&cfg)
	}
	ts := timestamp
	if ts == "" || len(ts) > 12 || strings.TrimLeft(ts, "0123456789") != "" {
		return ErrStaleTimestamp
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrStaleTimestamp
	}
	got, err := hex.DecodeString(strings.TrimSpace(signature))
	if err != nil || len(got) != sha256.Size {
		return ErrBadSignature
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	if !hmac.Equal(got, m.Sum(nil)) {
		return ErrBadSignature
	}
	d := cfg.now.Sub(time.Unix(sec, 0))
	if d > cfg.tolerance || d < -cfg.tolerance {
		return ErrStaleTimestamp
	}
	return nil
}

// Event is one webhook parsed into its typed body: exactly one of the
// pointer fields is set, chosen by Type.
type Event struct {
	// Type is the event name (X-Webhook-Event and the body's event).
	Type string
	// DeliveryID is stable across retries and resends; de-duplicate on it.
	DeliveryID string
	// ChannelUser is set for user.* events; its Data is decoded into one of the *Data fields below.
	ChannelUser *ChannelUserWebhook
	// ProfileUpdated is the data of user.profile.updated.
	ProfileUpdated *UserProfileUpdatedData
	// FamilyGroupCreated is the data of user.family_group.created.
	FamilyGroupCreated *FamilyGroupCreatedData
	// FamilyGroupDeleted is the data of user.family_group.deleted.
	FamilyGroupDeleted *FamilyGroupDeletedData
	// FamilyMemberCreated is the data of user.family_member.created.
	FamilyMemberCreated *FamilyMemberCreatedData
	// FamilyMemberUpdated is the data of user.family_member.updated.
	FamilyMemberUpdated *FamilyMemberUpdatedData
	// FamilyMemberDeleted is the data of user.family_member.deleted.
	FamilyMemberDeleted *FamilyMemberDeletedData
	// HealthReport is set for health.report.created and health.report.updated.
	HealthReport *HealthReportWebhook
	// PluginReportReady is set for plugin.report.ready.
	PluginReportReady *PluginReportReadyWebhook
	// OrderShipped is set for order.shipped.
	OrderShipped *OrderShippedWebhook
	// Test is set for webhook.test, the test a developer sends to one
	// endpoint from the developer portal; answer 2xx and ignore it.
	Test *WebhookTestEvent
	// Raw is the body as received.
	Raw json.RawMessage
}

// ErrUnknownEvent is wrapped when a body names an event this SDK does not
// know; a receiver should still answer 2xx so the platform stops retrying.
var ErrUnknownEvent = errors.New("partneropen: unknown webhook event")

// EventType is one webhook event type of the platform's event catalog
// (GET /open/v1/event-types); EventTypes lists them all.
type EventType struct {
	// Name is the event type, as X-Webhook-Event and the body's event carry it.
	Name string
	// Version is the version of the body the platform sends.
	Version int
	// Title is a short title.
	Title string
}

// IsEventType reports whether name is a catalogued event type, one
// ParseEvent returns typed.
func IsEventType(name string) bool {
	for _, t := range EventTypes {
		if t.Name == name {
			return true
		}
	}
	return false
}

// ParseEvent decodes a (verified) webhook body into its typed event.
func ParseEvent(body []byte) (*Event, error) {
	var head struct {
		Event      string `json:"event"`
		DeliveryID string `json:"delivery_id"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return nil, fmt.Errorf("partneropen: webhook body: %w", err)
	}
	ev := &Event{Type: head.Event, DeliveryID: head.DeliveryID, Raw: append(json.RawMessage(nil), body...)}
	if !IsEventType(head.Event) {
		return ev, fmt.Errorf("%w: %q", ErrUnknownEvent, head.Event)
	}
	var err error
	switch head.Event {
	case "health.report.created", "health.report.updated":
		ev.HealthReport = new(HealthReportWebhook)
		err = json.Unmarshal(body, ev.HealthReport)
	case "plugin.report.ready":
		ev.PluginReportReady = new(PluginReportReadyWebhook)
		err = json.Unmarshal(body, ev.PluginReportReady)
	case "order.shipped":
		ev.OrderShipped = new(OrderShippedWebhook)
		err = json.Unmarshal(body, ev.OrderShipped)
	case "webhook.test":
		ev.Test = new(WebhookTestEvent)
		err = json.Unmarshal(body, ev.Test)
	case "user.profile.updated", "user.family_group.created", "user.family_group.deleted",
		"user.family_member.created", "user.family_member.updated", "user.family_member.deleted":
		ev.ChannelUser = new(ChannelUserWebhook)
		if err = json.Unmarshal(body, ev.ChannelUser); err == nil {
			err = ev.decodeUserData()
		}
	default:
		return ev, fmt.Errorf("%w: %q", ErrUnknownEvent, head.Event)
	}
	if err != nil {
		return nil, fmt.Errorf("partneropen: %s body: %w", head.Event, err)
	}
	return ev, nil
}

// decodeUserData decodes a channel-user event's data by its event name.
func (ev *Event) decodeUserData() error {
	var target any
	switch ev.Type {
	case "user.profile.updated":
		ev.ProfileUpdated = new(UserProfileUpdatedData)
		target = ev.ProfileUpdated
	case "user.family_group.created":
		ev.FamilyGroupCreated = new(FamilyGroupCreatedData)
		target = ev.FamilyGroupCreated
	case "user.family_group.deleted":
		ev.FamilyGroupDeleted = new(FamilyGroupDeletedData)
		target = ev.FamilyGroupDeleted
	case "user.family_member.created":
		ev.FamilyMemberCreated = new(FamilyMemberCreatedData)
		target = ev.FamilyMemberCreated
	case "user.family_member.updated":
		ev.FamilyMemberUpdated = new(FamilyMemberUpdatedData)
		target = ev.FamilyMemberUpdated
	case "user.family_member.deleted":
		ev.FamilyMemberDeleted = new(FamilyMemberDeletedData)
		target = ev.FamilyMemberDeleted
	}
	if len(ev.ChannelUser.Data) == 0 || string(ev.ChannelUser.Data) == "null" {
		return errors.New("data is missing")
	}
	return json.Unmarshal(ev.ChannelUser.Data, target)
}

// VerifyRequest verifies an incoming webhook request and parses it; it
// reads the whole body (at most 1 MiB) and returns it too, for storage.
func VerifyRequest(secret string, r *http.Request, opts ...VerifyOption) (*Event, []byte, error) {
	body, err := readLimited(r, 1<<20)
	if err != nil {
		return nil, nil, err
	}
	if err := VerifyWebhook(secret, r.Header.Get("X-Webhook-Timestamp"), r.Header.Get("X-Webhook-Signature"), body, opts...); err != nil {
		return nil, body, err
	}
	ev, err := ParseEvent(body)
	return ev, body, err
}
