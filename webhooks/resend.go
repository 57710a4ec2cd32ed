package webhooks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
)

// maxResendParts bounds the streams of one multi-stream append of resends,
// so one append stays one modest transaction.
const maxResendParts = 512

// ResendMany queues again each delivery of ids that can be sent, as Resend
// does one by one, and says how many it queued and the last position it
// wrote. Unlike Resend it passes over, without counting them, deliveries
// whose payload was erased with their user (they can never be sent),
// deliveries already pending, and ids unknown or of another app than appID
// (0: any app). Each decision is made against the stream's revision and
// the resends are written in multi-stream appends of up to maxResendParts
// streams, so a backlog costs a few durable writes instead of one per
// delivery; a stream that changed since it was read (a concurrent resend
// or attempt) is decided again on its own, so no delivery is resent twice
// and a conflict on one never drops the others.
func (d *Dispatcher) ResendMany(ctx context.Context, appID int64, ids []string, by string) (int, events.Position, error) {
	n := 0
	var last events.Position
	for len(ids) > 0 {
		k := min(len(ids), maxResendParts)
		parts, after, err := d.decideResends(ctx, appID, ids[:k], by)
		if err != nil {
			return n, last, err
		}
		queued, pos, err := d.appendResends(ctx, appID, parts, after, by)
		n += queued
		if last.Less(pos) {
			last = pos
		}
		if err != nil {
			return n, last, err
		}
		ids = ids[k:]
	}
	return n, last, nil
}

// decideResends loads each delivery and makes the append of its resend,
// expecting the revision it was decided at; it leaves out those not to
// resend (see ResendMany). after[i] is what parts[i] makes of its delivery.
func (d *Dispatcher) decideResends(ctx context.Context, appID int64, ids []string, by string) ([]events.StreamAppend, []knownDelivery, error) {
	now := d.Clock.Now()
	parts := make([]events.StreamAppend, 0, len(ids))
	var after []knownDelivery
	for _, id := range ids {
		del, subject, err := d.loadSubject(ctx, id)
		if errors.Is(err, domain.ErrDeliveryNotFound) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("resend %s: %w", id, err)
		}
		p, next, ok, err := d.resendPart(del, appID, by, now)
		if err != nil {
			return nil, nil, fmt.Errorf("resend %s: %w", id, err)
		}
		if ok {
			parts, after = append(parts, p), append(after, d.knownOf(next, subject))
		}
	}
	return parts, after, nil
}

// resendPart is the append that queues del again, if it is to be resent,
// and the delivery as that append makes it.
func (d *Dispatcher) resendPart(del *delivery, appID int64, by string, now time.Time) (events.StreamAppend, *delivery, bool, error) {
	if del.created.Body == "" {
		return events.StreamAppend{}, nil, false, nil // erased with its user: it can never be sent
	}
	ev, err := decideResend(del, appID, by, now)
	if errors.Is(err, domain.ErrDeliveryNotFound) {
		return events.StreamAppend{}, nil, false, nil // another app's
	}
	if err != nil || ev == nil {
		return events.StreamAppend{}, nil, false, err
	}
	p, err := d.Registry.Encode(*ev, events.Metadata{AppID: del.created.AppID, Actor: by, OccurredAt: now})
	if err != nil {
		return events.StreamAppend{}, nil, false, err
	}
	return events.StreamAppend{
		Stream:   domain.DeliveryStream(del.created.DeliveryID),
		Expected: events.AfterVersion(del.version),
		Events:   []events.Proposed{p},
	}, del.after(ev, now), true, nil
}

// appendResends writes parts in one atomic multi-stream append. A part
// whose stream changed since its decision fails the whole append with
// nothing written: that stream is then decided again on its own and the
// others are appended again without it. A store without multi-stream
// appends gets the parts one by one.
func (d *Dispatcher) appendResends(ctx context.Context, appID int64, parts []events.StreamAppend, after []knownDelivery, by string) (int, events.Position, error) {
	n := 0
	var last events.Position
	for len(parts) > 0 {
		var res []events.AppendResult
		err := d.appendKnownMany(after, func() (err error) {
			res, err = events.AppendMulti(ctx, d.Store, parts...)
			return err
		})
		if err == nil {
			return n + len(parts), maxPosition(last, events.Last(res)), nil
		}
		if errors.Is(err, events.ErrMultiStreamUnsupported) {
			break
		}
		var conflict *events.ConflictError
		if !errors.As(err, &conflict) {
			return n, last, fmt.Errorf("resend %d deliveries: %w", len(parts), err)
		}
		i := partOf(parts, conflict.Stream)
		if i < 0 {
			return n, last, fmt.Errorf("resend %d deliveries: conflict on a stream not appended to: %w", len(parts), err)
		}
		queued, pos, err := d.resendAgain(ctx, appID, parts[i].Stream, by)
		if err != nil {
			return n, last, err
		}
		n, last = n+queued, maxPosition(last, pos)
		parts = append(parts[:i:i], parts[i+1:]...)
		after = append(after[:i:i], after[i+1:]...)
	}
	for i, p := range parts {
		var res events.AppendResult
		err := d.appendKnown(after[i], func() (err error) {
			res, err = d.Store.Append(ctx, p.Stream, p.Expected, p.Events...)
			return err
		})
		queued, pos := 1, res.Position
		if events.IsConflict(err) {
			queued, pos, err = d.resendAgain(ctx, appID, p.Stream, by)
		}
		if err != nil {
			return n, last, fmt.Errorf("resend %s: %w", p.Stream, err)
		}
		n, last = n+queued, maxPosition(last, pos)
	}
	return n, last, nil
}

// resendAgain decides a delivery whose stream changed since the bulk
// decision again from its current revision, retrying as Resend does.
func (d *Dispatcher) resendAgain(ctx context.Context, appID int64, stream, by string) (int, events.Position, error) {
	id := strings.TrimPrefix(stream, domain.DeliveryStream(""))
	for attempt := 0; attempt < 10; attempt++ {
		del, subject, err := d.loadSubject(ctx, id)
		if errors.Is(err, domain.ErrDeliveryNotFound) {
			return 0, events.Position{}, nil
		}
		if err != nil {
			return 0, events.Position{}, fmt.Errorf("resend %s: %w", id, err)
		}
		p, next, ok, err := d.resendPart(del, appID, by, d.Clock.Now())
		if err != nil || !ok {
			return 0, events.Position{}, err
		}
		var res events.AppendResult
		err = d.appendKnown(d.knownOf(next, subject), func() (err error) {
			res, err = d.Store.Append(ctx, p.Stream, p.Expected, p.Events...)
			return err
		})
		if events.IsConflict(err) {
			continue
		}
		if err != nil {
			return 0, events.Position{}, fmt.Errorf("resend %s: %w", id, err)
		}
		return 1, res.Position, nil
	}
	return 0, events.Position{}, fmt.Errorf("resend %s: too many concurrent changes", id)
}

// partOf is the index of the part appending to stream, -1 if none.
func partOf(parts []events.StreamAppend, stream string) int {
	for i, p := range parts {
		if p.Stream == stream {
			return i
		}
	}
	return -1
}

// maxPosition is the later of a and b.
func maxPosition(a, b events.Position) events.Position {
	if a.Less(b) {
		return b
	}
	return a
}
