// Package postgres keeps leases in a Postgres table, shared by every node
// of a cluster, and fences writes made inside a caller's own transaction on
// the same database, so a lost lease's holder cannot commit.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/healthtech/partner-open-platform/internal/lease"
	"github.com/healthtech/partner-open-platform/internal/pgmigrate"
)

//go:embed migrations/*/*.sql
var migrationFiles embed.FS

// migrationLock is the pg_advisory_xact_lock key of the lease schema (ASCII "leasesch").
const migrationLock int64 = 0x6c65617365736368

// Migrate creates or updates the lease table in the database pool reaches;
// it is safe to run from every node at once.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	files, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return err
	}
	s := pgmigrate.Schema{Files: files, Parts: []string{"leases"}, Table: "lease_schema_versions", Lock: migrationLock}
	if err := s.Apply(ctx, pool); err != nil {
		return fmt.Errorf("lease/postgres: %w", err)
	}
	return nil
}

// Store keeps leases in Postgres; it must be the database whose writes are
// fenced, since Fence runs in the writer's own transaction.
type Store struct {
	pool  *pgxpool.Pool
	owned bool
}

// New uses pool (already migrated with Migrate); Close leaves pool open.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Open connects to url and migrates; Close closes the connection pool.
func Open(ctx context.Context, url string) (*Store, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("lease/postgres: %w", err)
	}
	if err := Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return &Store{pool: pool, owned: true}, nil
}

// Close releases the pool if Open made it.
func (s *Store) Close() error {
	if s.owned {
		s.pool.Close()
	}
	return nil
}

func interval(ttl time.Duration) string { return fmt.Sprintf("%d microseconds", ttl.Microseconds()) }

// Acquire implements lease.Store. One statement: a free, expired or own
// lease is taken with the next token; a live lease of another holder is
// left alone. The UPDATE waits for transactions fenced on the old token
// (they hold the row FOR SHARE), so a write under the old token commits
// before the new holder starts, or not at all.
func (s *Store) Acquire(ctx context.Context, name, holder string, ttl time.Duration) (lease.Lease, error) {
	l := lease.Lease{Name: name, Holder: holder}
	err := s.pool.QueryRow(ctx, `
INSERT INTO leases AS l (name, holder, token, expires_at, acquired_at)
VALUES ($1, $2, 1, clock_timestamp() + $3::interval, clock_timestamp())
ON CONFLICT (name) DO UPDATE
    SET holder = EXCLUDED.holder, token = l.token + 1,
        expires_at = clock_timestamp() + $3::interval, acquired_at = clock_timestamp()
    WHERE l.holder = '' OR l.holder = EXCLUDED.holder OR l.expires_at <= clock_timestamp()
RETURNING token, expires_at`, name, holder, interval(ttl)).Scan(&l.Token, &l.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		cur, gerr := s.Get(ctx, name)
		if gerr != nil {
			return lease.Lease{}, fmt.Errorf("%w: %s (holder unknown: %v)", lease.ErrHeld, name, gerr)
		}
		return lease.Lease{}, fmt.Errorf("%w: %s holds %s until %s", lease.ErrHeld, cur.Holder, name, cur.Expires.Format(time.RFC3339Nano))
	}
	if err != nil {
		return lease.Lease{}, fmt.Errorf("lease/postgres: acquire %s: %w", name, err)
	}
	return l, nil
}

// Renew implements lease.Store.
func (s *Store) Renew(ctx context.Context, l lease.Lease, ttl time.Duration) (lease.Lease, error) {
	err := s.pool.QueryRow(ctx, `
UPDATE leases SET expires_at = clock_timestamp() + $4::interval
WHERE name = $1 AND token = $2 AND holder = $3 AND holder <> ''
RETURNING expires_at`, l.Name, l.Token, l.Holder, interval(ttl)).Scan(&l.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return lease.Lease{}, fmt.Errorf("%w: %s token %d is no longer current", lease.ErrLost, l.Name, l.Token)
	}
	if err != nil {
		return lease.Lease{}, fmt.Errorf("lease/postgres: renew %s: %w", l.Name, err)
	}
	return l, nil
}

// Release implements lease.Store.
func (s *Store) Release(ctx context.Context, l lease.Lease) error {
	_, err := s.pool.Exec(ctx, `UPDATE leases SET holder = '', expires_at = clock_timestamp() WHERE name = $1 AND token = $2`, l.Name, l.Token)
	if err != nil {
		return fmt.Errorf("lease/postgres: release %s: %w", l.Name, err)
	}
	return nil
}

// Check implements lease.Store.
func (s *Store) Check(ctx context.Context, l lease.Lease) error {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM leases WHERE name = $1 AND token = $2 AND holder <> '')`, l.Name, l.Token).Scan(&ok)
	if err != nil {
		return fmt.Errorf("lease/postgres: check %s: %w", l.Name, err)
	}
	if !ok {
		return fmt.Errorf("%w: %s token %d is no longer current", lease.ErrLost, l.Name, l.Token)
	}
	return nil
}

// Get implements lease.Store.
func (s *Store) Get(ctx context.Context, name string) (lease.Lease, error) {
	l := lease.Lease{Name: name}
	err := s.pool.QueryRow(ctx, `
SELECT CASE WHEN expires_at > clock_timestamp() THEN holder ELSE '' END, token, expires_at
FROM leases WHERE name = $1`, name).Scan(&l.Holder, &l.Token, &l.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, nil
	}
	if err != nil {
		return lease.Lease{}, fmt.Errorf("lease/postgres: get %s: %w", name, err)
	}
	return l, nil
}

// Querier is what Fence needs of a caller's transaction (pgx.Tx has it).
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Fence makes the caller's transaction tx write under l or not at all: it
// returns an error wrapping lease.ErrLost unless l's token is current, and
// locks the lease row FOR SHARE until tx ends, so a new holder's Acquire
// waits for tx to commit or roll back. It also bounds how long tx may sit
// idle (the lease's time to live), so a holder paused mid-transaction
// cannot keep the lock and stall a takeover forever. Call it first in
// every write transaction made on a lease's behalf.
func Fence(ctx context.Context, tx Querier, l lease.Lease, idle time.Duration) error {
	var one int
	return fenceResult(l, tx.QueryRow(ctx, fenceSQL, fenceArgs(l, idle)...).Scan(&one))
}

// QueueFence is Fence for a transaction that sends its statements as a
// pgx.Batch: queued first, it costs no round trip of its own, and the
// batch fails (so the transaction rolls back) when the lease is lost.
func QueueFence(b *pgx.Batch, l lease.Lease, idle time.Duration) {
	b.Queue(fenceSQL, fenceArgs(l, idle)...).QueryRow(func(row pgx.Row) error {
		var one int
		return fenceResult(l, row.Scan(&one))
	})
}

const fenceSQL = `
SELECT 1 FROM leases, set_config('idle_in_transaction_session_timeout', $3, true)
WHERE name = $1 AND token = $2 AND holder <> '' FOR SHARE OF leases`

func fenceArgs(l lease.Lease, idle time.Duration) []any {
	return []any{l.Name, l.Token, fmt.Sprint(max(idle.Milliseconds(), 1))}
}

func fenceResult(l lease.Lease, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: %s token %d is no longer current", lease.ErrLost, l.Name, l.Token)
	}
	if err != nil {
		return fmt.Errorf("lease/postgres: fence %s: %w", l.Name, err)
	}
	return nil
}
