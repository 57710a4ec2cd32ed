package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// heldReads opens a pool and a pipeReader with one round trip in flight
// at most, and holds that round trip (a read blocked on an advisory lock
// the returned function releases), so that the reads the test issues next
// queue and go out as pipelines.
func heldReads(t *testing.T) (*pgxpool.Pool, *pipeReader, func()) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	locker, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locker.Exec(ctx, `SELECT pg_advisory_lock(4242)`); err != nil {
		t.Fatal(err)
	}
	p := &pipeReader{max: 1}
	held := make(chan error, 1)
	go func() {
		var one int
		held <- p.queryRow(ctx, pool, `SELECT 1 FROM (SELECT pg_advisory_xact_lock(4242)) l`, nil, func(r pgx.Row) error { return r.Scan(&one) })
	}()
	waitFor(t, "the holding read in flight", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.inflight == 1
	})
	release := func() {
		if _, err := locker.Exec(ctx, `SELECT pg_advisory_unlock(4242)`); err != nil {
			t.Fatal(err)
		}
		locker.Release()
		if err := <-held; err != nil {
			t.Fatalf("the holding read: %v", err)
		}
	}
	return pool, p, release
}

// waitFor polls cond, bounded, for state another goroutine reaches.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 2000 {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func readsQueued(p *pipeReader) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue)
}

// Reads queued behind a round trip in flight go out together, each with
// its own answer; one whose statement fails (division by zero) fails
// alone, and the reads after it in the same pipeline are answered.
func TestPipelinedReadsAnswerEachAloneAndFailAlone(t *testing.T) {
	t.Parallel()
	pool, p, release := heldReads(t)
	ctx := context.Background()
	const n = 20
	got := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Two statements interleaved: a pipeline prepares each once.
			sql := `SELECT 1000 / $1::int`
			if i%2 == 1 {
				sql = `SELECT 1000 / $1::int + 0`
			}
			errs[i] = p.queryRow(ctx, pool, sql, []any{i % 7}, func(r pgx.Row) error { return r.Scan(&got[i]) })
		}()
	}
	waitFor(t, "the reads queued", func() bool { return readsQueued(p) == n })
	release()
	wg.Wait()
	for i := range n {
		if i%7 == 0 {
			var pgErr *pgconn.PgError
			if !errors.As(errs[i], &pgErr) || pgErr.Code != "22012" {
				t.Errorf("read %d: %v, want division_by_zero", i, errs[i])
			}
			continue
		}
		if errs[i] != nil || got[i] != 1000/(i%7) {
			t.Errorf("read %d: %d, %v; want %d", i, got[i], errs[i], 1000/(i%7))
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.batches != 1 || p.inflight != 0 || len(p.queue) != 0 {
		t.Fatalf("%d pipelines, %d in flight, %d queued after; want the %d reads in 1, then 0 and 0", p.batches, p.inflight, len(p.queue), n)
	}
}

// A caller that gives up while its read is queued or in a pipeline gets
// its context's error at once; the other reads of the pipeline are
// answered, and the reader serves later reads.
func TestPipelinedReadCancelledAloneLeavesTheOthers(t *testing.T) {
	t.Parallel()
	pool, p, release := heldReads(t)
	ctx := context.Background()
	const n = 8
	got := make([]string, n)
	errs := make([]error, n)
	cancelled, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := ctx
			if i == 3 {
				c = cancelled
			}
			errs[i] = p.queryRow(c, pool, `SELECT 'user-' || $1::int`, []any{i}, func(r pgx.Row) error { return r.Scan(&got[i]) })
		}()
	}
	waitFor(t, "the reads queued", func() bool { return readsQueued(p) == n })
	cancel()
	waitFor(t, "the cancelled read left the queue", func() bool { return readsQueued(p) == n-1 })
	release()
	wg.Wait()
	for i := range n {
		if i == 3 {
			if !errors.Is(errs[i], context.Canceled) || got[i] != "" {
				t.Errorf("cancelled read: %q, %v; want nothing and context.Canceled", got[i], errs[i])
			}
			continue
		}
		if want := fmt.Sprintf("user-%d", i); errs[i] != nil || got[i] != want {
			t.Errorf("read %d: %q, %v; want %q", i, got[i], errs[i], want)
		}
	}
	// A caller that gives up while its pipeline is in flight (its read
	// blocked on a second lock the test holds): the pipeline's other read,
	// behind it, is still answered once the lock goes.
	pool2, p2, release2 := heldReads(t)
	locker, err := pool2.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Release()
	if _, err := locker.Exec(ctx, `SELECT pg_advisory_lock(4343)`); err != nil {
		t.Fatal(err)
	}
	gone, cancelGone := context.WithCancel(ctx)
	var slow, fast string
	var slowErr, fastErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		slowErr = p2.queryRow(gone, pool2, `SELECT 'slow' FROM (SELECT pg_advisory_xact_lock(4343)) l`, nil, func(r pgx.Row) error { return r.Scan(&slow) })
	}()
	waitFor(t, "the first read queued", func() bool { return readsQueued(p2) == 1 })
	go func() {
		defer wg.Done()
		fastErr = p2.queryRow(ctx, pool2, `SELECT 'fast'`, nil, func(r pgx.Row) error { return r.Scan(&fast) })
	}()
	waitFor(t, "the second read queued", func() bool { return readsQueued(p2) == 2 })
	release2()
	waitFor(t, "the pipeline sent", func() bool { return readsQueued(p2) == 0 })
	cancelGone()
	if _, err := locker.Exec(ctx, `SELECT pg_advisory_unlock(4343)`); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if !errors.Is(slowErr, context.Canceled) || slow != "" || fastErr != nil || fast != "fast" {
		t.Fatalf("in flight: cancelled read %q, %v; other read %q, %v", slow, slowErr, fast, fastErr)
	}
	var after int
	if err := p2.queryRow(ctx, pool2, `SELECT 7`, nil, func(r pgx.Row) error { return r.Scan(&after) }); err != nil || after != 7 {
		t.Fatalf("a read after: %d, %v", after, err)
	}
}

// A read issued while fewer round trips than the limit are in flight is
// sent at once on its own: nothing queues and no pipeline is built.
func TestLoneReadIsSentAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var p pipeReader
	for i := range 3 {
		var got int
		if err := p.queryRow(ctx, pool, `SELECT $1::int * 2`, []any{i}, func(r pgx.Row) error { return r.Scan(&got) }); err != nil || got != 2*i {
			t.Fatalf("read %d: %d, %v", i, got, err)
		}
	}
	var none int
	if err := p.queryRow(ctx, pool, `SELECT 1 WHERE false`, nil, func(r pgx.Row) error { return r.Scan(&none) }); !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("no row: %v, want pgx.ErrNoRows", err)
	}
	if p.batches != 0 || p.inflight != 0 {
		t.Fatalf("%d pipelines, %d in flight; want 0 and 0", p.batches, p.inflight)
	}
}

// A pipelined statement that returns no row answers pgx.ErrNoRows, as
// QueryRow's Scan does, and the read behind it is answered.
func TestPipelinedReadWithoutARow(t *testing.T) {
	t.Parallel()
	pool, p, release := heldReads(t)
	ctx := context.Background()
	var none, one int
	var noneErr, oneErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		noneErr = p.queryRow(ctx, pool, `SELECT 1 WHERE false`, nil, func(r pgx.Row) error { return r.Scan(&none) })
	})
	waitFor(t, "the first read queued", func() bool { return readsQueued(p) == 1 })
	wg.Go(func() {
		oneErr = p.queryRow(ctx, pool, `SELECT 1`, nil, func(r pgx.Row) error { return r.Scan(&one) })
	})
	waitFor(t, "the second read queued", func() bool { return readsQueued(p) == 2 })
	release()
	wg.Wait()
	if !errors.Is(noneErr, pgx.ErrNoRows) || oneErr != nil || one != 1 {
		t.Fatalf("no row: %v; the next read: %d, %v", noneErr, one, oneErr)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.batches != 1 {
		t.Fatalf("%d pipelines, want 1", p.batches)
	}
}
