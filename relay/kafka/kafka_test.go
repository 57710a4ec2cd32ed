package kafka_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/kafkatest"
	relaykafka "github.com/healthtech/partner-open-platform/relay/kafka"
	webhookkafka "github.com/healthtech/partner-open-platform/webhooks/kafka"
)

// newCluster starts an in-process Kafka broker on loopback holding topic
// with the given partitions (none when topic is empty).
func newCluster(t testing.TB, topic string, partitions int32) []string {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if topic != "" {
		opts = append(opts, kfake.SeedTopics(partitions, topic))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// cluster is the Kafka one run of a test talks to: the in-process fake, or
// the real broker scripts/test.sh starts, shared by every test through
// unique topic and group names.
type cluster struct {
	t     testing.TB
	addrs []string
	real  bool
}

// onEachCluster runs test on a fresh in-process fake and on the real broker
// (skipped without one unless required, see kafkatest.Brokers).
func onEachCluster(t *testing.T, test func(t *testing.T, k *cluster)) {
	t.Run("kfake", func(t *testing.T) { test(t, &cluster{t: t, addrs: newCluster(t, "", 0)}) })
	t.Run("broker", func(t *testing.T) { test(t, &cluster{t: t, addrs: kafkatest.Brokers(t), real: true}) })
}

// topic creates a topic for the test: base itself on the fake, a fresh
// name derived from it on the shared broker.
func (k *cluster) topic(base string, partitions int) string {
	k.t.Helper()
	if k.real {
		return kafkatest.Topic(k.t, k.addrs, base, partitions)
	}
	if err := relaykafka.EnsureTopic(testContext(k.t), k.addrs, base, partitions); err != nil {
		k.t.Fatal(err)
	}
	return base
}

// group names a consumer group: base on the fake, unique on the broker.
func (k *cluster) group(base string) string {
	if k.real {
		return kafkatest.Name(k.t, base)
	}
	return base
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// makeEvents builds n events spread round-robin over streams, with the
// revisions and positions a log would give them.
func makeEvents(prefix string, n, streams int, firstPos uint64) []events.Recorded {
	out := make([]events.Recorded, n)
	revs := map[string]uint64{}
	for i := range out {
		stream := fmt.Sprintf("%s-stream-%02d", prefix, i%streams)
		pos := firstPos + uint64(i)
		out[i] = events.Recorded{
			ID: fmt.Sprintf("%s-%04d", prefix, i), Stream: stream, Type: "test.happened", Revision: revs[stream],
			Position: events.Position{Commit: pos, Prepare: pos}, Created: time.Now().UTC(),
			Data: []byte(fmt.Sprintf(`{"i":%d}`, i)), Meta: []byte(`{"schema":1,"app_id":7}`),
		}
		revs[stream]++
	}
	return out
}

// collector is a Source handler that keeps what it handled.
type collector struct {
	mu   sync.Mutex
	got  []events.Recorded
	want int
	full chan struct{}
	fail func(n int, ev events.Recorded) error // optional, n = events handled so far
}

func newCollector(want int) *collector { return &collector{want: want, full: make(chan struct{})} }

func (c *collector) handle(_ context.Context, ev events.Recorded) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		if err := c.fail(len(c.got), ev); err != nil {
			return err
		}
	}
	c.got = append(c.got, ev)
	if len(c.got) == c.want {
		close(c.full)
	}
	return nil
}

func (c *collector) events() []events.Recorded {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]events.Recorded(nil), c.got...)
}

// consume runs a Source until c has its events, then stops it.
func consume(t *testing.T, addrs []string, topic, group string, c *collector) {
	t.Helper()
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- webhookkafka.NewSource(addrs, topic, group, quietLog()).Run(ctx, c.handle) }()
	select {
	case <-c.full:
	case err := <-done:
		t.Fatalf("source stopped early: %v", err)
	case <-ctx.Done():
		t.Fatalf("source handled %d of %d events in time", len(c.events()), c.want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("source: %v", err)
	}
}

// checkPerStreamOrder fails unless got holds exactly the ids of want and
// each stream's revisions arrive strictly increasing.
func checkPerStreamOrder(t *testing.T, got, want []events.Recorded) {
	t.Helper()
	wantIDs := map[string]bool{}
	for _, ev := range want {
		wantIDs[ev.ID] = true
	}
	seen := map[string]bool{}
	last := map[string]int64{}
	for _, ev := range got {
		if !wantIDs[ev.ID] || seen[ev.ID] {
			t.Fatalf("unexpected or repeated event %s", ev.ID)
		}
		seen[ev.ID] = true
		if prev, ok := last[ev.Stream]; ok && int64(ev.Revision) <= prev {
			t.Fatalf("stream %s: revision %d after %d", ev.Stream, ev.Revision, prev)
		}
		last[ev.Stream] = int64(ev.Revision)
	}
	if len(seen) != len(wantIDs) {
		t.Fatalf("got %d of %d events", len(seen), len(wantIDs))
	}
}

func produce(t *testing.T, p *relaykafka.Producer, evs []events.Recorded, batch int) {
	t.Helper()
	ctx := testContext(t)
	for len(evs) > 0 {
		n := min(batch, len(evs))
		if err := p.Produce(ctx, evs[:n]); err != nil {
			t.Fatal(err)
		}
		evs = evs[n:]
	}
}

func TestEnsureTopicCreatesOnceAndIsIdempotent(t *testing.T) {
	onEachCluster(t, func(t *testing.T, k *cluster) {
		addrs, ctx := k.addrs, testContext(t)
		fresh := "fresh"
		if k.real {
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
		produce(t, p, makeEvents("fresh", 10, 3, 1), 10)
	})
}
