package kafka_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/webhooks/kafka/sourcetest"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	relaykafka "github.com/healthtech/partner-open-platform/relay/kafka"
)

// pipeline records what a pipelined run of the source prepared and
// committed; commitHook, when set, runs at the start of each commit with
// the batches' events and decides its outcome.
type pipeline struct {
	mu         sync.Mutex
	prepares   int
	committed  []events.Recorded
	commitHook func(ctx context.Context, evs []events.Recorded) error
}

func (p *pipeline) prepare(_ context.Context, evs []events.Recorded) ([]events.Recorded, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prepares++
	return append([]events.Recorded(nil), evs...), nil
}

func (p *pipeline) commit(ctx context.Context, batches [][]events.Recorded) error {
	var evs []events.Recorded
	for _, b := range batches {
		evs = append(evs, b...)
	}
	if p.commitHook != nil {
		if err := p.commitHook(ctx, evs); err != nil {
			return err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.committed = append(p.committed, evs...)
	return nil
}

func (p *pipeline) counts() (prepares, committed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.prepares, len(p.committed)
}

func (p *pipeline) events() []events.Recorded {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]events.Recorded(nil), p.committed...)
}

// runPipelined runs the group's pipeline in the background; stop cancels it and
// returns its result.
func runPipelined(t *testing.T, addrs []string, topic, group string, p *pipeline) (done <-chan error, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(sourcetest.Context(t))
	ch := make(chan error, 1)
	go func() {
		ch <- subscribe.Pipeline[[]events.Recorded]{Name: "webhook deliveries", Source: sourcetest.Source(addrs, topic, group),
			Prepare: p.prepare, Commit: p.commit}.Run(ctx)
	}()
	return ch, func() error { cancel(); return <-ch }
}

// resumeAll runs the group again until it committed want events (or its
// bound ends), and returns what it committed.
func resumeAll(t *testing.T, addrs []string, topic, group string, want int) []events.Recorded {
	t.Helper()
	p := &pipeline{}
	full := make(chan struct{})
	var once sync.Once
	p.commitHook = func(_ context.Context, evs []events.Recorded) error {
		if _, n := p.counts(); n+len(evs) >= want {
			once.Do(func() { close(full) })
		}
		return nil
	}
	done, stop := runPipelined(t, addrs, topic, group, p)
	select {
	case <-full:
	case err := <-done:
		t.Fatalf("resumed source stopped early: %v", err)
	case <-sourcetest.Context(t).Done():
		t.Fatalf("resumed source committed %d of %d events in time", len(p.events()), want)
	}
	if err := stop(); err != nil {
		t.Fatalf("resumed source: %v", err)
	}
	return p.events()
}

// Kafka-fed creation is pipelined: while a batch commits, the batches
// fetched meanwhile are prepared; commits keep each stream in order, and a
// clean stop leaves the group's offsets past every committed batch.
func TestSourcePipelinePreparesWhileCommittingInStreamOrder(t *testing.T) {
	sourcetest.OnEachCluster(t, func(t *testing.T, k *sourcetest.Cluster) {
		addrs, topic, group := k.Addrs, k.Topic("pipelined", 3), k.Group("G")
		prod := relaykafka.NewProducer(addrs, topic)
		defer prod.Close()
		evs := sourcetest.MakeEvents("pip", 300, 20, 1)
		produce(t, prod, evs[:100], 50)

		p := &pipeline{}
		var first sync.Once
		all := make(chan struct{})
		var allOnce sync.Once
		overlapped := false
		p.commitHook = func(ctx context.Context, got []events.Recorded) error {
			first.Do(func() {
				// The first commit holds until another batch is prepared:
				// the rest is produced now, so it can only be prepared
				// while this commit is still running.
				before, _ := p.counts()
				produceFromHook(t, prod, evs[100:])
				for range 2000 {
					if n, _ := p.counts(); n > before {
						overlapped = true
						return
					}
					select {
					case <-ctx.Done():
						return
					case <-sourcetest.Context(t).Done():
						return
					default:
					}
					waitBriefly()
				}
			})
			if _, n := p.counts(); n+len(got) >= len(evs) {
				allOnce.Do(func() { close(all) })
			}
			return nil
		}
		done, stop := runPipelined(t, addrs, topic, group, p)
		select {
		case <-all:
		case err := <-done:
			t.Fatalf("source stopped early: %v", err)
		case <-sourcetest.Context(t).Done():
			t.Fatalf("source committed %d of %d events in time", len(p.events()), len(evs))
		}
		if err := stop(); err != nil {
			t.Fatalf("source: %v", err)
		}
		if !overlapped {
			t.Fatal("no batch was prepared while the first one committed")
		}
		if prepares, _ := p.counts(); prepares >= len(evs) {
			t.Fatalf("%d events in %d batches: nothing was batched", len(evs), prepares)
		}
		sourcetest.CheckPerStreamOrder(t, p.events(), evs)

		fresh := sourcetest.MakeEvents("pipfresh", 10, 3, 1000)
		produce(t, prod, fresh, 10)
		sourcetest.CheckPerStreamOrder(t, resumeAll(t, addrs, topic, group, len(fresh)), fresh)
	})
}

// A failed commit stops the source with its error, and the group hands
// over again exactly what was not committed: the failed batches and those
// prepared behind them, never a batch committed before.
func TestSourcePipelineRedeliversWhatDidNotCommit(t *testing.T) {
	sourcetest.OnEachCluster(t, func(t *testing.T, k *sourcetest.Cluster) {
		addrs, topic, group := k.Addrs, k.Topic("pipefail", 3), k.Group("G")
		prod := relaykafka.NewProducer(addrs, topic)
		defer prod.Close()
		evs := sourcetest.MakeEvents("pf", 200, 9, 1)
		produce(t, prod, evs[:100], 50)
		firstHalf := map[string]bool{}
		for _, ev := range evs[:100] {
			firstHalf[ev.ID] = true
		}

		errBoom := errors.New("event store unavailable")
		p := &pipeline{}
		var once sync.Once
		var failed []events.Recorded
		p.commitHook = func(_ context.Context, got []events.Recorded) error {
			for _, ev := range got {
				if !firstHalf[ev.ID] {
					failed = got
					return errBoom
				}
			}
			if _, n := p.counts(); n+len(got) >= 100 {
				once.Do(func() { produceFromHook(t, prod, evs[100:]) })
			}
			return nil
		}
		done, _ := runPipelined(t, addrs, topic, group, p)
		var err error
		select {
		case err = <-done:
		case <-sourcetest.Context(t).Done():
			t.Fatal("source did not stop on the failed commit")
		}
		if !errors.Is(err, errBoom) {
			t.Fatalf("the pipeline returned %v, want the commit's error", err)
		}
		committed := p.events()
		if len(committed) != 100 || len(failed) == 0 {
			t.Fatalf("%d committed, failed commit of %d: want 100 and a failure", len(committed), len(failed))
		}

		resumed := resumeAll(t, addrs, topic, group, len(evs)-len(committed))
		sourcetest.CheckPerStreamOrder(t, append(committed, resumed...), evs)
	})
}

// A stop that lands while a commit is in the store's queue leaves that
// batch uncommitted in Kafka: the next run gets it again, and only what was
// not committed before the stop.
func TestSourcePipelineRedeliversACommitCutByAStop(t *testing.T) {
	sourcetest.OnEachCluster(t, func(t *testing.T, k *sourcetest.Cluster) {
		addrs, topic, group := k.Addrs, k.Topic("pipestop", 3), k.Group("G")
		prod := relaykafka.NewProducer(addrs, topic)
		defer prod.Close()
		evs := sourcetest.MakeEvents("ps", 120, 7, 1)
		produce(t, prod, evs[:60], 30)
		firstHalf := map[string]bool{}
		for _, ev := range evs[:60] {
			firstHalf[ev.ID] = true
		}

		p := &pipeline{}
		var once sync.Once
		blocked := make(chan struct{})
		var blockedOnce sync.Once
		p.commitHook = func(ctx context.Context, got []events.Recorded) error {
			for _, ev := range got {
				if !firstHalf[ev.ID] {
					blockedOnce.Do(func() { close(blocked) })
					<-ctx.Done() // the append is cut by the stop
					return ctx.Err()
				}
			}
			if _, n := p.counts(); n+len(got) >= 60 {
				once.Do(func() { produceFromHook(t, prod, evs[60:]) })
			}
			return nil
		}
		done, stop := runPipelined(t, addrs, topic, group, p)
		select {
		case <-blocked:
		case err := <-done:
			t.Fatalf("source stopped early: %v", err)
		case <-sourcetest.Context(t).Done():
			t.Fatal("no commit of the second half began in time")
		}
		if err := stop(); err != nil {
			t.Fatalf("a stop returned %v, want nil", err)
		}
		committed := p.events()
		if len(committed) != 60 {
			t.Fatalf("%d committed before the stop, want 60", len(committed))
		}
		resumed := resumeAll(t, addrs, topic, group, len(evs)-len(committed))
		sourcetest.CheckPerStreamOrder(t, append(committed, resumed...), evs)
	})
}

// produceFromHook produces evs from a source's goroutine, where a test may
// report an error but not stop.
func produceFromHook(t *testing.T, p *relaykafka.Producer, evs []events.Recorded) {
	if err := p.Produce(sourcetest.Context(t), evs); err != nil {
		t.Errorf("produce: %v", err)
	}
}

// waitBriefly spaces the polls of a bounded wait.
func waitBriefly() { time.Sleep(5 * time.Millisecond) }
