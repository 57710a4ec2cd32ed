package kafka_test

import (
	"context"
	"errors"
	"testing"

	"github.com/healthtech/partner-open-platform/webhooks/kafka/sourcetest"

	"github.com/healthtech/partner-open-platform/events"
	eventskafka "github.com/healthtech/partner-open-platform/events/kafka"
	relaykafka "github.com/healthtech/partner-open-platform/relay/kafka"
	webhookkafka "github.com/healthtech/partner-open-platform/webhooks/kafka"
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

func TestProducerAndSourceKeepPerStreamOrder(t *testing.T) {
	sourcetest.OnEachCluster(t, func(t *testing.T, k *sourcetest.Cluster) {
		addrs := k.Addrs
		// The fake proves the default topic; the shared broker needs its own.
		topic := k.Topic(eventskafka.DefaultInternalTopic, 3)
		if topic == eventskafka.DefaultInternalTopic {
			topic = ""
		}
		p := relaykafka.NewProducer(addrs, topic)
		defer p.Close()
		evs := sourcetest.MakeEvents("e2e", 300, 20, 1)
		produce(t, p, evs, 64)

		c := sourcetest.NewCollector(len(evs))
		sourcetest.Consume(t, addrs, topic, k.Group("dispatcher"), c)
		sourcetest.CheckPerStreamOrder(t, c.Events(), evs)
	})
}

func TestSourceResumesAtFirstUncommittedMessage(t *testing.T) {
	sourcetest.OnEachCluster(t, func(t *testing.T, k *sourcetest.Cluster) {
		addrs, topic, group := k.Addrs, k.Topic("resume", 3), k.Group("G")
		p := relaykafka.NewProducer(addrs, topic)
		defer p.Close()
		evs := sourcetest.MakeEvents("res", 120, 9, 1)
		produce(t, p, evs, 40)

		// First run: the 61st event fails, which must stop Run uncommitted.
		const n = 60
		errBoom := errors.New("downstream unavailable")
		var failed events.Recorded
		first := sourcetest.NewCollector(-1)
		first.Fail = func(handled int, ev events.Recorded) error {
			if handled == n {
				failed = ev
				return errBoom
			}
			return nil
		}
		err := webhookkafka.NewSource(addrs, topic, group, sourcetest.QuietLog()).Run(sourcetest.Context(t), first.Handle)
		if !errors.Is(err, errBoom) {
			t.Fatalf("Run returned %v, want the handler's error", err)
		}
		handled := first.Events()
		if len(handled) != n {
			t.Fatalf("handled %d events before the failure, want %d", len(handled), n)
		}

		// Second run, same group: exactly the rest, starting in each stream
		// right after the last committed revision, the failed event included.
		second := sourcetest.NewCollector(len(evs) - n)
		sourcetest.Consume(t, addrs, topic, group, second)
		resumed := second.Events()
		sourcetest.CheckPerStreamOrder(t, append(handled, resumed...), evs)
		next := map[string]uint64{}
		for _, ev := range handled {
			next[ev.Stream] = ev.Revision + 1
		}
		for _, ev := range resumed {
			if want, ok := next[ev.Stream]; ok && ev.Revision != want {
				t.Fatalf("stream %s resumed at revision %d, want %d", ev.Stream, ev.Revision, want)
			}
			next[ev.Stream] = ev.Revision + 1
		}
		for _, ev := range resumed {
			if ev.Stream == failed.Stream {
				if ev.ID != failed.ID {
					t.Fatalf("stream %s resumed with %s, want the failed %s", ev.Stream, ev.ID, failed.ID)
				}
				break
			}
		}
	})
}

func TestSourceCommitsAHandledMessageDuringShutdown(t *testing.T) {
	sourcetest.OnEachCluster(t, func(t *testing.T, k *sourcetest.Cluster) {
		addrs, topic, group := k.Addrs, k.Topic("shutdown", 3), k.Group("G")
		p := relaykafka.NewProducer(addrs, topic)
		defer p.Close()
		evs := sourcetest.MakeEvents("stop", 30, 5, 1)
		produce(t, p, evs, 30)

		// The first event is handled successfully while shutdown begins.
		ctx, cancel := context.WithCancel(sourcetest.Context(t))
		var first events.Recorded
		err := webhookkafka.NewSource(addrs, topic, group, sourcetest.QuietLog()).Run(ctx, func(_ context.Context, ev events.Recorded) error {
			first = ev
			cancel()
			return nil
		})
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
		rest := sourcetest.NewCollector(len(evs) - 1)
		sourcetest.Consume(t, addrs, topic, group, rest)
		for _, ev := range rest.Events() {
			if ev.ID == first.ID {
				t.Fatalf("%s was handled and yet delivered again", ev.ID)
			}
		}
	})
}
