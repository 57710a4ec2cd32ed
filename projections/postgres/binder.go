package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// bindBatchMax bounds the binds one statement carries, so a burst is sent
// as several statements of bounded size rather than one unbounded one.
const bindBatchMax = 512

// bindStatementTimeout bounds one grouped statement: its callers wait on
// their own contexts, but the statement runs for all of them and must end
// so the binds queued behind it are sent.
const bindStatementTimeout = 30 * time.Second

// bindBatchQuery is bindQuery for many rows at once: each row is stored,
// takes over an expired binding, or rewrites the binding that holds with
// its own values, and every row comes back as it stands after the
// statement with its claim, so each caller tells its own write from
// another's by the claim it chose. A statement never carries one key twice
// (ON CONFLICT cannot touch a row twice), and rows are sent sorted by key
// so that two nodes' statements take their conflict locks in one order.
const bindBatchQuery = `
INSERT INTO nonce_bindings AS b (scope, key, value, claim, expires_at)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::timestamptz[])
ON CONFLICT (scope, key) DO UPDATE SET
    value      = CASE WHEN b.expires_at <= $6 THEN EXCLUDED.value ELSE b.value END,
    claim      = CASE WHEN b.expires_at <= $6 THEN EXCLUDED.claim ELSE b.claim END,
    expires_at = CASE WHEN b.expires_at <= $6 THEN EXCLUDED.expires_at ELSE b.expires_at END
RETURNING scope, key, value, claim, expires_at`

// binder groups the binds of concurrent requests into one statement per
// round trip: binds queued while a statement is in flight go out together
// in the next one, so a node under load spends one round trip and one
// statement on many requests instead of one each. Each caller still gets
// its own answer, and only once the statement carrying its row has
// committed, as when it sent its own. The zero binder is ready.
type binder struct {
	mu      sync.Mutex
	pending []*bindReq
	// busy is true while a goroutine sends the queue; only it sends.
	busy bool
}

// bindReq is one caller's bind and, once done is closed, its answer.
type bindReq struct {
	scope, key, value string
	claim             int64
	expires           time.Time

	done     chan struct{}
	existing string
	fresh    bool
	until    time.Time
	err      error
}

// bind queues r and waits for its answer or for ctx to end; a caller that
// gives up may still have its row stored, as a caller whose own statement
// was cancelled in flight may.
func (b *binder) bind(ctx context.Context, pool *pgxpool.Pool, r *bindReq) error {
	r.done = make(chan struct{})
	b.mu.Lock()
	b.pending = append(b.pending, r)
	if !b.busy {
		b.busy = true
		go b.send(pool)
	}
	b.mu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return fmt.Errorf("projections/postgres: bind in scope %q: %w", r.scope, ctx.Err())
	}
}

// send sends the queue, one statement at a time, until it is empty.
func (b *binder) send(pool *pgxpool.Pool) {
	for {
		b.mu.Lock()
		batch := b.take()
		if len(batch) == 0 {
			b.busy = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		runBinds(pool, batch)
	}
}

// take removes from the queue up to bindBatchMax binds of distinct keys, in
// queue order; a bind of a key already taken stays queued for the next
// statement, so binds of one key are judged one after another as if each
// were sent alone (the second sees the first's row, expired or not).
// b.mu must be held.
func (b *binder) take() []*bindReq {
	if len(b.pending) == 0 {
		return nil
	}
	seen := make(map[boundKey]struct{}, len(b.pending))
	var batch []*bindReq
	rest := b.pending[:0]
	for _, r := range b.pending {
		k := boundKey{r.scope, r.key}
		if _, dup := seen[k]; dup || len(batch) == bindBatchMax {
			rest = append(rest, r)
			continue
		}
		seen[k] = struct{}{}
		batch = append(batch, r)
	}
	clear(b.pending[len(rest):])
	b.pending = rest
	return batch
}

// runBinds stores batch in one statement and answers each of its binds.
func runBinds(pool *pgxpool.Pool, batch []*bindReq) {
	ctx, cancel := context.WithTimeout(context.Background(), bindStatementTimeout)
	defer cancel()
	now := time.Now()
	err := storeBinds(ctx, pool, batch, now)
	for _, r := range batch {
		switch {
		case err != nil:
			r.err = err
		case r.err == nil && r.until.IsZero():
			r.err = fmt.Errorf("projections/postgres: bind in scope %q: the statement returned no row for key %q", r.scope, r.key)
		}
		close(r.done)
	}
}

// storeBinds runs the statement for batch (bindQuery when it is one bind,
// bindBatchQuery otherwise) and fills in each bind's answer.
func storeBinds(ctx context.Context, pool *pgxpool.Pool, batch []*bindReq, now time.Time) error {
	if len(batch) == 1 {
		r := batch[0]
		if err := pool.QueryRow(ctx, bindQuery, r.scope, r.key, r.value, r.claim, r.expires, now).Scan(&r.existing, &r.fresh, &r.until); err != nil {
			return fmt.Errorf("projections/postgres: bind in scope %q: %w", r.scope, err)
		}
		return nil
	}
	sorted := slices.Clone(batch)
	slices.SortFunc(sorted, func(x, y *bindReq) int {
		return cmp.Or(cmp.Compare(x.scope, y.scope), cmp.Compare(x.key, y.key))
	})
	n := len(sorted)
	scopes, keys, values := make([]string, n), make([]string, n), make([]string, n)
	claims, expires := make([]int64, n), make([]time.Time, n)
	byKey := make(map[boundKey]*bindReq, n)
	for i, r := range sorted {
		scopes[i], keys[i], values[i], claims[i], expires[i] = r.scope, r.key, r.value, r.claim, r.expires
		byKey[boundKey{r.scope, r.key}] = r
	}
	rows, err := pool.Query(ctx, bindBatchQuery, scopes, keys, values, claims, expires, now)
	if err != nil {
		return fmt.Errorf("projections/postgres: bind %d signatures: %w", n, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k boundKey
		var value string
		var claim int64
		var until time.Time
		if err := rows.Scan(&k.scope, &k.key, &value, &claim, &until); err != nil {
			return fmt.Errorf("projections/postgres: bind %d signatures: %w", n, err)
		}
		r, ok := byKey[k]
		if !ok {
			return fmt.Errorf("projections/postgres: bind %d signatures: a row for a key not sent (%q, %q)", n, k.scope, k.key)
		}
		r.existing, r.fresh, r.until = value, claim == r.claim, until
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("projections/postgres: bind %d signatures: %w", n, err)
	}
	return nil
}
