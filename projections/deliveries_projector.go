package projections

import (
	"context"
	"strings"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

func applyDelivery(ctx context.Context, tx DeliveryTx, env events.Envelope) error {
	at := env.Metadata.OccurredAt.UTC()
	switch p := env.Payload.(type) {
	case *catalog.DeliveryCreated:
		d := Delivery{
			DeliveryID: p.DeliveryID, AppID: p.AppID, EventType: p.Event, SourceEventID: p.SourceEventID,
			SourcePosition: p.SourcePosition, Cursor: env.Position, Body: []byte(p.Body),
			Status: domain.DeliverySkipped, CreatedAt: at, UpdatedAt: at,
		}
		if p.Deliver {
			d.Status, d.NextAttemptAt = domain.DeliveryPending, &at
		}
		return tx.PutDelivery(ctx, d)
	case *catalog.DeliveryAttempted:
		d, err := tx.Delivery(ctx, p.DeliveryID)
		if err != nil {
			return err
		}
		a := Attempt{DeliveryID: p.DeliveryID, Attempt: p.Attempt, At: p.At.UTC(), LatencyMS: p.LatencyMS, Outcome: p.Outcome}
		if p.StatusCode != 0 {
			code := p.StatusCode
			a.StatusCode = &code
		}
		if p.Error != "" {
			// Postgres text cannot hold NUL; receivers' error text may.
			msg := strings.ToValidUTF8(strings.ReplaceAll(p.Error, "\x00", ""), "?")
			a.Error = &msg
		}
		if class := attemptClass(p); class != "" {
			a.ErrorClass = &class
		}
		if err := tx.AddAttempt(ctx, a); err != nil {
			return err
		}
		d.Attempts, d.LastStatus, d.LastError, d.LastErrorClass, d.UpdatedAt = p.Attempt, a.StatusCode, a.Error, a.ErrorClass, at
		d.NextAttemptAt = nil
		if p.NextAttemptAt != nil {
			next := p.NextAttemptAt.UTC()
			d.NextAttemptAt = &next
		}
		d.Status = domain.DeliveryStatusAfter(p.Outcome)
		return tx.PutDelivery(ctx, d)
	case *catalog.DeliveryResendRequested:
		d, err := tx.Delivery(ctx, p.DeliveryID)
		if err != nil {
			return err
		}
		next := p.At.UTC()
		d.Status, d.NextAttemptAt, d.UpdatedAt = domain.DeliveryPending, &next, at
		return tx.PutDelivery(ctx, d)
	}
	return nil
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
