package postgres

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// A node's read models check their stored progress at the same moments:
// those checks share one statement, and each gets its own read model's
// generation, rebuild request and checkpoint.
func TestConcurrentProgressReadsShareOneStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, count := pgtest.TracedPool(t, MigratedDB(t))
	s := &Store{pool: pool}
	const n = 9
	want := map[string]subscribe.Progress{}
	for i := range n {
		name := fmt.Sprintf("family-%d", i)
		p := subscribe.Progress{Generation: int64(i), Requested: int64(i % 3), Position: events.Position{Commit: uint64(100 + i), Prepare: uint64(50 + i)}}
		if i == n-1 {
			p = subscribe.Progress{} // nothing stored yet
		} else {
			if _, err := pool.Exec(ctx, `INSERT INTO family_generations (projection, generation, requested) VALUES ($1, $2, $3)`, name, p.Generation, p.Requested); err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, `INSERT INTO checkpoints (projection, commit_pos, prepare_pos, updated_at) VALUES ($1, $2, $3, now())`, name, int64(p.Position.Commit), int64(p.Position.Prepare)); err != nil {
				t.Fatal(err)
			}
		}
		want[name] = p
	}
	before := count.Count("family_generations", "checkpoints")
	var wg sync.WaitGroup
	start := make(chan struct{})
	got := make([]subscribe.Progress, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var err error
			if got[i], err = s.Progress(ctx, fmt.Sprintf("family-%d", i)); err != nil {
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		if name := fmt.Sprintf("family-%d", i); got[i] != want[name] {
			t.Errorf("progress of %s = %+v, want %+v", name, got[i], want[name])
		}
	}
	// Started together, the nine reads fit in one gathering wait; a slow
	// start of one goroutine may push it into a second statement.
	if sent := count.Count("family_generations", "checkpoints") - before; sent > 2 {
		t.Fatalf("%d concurrent progress reads sent %d statements, want 1 (2 at most)", n, sent)
	}

	// A read asked for after a write sees it: no answer is reused.
	if _, err := pool.Exec(ctx, `UPDATE family_generations SET requested = 7 WHERE projection = 'family-0'`); err != nil {
		t.Fatal(err)
	}
	p, err := s.Progress(ctx, "family-0")
	if err != nil || p.Requested != 7 {
		t.Fatalf("progress after a rebuild request = %+v, %v; want requested 7", p, err)
	}
}
