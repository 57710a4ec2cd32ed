package pgtest

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Trace records what a pool sends, for tests that count statements and
// round trips: set it as the pool's ConnConfig.Tracer. Each statement sent
// alone and each pipeline (a batch) is one round trip.
type Trace struct {
	mu        sync.Mutex
	alone     []string // statements sent on their own, in order
	batched   []string // statements sent in pipelines, in order
	pipelines int
}

var _ interface {
	pgx.QueryTracer
	pgx.BatchTracer
} = (*Trace)(nil)

func (t *Trace) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	t.mu.Lock()
	t.alone = append(t.alone, d.SQL)
	t.mu.Unlock()
	return ctx
}

func (t *Trace) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (t *Trace) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	t.mu.Lock()
	t.pipelines++
	t.mu.Unlock()
	return ctx
}

func (t *Trace) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	t.mu.Lock()
	t.batched = append(t.batched, d.SQL)
	t.mu.Unlock()
}

func (t *Trace) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// RoundTrips is how many statements went alone plus how many pipelines.
func (t *Trace) RoundTrips() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.alone) + t.pipelines
}

// Alone lists the statements sent on their own since the trace began.
func (t *Trace) Alone() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.alone...)
}

// Count is how many statements sent, alone or in pipelines, contain every
// one of markers.
func (t *Trace) Count(markers ...string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, list := range [][]string{t.alone, t.batched} {
	statements:
		for _, s := range list {
			for _, m := range markers {
				if !strings.Contains(s, m) {
					continue statements
				}
			}
			n++
		}
	}
	return n
}

// Reset forgets what was recorded.
func (t *Trace) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.alone, t.batched, t.pipelines = nil, nil, 0
}

// TracedConfig is url's pool configuration with a new Trace as its tracer.
func TracedConfig(tb testing.TB, url string) (*pgxpool.Config, *Trace) {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		tb.Fatal(err)
	}
	trace := &Trace{}
	cfg.ConnConfig.Tracer = trace
	return cfg, trace
}

// TracedPool is a pool on url that a Trace records, closed when tb ends.
func TracedPool(tb testing.TB, url string) (*pgxpool.Pool, *Trace) {
	tb.Helper()
	cfg, trace := TracedConfig(tb, url)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool, trace
}
