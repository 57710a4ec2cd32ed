package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/healthtech/partner-open-platform/events"
)

// Erased plaintext on disk. An erasure deletes the person's rows (users,
// groups, members, snapshot document) and blanks their fields in reports,
// deliveries and orders; Postgres keeps the old row versions in the
// table, TOAST and index files as dead tuples until the file is rewritten,
// and a plain VACUUM marks their space reusable without overwriting it.
// PurgeErased bounds how long they survive: after an erasure it rewrites
// every table that holds personal fields (VACUUM FULL writes a new file
// with the live rows only and unlinks the old one), so the plaintext leaves
// the relation files within one purge interval of the erasure. The WAL
// and backups are outside it (docs/privacy.md).

// PurgedTables are the read-model tables whose rows hold personal fields
// of channel users, in the order the purge rewrites them.
var PurgedTables = []string{
	"users", "family_groups", "family_members", "user_snapshots",
	"reports", "webhook_deliveries", "webhook_attempts", "orders",
}

// purgedIfPresent are tables of other stores that share the read models'
// database in a deployment (PLATFORM_POSTGRES_URL): the key store's table,
// whose deleted row is the erased person's sealed data key, readable with
// the master key for as long as its bytes stay in the file.
var purgedIfPresent = []string{"platform_data_keys"}

// erasingReadModels are the checkpoints of the read models that apply
// user.erased: the purge waits until each has passed the erasure, so the
// rows it deleted or blanked are dead before the rewrite.
var erasingReadModels = []string{"users", "deliveries", "reports", "orders"}

// markErased records the position of an erasure the users read model applied.
const markErased = `
UPDATE erasure_purge SET erased_commit = $1, erased_prepare = $2, erased_at = now()
WHERE id = 1 AND (erased_commit, erased_prepare) < ($1, $2)`

// purgeDue reads the last erasure and the last purge, and whether every
// erasing read model has passed the erasure.
const purgeDue = `
SELECT p.erased_commit, p.erased_prepare, p.erased_at, p.purged_commit, p.purged_prepare,
    (SELECT count(*) FROM checkpoints c
     WHERE c.projection = ANY($1) AND (c.commit_pos, c.prepare_pos) >= (p.erased_commit, p.erased_prepare)) = cardinality($1)
FROM erasure_purge p WHERE p.id = 1`

// purgeLock is the session advisory lock that keeps two purges (two nodes,
// or a node and an operator's run) from rewriting the tables at once
// (ASCII "purgeras").
const purgeLock int64 = 0x7075726765726173

// PurgeResult says what one PurgeErased did.
type PurgeResult struct {
	// Purged is true when the tables were rewritten.
	Purged bool
	// Upto is the position of the last erasure the rewrite covers.
	Upto events.Position
	// ErasedAt is when that erasure was applied; Purged-ErasedAt is how
	// long its plaintext stayed in the files.
	ErasedAt time.Time
	// Tables maps each rewritten table to how long its rewrite (and the
	// ACCESS EXCLUSIVE lock it holds) took.
	Tables map[string]time.Duration
	// Took is the whole purge.
	Took time.Duration
	// Waiting is true when an erasure is recorded but a read model has not
	// applied it yet: the next call purges.
	Waiting bool
}

// PurgeErased rewrites the tables holding personal fields when an erasure
// was applied since the last purge and every read model that applies erasures
// has passed it; otherwise it does nothing. Each rewrite holds an ACCESS
// EXCLUSIVE lock on its table (reads of that table wait) for as long as it
// copies the table's live rows. Safe to call from several nodes: one runs,
// the others find the lock taken and return a zero result.
func (s *Store) PurgeErased(ctx context.Context) (PurgeResult, error) {
	var res PurgeResult
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return res, fmt.Errorf("projections/postgres: purge: %w", err)
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, purgeLock).Scan(&locked); err != nil {
		return res, fmt.Errorf("projections/postgres: purge: %w", err)
	}
	if !locked {
		return res, nil
	}
	defer func() {
		// A fresh context: the lock must go even when ctx ended.
		_, _ = conn.Exec(context.Background(), `RESET lock_timeout`)
		_, _ = conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, purgeLock)
	}()
	// A rewrite queued behind a long reader would hold every later reader
	// of the table behind it: give up instead, and try at the next tick.
	if _, err := conn.Exec(ctx, `SET lock_timeout = '10s'`); err != nil {
		return res, fmt.Errorf("projections/postgres: purge: %w", err)
	}
	var erasedC, erasedP, purgedC, purgedP int64
	var erasedAt *time.Time
	var caughtUp bool
	if err := conn.QueryRow(ctx, purgeDue, erasingReadModels).Scan(&erasedC, &erasedP, &erasedAt, &purgedC, &purgedP, &caughtUp); err != nil {
		return res, fmt.Errorf("projections/postgres: purge: %w", err)
	}
	if erasedC < purgedC || (erasedC == purgedC && erasedP <= purgedP) {
		return res, nil // nothing erased since the last purge
	}
	if !caughtUp {
		res.Waiting = true
		return res, nil
	}
	// A rewrite copies the rows some transaction may still see ("recently
	// dead"): the erased rows are dropped only once every transaction
	// that began before the erasing ones has ended. Every erasing write
	// committed before the check above; wait, briefly, until no session,
	// prepared transaction or replication slot is older than now.
	if ok, err := waitHorizon(ctx, conn, horizonWait); err != nil {
		return res, err
	} else if !ok {
		res.Waiting = true
		return res, nil
	}
	began := time.Now()
	res.Upto = events.Position{Commit: uint64(erasedC), Prepare: uint64(erasedP)}
	if erasedAt != nil {
		res.ErasedAt = erasedAt.UTC()
	}
	tables := append([]string(nil), PurgedTables...)
	for _, table := range purgedIfPresent {
		var present bool
		if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&present); err != nil {
			return res, fmt.Errorf("projections/postgres: purge: %w", err)
		}
		if present {
			tables = append(tables, table)
		}
	}
	res.Tables = make(map[string]time.Duration, len(tables))
	for _, table := range tables {
		t0 := time.Now()
		// VACUUM runs outside a transaction; the names are constants.
		if _, err := conn.Exec(ctx, "VACUUM (FULL) "+pgx.Identifier{table}.Sanitize()); err != nil {
			return res, fmt.Errorf("projections/postgres: purge %s: %w", table, err)
		}
		res.Tables[table] = time.Since(t0)
	}
	// A checkpoint lets the WAL segments that still hold the erased rows
	// be recycled sooner; it needs superuser or pg_checkpoint, and the
	// purge of the tables stands without it.
	if _, err := conn.Exec(ctx, `CHECKPOINT`); err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
			return res, fmt.Errorf("projections/postgres: purge checkpoint: %w", err)
		}
	}
	if _, err := conn.Exec(ctx, `UPDATE erasure_purge SET purged_commit = $1, purged_prepare = $2, purged_at = now()
WHERE id = 1 AND (purged_commit, purged_prepare) < ($1, $2)`, erasedC, erasedP); err != nil {
		return res, fmt.Errorf("projections/postgres: purge: %w", err)
	}
	res.Purged, res.Took = true, time.Since(began)
	return res, nil
}

// horizonWait bounds how long one purge waits for older transactions to
// end before it gives up until the next interval.
var horizonWait = 30 * time.Second

// olderThan counts what still holds back the removal of rows deleted by
// transactions before xid $1 (the next xid when the purge began, as xid),
// as Postgres computes it for a table: sessions of this database (or not
// yet in one) whose snapshot is older; transactions of any database older
// (the rewrite's own snapshot waits for them); prepared transactions and
// replication slots. Reading other roles' sessions needs pg_read_all_stats.
const olderThan = `
SELECT (SELECT count(*) FROM pg_stat_activity
        WHERE pid <> pg_backend_pid()
          AND ((backend_xmin IS NOT NULL AND age(backend_xmin) > age($1::xid)
                AND (datname = current_database() OR datid IS NULL))
            OR (backend_xid IS NOT NULL AND age(backend_xid) > age($1::xid))))
     + (SELECT count(*) FROM pg_prepared_xacts WHERE age(transaction) > age($1::xid))
     + (SELECT count(*) FROM pg_replication_slots
        WHERE (xmin IS NOT NULL AND age(xmin) > age($1::xid))
           OR (catalog_xmin IS NOT NULL AND age(catalog_xmin) > age($1::xid)))`

// waitHorizon waits up to wait until no transaction older than this moment
// remains, so a rewrite drops every row deleted before it; false if some
// still does when wait runs out.
func waitHorizon(ctx context.Context, conn *pgxpool.Conn, wait time.Duration) (bool, error) {
	var next string
	if err := conn.QueryRow(ctx, `SELECT (pg_snapshot_xmax(pg_current_snapshot())::text::bigint % 4294967296)::text`).Scan(&next); err != nil {
		return false, fmt.Errorf("projections/postgres: purge: %w", err)
	}
	deadline := time.Now().Add(wait)
	for {
		var older int64
		if err := conn.QueryRow(ctx, olderThan, next).Scan(&older); err != nil {
			return false, fmt.Errorf("projections/postgres: purge: %w", err)
		}
		if older == 0 {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
