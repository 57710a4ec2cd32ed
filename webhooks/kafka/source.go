// Package kafka is the webhook dispatcher's Kafka consumer: a
// subscribe.Source over the internal topic the relay writes (the log's wire
// format, package events/kafka), which the dispatcher's creation pipeline
// reads instead of following the event store (PartitionSource).
package kafka

import (
	"context"
	"fmt"
	"sync"

	"github.com/segmentio/kafka-go"

	"github.com/healthtech/partner-open-platform/events"
	eventskafka "github.com/healthtech/partner-open-platform/events/kafka"
)

// WebhookGroup is the consumer group the dispatchers of earlier releases
// read an internal topic in: "platform-webhooks" for the default topic,
// "platform-webhooks.<topic>" for any other. A PartitionSource starts a
// partition it has no offset of its own for where that group left it.
func WebhookGroup(internalTopic string) string {
	if internalTopic == "" || internalTopic == eventskafka.DefaultInternalTopic {
		return "platform-webhooks"
	}
	return "platform-webhooks." + internalTopic
}

// DefaultBatch bounds how many messages one batch holds.
const DefaultBatch = 512

// lastPerPartition is the last of msgs (in fetch order) of each partition:
// committing it commits every message before it in that partition.
func lastPerPartition(msgs []kafka.Message) []kafka.Message {
	var out []kafka.Message
	for i := len(msgs) - 1; i >= 0; i-- {
		seen := false
		for _, m := range out {
			if m.Topic == msgs[i].Topic && m.Partition == msgs[i].Partition {
				seen = true
				break
			}
		}
		if !seen {
			out = append(out, msgs[i])
		}
	}
	return out
}

// fetchBatches fetches with each of fetch (one per partition) in the background until stop is called. next blocks
// until a message arrives (or ctx ends), then returns it with every
// message fetched meanwhile, at most DefaultBatch, and their events
// decoded; it returns none once ctx ended or the fetch stopped, and an
// error when a fetch failed (which stops every fetch) or a message is not
// an event. Each call returns fresh slices, which a pipelined caller keeps.
func fetchBatches(ctx context.Context, what string, fetch ...func(context.Context) (kafka.Message, error)) (next func(context.Context) ([]kafka.Message, []events.Recorded, error), stop func()) {
	fctx, cancel := context.WithCancel(ctx)
	feed := make(chan kafka.Message, DefaultBatch)
	fetchErr := make(chan error, 1)
	fetched := make(chan struct{})
	var wg sync.WaitGroup
	for _, f := range fetch {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, err := f(fctx)
				if err != nil {
					if fctx.Err() == nil {
						select {
						case fetchErr <- err:
						default:
						}
						cancel() // one partition failing stops the feed: the pipeline restarts it whole
					}
					return
				}
				select {
				case feed <- m:
				case <-fctx.Done():
					return
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(feed)
		close(fetched)
	}()
	next = func(ctx context.Context) ([]kafka.Message, []events.Recorded, error) {
		var m kafka.Message
		var ok bool
		select {
		case m, ok = <-feed:
		case <-ctx.Done():
			return nil, nil, nil
		}
		if !ok {
			select {
			case err := <-fetchErr:
				return nil, nil, fmt.Errorf("kafka source %s: fetch: %w", what, err)
			default:
				return nil, nil, nil
			}
		}
		msgs := []kafka.Message{m}
	fill:
		for len(msgs) < DefaultBatch {
			select {
			case m, ok := <-feed:
				if !ok {
					break fill
				}
				msgs = append(msgs, m)
			default:
				break fill
			}
		}
		if ctx.Err() != nil {
			return nil, nil, nil // the fetcher may still have handed out buffered messages
		}
		evs := make([]events.Recorded, 0, len(msgs))
		for _, m := range msgs {
			ev, err := eventskafka.Decode(m)
			if err != nil {
				return nil, nil, fmt.Errorf("kafka source %s: %s/%d@%d: %w", what, m.Topic, m.Partition, m.Offset, err)
			}
			evs = append(evs, ev)
		}
		return msgs, evs, nil
	}
	return next, func() { cancel(); <-fetched }
}
