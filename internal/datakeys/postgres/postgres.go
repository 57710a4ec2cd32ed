// Package postgres is the production key store backend: a table of sealed
// data keys and a table of destroyed subjects.
//
// Destroy DELETEs the key's row. Postgres keeps a deleted row's bytes as a
// dead tuple until VACUUM (autovacuum, or an explicit VACUUM of
// platform_data_keys) reclaims the page, and in WAL segments and base
// backups until they age out; the key was sealed by the master key, so those
// copies are unreadable without it. A plain VACUUM marks the space free
// without overwriting it: the read models' erasure purge
// (projections/postgres.Store.PurgeErased) rewrites this table too when it
// shares their database, and an operator who must prove erasure beyond that
// rotates the master key (docs/privacy.md).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/healthtech/partner-open-platform/internal/datakeys"
)

const schema = `
CREATE TABLE IF NOT EXISTS platform_data_keys (
	subject       text PRIMARY KEY,
	key_id        text NOT NULL UNIQUE,
	master_key_id text NOT NULL,
	sealed        text NOT NULL,
	created_at    timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS platform_destroyed_subjects (
	subject      text PRIMARY KEY,
	destroyed_at timestamptz NOT NULL DEFAULT now()
);`

// schemaLock serialises schema creation among nodes starting together.
const schemaLock int64 = 0x6b657973746f7265

// Store is the Postgres key store backend.
type Store struct {
	pool *pgxpool.Pool
}

// Open connects and creates the tables if needed.
func Open(ctx context.Context, url string) (*Store, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", schemaLock); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, schema)
		return err
	})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("keys: create tables: %w", err)
	}
	return &Store{pool: pool}, nil
}

const columns = "subject, key_id, master_key_id, sealed, created_at"

func scan(row pgx.Row) (datakeys.Record, error) {
	var r datakeys.Record
	err := row.Scan(&r.Subject, &r.KeyID, &r.MasterKeyID, &r.Sealed, &r.Created)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, datakeys.ErrNotFound
	}
	return r, err
}

// Insert implements datakeys.Backend.
func (s *Store) Insert(ctx context.Context, rec datakeys.Record) (datakeys.Record, error) {
	if !datakeys.ValidSubject(rec.Subject) {
		return datakeys.Record{}, datakeys.ErrInvalidSubject
	}
	var out datakeys.Record
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// Insert and Destroy of one subject take the same advisory lock, so
		// a key is never created after (or during) its subject's erasure.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", rec.Subject); err != nil {
			return err
		}
		var destroyed bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM platform_destroyed_subjects WHERE subject = $1)", rec.Subject).Scan(&destroyed); err != nil {
			return err
		}
		if destroyed {
			return datakeys.ErrDestroyed
		}
		if _, err := tx.Exec(ctx, `INSERT INTO platform_data_keys (`+columns+`) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (subject) DO NOTHING`, rec.Subject, rec.KeyID, rec.MasterKeyID, rec.Sealed, rec.Created); err != nil {
			return err
		}
		var err error
		out, err = scan(tx.QueryRow(ctx, "SELECT "+columns+" FROM platform_data_keys WHERE subject = $1", rec.Subject))
		return err
	})
	return out, err
}

// insertBatchQuery inserts every record whose subject is neither keyed nor
// destroyed and tells what is stored for all of them: of the rows it
// inserted only the subject, key id and stored creation time (the caller
// has the rest: sending back every sealed key of a batch of hundreds kept
// the statement writing to a client busy elsewhere, 112 ms per batch under
// load), and of the rows that were already there every column, read in the
// same statement (its snapshot does not see its own inserts, so the two
// parts never overlap). The rows already there are found by joining the
// batch's subjects, not by subject = ANY($1): the prepared statement's
// generic plan, made while the table was small, scanned the whole table
// comparing each row with every subject of the parameter (an array
// parameter is never hashed), 60 ms for 800 subjects and 1,100 keys, and
// growing with both. It runs after the subjects' advisory locks are
// taken, in a statement of its own, so its snapshot sees every Destroy of
// those subjects that committed before.
const insertBatchQuery = `
WITH r AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])
        AS r(subject, key_id, master_key_id, sealed, created_at)
), ins AS (
    INSERT INTO platform_data_keys (` + columns + `)
    SELECT r.subject, r.key_id, r.master_key_id, r.sealed, r.created_at FROM r
    WHERE NOT EXISTS (SELECT 1 FROM platform_destroyed_subjects d WHERE d.subject = r.subject)
    ON CONFLICT (subject) DO NOTHING
    RETURNING subject, key_id, created_at
)
SELECT subject, key_id, NULL::text, NULL::text, created_at, true FROM ins
UNION ALL
SELECT k.subject, k.key_id, k.master_key_id, k.sealed, k.created_at, false
FROM r JOIN platform_data_keys k ON k.subject = r.subject`

// InsertBatch implements datakeys.Backend: one transaction takes the subjects'
// advisory locks (in hash order, so two batches never deadlock), then
// inserts every record whose subject is neither keyed nor destroyed and
// reads back what is stored, in one statement. BEGIN, the locks, that
// statement and COMMIT go in one pipeline: one round trip per batch (it
// was five: BEGIN, the locks, INSERT, SELECT, COMMIT).
func (s *Store) InsertBatch(ctx context.Context, recs []datakeys.Record) ([]datakeys.Record, error) {
	subjects := make([]string, len(recs))
	ids, masters, sealed := make([]string, len(recs)), make([]string, len(recs)), make([]string, len(recs))
	created := make([]time.Time, len(recs))
	for i, r := range recs {
		if !datakeys.ValidSubject(r.Subject) {
			return nil, fmt.Errorf("%w: %q", datakeys.ErrInvalidSubject, r.Subject)
		}
		subjects[i], ids[i], masters[i], sealed[i], created[i] = r.Subject, r.KeyID, r.MasterKeyID, r.Sealed, r.Created
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("keys: insert %d keys: %w", len(recs), err)
	}
	// A connection handed back inside a transaction (a failure that did
	// not end it) is closed by the pool, never reused.
	defer conn.Release()
	stored, err := insertBatch(ctx, conn.Conn(), recs, subjects, ids, masters, sealed, created)
	if err != nil {
		// Ends an open or failed transaction; if even that fails the
		// connection is not idle and the pool drops it on Release.
		_, _ = conn.Exec(ctx, "ROLLBACK")
		return nil, fmt.Errorf("keys: insert %d keys: %w", len(recs), err)
	}
	out := make([]datakeys.Record, len(recs))
	for i, r := range recs {
		out[i] = stored[r.Subject]
	}
	return out, nil
}

// insertBatch runs InsertBatch's pipeline on conn and returns the stored
// records by subject; on error the caller rolls back.
func insertBatch(ctx context.Context, conn *pgx.Conn, recs []datakeys.Record, subjects, ids, masters, sealed []string, created []time.Time) (map[string]datakeys.Record, error) {
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SELECT pg_advisory_xact_lock(h) FROM
		(SELECT DISTINCT hashtextextended(s, 0) AS h FROM unnest($1::text[]) AS s ORDER BY h) AS l`, subjects)
	b.Queue(insertBatchQuery, subjects, ids, masters, sealed, created)
	b.Queue(`COMMIT`)
	br := conn.SendBatch(ctx, b)
	stored := make(map[string]datakeys.Record, len(subjects))
	_, err := br.Exec()
	if err == nil {
		_, err = br.Exec()
	}
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			err = collectStored(rows, recs, stored)
		}
	}
	if err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	// A COMMIT of a transaction that failed in the pipeline is not run
	// (the server skips to the pipeline's end): only an idle connection
	// committed.
	if st := conn.PgConn().TxStatus(); st != 'I' {
		return nil, fmt.Errorf("transaction still open after COMMIT (status %q)", st)
	}
	return stored, nil
}

// collectStored reads insertBatchQuery's rows into stored: an inserted
// row is the record sent with its key id, with the creation time as
// stored; a row already there is read whole.
func collectStored(rows pgx.Rows, recs []datakeys.Record, stored map[string]datakeys.Record) error {
	sent := make(map[string]datakeys.Record, len(recs))
	for _, r := range recs {
		sent[r.KeyID] = r
	}
	var (
		r        datakeys.Record
		master   *string
		sealed   *string
		inserted bool
	)
	_, err := pgx.ForEachRow(rows, []any{&r.Subject, &r.KeyID, &master, &sealed, &r.Created, &inserted}, func() error {
		if !inserted {
			stored[r.Subject] = datakeys.Record{Subject: r.Subject, KeyID: r.KeyID, MasterKeyID: *master, Sealed: *sealed, Created: r.Created}
			return nil
		}
		rec, ok := sent[r.KeyID]
		if !ok || rec.Subject != r.Subject {
			return fmt.Errorf("stored key %q of %q was not sent", r.KeyID, r.Subject)
		}
		rec.Created = r.Created
		stored[r.Subject] = rec
		return nil
	})
	return err
}

// Get implements datakeys.Backend.
func (s *Store) Get(ctx context.Context, subject string) (datakeys.Record, error) {
	r, err := scan(s.pool.QueryRow(ctx, "SELECT "+columns+" FROM platform_data_keys WHERE subject = $1", subject))
	if !errors.Is(err, datakeys.ErrNotFound) {
		return r, err
	}
	var destroyed bool
	if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM platform_destroyed_subjects WHERE subject = $1)", subject).Scan(&destroyed); err != nil {
		return datakeys.Record{}, err
	}
	if destroyed {
		return datakeys.Record{}, datakeys.ErrDestroyed
	}
	return datakeys.Record{}, datakeys.ErrNotFound
}

// GetByKeyID implements datakeys.Backend.
func (s *Store) GetByKeyID(ctx context.Context, keyID string) (datakeys.Record, error) {
	return scan(s.pool.QueryRow(ctx, "SELECT "+columns+" FROM platform_data_keys WHERE key_id = $1", keyID))
}

// GetByKeyIDs implements datakeys.BatchGetter: one statement for them all.
func (s *Store) GetByKeyIDs(ctx context.Context, keyIDs []string) ([]datakeys.Record, error) {
	rows, err := s.pool.Query(ctx, "SELECT "+columns+" FROM platform_data_keys WHERE key_id = ANY($1)", keyIDs)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (datakeys.Record, error) { return scan(row) })
}

// Destroy implements datakeys.Backend: DELETE, then the subject is remembered.
func (s *Store) Destroy(ctx context.Context, subject string) error {
	if !datakeys.ValidSubject(subject) {
		return datakeys.ErrInvalidSubject
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", subject); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM platform_data_keys WHERE subject = $1", subject); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO platform_destroyed_subjects (subject) VALUES ($1) ON CONFLICT DO NOTHING", subject)
		return err
	})
}

// Update implements datakeys.Backend.
func (s *Store) Update(ctx context.Context, fromMaster string, rec datakeys.Record) error {
	_, err := s.pool.Exec(ctx, "UPDATE platform_data_keys SET master_key_id = $1, sealed = $2 WHERE key_id = $3 AND master_key_id = $4",
		rec.MasterKeyID, rec.Sealed, rec.KeyID, fromMaster)
	return err
}

// List implements datakeys.Backend.
func (s *Store) List(ctx context.Context, fn func(datakeys.Record) error) error {
	rows, err := s.pool.Query(ctx, "SELECT "+columns+" FROM platform_data_keys ORDER BY key_id")
	if err != nil {
		return err
	}
	recs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (datakeys.Record, error) { return scan(row) })
	if err != nil {
		return err
	}
	for _, r := range recs {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// Close implements datakeys.Backend.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}
