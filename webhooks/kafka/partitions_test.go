package kafka_test

import (
	"context"
	"errors"
	"testing"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	relaykafka "github.com/healthtech/partner-open-platform/relay/kafka"
	webhookkafka "github.com/healthtech/partner-open-platform/webhooks/kafka"
	"github.com/healthtech/partner-open-platform/webhooks/kafka/sourcetest"
)

func partitionPipeline(addrs []string, topic, group string, o *sourcetest.Offsets, c *sourcetest.Collector) subscribe.Pipeline[[]events.Recorded] {
	return subscribe.Pipeline[[]events.Recorded]{Name: "partitions", Source: webhookkafka.NewPartitionSource(addrs, topic, group, o.Of, sourcetest.QuietLog()),
		Prepare: c.Prepare, Commit: c.Commit}
}

// consumePartitions runs a PartitionSource pipeline until c is full.
func consumePartitions(t *testing.T, addrs []string, topic, group string, o *sourcetest.Offsets, c *sourcetest.Collector) {
	t.Helper()
	ctx, cancel := context.WithCancel(sourcetest.Context(t))
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- partitionPipeline(addrs, topic, group, o, c).Run(ctx) }()
	select {
	case <-c.Full:
	case err := <-done:
		t.Fatalf("source stopped early: %v", err)
	case <-ctx.Done():
		t.Fatalf("source handled %d events in time", len(c.Events()))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("source: %v", err)
	}
}

// The partition source keeps its place in the offsets it is given, not in
// the broker: they count exactly the committed messages, and a run over
// the same offsets resumes right after them.
func TestPartitionSourceKeepsItsPlaceInItsOffsets(t *testing.T) {
	sourcetest.OnEachCluster(t, func(t *testing.T, k *sourcetest.Cluster) {
		addrs, topic := k.Addrs, k.Topic("partitions", 3)
		p := relaykafka.NewProducer(addrs, topic)
		defer p.Close()
		evs := sourcetest.MakeEvents("part", 120, 9, 1)
		produce(t, p, evs, 40)

		offsets := sourcetest.ReaderOffsets(kafkatestName(k, "offsets"))
		const n = 60
		errBoom := errors.New("downstream unavailable")
		first := sourcetest.NewCollector(-1)
		first.Fail = func(handled int, _ events.Recorded) error {
			if handled == n {
				return errBoom
			}
			return nil
		}
		if err := partitionPipeline(addrs, topic, "", offsets, first).Run(sourcetest.Context(t)); !errors.Is(err, errBoom) {
			t.Fatalf("Run returned %v, want the commit's error", err)
		}
		handled := first.Events()
		if saved := offsets.Saved(); saved != len(handled) {
			t.Fatalf("the saved offsets count %d messages, %d were committed", saved, len(handled))
		}
		second := sourcetest.NewCollector(len(evs) - len(handled))
		consumePartitions(t, addrs, topic, "", offsets, second)
		sourcetest.CheckPerStreamOrder(t, append(handled, second.Events()...), evs)
		if saved := offsets.Saved(); saved != len(evs) {
			t.Fatalf("after the second run the offsets count %d of %d messages", saved, len(evs))
		}
	})
}

// A partition with no offset of its own starts where the consumer group of
// earlier releases left it: an upgrade neither skips nor repeats.
func TestPartitionSourceStartsAtTheGroupsOffsets(t *testing.T) {
	sourcetest.OnEachCluster(t, func(t *testing.T, k *sourcetest.Cluster) {
		addrs, topic, group := k.Addrs, k.Topic("upgrade", 3), k.Group("platform-webhooks")
		p := relaykafka.NewProducer(addrs, topic)
		defer p.Close()
		evs := sourcetest.MakeEvents("upg", 60, 6, 1)
		produce(t, p, evs, 60)
		// An earlier release's dispatcher read and committed all of them.
		ctx := sourcetest.Context(t)
		r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: addrs, Topic: topic, GroupID: group, StartOffset: kafkago.FirstOffset})
		for range evs {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.CommitMessages(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}

		after := sourcetest.MakeEvents("upg-after", 12, 3, uint64(len(evs))+1)
		produce(t, p, after, len(after))
		rest := sourcetest.NewCollector(len(after))
		consumePartitions(t, addrs, topic, group, sourcetest.ReaderOffsets(kafkatestName(k, "upgraded")), rest)
		sourcetest.CheckPerStreamOrder(t, rest.Events(), after)
	})
}

// kafkatestName is a reader name unique to this test run.
func kafkatestName(k *sourcetest.Cluster, base string) string {
	return k.Group(base) + "\x00" + k.T.Name()
}
