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
	DeliveryID string
	AppID      int64
	// EndpointID is the app's endpoint it goes to (domain.DefaultEndpointID
	// for the default one, which also makes the app's event feed).
	EndpointID     int64
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

// DeliveryState is what an attempt's outcome or a resend changes of a
// delivery; the rest of its row (the body above all) stays as created.
type DeliveryState struct {
	Status         string
	Attempts       int
	NextAttemptAt  *time.Time
	LastStatus     *int
	LastError      *string
	LastErrorClass *string
	UpdatedAt      time.Time
	// Erased says the delivery's body is erased (empty); the store reads
	// it, a change of it is not written.
	Erased bool
}

// State is d's state.
func (d Delivery) State() DeliveryState {
	return DeliveryState{Status: d.Status, Attempts: d.Attempts, NextAttemptAt: d.NextAttemptAt, LastStatus: d.LastStatus,
		LastError: d.LastError, LastErrorClass: d.LastErrorClass, UpdatedAt: d.UpdatedAt, Erased: len(d.Body) == 0}
}

// WithState is d with st's state (Erased aside).
func (d Delivery) WithState(st DeliveryState) Delivery {
	d.Status, d.Attempts, d.NextAttemptAt, d.LastStatus = st.Status, st.Attempts, st.NextAttemptAt, st.LastStatus
	d.LastError, d.LastErrorClass, d.UpdatedAt = st.LastError, st.LastErrorClass, st.UpdatedAt
	return d
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
	// ResponseExcerpt is the start of the receiver's answer ("" when none,
	// and once the delivery's user is erased).
	ResponseExcerpt string
}

// InFeed says whether a delivery is an entry of its app's event feed: one
// per event, the default endpoint's, and never a test event.
func (d Delivery) InFeed() bool {
	return d.EndpointID == domain.DefaultEndpointID && d.EventType != domain.TestEvent
}

// Matches says whether a delivery passes f's row filters (app, status,
// event, creation time, endpoint, feed); the cursor and limit are the
// caller's. Both stores and the conformance suite's model share it.
func (d Delivery) Matches(f domain.DeliveryFilter) bool {
	return (f.AppID == 0 || d.AppID == f.AppID) &&
		(f.Status == "" || d.Status == f.Status) &&
		(f.EventType == "" || d.EventType == f.EventType) &&
		(f.From.IsZero() || !d.CreatedAt.Before(f.From)) &&
		(f.To.IsZero() || d.CreatedAt.Before(f.To)) &&
		(f.EndpointID == nil || d.EndpointID == *f.EndpointID) &&
		(!f.Feed || d.InFeed())
}

// DeliveryTx is the part of a read-model transaction the delivery projector writes.
type DeliveryTx interface {
	// PutDelivery inserts or replaces the delivery keyed by DeliveryID.
	PutDelivery(ctx context.Context, d Delivery) error
	// Delivery reads a delivery inside the transaction (ErrNotFound if absent).
	Delivery(ctx context.Context, id string) (Delivery, error)
	// UpdateDeliveryState changes a delivery's state by fn and leaves the
	// rest of its row as it is (ErrNotFound if absent): an outcome or a
	// resend, which need not read or write the body. fn replaces st's
	// pointers rather than writing through them.
	UpdateDeliveryState(ctx context.Context, id string, fn func(st *DeliveryState)) error
	// SubjectDeliveries lists the deliveries whose Subject is subject, in no
	// set order (erasure blanks their bodies): a store that keeps a final
	// delivery's body in the log only gives it nil rather than read it.
	SubjectDeliveries(ctx context.Context, subject string) ([]Delivery, error)
	// AddAttempt records an attempt; re-adding the same (DeliveryID, Attempt) replaces it.
	AddAttempt(ctx context.Context, a Attempt) error
	// ClearExcerpts empties the response excerpts of a delivery's attempts
	// (its user was erased: a receiver's answer may echo their data).
	ClearExcerpts(ctx context.Context, deliveryID string) error
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
	Due(ctx context.Context, now time.Time, limit int, skipApps ...int64) ([]domain.DueDelivery, error)
	// NextDue is the earliest NextAttemptAt of a pending or retrying delivery.
	NextDue(ctx context.Context) (time.Time, bool, error)
	// CountByStatus counts deliveries per status, for metrics.
	CountByStatus(ctx context.Context) (map[string]int, error)
	// LastSource is the highest SourcePosition of any delivery: where the
	// store-fed dispatcher resumes creating deliveries.
	LastSource(ctx context.Context) (events.Position, error)
}
