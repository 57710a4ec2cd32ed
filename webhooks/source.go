// Package webhooks turns partner-visible events into signed webhook
// deliveries: it creates one delivery per event and app (idempotently, keyed
// by a delivery id derived from both), posts it with the spec's headers and
// signature, retries on the spec's schedule, and records every attempt as an
// event so retry state survives any crash.
package webhooks

import (
	"context"

	"github.com/healthtech/partner-open-platform/events"
)

// Source feeds the dispatcher the log's events: the event store's own
// subscription in embedded mode, a Kafka consumer group in production.
type Source interface {
	// Run calls handle for each event in order until ctx ends. An event for
	// which handle returned nil counts as processed (a Kafka source commits
	// its offset); an error stops Run, which the caller restarts.
	Run(ctx context.Context, handle func(ctx context.Context, ev events.Recorded) error) error
}
