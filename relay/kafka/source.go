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

// Run commits a message only after handle succeeded (periodically, see
// CommitInterval); an error stops Run uncommitted so the message is re-delivered.
func (s *Source) Run(ctx context.Context, handle func(ctx context.Context, ev events.Recorded) error) error {
	r := kafka.NewReader(kafka.ReaderConfig{
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

// commit outlives a shutdown that began during handle, so a handled message
// is not delivered again after a clean stop.
func commit(ctx context.Context, r *kafka.Reader, m kafka.Message) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return r.CommitMessages(ctx, m)
}
