package projections

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"unsafe"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/privacy"
)

func applyDelivery(ctx context.Context, tx DeliveryTx, env events.Envelope) error {
	at := env.Metadata.OccurredAt.UTC()
	switch p := env.Payload.(type) {
	case *catalog.DeliveryCreated:
		d := Delivery{
			DeliveryID: p.DeliveryID, AppID: p.AppID, EndpointID: p.EndpointID, EventType: p.Event, SourceEventID: p.SourceEventID,
			SourcePosition: p.SourcePosition, Cursor: env.Position, Body: readOnlyBytes(p.Body),
			Subject: deliverySubject(p), Status: domain.DeliverySkipped, CreatedAt: at, UpdatedAt: at,
		}
		if p.Deliver {
			d.Status, d.NextAttemptAt = domain.DeliveryPending, &at
		}
		return tx.PutDelivery(ctx, stopErased(d))
	case *catalog.DeliveryAttempted:
		a := Attempt{DeliveryID: p.DeliveryID, Attempt: p.Attempt, At: p.At.UTC(), LatencyMS: p.LatencyMS, Outcome: p.Outcome,
			ResponseExcerpt: cleanText(p.ResponseExcerpt)}
		if p.StatusCode != 0 {
			code := p.StatusCode
			a.StatusCode = &code
		}
		if p.Error != "" {
			// Postgres text cannot hold NUL; receivers' error text may.
			msg := cleanText(p.Error)
			a.Error = &msg
		}
		if class := attemptClass(p); class != "" {
			a.ErrorClass = &class
		}
		erased := false
		// The closure takes the three pointers, not a: a captured a would
		// be moved to the heap for every outcome projected.
		status, msg, class := a.StatusCode, a.Error, a.ErrorClass
		err := tx.UpdateDeliveryState(ctx, p.DeliveryID, func(st *DeliveryState) {
			erased = st.Erased
			st.Attempts, st.LastStatus, st.LastError, st.LastErrorClass, st.UpdatedAt = p.Attempt, status, msg, class, at
			st.NextAttemptAt = nil
			if p.NextAttemptAt != nil {
				next := p.NextAttemptAt.UTC()
				st.NextAttemptAt = &next
			}
			st.Status = domain.DeliveryStatusAfter(p.Outcome)
			stopErasedState(st)
		})
		if err != nil {
			return err
		}
		if erased {
			a.ResponseExcerpt = "" // erased: the log reads it as null too
		}
		return tx.AddAttempt(ctx, a)
	case *catalog.DeliveryResendRequested:
		return tx.UpdateDeliveryState(ctx, p.DeliveryID, func(st *DeliveryState) {
			next := p.At.UTC()
			st.Status, st.NextAttemptAt, st.UpdatedAt = domain.DeliveryPending, &next, at
			stopErasedState(st)
		})
	case *catalog.UserErased:
		// The user's data key is gone, so every delivery about them now
		// reads from the log with a null body: blank the live rows the same
		// way, so that a rebuild gives the same rows (UpdatedAt included,
		// which erasure leaves alone).
		ds, err := tx.SubjectDeliveries(ctx, "user-"+strconv.FormatInt(p.OpenUserID, 10))
		if err != nil {
			return err
		}
		for _, d := range ds {
			d.Body = []byte{}
			if err := tx.PutDelivery(ctx, stopErased(d)); err != nil {
				return err
			}
			if err := tx.ClearExcerpts(ctx, d.DeliveryID); err != nil {
				return err
			}
		}
	}
	return nil
}

// deliverySubject names the user a delivery's body is about, as privacy
// seals it: the body's open_user_id, else a user- source stream. A body
// already erased (null in the log) names nobody. The body is read with
// privacy's direct reader (privacy.BodyUser), with encoding/json only where
// that reader declines.
func deliverySubject(p *catalog.DeliveryCreated) string {
	if p.Body == "" {
		return ""
	}
	user, ok := privacy.BodyUser(readOnlyBytes(p.Body))
	if !ok {
		var body struct {
			OpenUserID *int64 `json:"open_user_id"`
		}
		if json.Unmarshal(readOnlyBytes(p.Body), &body) == nil && body.OpenUserID != nil {
			user = *body.OpenUserID
		}
	}
	if user > 0 {
		var b [24]byte // one allocation, the subject's, not the number's too
		return string(strconv.AppendInt(append(b[:0], "user-"...), user, 10))
	}
	if strings.HasPrefix(p.SourceStream, "user-") {
		return p.SourceStream
	}
	return ""
}

// readOnlyBytes is s's bytes without a copy, never nil, for readers that
// write nothing into them: BodyUser, encoding/json, and the stores, which
// copy what they keep of a delivery's body (the memory store only its
// tail, most of the time). A delivery's body is the longest field a
// rebuild decodes, so it is not copied per use.
func readOnlyBytes(s string) []byte {
	if s == "" {
		return []byte{}
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// stopErased applies erasure to a delivery whose body is erased (empty: a
// webhook body is never empty otherwise): it names no subject any more, and
// if it was still queued it is abandoned, never to be sent, while a delivery
// that already ended (delivered, abandoned, skipped) keeps its status. Every
// write of a delivery goes through it, so an attempt recorded after the
// erasure by a sender that raced it, or a resend, cannot queue it again, and
// a rebuild, which reads the erased body from DeliveryCreated on, gives the
// same status as the live projection that blanked it at user.erased.
func stopErased(d Delivery) Delivery {
	if len(d.Body) != 0 {
		return d
	}
	d.Subject = ""
	st := d.State()
	stopErasedState(&st)
	return d.WithState(st)
}

// stopErasedState is stopErased for a change of state alone: an erased
// delivery's row names no subject already (it was written through
// stopErased when its body was blanked or created empty).
func stopErasedState(st *DeliveryState) {
	if st.Erased && (st.Status == domain.DeliveryPending || st.Status == domain.DeliveryRetrying) {
		st.Status, st.NextAttemptAt = domain.DeliveryAbandoned, nil
	}
}

// attemptClass is the recorded class of a failed attempt or, for events
// recorded before classes existed, the one its error and status imply.
func attemptClass(p *catalog.DeliveryAttempted) string {
	if p.ErrorClass != "" || p.Outcome == domain.OutcomeDelivered {
		return p.ErrorClass
	}
	if class := domain.ClassifyDeliveryFailure(p.Error, p.StatusCode); class != "" {
		return class
	}
	return domain.ErrorClassOther
}

// cleanText makes receiver-supplied text storable: Postgres text cannot
// hold NUL, and receivers' answers and error text may.
func cleanText(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "?")
}
