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
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/healthtech/partner-open-platform/internal/batch"
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
//
// Each lease it acquires is also held as a session-level advisory lock on
// a connection of its own (the session), which Postgres releases the
// moment that connection closes: when a node's process dies, its leases are
// free at once for the others, with their fencing tokens kept in the
// leases table as before. A holder that is alive but silent (paused, or on a
// machine that vanished without closing its sockets) keeps its session
// until TCP keepalives end it (see sessionParams), and its lease lapses by
// the TTL at the latest, as without the locks.
type Store struct {
	pool  *pgxpool.Pool
	owned bool

	// mu serializes the session, which one query at a time may use, and
	// guards locks.
	mu      sync.Mutex
	session *pgx.Conn
	// locks are the advisory locks the session holds: lease name → the
	// acquisition holding it.
	locks map[string]lease.Lease
	// members are the holders whose membership lock the session holds.
	members map[string]bool
	// gen counts the sessions connected, so that a lock taken on one is
	// not recorded as held after it broke.
	gen    uint64
	closed bool

	// seen is every lease as one statement read them at seenAt (Holder ""
	// when not live), shared by the node's campaigns and Gets (see look);
	// seenMu serializes the reads.
	seenMu sync.Mutex
	seen   map[string]lease.Lease
	seenAt time.Time

	// renewals groups the renewals of leases whose session lock this
	// store holds into one statement (see renewGroup).
	renewals renewGroup
	// renewFailed says the last renewal statement failed: the next one
	// has its pooled connection pinged (see ShouldPing).
	renewFailed atomic.Bool

	// loads are the holders' loads as the last renewal statement read them
	// (see Load).
	loadMu sync.Mutex
	loads  map[string]seenLoad
}

// seenFresh is how long one read of every lease answers the node's
// campaigns and Gets: well under lease.Poll, so a freed lease is tried at
// the next poll.
const seenFresh = lease.Poll * 4 / 5

// look returns name as one read of every lease, shared by all of this
// store's campaigns and Gets, saw it at most seenFresh ago: a node standing
// by for many leases costs one statement a poll, not one per lease. A lease
// held with a session lock is live while that lock is held: the read tries
// each such lock on this store's session (cheap, unlike reading pg_locks)
// and gives back at once the ones it got, whose holders' sessions ended.
func (s *Store) look(ctx context.Context, name string) (lease.Lease, error) {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	if time.Since(s.seenAt) >= seenFresh {
		seen := map[string]lease.Lease{}
		err := s.withSession(ctx, func(c *pgx.Conn) error {
			mine := make([]string, 0, len(s.locks))
			for n := range s.locks {
				mine = append(mine, n)
			}
			rows, err := c.Query(ctx, `
SELECT l.name, l.holder, l.token, l.expires_at, l.holder <> '' AND l.expires_at > clock_timestamp(),
       CASE WHEN l.locked AND l.holder <> '' AND l.expires_at > clock_timestamp() AND NOT (l.name = ANY($1))
            THEN pg_try_advisory_lock($2, hashtext(l.name)) ELSE false END
FROM leases l`, mine, lockNamespace)
			if err != nil {
				return err
			}
			var l lease.Lease
			var live, dead bool
			var got []string
			if _, err := pgx.ForEachRow(rows, []any{&l.Name, &l.Holder, &l.Token, &l.Expires, &live, &dead}, func() error {
				if !live || dead {
					l.Holder = ""
				}
				if dead {
					got = append(got, l.Name)
				}
				seen[l.Name] = l
				return nil
			}); err != nil {
				return err
			}
			if len(got) > 0 {
				_, err = c.Exec(ctx, `SELECT pg_advisory_unlock($1, hashtext(n)) FROM unnest($2::text[]) n`, lockNamespace, got)
			}
			return err
		})
		if err != nil {
			return lease.Lease{}, err
		}
		s.seen, s.seenAt = seen, time.Now()
	}
	l, ok := s.seen[name]
	if !ok {
		return lease.Lease{Name: name}, nil
	}
	return l, nil
}

// forgetSeen makes the next look read again, after this store changed
// a lease itself.
func (s *Store) forgetSeen() {
	s.seenMu.Lock()
	s.seenAt = time.Time{}
	s.seenMu.Unlock()
}

// New uses pool (already migrated with Migrate); Close leaves pool open
// and closes the store's session.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, locks: map[string]lease.Lease{}, members: map[string]bool{}, loads: map[string]seenLoad{}}
}

// Open connects to url and migrates; Close closes the connection pool.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("lease/postgres: %w", err)
	}
	cfg.ShouldPing = ShouldPing
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("lease/postgres: %w", err)
	}
	if err := Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	s := New(pool)
	s.owned = true
	return s, nil
}

// Close ends the session, which frees every lease it held for the other
// nodes at once, and releases the pool if Open made it.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.dropSessionLocked()
	s.mu.Unlock()
	if s.owned {
		s.pool.Close()
	}
	return nil
}

// lockNamespace is the first key of a lease's advisory lock ("leas"), the
// second being hashtext of its name; memberNamespace ("memb") keys the lock
// a session holds for each holder it serves, so nodes can count each other.
// Two-key advisory locks never collide with the single-key ones the
// migrations take. Two names with the same hash share a lock, so one's
// holder may be taken for alive or dead by the other's: the fencing tokens
// keep that safe, at the cost of a needless takeover or a wait for the TTL.
const (
	lockNamespace   int32 = 0x6c656173
	memberNamespace int32 = 0x6d656d62
)

// sessionParams bound how long Postgres keeps the session of a holder
// whose machine vanished without closing its connection: keepalive probes
// after 2 s of silence, every second, 3 of them unanswered end it, and so
// does data unacknowledged for 5 s. Well under DefaultTTL.
var sessionParams = map[string]string{
	"tcp_keepalives_idle":     "2",
	"tcp_keepalives_interval": "1",
	"tcp_keepalives_count":    "3",
	"tcp_user_timeout":        "5000",
	"application_name":        "platform lease session",
}

func interval(ttl time.Duration) string { return fmt.Sprintf("%d microseconds", ttl.Microseconds()) }

// withSession runs f on the session, connecting first when there is none
// (at the start, or after the connection broke: the locks it held are gone
// with it). A connection-level failure drops the session.
func (s *Store) withSession(ctx context.Context, f func(c *pgx.Conn) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("lease/postgres: store closed")
	}
	if err := ctx.Err(); err != nil {
		return err // nothing sent: the session and its locks stay
	}
	if s.session == nil || s.session.IsClosed() {
		s.dropSessionLocked()
		cfg := s.pool.Config().ConnConfig.Copy()
		for k, v := range sessionParams {
			cfg.RuntimeParams[k] = v
		}
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return fmt.Errorf("lease/postgres: connect the lease session: %w", err)
		}
		s.session = c
		s.gen++
	}
	err := f(s.session)
	if err != nil && (s.session.IsClosed() || isConnErr(err)) {
		// A query cut off midway leaves the connection unusable; the
		// next call reconnects and takes the locks again.
		s.dropSessionLocked()
	}
	return err
}

// isConnErr says whether err came from the connection rather than from a
// statement the server refused: the session's state is then unknown.
func isConnErr(err error) bool {
	var pgErr *pgconn.PgError
	return !errors.As(err, &pgErr) && !errors.Is(err, pgx.ErrNoRows)
}

// dropSessionLocked closes the session; Postgres frees its locks.
func (s *Store) dropSessionLocked() {
	if s.session != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = s.session.Close(ctx)
		cancel()
		s.session = nil
	}
	clear(s.locks)
	clear(s.members)
}

// Acquire implements lease.Store. A lease another live holder had at the
// node's last look (at most seenFresh ago) is refused without a statement of
// its own. A lease is free when nobody holds it,
// its holder let it expire or is name's own holder (a restarted node takes
// its lease back at once), or its holder held it with a session lock that
// this session could take: the holder's session ended. Standing by costs
// one statement on the session that takes no row lock; only a free lease
// is written, on the pool. The write waits for transactions fenced on the
// old token (they hold the row FOR SHARE), so a write under the old token
// commits before the new holder starts, or not at all; the session stays
// free for the node's other leases meanwhile.
func (s *Store) Acquire(ctx context.Context, name, holder string, ttl time.Duration) (lease.Lease, error) {
	l := lease.Lease{Name: name, Holder: holder}
	s.mu.Lock()
	member := s.members[holder]
	s.mu.Unlock()
	// A holder's first acquisition takes its membership lock (see Load).
	if member {
		if seen, err := s.look(ctx, name); err == nil && seen.Holder != "" && seen.Holder != holder {
			return lease.Lease{}, fmt.Errorf("%w: %s holds %s until %s", lease.ErrHeld, seen.Holder, name, seen.Expires.Format(time.RFC3339Nano))
		}
	}
	var cur lease.Lease
	var got, mine, free bool
	var gen uint64
	err := s.withSession(ctx, func(c *pgx.Conn) error {
		held, busy := s.locks[name]
		// The session's lock serves one holder: another holder on the same
		// session must not read it as the first holder's death.
		mine = busy && held.Holder == holder
		var expired, wasLocked, exists bool
		err := c.QueryRow(ctx, `
SELECT CASE WHEN $3 THEN true WHEN $4 THEN pg_try_advisory_lock($5, hashtext($1)) ELSE false END,
       l.name IS NOT NULL, coalesce(l.holder, ''), coalesce(l.expires_at, clock_timestamp()),
       coalesce(l.expires_at <= clock_timestamp(), true), coalesce(l.locked, false),
       CASE WHEN $6 THEN false ELSE pg_try_advisory_lock($7, hashtext($2)) END
FROM (SELECT 1) one LEFT JOIN leases l ON l.name = $1`,
			name, holder, mine, !busy, lockNamespace, s.members[holder], memberNamespace).Scan(
			&got, &exists, &cur.Holder, &cur.Expires, &expired, &wasLocked, new(bool))
		if err != nil {
			return err
		}
		s.members[holder] = true
		free = !exists || cur.Holder == "" || cur.Holder == holder || expired || (got && wasLocked)
		if got && !mine {
			if !free {
				// The lock was free but the lease is not: its holder is alive
				// without the lock (it took the lease by expiry from a
				// silent holder). Leave the lock for that holder to take.
				_, err := c.Exec(ctx, `SELECT pg_advisory_unlock($1, hashtext($2))`, lockNamespace, name)
				got = false
				return err
			}
			s.locks[name] = lease.Lease{Name: name, Holder: holder} // taken; the token follows
		}
		gen = s.gen
		return nil
	})
	if err != nil {
		return lease.Lease{}, fmt.Errorf("lease/postgres: acquire %s: %w", name, err)
	}
	taken := false
	if free {
		err = s.pool.QueryRow(ctx, `
INSERT INTO leases AS l (name, holder, token, expires_at, acquired_at, locked)
VALUES ($1, $2, 1, clock_timestamp() + $3::interval, clock_timestamp(), $4)
ON CONFLICT (name) DO UPDATE
    SET holder = EXCLUDED.holder, token = l.token + 1,
        expires_at = clock_timestamp() + $3::interval, acquired_at = clock_timestamp(), locked = EXCLUDED.locked
    WHERE l.holder = '' OR l.holder = EXCLUDED.holder OR l.expires_at <= clock_timestamp() OR (EXCLUDED.locked AND l.locked)
RETURNING token, expires_at`, name, holder, interval(ttl), got).Scan(&l.Token, &l.Expires)
		switch {
		case err == nil:
			taken = true
		case errors.Is(err, pgx.ErrNoRows):
			err = nil
		}
	}
	if got {
		s.mu.Lock()
		switch {
		case s.gen != gen:
			// The session broke meanwhile, and the lock went with it.
		case taken:
			s.locks[name] = l
		case !mine && s.session != nil:
			delete(s.locks, name)
			_, uerr := s.session.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, hashtext($2))`, lockNamespace, name)
			if uerr != nil {
				s.dropSessionLocked()
			}
		}
		s.mu.Unlock()
	}
	if err != nil {
		return lease.Lease{}, fmt.Errorf("lease/postgres: acquire %s: %w", name, err)
	}
	if !taken {
		return lease.Lease{}, fmt.Errorf("%w: %s holds %s until %s", lease.ErrHeld, cur.Holder, name, cur.Expires.Format(time.RFC3339Nano))
	}
	s.forgetSeen()
	s.forgetLoads()
	return l, nil
}

// holds says whether the session holds l's lock.
func (s *Store) holds(l lease.Lease) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.locks[l.Name]
	return ok && cur.Token == l.Token && cur.Holder == l.Holder && s.session != nil
}

// Renew implements lease.Store. A holder with the session lock renews on
// the pool; one without it (it took the lease by expiry while a silent
// holder's session kept the lock, or its own session broke) renews on the
// session and takes the lock as soon as it is free again.
func (s *Store) Renew(ctx context.Context, l lease.Lease, ttl time.Duration) (lease.Lease, error) {
	var err error
	lost := false
	if s.holds(l) {
		var found bool
		l.Expires, found, err = s.renewals.renew(ctx, s, l, ttl)
		if err == nil && !found {
			lost, err = true, s.withSession(ctx, func(c *pgx.Conn) error { return s.unlockLocked(ctx, c, l) })
		}
	} else {
		err = s.withSession(ctx, func(c *pgx.Conn) error {
			_, busy := s.locks[l.Name]
			var locked bool
			err := c.QueryRow(ctx, `
UPDATE leases SET expires_at = clock_timestamp() + $4::interval,
    locked = CASE WHEN $5 THEN pg_try_advisory_lock($6, hashtext($1)) ELSE false END
WHERE name = $1 AND token = $2 AND holder = $3 AND holder <> ''
RETURNING expires_at, locked`, l.Name, l.Token, l.Holder, interval(ttl), !busy, lockNamespace).Scan(&l.Expires, &locked)
			if errors.Is(err, pgx.ErrNoRows) {
				lost = true
				return nil
			}
			if err == nil && locked {
				s.locks[l.Name] = l
			}
			return err
		})
	}
	if lost && err == nil {
		return lease.Lease{}, fmt.Errorf("%w: %s token %d is no longer current", lease.ErrLost, l.Name, l.Token)
	}
	if err != nil {
		return lease.Lease{}, fmt.Errorf("lease/postgres: renew %s: %w", l.Name, err)
	}
	return l, nil
}

// unlockLocked gives up the session lock of l's acquisition, if it holds it.
func (s *Store) unlockLocked(ctx context.Context, c *pgx.Conn, l lease.Lease) error {
	if cur, ok := s.locks[l.Name]; !ok || cur.Token != l.Token || cur.Holder != l.Holder {
		return nil
	}
	delete(s.locks, l.Name)
	_, err := c.Exec(ctx, `SELECT pg_advisory_unlock($1, hashtext($2))`, lockNamespace, l.Name)
	return err
}

// Release implements lease.Store.
func (s *Store) Release(ctx context.Context, l lease.Lease) error {
	defer s.forgetSeen()
	defer s.forgetLoads()
	_, err := s.pool.Exec(ctx, `UPDATE leases SET holder = '', expires_at = clock_timestamp(), locked = false WHERE name = $1 AND token = $2`, l.Name, l.Token)
	if err == nil && s.holds(l) {
		err = s.withSession(ctx, func(c *pgx.Conn) error { return s.unlockLocked(ctx, c, l) })
	}
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

// Get implements lease.Store: a lease whose holder's session ended reads
// as free, as one that expired does. It answers from the node's last look
// at every lease (at most seenFresh old; this store's own acquisitions and
// releases are seen at once).
func (s *Store) Get(ctx context.Context, name string) (lease.Lease, error) {
	l, err := s.look(ctx, name)
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
// returns an error wrapping lease.ErrLost (tx then aborted) unless l's
// token is current, and locks the lease row FOR SHARE until tx ends, so a
// new holder's Acquire waits for tx to commit or roll back. It also bounds
// how long tx may sit idle (the lease's time to live), so a holder paused
// mid-transaction cannot keep the lock and stall a takeover forever. Call
// it first in every write transaction made on a lease's behalf.
func Fence(ctx context.Context, tx Querier, l lease.Lease, idle time.Duration) error {
	var one int
	return fenceResult(l, tx.QueryRow(ctx, fenceSQL, fenceArgs(l, idle)...).Scan(&one))
}

// QueueFence is Fence for a transaction that sends its statements as a
// pgx.Batch: queued first, it costs no round trip of its own. A lost lease
// fails the statement on the server (lease_lost, migrations/leases/0003),
// which aborts the transaction and skips the rest of the batch, so the
// batch may end with the transaction's COMMIT.
func QueueFence(b *pgx.Batch, l lease.Lease, idle time.Duration) {
	b.Queue(fenceSQL, fenceArgs(l, idle)...).QueryRow(func(row pgx.Row) error {
		var one int
		return fenceResult(l, row.Scan(&one))
	})
}

// fenceSQL locks the lease row FOR SHARE if l's token is current, and
// otherwise calls lease_lost, which raises fenceLost: coalesce evaluates
// it only for the missing row, and being volatile it is never evaluated
// at planning.
const fenceSQL = `
SELECT coalesce((SELECT 1 FROM leases, set_config('idle_in_transaction_session_timeout', $3, true)
    WHERE name = $1 AND token = $2 AND holder <> '' FOR SHARE OF leases), lease_lost($1, $2))`

// fenceLost is the SQLSTATE of a fence whose token is not current, in a
// class the SQL standard leaves to implementations (first letter I-Z)
// and Postgres does not use.
const fenceLost = "L0001"

func fenceArgs(l lease.Lease, idle time.Duration) []any {
	return []any{l.Name, l.Token, fmt.Sprint(max(idle.Milliseconds(), 1))}
}

func fenceResult(l lease.Lease, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == fenceLost {
		return fmt.Errorf("%w: %s token %d is no longer current", lease.ErrLost, l.Name, l.Token)
	}
	if err != nil {
		return fmt.Errorf("lease/postgres: fence %s: %w", l.Name, err)
	}
	return nil
}

// Load implements lease.Balancer: the nodes are the sessions' membership
// locks (a holder's session takes one with its first Acquire, and loses
// it with the session), the leases counted are the live ones. Right after
// a renewal statement of this store it answers from what that statement
// read (see renewGroup): a holder reads its load after each renewal, and a
// read of pg_locks of its own was a Postgres transaction per renewal,
// most of an idle node's.
func (s *Store) Load(ctx context.Context, holder string) (lease.Load, error) {
	if l, ok := s.renewedLoad(holder); ok {
		return l, nil
	}
	var l lease.Load
	err := s.pool.QueryRow(ctx, loadSQL, holder).Scan(&l.Nodes, &l.Held, &l.Least)
	if err != nil {
		return lease.Load{}, fmt.Errorf("lease/postgres: load: %w", err)
	}
	return l, nil
}

// loadCTEs are the parts of a load read: k the granted membership (m) and
// lease locks of this database, h the live leases per holder. live is
// what decides a lease row l is live (Load's own statement: its expiry;
// the renewal's: the expiry it is given).
func loadCTEs(live string) string {
	return `
k AS (
    SELECT k.classid, k.objid FROM pg_locks k
    WHERE k.locktype = 'advisory' AND k.granted AND k.objsubid = 2 AND k.classid IN (1818583411::oid, 1835363682::oid)
      AND k.database = (SELECT oid FROM pg_database WHERE datname = current_database())),
m AS (SELECT DISTINCT objid FROM k WHERE classid = 1835363682::oid),
h AS (
    SELECT hashtext(l.holder)::oid AS objid, l.holder, count(*)::int AS n
    FROM leases l` + live + `
    GROUP BY l.holder)`
}

// loadColumns are a load's nodes, held (by the holder named holderExpr)
// and least.
func loadColumns(holderExpr string) string {
	return `(SELECT count(*)::int FROM m),
       coalesce((SELECT n FROM h WHERE h.holder = ` + holderExpr + `), 0),
       CASE WHEN EXISTS (SELECT 1 FROM m WHERE m.objid NOT IN (SELECT objid FROM h)) THEN 0
            ELSE coalesce((SELECT min(h.n) FROM h JOIN m USING (objid)), 0) END`
}

const liveLease = `
      AND (NOT l.locked OR hashtext(l.name)::oid IN (SELECT objid FROM k WHERE classid = 1818583411::oid))`

var loadSQL = `WITH` + loadCTEs(`
    WHERE l.holder <> '' AND l.expires_at > clock_timestamp()`+liveLease) + `
SELECT ` + loadColumns("$1")

// renewSQL renews the group's leases (rows: the renewal's index and the
// new expiry) and reads the load of each holder among them (rows: NULL
// index and expiry, the holder and its load) in one statement. The
// statement's reads see the leases as before the update, so a lease it
// renews counts as live by its new expiry.
//
// Its commit is flushed before it returns even where synchronous_commit
// is off (raised to local for this transaction, never lowered): renewals
// are an idle node's only writes, and an asynchronous commit wakes the
// WAL writer, which then polls every wal_writer_delay for 50 rounds before
// it sleeps again, so renewals every few seconds would keep it polling five
// times a second. A commit its own backend flushes does not wake the WAL
// writer; no request waits on a renewal.
var renewSQL = `
WITH r AS (
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::interval[]) WITH ORDINALITY AS r(name, token, holder, ttl, i)
    WHERE set_config('synchronous_commit', CASE current_setting('synchronous_commit') WHEN 'off' THEN 'local'
        ELSE current_setting('synchronous_commit') END, true) IS NOT NULL),
u AS (
    UPDATE leases AS l SET expires_at = clock_timestamp() + r.ttl
    FROM r
    WHERE l.name = r.name AND l.token = r.token AND l.holder = r.holder AND l.holder <> ''
    RETURNING r.i, l.name, l.expires_at),` + loadCTEs(`
    LEFT JOIN u ON u.name = l.name
    WHERE l.holder <> '' AND coalesce(u.expires_at, l.expires_at) > clock_timestamp()`+liveLease) + `
SELECT u.i, u.expires_at, NULL::text, 0, 0, 0 FROM u
UNION ALL
SELECT NULL, NULL, q.holder, ` + loadColumns("q.holder") + `
FROM (SELECT DISTINCT holder FROM r) q`

// renewedLoadFresh is how long the load a renewal statement read answers
// Load: long enough for the holder's read right after its renewal, short
// against lease's own caching of loads (a second).
const renewedLoadFresh = 100 * time.Millisecond

// seenLoad is a holder's load as a renewal statement read it.
type seenLoad struct {
	load lease.Load
	at   time.Time
}

func (s *Store) renewedLoad(holder string) (lease.Load, bool) {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	l, ok := s.loads[holder]
	if !ok || time.Since(l.at) >= renewedLoadFresh {
		return lease.Load{}, false
	}
	return l.load, true
}

// forgetLoads drops the loads renewals read, after this store acquired or
// released a lease (the holder's count changed).
func (s *Store) forgetLoads() {
	s.loadMu.Lock()
	clear(s.loads)
	s.loadMu.Unlock()
}

// renewGather is how long the first renewal of a group waits for others:
// lease.Held renews on a grid (every third of the time to live, counted
// from the epoch), so a node's leases of one time to live fall due within
// a moment of each other, and renewing each on its own was a Postgres
// transaction (and a ping of the pooled connection) per lease.
const renewGather = 3 * time.Millisecond

// renewGroup sends the renewals queued meanwhile in one statement.
type renewGroup struct{ batch.Group[*renewReq] }

// renewReq is one queued renewal and, once done is closed, its outcome:
// found is false when the lease's token is no longer current.
type renewReq struct {
	l       lease.Lease
	ttl     time.Duration
	expires time.Time
	found   bool
	err     error
	done    chan struct{}
}

func (g *renewGroup) renew(ctx context.Context, s *Store, l lease.Lease, ttl time.Duration) (time.Time, bool, error) {
	r := &renewReq{l: l, ttl: ttl, done: make(chan struct{})}
	g.Add(r, renewGather, s.renewBatch)
	select {
	case <-r.done:
		return r.expires, r.found, r.err
	case <-ctx.Done():
		return time.Time{}, false, ctx.Err()
	}
}

// renewTimeout bounds one group's statement; each caller waits only until
// its own context ends (its lease's deadline).
const renewTimeout = 30 * time.Second

// renewBatch renews the queued leases in one statement, one renewal per
// lease: a later one of the same lease is left for the next statement.
func (s *Store) renewBatch(all []*renewReq) (later []*renewReq) {
	queue := make([]*renewReq, 0, len(all))
	seen := map[string]bool{}
	for _, r := range all {
		if seen[r.l.Name] {
			later = append(later, r)
			continue
		}
		seen[r.l.Name] = true
		queue = append(queue, r)
	}
	names, holders, ttls := make([]string, len(queue)), make([]string, len(queue)), make([]string, len(queue))
	tokens := make([]int64, len(queue))
	for i, r := range queue {
		names[i], tokens[i], holders[i], ttls[i] = r.l.Name, int64(r.l.Token), r.l.Holder, interval(r.ttl)
	}
	ctx, cancel := context.WithTimeout(context.Background(), renewTimeout)
	if !s.renewFailed.Load() {
		ctx = context.WithValue(ctx, unpinged{}, true)
	}
	renewed := map[int]time.Time{}
	rows, err := s.pool.Query(ctx, renewSQL, names, tokens, holders, ttls)
	loads := map[string]lease.Load{}
	if err == nil {
		var (
			i      *int64
			at     *time.Time
			holder *string
			l      lease.Load
		)
		_, err = pgx.ForEachRow(rows, []any{&i, &at, &holder, &l.Nodes, &l.Held, &l.Least}, func() error {
			switch {
			case i != nil && at != nil:
				renewed[int(*i-1)] = *at
			case holder != nil:
				loads[*holder] = l
			}
			return nil
		})
	}
	if err == nil {
		now := time.Now()
		s.loadMu.Lock()
		for h, l := range loads {
			s.loads[h] = seenLoad{load: l, at: now}
		}
		s.loadMu.Unlock()
	}
	cancel()
	s.renewFailed.Store(err != nil)
	for i, r := range queue {
		r.err = err
		r.expires, r.found = renewed[i]
		close(r.done)
	}
	return later
}

// unpinged marks the context of a renewal statement whose pooled
// connection needs no ping (see ShouldPing).
type unpinged struct{}

// ShouldPing is the pgxpool.Config.ShouldPing of the pools this store
// renews on: pgx's own rule (ping a connection idle for more than a
// second before handing it out), except for a renewal statement after a
// renewal that succeeded. Renewals come every third of the time to live,
// so each found its connection idle longer than a second and paid a ping:
// on an idle node, as many round trips as the renewals themselves. A
// renewal that meets a connection the server has closed fails, and
// lease.Held tries again within a quarter of its interval; that retry
// pings, so the pool drops its dead connections before the statement.
func ShouldPing(ctx context.Context, p pgxpool.ShouldPingParams) bool {
	return p.IdleDuration > time.Second && ctx.Value(unpinged{}) == nil
}
