package memory

import (
	"context"
	"errors"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// BodyLog reads deliveries' bodies from the log: each the body of the
// webhook.delivery.created event at the delivery's Cursor, as the
// projections read the log (an erased person's body reads empty), the
// caller's own. projections.LogBodies is one.
type BodyLog interface {
	DeliveryBodies(ctx context.Context, positions []events.Position) ([][]byte, error)
}

// KeepBodiesInLog makes the deliveries read model drop a delivery's body
// once the delivery is final (delivered, abandoned, dead letter, skipped)
// and read it from l whenever a read returns it: the body is most of what
// a delivery weighs, and the log holds it anyway. A pending or retrying
// delivery keeps its body while it is being sent, when the routes read it
// most (the sender sends the body of the delivery's stream, not the read
// model's). Only deliveries the projector made from the log may be put
// then (their Cursor is their event's position). Call it before the store
// is used.
func (s *Store) KeepBodiesInLog(l BodyLog) { s.bodyLog = l }

// bodiesInLog says whether an image of read model f may leave a delivery's
// body out (snapfile.Image.BodiesInLog): only the deliveries of a store
// that reads them from the log do.
func (s *Store) bodiesInLog(f projections.ReadModel) bool {
	return s.bodyLog != nil && f == projections.ReadModelDeliveries
}

// errNoBodyLog is a read of a body the rows do not hold, by a store given
// no log to read it from (a snapshot written with one, restored without).
var errNoBodyLog = errors.New("memory: a delivery's body is in the log, and this store reads no log")

// final says whether a delivery of status has no attempt to come unless
// it is resent.
func final(status string) bool {
	switch status {
	case domain.DeliveryDelivered, domain.DeliveryAbandoned, domain.DeliveryDeadLetter, domain.DeliverySkipped:
		return true
	}
	return false
}

// erased says whether the row's body is erased (empty: a webhook body is
// never empty otherwise).
func (r *deliveryRow) erased() bool {
	return r.flags&(bodyTail|bodyLogged) == 0 && len(r.body) == 0
}

// bodyToLog says whether a delivery of status, its body erased or not, is
// one whose body the store leaves in the log.
func (s *Store) bodyToLog(status string, erased bool) bool {
	return s.bodyLog != nil && !erased && final(status)
}

// logged is d without its body (nil, which packDelivery keeps as a body
// in the log) when the store reads bodies from the log and d is final, so
// that the body is not copied into the row to be dropped. An erased body
// stays (empty), so that it reads as erased without the log.
func (s *Store) logged(d projections.Delivery) projections.Delivery {
	if s.bodyToLog(d.Status, len(d.Body) == 0) {
		d.Body = nil
	}
	return d
}

// logBody is r without its body when the store reads bodies from the log
// and r is final (as logged, for a row's change of state).
func (s *Store) logBody(r deliveryRow) deliveryRow {
	if !s.bodyToLog(statusNames[r.status], r.erased()) {
		return r
	}
	r.body, r.flags = "", r.flags&^bodyTail|bodyLogged
	return r
}

// fillBodies reads from the log the bodies of ds that their rows do not
// hold (read gives them nil), in one call for all.
func (s *Store) fillBodies(ctx context.Context, ds []projections.Delivery) error {
	var at []events.Position
	for i := range ds {
		if ds[i].Body == nil {
			at = append(at, ds[i].Cursor)
		}
	}
	if len(at) == 0 {
		return nil
	}
	if s.bodyLog == nil {
		return errNoBodyLog
	}
	bodies, err := s.bodyLog.DeliveryBodies(ctx, at)
	if err != nil {
		return err
	}
	for i, j := 0, 0; i < len(ds); i++ {
		if ds[i].Body == nil {
			ds[i].Body = bodies[j]
			if ds[i].Body == nil {
				ds[i].Body = []byte{}
			}
			j++
		}
	}
	return nil
}
