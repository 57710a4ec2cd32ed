package bolt_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
	"github.com/healthtech/partner-open-platform/events/subscribe"
)

// countingModel is a read model that counts what it applied; slow makes
// each batch take a while, as the heaviest read model of a node does.
type countingModel struct {
	name string
	slow time.Duration

	mu      sync.Mutex
	applied int
	cp      events.Position
}

func (m *countingModel) Name() string            { return m.name }
func (m *countingModel) Handles(typ string) bool { return true }
func (m *countingModel) Checkpoint(context.Context) (events.Position, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cp, nil
}
func (m *countingModel) Apply(_ context.Context, batch []events.Envelope, pos events.Position) error {
	if m.slow > 0 && len(batch) > 0 {
		time.Sleep(m.slow)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.applied += len(batch)
	m.cp = pos
	return nil
}
func (m *countingModel) Reset(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.applied, m.cp = 0, events.Position{}
	return nil
}

// A rebuild of several read models, one of them much slower than the
// others, reads and decodes each stretch of the log from bbolt once, not
// once for every read model that the fast ones left out of the shared
// cache's reach; and every read model still applies every event.
func TestRebuildOfManyReadModelsDecodesEachEventOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := openT(t, filepath.Join(t.TempDir(), "events.db"))
	const total = 40_000
	for i := 0; i < total; i += 1_000 {
		appendN(t, s, "s", i, 1_000)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var (
		set    subscribe.RunnerSet
		models []*countingModel
		wg     sync.WaitGroup
	)
	for i := range 6 {
		m := &countingModel{name: string(rune('a' + i))}
		run := subscribe.NewRunner(s, nil, m, log, nil)
		if i == 0 {
			m.slow = time.Millisecond // the deliveries of this log
			run.BatchSize(64)
		}
		models, set = append(models, m), append(set, run)
		wg.Add(1)
		go func() { defer wg.Done(); _ = run.Run(ctx) }()
	}
	defer wg.Wait()
	defer cancel()
	waitReady := func() {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
		defer wcancel()
		for _, run := range set {
			if err := run.WaitReady(wctx); err != nil {
				t.Fatalf("%s not ready: %v", run.Name(), err)
			}
		}
	}
	waitReady()

	before := bolt.Decoded(s)
	if _, found, err := set.Rebuild(ctx, subscribe.AllReadModels); err != nil || !found {
		t.Fatalf("rebuild: found %v, %v", found, err)
	}
	waitReady()
	decoded := bolt.Decoded(s) - before

	for _, m := range models {
		m.mu.Lock()
		applied := m.applied
		m.mu.Unlock()
		if applied != total {
			t.Errorf("%s applied %d events after the rebuild, want %d", m.name, applied, total)
		}
	}
	// Six read models replay 40,000 events; the newest 8,192 come from the
	// ring, the rest from bbolt blocks: each decoded once, with a block's
	// slack, not once per read model that fell behind.
	if limit := uint64(total + 2*256); decoded > limit {
		t.Errorf("the rebuild decoded %d records from bbolt for %d events (%.2f per event), want at most %d",
			decoded, total, float64(decoded)/total, limit)
	}
}
