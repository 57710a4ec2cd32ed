package projections

import (
	"context"
	"fmt"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// LogBodies reads deliveries' bodies back from the log: each from the
// webhook.delivery.created event at the delivery's Cursor, decoded as
// applyDelivery decodes it. Log is the log as the projections read it
// (through the privacy layer), so a body whose person is erased reads
// empty, as the read model blanks it at user.erased.
type LogBodies struct {
	Log      events.Store
	Registry *events.Registry
}

// DeliveryBodies reads the bodies of the deliveries created at positions
// (in any order) in one read of the log for all (events.ReadPositions:
// one pass of the store, opened by the privacy layer together); the
// result's bodies are the caller's own.
func (l LogBodies) DeliveryBodies(ctx context.Context, positions []events.Position) ([][]byte, error) {
	recs, err := events.ReadPositions(ctx, l.Log, positions)
	if err != nil {
		return nil, fmt.Errorf("delivery bodies: %w", err)
	}
	out := make([][]byte, len(positions))
	for i, pos := range positions {
		rec := recs[i]
		if rec.Position != pos {
			return nil, fmt.Errorf("delivery body at %s: no event there", pos)
		}
		env, err := l.Registry.Decode(rec)
		if err != nil {
			return nil, fmt.Errorf("delivery body at %s: %w", pos, err)
		}
		p, ok := env.Payload.(*catalog.DeliveryCreated)
		if !ok {
			return nil, fmt.Errorf("delivery body at %s: the event there is a %s", pos, rec.Type)
		}
		out[i] = []byte(p.Body)
	}
	return out, nil
}
