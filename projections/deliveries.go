package projections

import (
	"context"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
)

// Delivery is the read model of one webhook delivery and the feed entry of
// one partner-visible event.
type Delivery struct {
	DeliveryID     string
	AppID          int64
	EventType      string
	SourceEventID  string
	SourcePosition events.Position
	// Cursor is the log position of the delivery's creation: the feed's order.
	Cursor events.Position
	Body   []byte // the exact bytes every attempt sends; empty once its subject is erased
	// Subject is the data subject the body is about ("user-<open_user_id>"),
	// empty when it is about no channel user or the body is erased (see
	// applyDelivery): user.erased finds the deliveries to blank by it.
	Subject       string
	Status        string
	Attempts      int // attempts in total
	NextAttemptAt *time.Time
	LastStatus    *int
	LastError     *string
	// LastErrorClass is the stable class of the last attempt's failure.
	LastErrorClass *string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Attempt is one POST of a delivery.
type Attempt struct {
	DeliveryID string
	Attempt    int // 1-based, over the delivery's whole life
	At         time.Time
	StatusCode *int
	LatencyMS  int64
	Error      *string
	// ErrorClass is the stable class of the failure (domain.ErrorClass*);
	// nil on success.
	ErrorClass *string
	Outcome    string // delivered, retry, abandoned, dead_letter, refused
}

// DeliveryTx is the part of a read-model transaction the delivery projector writes.
type DeliveryTx interface {
	// PutDelivery inserts or replaces the delivery keyed by DeliveryID.
	PutDelivery(ctx context.Context, d Delivery) error
	// Delivery reads a delivery inside the transaction (ErrNotFound if absent).
	Delivery(ctx context.Context, id string) (Delivery, error)
	// SubjectDeliveries lists the deliveries whose Subject is subject, in no set order.
	SubjectDeliveries(ctx context.Context, subject string) ([]Delivery, error)
	// AddAttempt records an attempt; re-adding the same (DeliveryID, Attempt) replaces it.
	AddAttempt(ctx context.Context, a Attempt) error
}

// DeliveryStore is what the dispatcher, the delivery log and the feed read.
type DeliveryStore interface {
	Checkpoints
	// UpdateDeliveries runs fn in one transaction with the named checkpoint, like Store.Update.
	UpdateDeliveries(ctx context.Context, projection string, pos events.Position, fn func(DeliveryTx) error) error
	// Delivery returns one delivery with its attempts in order; appID 0 matches any app.
	Delivery(ctx context.Context, appID int64, id string) (Delivery, []Attempt, error)
	// Deliveries lists deliveries matching f ordered by Cursor, after f.After, at most f.Limit.
	Deliveries(ctx context.Context, f domain.DeliveryFilter) ([]Delivery, error)
	// Due lists pending or retrying deliveries with NextAttemptAt <= now,
	// earliest first, leaving out those of skipApps: the dispatcher names
	// the apps it cannot send to now (suspended, breaker open), so their
	// queue is not read and walked past again on every pass.
	Due(ctx context.Context, now time.Time, limit int, skipApps ...int64) ([]Delivery, error)
	// NextDue is the earliest NextAttemptAt of a pending or retrying delivery.
	NextDue(ctx context.Context) (time.Time, bool, error)
	// CountByStatus counts deliveries per status, for metrics.
	CountByStatus(ctx context.Context) (map[string]int, error)
	// LastSource is the highest SourcePosition of any delivery: where the
	// store-fed dispatcher resumes creating deliveries.
	LastSource(ctx context.Context) (events.Position, error)
}
