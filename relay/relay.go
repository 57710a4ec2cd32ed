// Package relay copies every event of the log, in order, to a message bus
// (Kafka in production) for analytics and the webhook dispatcher. It saves
// its checkpoint only after the bus acknowledged, so nothing is skipped; a
// crash between the two re-sends a batch, which consumers de-duplicate by
// event id.
package relay

import (
	"context"

	"github.com/healthtech/partner-open-platform/events"
)

// Producer publishes events and returns only once the bus has acknowledged all of them.
type Producer interface {
	Produce(ctx context.Context, evs []events.Recorded) error
	Close() error
}

// Checkpoints stores the position of the last event the bus acknowledged.
type Checkpoints interface {
	Load(ctx context.Context) (events.Position, error)
	Save(ctx context.Context, pos events.Position) error
}
