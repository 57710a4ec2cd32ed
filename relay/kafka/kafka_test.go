package kafka_test

import (
	"testing"

	"github.com/healthtech/partner-open-platform/webhooks/kafka/sourcetest"

	"github.com/segmentio/kafka-go"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/kafkatest"
	relaykafka "github.com/healthtech/partner-open-platform/relay/kafka"
)

func produce(t *testing.T, p *relaykafka.Producer, evs []events.Recorded, batch int) {
	t.Helper()
	ctx := sourcetest.Context(t)
	for len(evs) > 0 {
		n := min(batch, len(evs))
		if err := p.Produce(ctx, evs[:n]); err != nil {
			t.Fatal(err)
		}
		evs = evs[n:]
	}
}

func TestEnsureTopicCreatesOnceAndIsIdempotent(t *testing.T) {
	sourcetest.OnEachCluster(t, func(t *testing.T, k *sourcetest.Cluster) {
		addrs, ctx := k.Addrs, sourcetest.Context(t)
		fresh := "fresh"
		if k.Real {
			fresh = kafkatest.Name(t, fresh)
		}
		for range 2 {
			if err := relaykafka.EnsureTopic(ctx, addrs, fresh, 4); err != nil {
				t.Fatal(err)
			}
		}
		conn, err := kafka.DialContext(ctx, "tcp", addrs[0])
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		parts, err := conn.ReadPartitions(fresh)
		if err != nil {
			t.Fatal(err)
		}
		if len(parts) != 4 {
			t.Fatalf("topic has %d partitions, want 4", len(parts))
		}

		// The producer works against the new topic straight away.
		p := relaykafka.NewProducer(addrs, fresh)
		defer p.Close()
		produce(t, p, sourcetest.MakeEvents("fresh", 10, 3, 1), 10)
	})
}
