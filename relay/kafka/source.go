package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/webhooks"
)

// Source is a consumer group, so dispatchers share partitions and resume where the group left off.
type Source struct {
	brokers []string
	topic   string
	group   string
	log     *slog.Logger
}

var _ webhooks.Source = (*Source)(nil)

// WebhookGroup is the dispatchers' consumer group for an internal topic:
// "platform-webhooks" for the default topic (the group deployments already
// have offsets in), "platform-webhooks.<topic>" for any other, so that
// clusters sharing a broker on separate topics never rebalance each other.
func WebhookGroup(internalTopic string) string {
	if internalTopic == "" || internalTopic == DefaultInternalTopic {
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

// NewSource consumes the internal topic (DefaultInternalTopic if empty) in
// groupID; a new group starts at the oldest retained message.
func NewSource(brokers []string, topic, groupID string, log *slog.Logger) *Source {
	if topic == "" {
		topic = DefaultInternalTopic
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

// Run commits a message only after handle succeeded (periodically, see
// CommitInterval); an error stops Run uncommitted so the message is re-delivered.
func (s *Source) Run(ctx context.Context, handle func(ctx context.Context, ev events.Recorded) error) error {
	r := s.reader()
	defer r.Close()
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("kafka source %s: fetch: %w", s.group, err)
		}
		if ctx.Err() != nil {
			return nil // FetchMessage may still hand out a buffered message
		}
		ev, err := Decode(m)
		if err != nil {
			return fmt.Errorf("kafka source %s: %w", s.group, err)
		}
		if err := handle(ctx, ev); err != nil {
			if ctx.Err() != nil {
				return nil // shutting down; the message stays uncommitted
			}
			return fmt.Errorf("kafka source %s: handle event %s at %s/%d@%d: %w", s.group, ev.ID, m.Topic, m.Partition, m.Offset, err)
		}
		if err := commit(ctx, r, m); err != nil {
			return fmt.Errorf("kafka source %s: commit %s/%d@%d: %w", s.group, m.Topic, m.Partition, m.Offset, err)
		}
	}
}

// DefaultBatch bounds how many messages one call of RunBatches' handle gets.
const DefaultBatch = 512

var _ webhooks.BatchSource = (*Source)(nil)

// RunBatches is Run handing handle, in one call, every message fetched
// while the previous call ran (at most DefaultBatch), as the store-fed
// dispatcher's batches do: under load the dispatcher creates many
// deliveries per call, in a few appends, instead of one after another.
// Messages arrive in partition order, so each subject's events stay in
// order within and across batches. A batch is committed only after handle
// succeeded for all of it; an error stops RunBatches with the batch
// uncommitted, so all of it is re-delivered (the dispatcher's creation is
// idempotent).
func (s *Source) RunBatches(ctx context.Context, handle func(ctx context.Context, evs []events.Recorded) error) error {
	r := s.reader()
	defer r.Close()
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
	defer func() { cancel(); <-fetched }()
	msgs := make([]kafka.Message, 0, DefaultBatch)
	evs := make([]events.Recorded, 0, DefaultBatch)
	for {
		var m kafka.Message
		var ok bool
		select {
		case m, ok = <-feed:
		case <-ctx.Done():
			return nil
		}
		if !ok {
			select {
			case err := <-fetchErr:
				return fmt.Errorf("kafka source %s: fetch: %w", s.group, err)
			default:
				return nil
			}
		}
		msgs = append(msgs[:0], m)
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
			return nil // the fetcher may still have handed out buffered messages
		}
		evs = evs[:0]
		for _, m := range msgs {
			ev, err := Decode(m)
			if err != nil {
				return fmt.Errorf("kafka source %s: %s/%d@%d: %w", s.group, m.Topic, m.Partition, m.Offset, err)
			}
			evs = append(evs, ev)
		}
		if err := handle(ctx, evs); err != nil {
			if ctx.Err() != nil {
				return nil // shutting down; the batch stays uncommitted
			}
			first := msgs[0]
			return fmt.Errorf("kafka source %s: handle %d events from %s/%d@%d: %w", s.group, len(msgs), first.Topic, first.Partition, first.Offset, err)
		}
		if err := commit(ctx, r, msgs...); err != nil {
			return fmt.Errorf("kafka source %s: commit %d messages: %w", s.group, len(msgs), err)
		}
	}
}

// commit outlives a shutdown that began during handle, so a handled message
// is not delivered again after a clean stop.
func commit(ctx context.Context, r *kafka.Reader, ms ...kafka.Message) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return r.CommitMessages(ctx, ms...)
}
