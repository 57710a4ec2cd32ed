package webhooks

import (
	"context"

	"github.com/healthtech/partner-open-platform/events"
)

// claimAndLoad claims ids as claimReleasing does; with LoadingClaims the
// claimed deliveries' streams come back in the claim's round trip
// (streams nil otherwise: each attempt reads its own).
func (d *Dispatcher) claimAndLoad(ctx context.Context, ids []string) ([]Claim, map[string][]events.Recorded, error) {
	lc, ok := d.Claims.(LoadingClaims)
	if !ok {
		got, err := d.claimReleasing(ctx, ids)
		return got, nil, err
	}
	held, passed := d.takeHeldNotes()
	res, err := lc.ClaimLoading(ctx, held, d.Node, ids, d.claimTTL())
	unreleased := res.Unreleased
	if err != nil {
		unreleased = held
	}
	if len(unreleased) > 0 {
		d.release(ctx, unreleased)
	}
	if len(held) > 0 {
		d.released(held, passed)
	}
	return res.Claimed, res.Streams, err
}

// loadedStream is a claimed delivery's stream as its claim read it.
type loadedStream struct {
	recs []events.Recorded
}

// loadClaimed is the delivery an attempt starts from: the delivery as
// created when creation claimed it and its body still reads (known: a
// stream that moved since makes the outcome's append conflict, and a
// refusal to send is checked against the stream; an erased body is read
// from the stream, as erased), the stream its claim read, or else what
// current gives.
func (d *Dispatcher) loadClaimed(ctx context.Context, c claimed) (del *delivery, subject string, known bool, err error) {
	if c.pre != nil {
		if d.readable(ctx, knownDelivery{subject: c.pre.subject}) {
			return c.pre.del, "", true, nil
		}
		del, subject, err = d.loadSubject(ctx, c.DeliveryID)
		return del, subject, false, err
	}
	if c.stream == nil {
		return d.current(ctx, c.DeliveryID)
	}
	del, subject, err = d.deliveryOf(c.DeliveryID, c.stream.recs)
	return del, subject, false, err
}
