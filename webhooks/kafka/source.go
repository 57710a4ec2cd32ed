// Package kafka is the webhook dispatcher's Kafka consumer: a consumer-group
// subscribe.Source over the internal topic the relay writes (the log's wire
// format, package events/kafka), which the dispatcher's creation pipeline
// reads instead of following the event store.
package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/healthtech/partner-open-platform/events"
	eventskafka "github.com/healthtech/partner-open-platform/events/kafka"
	"github.com/healthtech/partner-open-platform/events/subscribe"
)

// Source is a consumer group, so dispatchers share partitions and resume where the group left off.
type Source struct {
	brokers []string
	topic   string
	group   string
	log     *slog.Logger
}

var _ subscribe.Source = (*Source)(nil)

// WebhookGroup is the dispatchers' consumer group for an internal topic:
// "platform-webhooks" for the default topic (the group deployments already
// have offsets in), "platform-webhooks.<topic>" for any other, so that
// clusters sharing a broker on separate topics never rebalance each other.
func WebhookGroup(internalTopic string) string {
	if internalTopic == "" || internalTopic == eventskafka.DefaultInternalTopic {
		return "platform-webhooks"
	}
	return "platform-webhooks." + internalTopic
}

// Group membership timeouts: a SIGKILLed dispatcher's partitions move to
// the others within groupSession (the client's default is 30 s, three
// times the lease TTL that bounds every other takeover).
const (
	groupSession   = 10 * time.Second
	groupHeartbeat = time.Second
)

// NewSource consumes the internal topic (eventskafka.DefaultInternalTopic if empty) in
// groupID; a new group starts at the oldest retained message.
func NewSource(brokers []string, topic, groupID string, log *slog.Logger) *Source {
	if topic == "" {
		topic = eventskafka.DefaultInternalTopic
	}
	return &Source{brokers: brokers, topic: topic, group: groupID, log: log}
}

// reader joins the group on the topic.
func (s *Source) reader() *kafka.Reader {
	return kafka.NewReader(kafka.ReaderConfig{
		Brokers:  s.brokers,
		GroupID:  s.group,
		Topic:    s.topic,
		MinBytes: 1,
		MaxBytes: 10 << 20,
		MaxWait:  250 * time.Millisecond,
		// Offsets of handled messages are committed every 100 ms (and on
		// Close), not one round trip per message: a crash re-delivers at
		// most the last interval's messages, which the dispatcher's
		// idempotent Create absorbs.
		CommitInterval:    100 * time.Millisecond,
		StartOffset:       kafka.FirstOffset,
		SessionTimeout:    groupSession,
		RebalanceTimeout:  groupSession,
		HeartbeatInterval: groupHeartbeat,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			s.log.Warn("kafka reader: "+fmt.Sprintf(msg, args...), "group", s.group, "topic", s.topic)
		}),
	})
}

// DefaultBatch bounds how many messages one batch holds.
const DefaultBatch = 512

// Open joins the group: batches are fetched from where the group's
// committed offsets left off. A message's offset is committed only once
// the pipeline committed its batch and every batch before it; a failed
// commit, or a stop, leaves its batch and every later one uncommitted, so
// the group hands them over again (the dispatcher's creation is
// idempotent).
func (s *Source) Open(ctx context.Context) (subscribe.Feed, error) {
	r := s.reader()
	next, stop := s.batches(ctx, r)
	return &feed{s: s, r: r, next: next, stop: stop}, nil
}

// feed is an open Source; its marks are the last message of each
// partition in a batch.
type feed struct {
	s    *Source
	r    *kafka.Reader
	next func(context.Context) ([]kafka.Message, []events.Recorded, error)
	stop func()
}

func (f *feed) Next(ctx context.Context) ([]events.Recorded, subscribe.Mark, error) {
	msgs, evs, err := f.next(ctx)
	return evs, lastPerPartition(msgs), err
}

func (f *feed) Commit(ctx context.Context, marks []subscribe.Mark) error {
	var msgs []kafka.Message
	for _, m := range marks {
		last, ok := m.([]kafka.Message)
		if !ok {
			return fmt.Errorf("kafka source %s: a mark is a batch's messages, not %T", f.s.group, m)
		}
		msgs = append(msgs, last...)
	}
	if err := commit(ctx, f.r, msgs...); err != nil {
		return fmt.Errorf("kafka source %s: commit offsets: %w", f.s.group, err)
	}
	return nil
}

// Close stops fetching and leaves the group, flushing the offsets
// committed last.
func (f *feed) Close() error {
	f.stop()
	return f.r.Close()
}

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

// batches fetches r's messages in the background until stop is called.
// next blocks until a message arrives (or ctx ends), then returns it with
// every message fetched meanwhile, at most DefaultBatch, and their events
// decoded; it returns none once ctx ended or the fetch stopped, and an
// error when the fetch failed or a message is not an event. Each call
// returns fresh slices, which a pipelined caller keeps.
func (s *Source) batches(ctx context.Context, r *kafka.Reader) (next func(context.Context) ([]kafka.Message, []events.Recorded, error), stop func()) {
	fctx, cancel := context.WithCancel(ctx)
	feed := make(chan kafka.Message, DefaultBatch)
	fetchErr := make(chan error, 1)
	fetched := make(chan struct{})
	go func() {
		defer close(fetched)
		defer close(feed)
		for {
			m, err := r.FetchMessage(fctx)
			if err != nil {
				if fctx.Err() == nil {
					fetchErr <- err
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
				return nil, nil, fmt.Errorf("kafka source %s: fetch: %w", s.group, err)
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
				return nil, nil, fmt.Errorf("kafka source %s: %s/%d@%d: %w", s.group, m.Topic, m.Partition, m.Offset, err)
			}
			evs = append(evs, ev)
		}
		return msgs, evs, nil
	}
	return next, func() { cancel(); <-fetched }
}

// commit outlives a shutdown that began during a batch's commit, so a
// committed batch is not delivered again after a clean stop.
func commit(ctx context.Context, r *kafka.Reader, ms ...kafka.Message) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return r.CommitMessages(ctx, ms...)
}
