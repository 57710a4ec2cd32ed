package kafka_test

import (
	"context"
	"errors"
	"testing"

	"github.com/healthtech/partner-open-platform/webhooks/kafka/sourcetest"

	"github.com/healthtech/partner-open-platform/events"
	eventskafka "github.com/healthtech/partner-open-platform/events/kafka"
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

		// First run: the commit holding the 61st event fails, which must
		// stop the pipeline with that batch and every later one uncommitted.
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
		err := sourcetest.Pipeline(addrs, topic, group, first).Run(sourcetest.Context(t))
		if !errors.Is(err, errBoom) {
			t.Fatalf("Run returned %v, want the commit's error", err)
		}
		handled := first.Events()
		if len(handled) > n {
			t.Fatalf("committed %d events before the failure, want at most %d", len(handled), n)
		}

		// Second run, same group: exactly the rest, starting in each stream
		// right after the last committed revision, the failed event included.
		second := sourcetest.NewCollector(len(evs) - len(handled))
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
		found := false
		for _, ev := range resumed {
			found = found || ev.ID == failed.ID
		}
		if !found {
			t.Fatalf("the event whose commit failed, %s, was not handed over again", failed.ID)
		}
	})
}

func TestSourceCommitsACommittedBatchDuringShutdown(t *testing.T) {
	sourcetest.OnEachCluster(t, func(t *testing.T, k *sourcetest.Cluster) {
		addrs, topic, group := k.Addrs, k.Topic("shutdown", 3), k.Group("G")
		p := relaykafka.NewProducer(addrs, topic)
		defer p.Close()
		evs := sourcetest.MakeEvents("stop", 30, 5, 1)
		produce(t, p, evs, 30)

		// The first commit succeeds while shutdown begins.
		ctx, cancel := context.WithCancel(sourcetest.Context(t))
		first := sourcetest.NewCollector(-1)
		first.Fail = func(int, events.Recorded) error {
			cancel()
			return nil
		}
		if err := sourcetest.Pipeline(addrs, topic, group, first).Run(ctx); err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
		committed := map[string]bool{}
		for _, ev := range first.Events() {
			committed[ev.ID] = true
		}
		if len(committed) == 0 {
			t.Fatal("nothing was committed before the stop")
		}
		// Events produced after the stop give the next consumer something to
		// wait for even when the first batch held the whole topic: it sees
		// exactly the uncommitted ones and these.
		after := sourcetest.MakeEvents("after", 5, 1, uint64(len(evs))+1)
		produce(t, p, after, len(after))
		rest := sourcetest.NewCollector(len(evs) - len(committed) + len(after))
		sourcetest.Consume(t, addrs, topic, group, rest)
		for _, ev := range rest.Events() {
			if committed[ev.ID] {
				t.Fatalf("%s was handled and yet delivered again", ev.ID)
			}
		}
	})
}
