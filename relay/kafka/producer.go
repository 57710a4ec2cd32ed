// Package kafka is the relay's Kafka producer: it writes every event of the
// log to the internal topic in the log's wire format (package events/kafka),
// which the webhook dispatcher consumes (package webhooks/kafka), and, with a
// feed, the published events to the analytics topic.
//
// The analytics topic (default "platform.events") is the published feed:
// business events only, transformed by package relay/feed (versioned
// envelope, allow-listed fields, keyed pseudonyms), one JSON Schema per type
// in relay/feed/schemas. Its headers are event-id, event-type and schema
// ("<type>/v<n>"); its key is the envelope's stream.
package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/healthtech/partner-open-platform/events"
	eventskafka "github.com/healthtech/partner-open-platform/events/kafka"
	"github.com/healthtech/partner-open-platform/relay"
	"github.com/healthtech/partner-open-platform/relay/feed"
)

// DefaultTopic is the published analytics topic unless configured otherwise.
const DefaultTopic = "platform.events"

// Producer returns only once every in-sync replica acknowledged the whole
// batch, on every topic it writes to.
type Producer struct {
	topic string // internal topic: every event, byte-exact (eventskafka.Encode)
	// analytics, when feed is set, receives the published events transformed.
	analytics string
	feed      *feed.Transformer
	log       *slog.Logger
	w         *kafka.Writer
	// rename, when set, is the stream name messages carry (key, header and
	// value) instead of the stored one.
	rename func(string) string
}

// WithStreamNames makes every message carry rename(stream) as its stream
// name, in its key, header and value: the node passes
// domain.Pseudonyms.Stream, so the binding streams of a log written before
// hashed names, whose stored names hold a channel_user_id in clear, reach
// Kafka under their hashed names when the relay sends them (again).
func (p *Producer) WithStreamNames(rename func(string) string) *Producer {
	p.rename = rename
	return p
}

// encode is eventskafka.Encode with the producer's stream names.
func (p *Producer) encode(ev events.Recorded) kafka.Message {
	if p.rename != nil {
		ev.Stream = p.rename(ev.Stream)
	}
	return eventskafka.Encode(p.topic, ev)
}

var _ relay.Producer = (*Producer)(nil)

// NewProducer writes every event in the internal format (eventskafka.Encode) to topic
// (eventskafka.DefaultInternalTopic if empty) and nothing else.
func NewProducer(brokers []string, topic string) *Producer {
	if topic == "" {
		topic = eventskafka.DefaultInternalTopic
	}
	return &Producer{
		topic: topic,
		w: &kafka.Writer{
			// Topic stays empty: kafka-go refuses a topic on both the
			// Writer and the Message, and eventskafka.Encode sets it on the Message.
			Addr:         kafka.TCP(brokers...),
			Balancer:     &kafka.Hash{},
			RequiredAcks: kafka.RequireAll,
			// The 1 s default would delay every synchronous write by a second.
			BatchTimeout:           5 * time.Millisecond,
			BatchSize:              1000, // above relay.Options.BatchSize's default
			AllowAutoTopicCreation: true,
			Async:                  false,
		},
	}
}

// NewFeedProducer writes every event byte-exact to internalTopic, as
// NewProducer does, and the published ones, transformed by t, to
// analyticsTopic (DefaultTopic if empty), both in the one write per batch, so
// one relay checkpoint covers both topics.
func NewFeedProducer(brokers []string, internalTopic, analyticsTopic string, t *feed.Transformer, log *slog.Logger) *Producer {
	p := NewProducer(brokers, internalTopic)
	if analyticsTopic == "" {
		analyticsTopic = DefaultTopic
	}
	p.analytics, p.feed, p.log = analyticsTopic, t, log
	return p
}

// Produce writes evs in one call, so any partial failure fails the batch and the relay re-sends all of it.
func (p *Producer) Produce(ctx context.Context, evs []events.Recorded) error {
	msgs := make([]kafka.Message, 0, 2*len(evs))
	for _, ev := range evs {
		msgs = append(msgs, p.encode(ev))
		if p.feed == nil {
			continue
		}
		m, ok, err := p.feed.Transform(ev)
		if err != nil {
			// A payload that does not fit its table entry is left out of the
			// analytics topic rather than stalling the relay for every
			// consumer; the error names the type, id and field, never a value.
			p.log.Warn("analytics feed: event left out", "event_id", ev.ID, "event_type", ev.Type, "err", err)
			continue
		}
		if ok {
			msgs = append(msgs, kafka.Message{Topic: p.analytics, Key: m.Key, Value: m.Value, Headers: []kafka.Header{
				{Key: eventskafka.HeaderEventID, Value: []byte(ev.ID)},
				{Key: eventskafka.HeaderEventType, Value: []byte(ev.Type)},
				{Key: eventskafka.HeaderSchema, Value: []byte(m.Schema)},
			}})
		}
	}
	if err := p.w.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("kafka produce %d events to %s: %w", len(evs), p.topics(), err)
	}
	return nil
}

func (p *Producer) topics() string {
	if p.feed == nil {
		return p.topic
	}
	return p.topic + " and " + p.analytics
}

// Close flushes and releases the writer's connections.
func (p *Producer) Close() error { return p.w.Close() }

// EnsureTopic creates a missing topic so a fresh cluster works without manual setup; an existing one is left alone.
func EnsureTopic(ctx context.Context, brokers []string, topic string, partitions int) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	deadline, _ := ctx.Deadline()
	var d kafka.Dialer
	var errs []error
	for _, b := range brokers {
		err := createTopic(ctx, &d, deadline, b, topic, partitions)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
	}
	return fmt.Errorf("ensure kafka topic %s: %w", topic, errors.Join(errs...))
}

// createTopic asks the controller, found through broker, to create topic
// with a replication factor of up to 3 (fewer on smaller clusters).
func createTopic(ctx context.Context, d *kafka.Dialer, deadline time.Time, broker, topic string, partitions int) error {
	conn, err := d.DialContext(ctx, "tcp", broker)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	controller, err := conn.Controller()
	if err != nil {
		return fmt.Errorf("find controller via %s: %w", broker, err)
	}
	nodes, err := conn.Brokers()
	if err != nil {
		return fmt.Errorf("list brokers via %s: %w", broker, err)
	}
	cc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(controller.Host, strconv.Itoa(controller.Port)))
	if err != nil {
		return fmt.Errorf("dial controller: %w", err)
	}
	defer cc.Close()
	if err := cc.SetDeadline(deadline); err != nil {
		return err
	}
	if err := cc.CreateTopics(kafka.TopicConfig{
		Topic:             topic,
		NumPartitions:     partitions,
		ReplicationFactor: min(3, max(1, len(nodes))),
	}); err != nil {
		return err
	}
	return waitForTopic(ctx, conn, topic)
}

// waitForTopic polls broker's metadata until topic has partitions, each with
// a leader: Apache Kafka answers CreateTopics before its brokers know the
// topic, and a reader or writer started then fails.
func waitForTopic(ctx context.Context, conn *kafka.Conn, topic string) error {
	for {
		parts, err := conn.ReadPartitions(topic)
		if err != nil && !errors.Is(err, kafka.UnknownTopicOrPartition) && !errors.Is(err, kafka.LeaderNotAvailable) {
			return fmt.Errorf("read partitions of %s: %w", topic, err)
		}
		ready := err == nil && len(parts) > 0
		for _, p := range parts {
			ready = ready && p.Leader.Host != ""
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s created but not ready: %w", topic, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
