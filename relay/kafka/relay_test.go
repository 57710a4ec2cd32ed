package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/webhooks/kafka/sourcetest"

	"github.com/segmentio/kafka-go"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/relay"
	relaykafka "github.com/healthtech/partner-open-platform/relay/kafka"
)

// flakyProducer refuses the first failures calls and records where the
// checkpoint stood at each refusal.
type flakyProducer struct {
	relay.Producer
	cp       relay.Checkpoints
	mu       sync.Mutex
	failures int
	atFail   []events.Position
}

func (f *flakyProducer) Produce(ctx context.Context, evs []events.Recorded) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failures > 0 {
		f.failures--
		pos, err := f.cp.Load(ctx)
		if err != nil {
			return err
		}
		f.atFail = append(f.atFail, pos)
		return errors.New("broker unreachable")
	}
	return f.Producer.Produce(ctx, evs)
}

func appendToStore(t testing.TB, s events.Store, evs []events.Recorded) {
	t.Helper()
	for _, ev := range evs {
		_, err := s.Append(context.Background(), ev.Stream, events.Any(),
			events.Proposed{ID: ev.ID, Type: ev.Type, Data: ev.Data, Meta: ev.Meta})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// runRelay starts relay.Run and returns a function that stops it.
func runRelay(t *testing.T, s events.Store, p relay.Producer, cp relay.Checkpoints, opts relay.Options) func() {
	t.Helper()
	ctx, cancel := context.WithCancel(sourcetest.Context(t))
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx, s, p, cp, sourcetest.QuietLog(), opts) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("relay.Run: %v", err)
		}
	}
}

// topicSize counts the messages in topic, duplicates included.
func topicSize(t *testing.T, addr, topic string, partitions int) int64 {
	t.Helper()
	var total int64
	for p := range partitions {
		conn, err := kafka.DialLeader(sourcetest.Context(t), "tcp", addr, topic, p)
		if err != nil {
			t.Fatal(err)
		}
		first, last, err := conn.ReadOffsets()
		conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		total += last - first
	}
	return total
}

func TestRelayRunToKafkaAtLeastOnceAndResumes(t *testing.T) {
	sourcetest.OnEachCluster(t, func(t *testing.T, k *sourcetest.Cluster) {
		const batch = 50
		addrs, topic, group := k.Addrs, k.Topic("platform.events", 3), k.Group("analytics")
		store := memory.New()
		defer store.Close()
		cp := relay.NewFileCheckpoints(t.TempDir())
		opts := relay.Options{BatchSize: batch, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}

		before := sourcetest.MakeEvents("before", 200, 10, 1)
		appendToStore(t, store, before)
		kp := relaykafka.NewProducer(addrs, topic)
		defer kp.Close()
		flaky := &flakyProducer{Producer: kp, cp: cp, failures: 2}
		var relayed sync.Map
		opts.OnRelayed = func(n int, last events.Recorded) { relayed.Store(last.Position, n) }
		stop := runRelay(t, store, flaky, cp, opts)

		c := sourcetest.NewCollector(len(before))
		sourcetest.Consume(t, addrs, topic, group, c)
		sourcetest.CheckPerStreamOrder(t, c.Events(), before)
		waitForCheckpoint(t, cp, events.Position{Commit: 200, Prepare: 200})
		stop()
		for _, pos := range flaky.atFail {
			if !pos.IsZero() {
				t.Fatalf("checkpoint was %s while the first batch was still unacknowledged", pos)
			}
		}
		if len(flaky.atFail) != 2 {
			t.Fatalf("%d refused calls, want 2", len(flaky.atFail))
		}
		if size := topicSize(t, addrs[0], topic, 3); size != 200 {
			t.Fatalf("topic holds %d messages after a clean run, want 200", size)
		}

		// Restart from the file checkpoint: only the new events are sent.
		after := sourcetest.MakeEvents("after", 40, 5, 201)
		appendToStore(t, store, after)
		stop = runRelay(t, store, relaykafka.NewProducer(addrs, topic), cp, relay.Options{BatchSize: batch})
		c = sourcetest.NewCollector(len(after))
		sourcetest.Consume(t, addrs, topic, group, c)
		waitForCheckpoint(t, cp, events.Position{Commit: 240, Prepare: 240})
		stop()
		sourcetest.CheckPerStreamOrder(t, c.Events(), after)
		if size := topicSize(t, addrs[0], topic, 3); size < 240 || size > 240+batch {
			t.Fatalf("topic holds %d messages, want 240 plus at most one re-sent batch", size)
		}
	})
}

func waitForCheckpoint(t *testing.T, cp relay.Checkpoints, want events.Position) {
	t.Helper()
	ctx := sourcetest.Context(t)
	for {
		got, err := cp.Load(ctx)
		if err == nil && got == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("checkpoint %s (%v), want %s", got, err, want)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// BenchmarkRelayThroughput measures events/s from a memory store through
// relay.Run into an in-process broker.
func BenchmarkRelayThroughput(b *testing.B) {
	const topic, perRun = "bench", 20000
	addrs := sourcetest.NewFake(b, topic, 3)
	p := relaykafka.NewProducer(addrs, topic)
	defer p.Close()
	evs := sourcetest.MakeEvents("bench", perRun, 200, 1)
	var elapsed time.Duration
	for i := range b.N {
		b.StopTimer()
		store := memory.New()
		run := make([]events.Recorded, len(evs))
		for j, ev := range evs {
			ev.ID = fmt.Sprintf("%d-%s", i, ev.ID)
			run[j] = ev
		}
		appendToStore(b, store, run)
		var n int
		done := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		opts := relay.Options{OnRelayed: func(k int, _ events.Recorded) {
			if n += k; n == perRun {
				close(done)
			}
		}}
		errc := make(chan error, 1)
		b.StartTimer()
		start := time.Now()
		go func() { errc <- relay.Run(ctx, store, p, noCheckpoints{}, sourcetest.QuietLog(), opts) }()
		<-done
		elapsed += time.Since(start)
		b.StopTimer()
		cancel()
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
		store.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(perRun*b.N)/elapsed.Seconds(), "events/s")
}

// BenchmarkSingleWrite measures one synchronous one-event Produce: the
// latency a lone event sees (BatchTimeout 5 ms plus the round trip).
func BenchmarkSingleWrite(b *testing.B) {
	addrs := sourcetest.NewFake(b, "single", 3)
	p := relaykafka.NewProducer(addrs, "single")
	defer p.Close()
	ev := sourcetest.MakeEvents("one", 1, 1, 1)
	ctx := context.Background()
	for b.Loop() {
		if err := p.Produce(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
}

type noCheckpoints struct{}

func (noCheckpoints) Load(context.Context) (events.Position, error) { return events.Position{}, nil }
func (noCheckpoints) Save(context.Context, events.Position) error   { return nil }
