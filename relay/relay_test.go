package relay_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/relay"
)

// fakeProducer is the in-memory bus: it keeps what it acknowledged and can
// refuse the first few calls to exercise the retry path.
type fakeProducer struct {
	mu       sync.Mutex
	failures int // Produce calls still to refuse
	calls    int
	batches  [][]events.Recorded
	journal  *journal
	changed  chan struct{}
}

func newFakeProducer(failures int, j *journal) *fakeProducer {
	return &fakeProducer{failures: failures, journal: j, changed: make(chan struct{}, 1)}
}

func (p *fakeProducer) Produce(_ context.Context, evs []events.Recorded) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if p.failures > 0 {
		p.failures--
		p.journal.add(fmt.Sprintf("produce-fail %s", evs[len(evs)-1].Position))
		return errors.New("bus unavailable")
	}
	p.batches = append(p.batches, append([]events.Recorded(nil), evs...))
	p.journal.add(fmt.Sprintf("produce-ok %s", evs[len(evs)-1].Position))
	select {
	case p.changed <- struct{}{}:
	default:
	}
	return nil
}

func (p *fakeProducer) Close() error { return nil }

func (p *fakeProducer) all() []events.Recorded {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []events.Recorded
	for _, b := range p.batches {
		out = append(out, b...)
	}
	return out
}

// waitFor blocks until the producer acknowledged at least n events.
func (p *fakeProducer) waitFor(t *testing.T, n int) []events.Recorded {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if got := p.all(); len(got) >= n {
			return got
		}
		select {
		case <-p.changed:
		case <-deadline:
			t.Fatalf("producer got %d events, want %d", len(p.all()), n)
		}
	}
}

// journal records produce and save calls in the order they happened.
type journal struct {
	mu      sync.Mutex
	entries []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	j.entries = append(j.entries, s)
	j.mu.Unlock()
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.entries...)
}

// memCheckpoints journals every Save so tests can check it follows an ack.
type memCheckpoints struct {
	mu      sync.Mutex
	pos     events.Position
	journal *journal
}

func (c *memCheckpoints) Load(context.Context) (events.Position, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pos, nil
}

func (c *memCheckpoints) Save(_ context.Context, pos events.Position) error {
	c.mu.Lock()
	c.pos = pos
	c.mu.Unlock()
	c.journal.add(fmt.Sprintf("save %s", pos))
	return nil
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// appendEvents writes n events round-robin over streams and returns them as recorded.
func appendEvents(t *testing.T, s events.Store, prefix string, n, streams int) {
	t.Helper()
	for i := range n {
		stream := fmt.Sprintf("%s-stream-%d", prefix, i%streams)
		_, err := s.Append(context.Background(), stream, events.Any(), events.Proposed{
			ID:   fmt.Sprintf("%s-%d", prefix, i),
			Type: "test.happened",
			Data: []byte(fmt.Sprintf(`{"i":%d}`, i)),
			Meta: []byte(`{"schema":1,"app_id":7}`),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// startRun runs relay.Run in the background and returns a stop function
// that cancels it and returns Run's result.
func startRun(t *testing.T, s events.Store, p relay.Producer, cp relay.Checkpoints, opts relay.Options) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx, s, p, cp, quietLog(), opts) }()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				err = errors.New("relay.Run did not return after cancel")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func checkGlobalOrder(t *testing.T, got []events.Recorded, wantPrefix string, from, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("got %d events, want %d", len(got), n)
	}
	for i, ev := range got {
		if want := fmt.Sprintf("%s-%d", wantPrefix, from+i); ev.ID != want {
			t.Fatalf("event %d is %s, want %s", i, ev.ID, want)
		}
	}
}

func TestRunRelaysEverythingInOrderInBoundedBatches(t *testing.T) {
	s := memory.New()
	defer s.Close()
	appendEvents(t, s, "a", 1234, 7)
	p := newFakeProducer(0, &journal{})
	cp := &memCheckpoints{journal: &journal{}}
	var relayed int
	var mu sync.Mutex
	stop := startRun(t, s, p, cp, relay.Options{BatchSize: 100, OnRelayed: func(n int, last events.Recorded) {
		mu.Lock()
		relayed += n
		mu.Unlock()
	}})
	got := p.waitFor(t, 1234)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkGlobalOrder(t, got, "a", 0, 1234)
	for _, b := range p.batches {
		if len(b) > 100 {
			t.Fatalf("batch of %d events, BatchSize is 100", len(b))
		}
	}
	if pos, _ := cp.Load(context.Background()); pos != got[len(got)-1].Position {
		t.Fatalf("checkpoint %s, want %s", pos, got[len(got)-1].Position)
	}
	if relayed != 1234 {
		t.Fatalf("OnRelayed counted %d events, want 1234", relayed)
	}
}

func TestRunDoesNotWaitToFillABatch(t *testing.T) {
	s := memory.New()
	defer s.Close()
	p := newFakeProducer(0, &journal{})
	startRun(t, s, p, &memCheckpoints{journal: &journal{}}, relay.Options{})
	appendEvents(t, s, "live", 1, 1)
	start := time.Now()
	p.waitFor(t, 1)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("a lone event took %s to be produced", d)
	}
}

func TestRunCheckpointsOnlyAfterAckAndNeverSkips(t *testing.T) {
	s := memory.New()
	defer s.Close()
	appendEvents(t, s, "r", 50, 3)
	j := &journal{}
	p := newFakeProducer(2, j)
	cp := &memCheckpoints{journal: j}
	stop := startRun(t, s, p, cp, relay.Options{BatchSize: 20, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	got := p.waitFor(t, 50)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkGlobalOrder(t, got, "r", 0, 50)
	entries := j.list()
	if len(entries) < 3 {
		t.Fatalf("journal %q", entries)
	}
	first := strings.TrimPrefix(entries[0], "produce-fail ")
	if entries[1] != "produce-fail "+first || entries[2] != "produce-ok "+first {
		t.Fatalf("journal starts %q, want two failures of the first batch then its ack", entries)
	}
	// Every save names exactly the batch acknowledged just before it.
	for i, e := range entries {
		var pos string
		if _, err := fmt.Sscanf(e, "save %s", &pos); err != nil {
			continue
		}
		if i == 0 || entries[i-1] != "produce-ok "+pos {
			t.Fatalf("%q at %d does not follow its ack: %q", e, i, entries)
		}
	}
	if p.calls != len(p.batches)+2 {
		t.Fatalf("%d Produce calls for %d acked batches and 2 failures", p.calls, len(p.batches))
	}
}

func TestRunHonoursCancelWhileRetrying(t *testing.T) {
	s := memory.New()
	defer s.Close()
	appendEvents(t, s, "c", 5, 1)
	j := &journal{}
	p := newFakeProducer(1<<30, j)
	cp := &memCheckpoints{journal: j}
	stop := startRun(t, s, p, cp, relay.Options{MinBackoff: time.Hour})
	deadline := time.Now().Add(10 * time.Second)
	for len(j.list()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if pos, _ := cp.Load(context.Background()); !pos.IsZero() {
		t.Fatalf("checkpoint moved to %s although nothing was acknowledged", pos)
	}
}

func TestRunReturnsErrorWhenTheLogFails(t *testing.T) {
	s := memory.New()
	appendEvents(t, s, "x", 3, 1)
	p := newFakeProducer(0, &journal{})
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go func() {
		done <- relay.Run(ctx, s, p, &memCheckpoints{journal: &journal{}}, quietLog(), relay.Options{})
	}()
	p.waitFor(t, 3)
	s.Close()
	select {
	case err := <-done:
		if !errors.Is(err, events.ErrClosed) {
			t.Fatalf("Run returned %v, want events.ErrClosed", err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return after the store closed")
	}
}

func TestRunResumesFromFileCheckpoint(t *testing.T) {
	s := memory.New()
	defer s.Close()
	dir := t.TempDir()
	appendEvents(t, s, "f", 30, 4)
	p1 := newFakeProducer(0, &journal{})
	stop := startRun(t, s, p1, relay.NewFileCheckpoints(dir), relay.Options{})
	p1.waitFor(t, 30)
	waitCheckpoint(t, relay.NewFileCheckpoints(dir), events.Position{Commit: 30, Prepare: 30})
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	for i := 30; i < 45; i++ {
		_, err := s.Append(context.Background(), "late", events.Any(), events.Proposed{ID: fmt.Sprintf("f-%d", i), Type: "t", Data: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
	}
	p2 := newFakeProducer(0, &journal{})
	startRun(t, s, p2, relay.NewFileCheckpoints(dir), relay.Options{})
	checkGlobalOrder(t, p2.waitFor(t, 15), "f", 30, 15)
}

func waitCheckpoint(t *testing.T, cp relay.Checkpoints, want events.Position) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := cp.Load(context.Background())
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint is %s (err %v), want %s", got, err, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestFileCheckpoints(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cp := relay.NewFileCheckpoints(dir)

	pos, err := cp.Load(ctx)
	if err != nil || !pos.IsZero() {
		t.Fatalf("missing file: got %s, %v; want zero, nil", pos, err)
	}
	for _, want := range []events.Position{{Commit: 7, Prepare: 5}, {Commit: 8, Prepare: 8}, {Commit: 1 << 62, Prepare: 1<<62 - 1}} {
		if err := cp.Save(ctx, want); err != nil {
			t.Fatal(err)
		}
		if got, err := relay.NewFileCheckpoints(dir).Load(ctx); err != nil || got != want {
			t.Fatalf("Load after Save(%s) = %s, %v", want, got, err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != relay.CheckpointFile {
		t.Fatalf("data dir holds %v, want only %s (no temp files)", entries, relay.CheckpointFile)
	}
}

func TestFileCheckpointsReplaceAtomically(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cp := relay.NewFileCheckpoints(dir)
	if err := cp.Save(ctx, events.Position{Commit: 1, Prepare: 1}); err != nil {
		t.Fatal(err)
	}
	// Holding the old file open pins its inode: an atomic replace leaves it
	// untouched, a rewrite in place would change what it holds.
	path := filepath.Join(dir, relay.CheckpointFile)
	old, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	// A reader racing the writers must only ever see a whole position.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := cp.Load(ctx); err != nil {
				t.Errorf("Load during Save: %v", err)
				return
			}
		}
	}()
	for i := uint64(2); i < 60; i++ {
		if err := cp.Save(ctx, events.Position{Commit: i, Prepare: i}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	oldBytes, err := io.ReadAll(old)
	if err != nil {
		t.Fatal(err)
	}
	if string(oldBytes) != "{\"commit\":1,\"prepare\":1}\n" {
		t.Fatalf("the replaced file now holds %q: Save rewrote it in place", oldBytes)
	}
	if got, _ := cp.Load(ctx); got != (events.Position{Commit: 59, Prepare: 59}) {
		t.Fatalf("final checkpoint %s", got)
	}
}

func TestFileCheckpointsRejectsCorruptFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, relay.CheckpointFile), []byte(`{"commit":`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := relay.NewFileCheckpoints(dir).Load(context.Background()); err == nil {
		t.Fatal("a torn checkpoint file loaded without error")
	}
}
