package webhooks

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// DefaultSchedule is the spec's retry schedule: about 1 min, 5 min, 30 min,
// 2 h and 6 h after each failure; after the fifth retry fails, no more.
var DefaultSchedule = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour}

// delivery is a delivery as decisions see it, built only from its stream.
type delivery struct {
	version    uint64
	created    *catalog.DeliveryCreated
	status     string
	attempts   int // over the delivery's life
	round      int // attempts since creation or the last resend
	nextAt     time.Time
	deadLetter bool
	// traceparent is the trace context of the request behind the delivery
	// (its creation's metadata), which each attempt's span links to.
	traceparent string
}

func (d *delivery) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.DeliveryCreated:
		d.created, d.deadLetter = p, p.DeadLetter
		d.traceparent = env.Metadata.Traceparent
		d.status = domain.DeliverySkipped
		if p.Deliver {
			d.status, d.nextAt = domain.DeliveryPending, env.Metadata.OccurredAt
		}
	case *catalog.DeliveryAttempted:
		d.attempts, d.round = p.Attempt, d.round+1
		d.status = domain.DeliveryStatusAfter(p.Outcome)
		d.nextAt = time.Time{}
		if p.NextAttemptAt != nil {
			d.nextAt = *p.NextAttemptAt
		}
	case *catalog.DeliveryResendRequested:
		d.status, d.round, d.nextAt = domain.DeliveryPending, 0, p.At
	}
}

// The delivery decisions are pure: a delivery's state (folded from its
// stream) and a command in, the event to append or an error out. Loading
// the stream, the POST and the append are the dispatcher's.

// Why a delivery is not POSTed now (decideSend). None is a failure: the
// delivery stays as its stream says, and whatever changes that lists it again.
var (
	// errNotDue: not pending or retrying, or its next attempt is later (the
	// read model that listed it was behind the stream).
	errNotDue = errors.New("webhooks: the delivery is not due")
	// errAppSuspended: its app was suspended since it was listed; it waits for the resume.
	errAppSuspended = errors.New("webhooks: the delivery's app is suspended")
	// errBodyErased: its user was erased since it was listed: the body reads
	// as null and the read model has abandoned it; it is never sent.
	errBodyErased = errors.New("webhooks: the delivery's body was erased with its user")
)

// decideSend says whether the delivery is POSTed at now (nil) or why not.
func decideSend(d *delivery, now time.Time, appSuspended bool) error {
	switch {
	case d.created == nil:
		return domain.ErrDeliveryNotFound
	case d.status != domain.DeliveryPending && d.status != domain.DeliveryRetrying, d.nextAt.After(now):
		return errNotDue
	case appSuspended:
		return errAppSuspended
	case d.created.Body == "":
		return errBodyErased
	}
	return nil
}

// result is what one POST observed.
type result struct {
	url        string
	at         time.Time
	statusCode int
	latency    time.Duration
	err        string
	class      string // domain.ErrorClass* of err; "" when there is none
	refused    bool
	excerpt    string // the start of the receiver's answer
}

// decideAttempt records a POST's result and schedules what follows:
// success on any 2xx; a refused target is never retried; otherwise the
// round's k-th failure retries after schedule[k-1], and when the schedule
// is spent the delivery is abandoned (plugin events: dead-lettered).
func decideAttempt(d *delivery, r result, schedule []time.Duration) (catalog.DeliveryAttempted, error) {
	if d.created == nil {
		return catalog.DeliveryAttempted{}, domain.ErrDeliveryNotFound
	}
	ev := catalog.DeliveryAttempted{
		DeliveryID: d.created.DeliveryID, Attempt: d.attempts + 1, At: r.at.UTC(), URL: r.url,
		StatusCode: r.statusCode, LatencyMS: r.latency.Milliseconds(), Error: r.err,
		ResponseExcerpt: r.excerpt,
	}
	if r.excerpt != "" {
		ev.OpenUserID, ev.SourceStream = subjectUser(d.created), d.created.SourceStream
	}
	if ev.ErrorClass = r.class; ev.ErrorClass == "" {
		// An answer that is not 2xx, or a failure left unclassified.
		ev.ErrorClass = domain.ClassifyDeliveryFailure(r.err, r.statusCode)
	}
	switch {
	case r.err == "" && r.statusCode >= 200 && r.statusCode < 300:
		ev.Outcome = domain.OutcomeDelivered
	case r.refused:
		ev.Outcome = domain.OutcomeRefused
	case d.round < len(schedule):
		next := r.at.Add(schedule[d.round]).UTC()
		ev.Outcome, ev.NextAttemptAt = domain.OutcomeRetry, &next
	case d.deadLetter:
		ev.Outcome = domain.OutcomeDeadLetter
	default:
		ev.Outcome = domain.OutcomeAbandoned
	}
	return ev, nil
}

// decideResend puts a delivery back in the queue unless it is already
// waiting for its first attempt (nil: nothing to append). appID 0 is an
// operator, who may resend any app's; an app's resend of another app's
// delivery finds none.
func decideResend(d *delivery, appID int64, by string, now time.Time) (*catalog.DeliveryResendRequested, error) {
	if d.created == nil || (appID != 0 && d.created.AppID != appID) {
		return nil, domain.ErrDeliveryNotFound
	}
	if d.status == domain.DeliveryPending {
		return nil, nil
	}
	return &catalog.DeliveryResendRequested{DeliveryID: d.created.DeliveryID, RequestedBy: by, At: now.UTC()}, nil
}

// subjectUser is the open_user_id a delivery's body is about (0: none), as
// the privacy layer finds it, so an attempt's excerpt is sealed with the
// same person's key as the body.
func subjectUser(c *catalog.DeliveryCreated) int64 {
	var body struct {
		OpenUserID *int64 `json:"open_user_id"`
	}
	if json.Unmarshal([]byte(c.Body), &body) == nil && body.OpenUserID != nil && *body.OpenUserID > 0 {
		return *body.OpenUserID
	}
	if id, ok := strings.CutPrefix(c.SourceStream, "user-"); ok {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 0
}
