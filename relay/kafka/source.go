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

// Source feeds the webhook dispatcher from a Kafka consumer group, so that
// several dispatchers share the partitions and resume where the group left.
type Source struct {
	brokers []string
	topic   string
	group   string
	log     *slog.Logger
}

var _ webhooks.Source = (*Source)(nil)

// NewSource consumes topic (DefaultTopic if empty) as member of groupID.
func NewSource(brokers []string, topic, groupID string, log *slog.Logger) *Source {
	if topic == "" {
		topic = DefaultTopic
	}
	return &Source{brokers: brokers, topic: topic, group: groupID, log: log}
}

// Run joins the group and handles each message in partition order,
// committing its offset only after handle succeeded; a handle or decode
// error stops Run without committing, so the message is delivered again
// when Run is restarted. Run returns nil when ctx ends.
func (s *Source) Run(ctx context.Context, handle func(ctx context.Context, ev events.Recorded) error) error {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:        s.brokers,
		GroupID:        s.group,
		Topic:          s.topic,
		MinBytes:       1,
		MaxBytes:       10 << 20,
		MaxWait:        250 * time.Millisecond,
		CommitInterval: 0, // synchronous: CommitMessages returns once the group has the offset
		StartOffset:    kafka.FirstOffset,
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
		ev, err := Decode(m)
		if err != nil {
			return fmt.Errorf("kafka source %s: %w", s.group, err)
		}
		if err := handle(ctx, ev); err != nil {
			return fmt.Errorf("kafka source %s: handle event %s at %s/%d@%d: %w", s.group, ev.ID, m.Topic, m.Partition, m.Offset, err)
		}
		if err := r.CommitMessages(ctx, m); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("kafka source %s: commit %s/%d@%d: %w", s.group, m.Topic, m.Partition, m.Offset, err)
		}
	}
}
