// Package sourcetest is the test kit shared by the tests of the log over
// Kafka (the relay's producer and the webhook dispatcher's Source): a Kafka
// to talk to (the in-process fake, or the real broker scripts/test.sh
// starts), events shaped as the log gives them, and a Source run that
// collects what it commits and checks each stream's order.
package sourcetest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/kafkatest"
	relaykafka "github.com/healthtech/partner-open-platform/relay/kafka"
	webhookkafka "github.com/healthtech/partner-open-platform/webhooks/kafka"
)

// NewFake starts an in-process Kafka broker on loopback holding topic with
// the given partitions (none when topic is empty) and returns its addresses.
func NewFake(t testing.TB, topic string, partitions int32) []string {
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

// Cluster is the Kafka one run of a test talks to: the in-process fake, or
// the real broker, shared by every test through unique topic and group names.
type Cluster struct {
	T     testing.TB
	Addrs []string
	Real  bool
}

// OnEachCluster runs test on a fresh in-process fake and on the real broker
// (skipped without one unless required, see kafkatest.Brokers).
func OnEachCluster(t *testing.T, test func(t *testing.T, k *Cluster)) {
	t.Run("kfake", func(t *testing.T) { test(t, &Cluster{T: t, Addrs: NewFake(t, "", 0)}) })
	t.Run("broker", func(t *testing.T) { test(t, &Cluster{T: t, Addrs: kafkatest.Brokers(t), Real: true}) })
}

// Topic creates a topic for the test: base itself on the fake, a fresh
// name derived from it on the shared broker.
func (k *Cluster) Topic(base string, partitions int) string {
	k.T.Helper()
	if k.Real {
		return kafkatest.Topic(k.T, k.Addrs, base, partitions)
	}
	if err := relaykafka.EnsureTopic(Context(k.T), k.Addrs, base, partitions); err != nil {
		k.T.Fatal(err)
	}
	return base
}

// Group names a reader's offsets (or a consumer group): base on the fake,
// unique on the broker.
func (k *Cluster) Group(base string) string {
	if k.Real {
		return kafkatest.Name(k.T, base)
	}
	return base
}

// Context bounds a test's Kafka calls.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// QuietLog discards what the code under test logs.
func QuietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// MakeEvents builds n events spread round-robin over streams, with the
// revisions and positions a log would give them.
func MakeEvents(prefix string, n, streams int, firstPos uint64) []events.Recorded {
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

// Collector is a pipeline's commit that keeps what it committed.
type Collector struct {
	mu   sync.Mutex
	got  []events.Recorded
	want int
	// Full is closed once the collector holds the events it wants.
	Full chan struct{}
	// Fail, when set, may refuse an event, and with it the whole commit
	// it is in (none of its events is kept); n is the number kept so far
	// plus the event's index in the commit.
	Fail func(n int, ev events.Recorded) error
}

// NewCollector wants want events.
func NewCollector(want int) *Collector { return &Collector{want: want, Full: make(chan struct{})} }

// Prepare copies a batch.
func (c *Collector) Prepare(_ context.Context, evs []events.Recorded) ([]events.Recorded, error) {
	return append([]events.Recorded(nil), evs...), nil
}

// Commit keeps the batches' events, all or none.
func (c *Collector) Commit(_ context.Context, batches [][]events.Recorded) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var evs []events.Recorded
	for _, b := range batches {
		evs = append(evs, b...)
	}
	if c.Fail != nil {
		for i, ev := range evs {
			if err := c.Fail(len(c.got)+i, ev); err != nil {
				return err
			}
		}
	}
	before := len(c.got)
	c.got = append(c.got, evs...)
	if before < c.want && len(c.got) >= c.want {
		close(c.Full)
	}
	return nil
}

// Events is what the collector committed so far.
func (c *Collector) Events() []events.Recorded {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]events.Recorded(nil), c.got...)
}

// Offsets keeps each partition's next offset in memory, forward only, as
// the node keeps them in Postgres or in its data directory.
type Offsets struct {
	mu sync.Mutex
	at map[int]events.Position
}

type offset struct {
	o *Offsets
	p int
}

func (o offset) Load(context.Context) (events.Position, error) {
	o.o.mu.Lock()
	defer o.o.mu.Unlock()
	return o.o.at[o.p], nil
}

func (o offset) Save(_ context.Context, pos events.Position) error {
	o.o.mu.Lock()
	defer o.o.mu.Unlock()
	if o.o.at[o.p].Less(pos) {
		o.o.at[o.p] = pos
	}
	return nil
}

// Of is the store of partition p's offset (PartitionSource's offsets).
func (o *Offsets) Of(_ context.Context, p int) (subscribe.Checkpoints, error) {
	return offset{o, p}, nil
}

// Saved is the sum of the saved next offsets: how many messages they count
// as handled.
func (o *Offsets) Saved() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, pos := range o.at {
		n += int(pos.Commit)
	}
	return n
}

// readers keeps the offsets of each reader name a test uses, so that a
// second run under the same name resumes where the first stopped, as the
// next holder of the webhook-creation lease does.
var readers = struct {
	sync.Mutex
	m map[string]*Offsets
}{m: map[string]*Offsets{}}

// ReaderOffsets is the offsets kept under name (with the topic and the
// brokers, which tell apart the fakes of tests that reuse names).
func ReaderOffsets(name string) *Offsets {
	readers.Lock()
	defer readers.Unlock()
	o, ok := readers.m[name]
	if !ok {
		o = &Offsets{at: map[int]events.Position{}}
		readers.m[name] = o
	}
	return o
}

// Source is the partition source of topic with the offsets kept under
// reader (a name unique to the test, see Cluster.Group).
func Source(addrs []string, topic, reader string) *webhookkafka.PartitionSource {
	key := fmt.Sprintf("%s\x00%s\x00%v", reader, topic, addrs)
	return webhookkafka.NewPartitionSource(addrs, topic, "", ReaderOffsets(key).Of, QuietLog())
}

// Pipeline is the pipeline of the partition source with reader's offsets
// that commits into c.
func Pipeline(addrs []string, topic, reader string, c *Collector) subscribe.Pipeline[[]events.Recorded] {
	return subscribe.Pipeline[[]events.Recorded]{Name: "collect " + reader, Source: Source(addrs, topic, reader),
		Prepare: c.Prepare, Commit: c.Commit}
}

// Consume runs the partition source's pipeline with reader's offsets until
// c has its events, then stops it.
func Consume(t *testing.T, addrs []string, topic, group string, c *Collector) {
	t.Helper()
	ctx, cancel := context.WithCancel(Context(t))
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Pipeline(addrs, topic, group, c).Run(ctx) }()
	select {
	case <-c.Full:
	case err := <-done:
		t.Fatalf("source stopped early: %v", err)
	case <-ctx.Done():
		t.Fatalf("source handled %d of %d events in time", len(c.Events()), c.want)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("source: %v", err)
	}
}

// CheckPerStreamOrder fails unless got holds exactly the ids of want and
// each stream's revisions arrive strictly increasing.
func CheckPerStreamOrder(t *testing.T, got, want []events.Recorded) {
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
