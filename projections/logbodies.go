package projections

import (
	"context"
	"fmt"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/jsoncodec"
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
		if out[i], err = l.body(rec); err != nil {
			return nil, fmt.Errorf("delivery body at %s: %w", pos, err)
		}
	}
	return out, nil
}

// bodyField is the member of a webhook.delivery.created event that holds
// the body.
var bodyField = []jsoncodec.Field{{Name: "body", Kind: jsoncodec.String}}

// body is the body of rec, a webhook.delivery.created event's: taken
// straight from its JSON (jsoncodec.Pick gives what encoding/json gives
// DeliveryCreated.Body) while the type has no upcaster, else, or when
// Pick declines, decoded by the registry.
func (l LogBodies) body(rec events.Recorded) ([]byte, error) {
	if rec.Type == created && !l.Registry.Upcasts(created) {
		var picked [1]jsoncodec.Picked
		if jsoncodec.Pick(rec.Data, bodyField, picked[:]) && !picked[0].Mismatch {
			raw := picked[0].Raw(rec.Data)
			if raw == nil {
				return []byte{}, nil // null (erased), absent or ""
			}
			// Unquote may write up to 8 bytes past what it appends.
			return jsoncodec.Unquote(make([]byte, 0, len(raw)+8), raw), nil
		}
	}
	env, err := l.Registry.Decode(rec)
	if err != nil {
		return nil, err
	}
	p, ok := env.Payload.(*catalog.DeliveryCreated)
	if !ok {
		return nil, fmt.Errorf("the event there is a %s", rec.Type)
	}
	return []byte(p.Body), nil
}

// created is the type of the event that holds a delivery's body.
var created = catalog.DeliveryCreated{}.EventType()
