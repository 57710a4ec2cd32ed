package domain

import (
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// Delivery statuses, as partners and operators see them.
const (
	// DeliveryPending: created and due for its first attempt (or resent).
	DeliveryPending = "pending"
	// DeliveryRetrying: an attempt failed and another is scheduled.
	DeliveryRetrying = "retrying"
	// DeliveryDelivered: the receiver answered 2xx within the time limit.
	DeliveryDelivered = "delivered"
	// DeliveryAbandoned: retries exhausted, or the target was refused; only a resend restarts it.
	DeliveryAbandoned = "abandoned"
	// DeliveryDeadLetter: a plugin event that exhausted its retries.
	DeliveryDeadLetter = "dead_letter"
	// DeliverySkipped: the app had no webhook URL or no matching subscription
	// when the event happened; the event is still in the app's feed.
	DeliverySkipped = "skipped"
)

// Attempt outcomes recorded in webhook.delivery.attempted.
const (
	OutcomeDelivered  = "delivered"
	OutcomeRetry      = "retry"
	OutcomeAbandoned  = "abandoned"
	OutcomeDeadLetter = "dead_letter"
	OutcomeRefused    = "refused"
)

// DeliveryStatusAfter is the status a delivery has after an attempt with
// this outcome: the one mapping the aggregate and the delivery log share.
func DeliveryStatusAfter(outcome string) string {
	switch outcome {
	case OutcomeDelivered:
		return DeliveryDelivered
	case OutcomeRetry:
		return DeliveryRetrying
	case OutcomeDeadLetter:
		return DeliveryDeadLetter
	default:
		return DeliveryAbandoned
	}
}

// DeliveryFilter selects deliveries for the delivery log; zero fields match all.
type DeliveryFilter struct {
	AppID     int64     // 0: every app (operators only)
	Status    string    // one of the statuses
	EventType string    // exact event type
	From, To  time.Time // CreatedAt in [From, To)
	// EndpointID selects one endpoint's deliveries (nil: every endpoint;
	// DefaultEndpointID: the default one's).
	EndpointID *int64
	// Feed keeps only the app's event feed: the default endpoint's
	// deliveries (one per event) without test events.
	Feed  bool
	After events.Position
	// Newest lists newest first (descending cursor order), as the portal's
	// delivery log shows it; After is then ignored and Before (zero: from
	// the newest) continues below a cursor, so "older" pages cost their rows.
	Newest bool
	Before events.Position
	Limit  int
	// WithoutBodies says the caller reads no delivery's Body (a list
	// without payloads, a count, ids to resend): a store that reads a
	// final delivery's body from the log (the in-memory one) leaves it nil
	// rather than read it, and the Postgres one selects none.
	WithoutBodies bool
}

// DueDelivery is a due delivery as the sender queues it: which one, and
// the app endpoint whose slots and breaker it waits on. The sender reloads
// a delivery's stream before each attempt, so Due hands over no more: its
// scans walk past the hundreds of rows the sender already holds, and
// copying each row's body was most of what a read-model row costs.
type DueDelivery struct {
	DeliveryID string
	AppID      int64
	EndpointID int64
}
