// Package postgres keeps webhook delivery claims in Postgres, so that the
// nodes sharing one database send each delivery from one node at a time.
// Lapsing uses the database's clock alone, so the nodes' clocks may differ.
//
// A claim also ends with the claiming node's process: each Claims holds a
// session-level advisory lock on a connection of its own while it lives, and
// its claims name that lock, so when the process dies (its connection
// closes, or TCP keepalives end it when its machine vanished) another node
// may take its deliveries once they are webhooks.DeadClaimGrace old rather
// than after the claim's TTL.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/pgmigrate"
	"github.com/healthtech/partner-open-platform/webhooks"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*/*.sql
var migrationFiles embed.FS

// migrationLock is the read-model store's schema lock (projections/postgres):
// this part is recorded in the same schema_versions table, so both must
// create and write it under one lock.
const migrationLock int64 = 0x726561646d6f646c

// Claims is webhooks.Claims in the table webhook_delivery_claims.
type Claims struct {
	pool  *pgxpool.Pool
	owned bool // Close closes pool (Open made it)

	// mu guards the session: the connection holding the advisory lock
	// (sessionNamespace, key) that this node's claims name.
	// DeadGrace is how old a dead node's claim must be before another
	// node takes it (webhooks.DeadClaimGrace when zero); set before use.
	DeadGrace time.Duration

	// streams, when set (ReadStreams), reads delivery streams in a
	// claim's round trip.
	streams *streamsQuery
	// rideAppend, when set (RideAppends), makes a context whose append
	// also writes a statement in its transaction (events/postgres WithRider).
	rideAppend func(ctx context.Context, sql string, args []any, done func(bool)) context.Context

	mu      sync.Mutex
	session *pgx.Conn
	key     int32
	checked time.Time
	closed  bool
}

// sessionNamespace is the first key of a claims session's advisory lock
// ("clam"); the second is the random key its claims record.
const sessionNamespace int32 = 0x636c616d

// sessionCheck is how often the session is pinged before a claim, so
// that a broken one is replaced (and its lock taken again) before claims
// name it.
const sessionCheck = time.Second

// sessionParams end the session of a node whose machine vanished without
// closing its connection within about 5 s (keepalives, unacknowledged data).
var sessionParams = map[string]string{
	"tcp_keepalives_idle":     "2",
	"tcp_keepalives_interval": "1",
	"tcp_keepalives_count":    "3",
	"tcp_user_timeout":        "5000",
	"application_name":        "platform webhook claims session",
}

var _ webhooks.Claims = (*Claims)(nil)

// Open connects to url and brings the claims table up to date.
func Open(ctx context.Context, url string) (*Claims, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("webhook claims: %w", err)
	}
	c, err := New(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	c.owned = true
	return c, nil
}

// New brings the claims table up to date over a pool the caller already
// has (a node's read-model pool), so a node keeps one pool per database.
func New(ctx context.Context, pool *pgxpool.Pool) (*Claims, error) {
	files, err := fs.Sub(migrationFiles, "migrations")
	if err == nil {
		s := pgmigrate.Schema{Files: files, Parts: []string{"webhook_claims"}, Table: "schema_versions", Lock: migrationLock}
		err = s.Apply(ctx, pool)
	}
	if err != nil {
		return nil, fmt.Errorf("webhook claims: %w", err)
	}
	return &Claims{pool: pool}, nil
}

// Close ends the session, so this node's claims are free at once, and
// releases the connections of a pool Open made.
func (c *Claims) Close() error {
	c.mu.Lock()
	c.closed = true
	c.dropSession()
	c.mu.Unlock()
	if c.owned {
		c.pool.Close()
	}
	return nil
}

func (c *Claims) deadGrace() time.Duration {
	if c.DeadGrace > 0 {
		return c.DeadGrace
	}
	return webhooks.DeadClaimGrace
}

func (c *Claims) dropSession() {
	if c.session != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = c.session.Close(ctx)
		cancel()
		c.session = nil
	}
}

// sessionKey returns the key of the session's lock, (re)connecting when
// the session is missing or broken: the same key when it is still free (the
// node's earlier claims live on), else a new one.
func (c *Claims) sessionKey(ctx context.Context) (int32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, errors.New("webhook claims: closed")
	}
	if c.session != nil && !c.session.IsClosed() {
		if time.Since(c.checked) < sessionCheck {
			return c.key, nil
		}
		if err := c.session.Ping(ctx); err == nil {
			c.checked = time.Now()
			return c.key, nil
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
	}
	c.dropSession()
	cfg := c.pool.Config().ConnConfig.Copy()
	for k, v := range sessionParams {
		cfg.RuntimeParams[k] = v
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return 0, fmt.Errorf("webhook claims: connect the claims session: %w", err)
	}
	key := c.key
	for range 16 {
		if key == 0 {
			key = rand.Int32() | 1
		}
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, sessionNamespace, key).Scan(&got); err != nil {
			_ = conn.Close(ctx)
			return 0, fmt.Errorf("webhook claims: lock the claims session: %w", err)
		}
		if got {
			c.session, c.key, c.checked = conn, key, time.Now()
			return key, nil
		}
		key = 0 // another live session has it: draw another
	}
	_ = conn.Close(ctx)
	return 0, errors.New("webhook claims: no free session key")
}

// claimSQL inserts a row per free id and takes over rows whose claim
// lapsed, or whose node's session ended and that are DeadGrace old; a row another claim holds is left
// alone and not returned. Ids are de-duplicated (one statement may not
// touch a row twice) and sorted, so concurrent claimers lock rows in one
// order and cannot deadlock.
const claimSQL = `
INSERT INTO webhook_delivery_claims AS c (delivery_id, owner, token, until, session, claimed_at)
SELECT id, $2, $3, now() + $4 * interval '1 microsecond', $5, now()
FROM (SELECT DISTINCT unnest($1::text[]) AS id) ids
ORDER BY id
ON CONFLICT (delivery_id) DO UPDATE
SET owner = excluded.owner, token = excluded.token, until = excluded.until, session = excluded.session,
    claimed_at = excluded.claimed_at
WHERE c.until <= now() OR (c.session IS NOT NULL AND c.claimed_at <= now() - $6 * interval '1 microsecond' AND NOT EXISTS (
    SELECT 1 FROM pg_locks k
    WHERE k.locktype = 'advisory' AND k.granted AND k.objsubid = 2
      AND k.classid = 1668047213::oid AND k.objid = c.session::oid
      AND k.database = (SELECT oid FROM pg_database WHERE datname = current_database())))
RETURNING delivery_id`

// Claim implements webhooks.Claims.
func (c *Claims) Claim(ctx context.Context, owner string, ids []string, ttl time.Duration) ([]webhooks.Claim, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	key, err := c.sessionKey(ctx)
	if err != nil {
		return nil, err
	}
	token := webhooks.NewClaimToken()
	rows, err := c.pool.Query(ctx, claimSQL, ids, owner, token, ttl.Microseconds(), key, c.deadGrace().Microseconds())
	if err != nil {
		return nil, fmt.Errorf("webhook claims: claim: %w", err)
	}
	return scanClaims(rows, token)
}

// releaseSQL deletes the rows of the given claims, each only while it
// still holds the token that was taken.
const releaseSQL = `
DELETE FROM webhook_delivery_claims c
USING unnest($1::text[], $2::text[]) AS r(id, token)
WHERE c.delivery_id = r.id AND c.token = r.token`

// releaseArgs are releaseSQL's arguments, sorted like claims' ids for the
// same lock order.
func releaseArgs(claims []webhooks.Claim) (ids, tokens []string) {
	sorted := slices.SortedFunc(slices.Values(claims), func(a, b webhooks.Claim) int { return strings.Compare(a.DeliveryID, b.DeliveryID) })
	ids, tokens = make([]string, len(sorted)), make([]string, len(sorted))
	for i, cl := range sorted {
		ids[i], tokens[i] = cl.DeliveryID, cl.Token
	}
	return ids, tokens
}

// Release implements webhooks.Claims.
func (c *Claims) Release(ctx context.Context, claims []webhooks.Claim) error {
	if len(claims) == 0 {
		return nil
	}
	ids, tokens := releaseArgs(claims)
	if _, err := c.pool.Exec(ctx, releaseSQL, ids, tokens); err != nil {
		return fmt.Errorf("webhook claims: release: %w", err)
	}
	return nil
}

var _ webhooks.ReleasingClaims = (*Claims)(nil)

// releaseNowaitSQL is releaseSQL that skips the rows another transaction
// has locked (a claimer looking at taking one over) rather than wait, and
// returns the ids it released.
const releaseNowaitSQL = `
WITH l AS (
    SELECT c.delivery_id FROM webhook_delivery_claims c
    JOIN unnest($1::text[], $2::text[]) AS r(id, token) ON c.delivery_id = r.id AND c.token = r.token
    ORDER BY c.delivery_id
    FOR UPDATE OF c SKIP LOCKED)
DELETE FROM webhook_delivery_claims c USING l WHERE c.delivery_id = l.delivery_id
RETURNING c.delivery_id`

// ReleaseAndClaim implements webhooks.ReleasingClaims: both statements go
// in one batch, which Postgres runs as one implicit transaction (one round
// trip, one commit). The claim comes first and is the only statement that
// may wait, taking its rows in id order like every claim, so two nodes
// doing this at once cannot deadlock; the release then skips what it
// would wait for.
func (c *Claims) ReleaseAndClaim(ctx context.Context, release []webhooks.Claim, owner string, ids []string, ttl time.Duration) (claimed, unreleased []webhooks.Claim, err error) {
	if len(release) == 0 {
		claimed, err = c.Claim(ctx, owner, ids, ttl)
		return claimed, nil, err
	}
	if len(ids) == 0 {
		return nil, nil, c.Release(ctx, release)
	}
	key, err := c.sessionKey(ctx)
	if err != nil {
		return nil, nil, err
	}
	token := webhooks.NewClaimToken()
	rids, rtokens := releaseArgs(release)
	b := &pgx.Batch{}
	b.Queue(claimSQL, ids, owner, token, ttl.Microseconds(), key, c.deadGrace().Microseconds())
	b.Queue(releaseNowaitSQL, rids, rtokens)
	br := c.pool.SendBatch(ctx, b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, nil, fmt.Errorf("webhook claims: claim: %w", err)
	}
	if claimed, err = scanClaims(rows, token); err != nil {
		return nil, nil, err
	}
	rows, err = br.Query()
	if err != nil {
		return nil, nil, fmt.Errorf("webhook claims: release: %w", err)
	}
	released := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("webhook claims: release: %w", err)
		}
		released[id] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("webhook claims: release: %w", err)
	}
	// The implicit transaction commits at the batch's end: an error there
	// undoes both.
	if err := br.Close(); err != nil {
		return nil, nil, fmt.Errorf("webhook claims: release and claim: %w", err)
	}
	for _, cl := range release {
		if !released[cl.DeliveryID] {
			unreleased = append(unreleased, cl)
		}
	}
	return claimed, unreleased, nil
}

// scanClaims reads claimSQL's rows as claims with token.
func scanClaims(rows pgx.Rows, token string) ([]webhooks.Claim, error) {
	defer rows.Close()
	var out []webhooks.Claim
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("webhook claims: claim: %w", err)
		}
		out = append(out, webhooks.Claim{DeliveryID: id, Token: token})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("webhook claims: claim: %w", err)
	}
	return out, nil
}

// streamsQuery is the event store's statement for reading several streams
// ($1, text[]) and the reading of its rows by stream (events/postgres
// exports both), and what makes a stored event what the node's event store
// reads (its personal fields decrypted).
type streamsQuery struct {
	sql     string
	collect func(pgx.Rows) (map[string][]events.Recorded, error)
	open    func(context.Context, events.Recorded) (events.Recorded, error)
}

// ReadStreams tells the claims that the event store lives in the same
// database and reads streams with sql, its rows read by collect and each
// event opened by open (privacy.Store.Open: a delivery's body is sealed
// with its subject's key), so that ClaimLoading returns the claimed
// deliveries' streams as the node's event store would read them. Call it
// before use.
func (c *Claims) ReadStreams(sql string, collect func(pgx.Rows) (map[string][]events.Recorded, error), open func(context.Context, events.Recorded) (events.Recorded, error)) {
	c.streams = &streamsQuery{sql: sql, collect: collect, open: open}
}

var _ webhooks.LoadingClaims = (*Claims)(nil)

// ClaimLoading implements webhooks.LoadingClaims: the claim, the release
// of release (if any) and, under ReadStreams, the read of the streams of
// ids go in one batch, which Postgres runs as one implicit transaction
// (one round trip, one commit), each statement with a snapshot of its
// own taken when it starts: the read runs after the claim took its rows,
// so it sees every event committed before the claims it took were free
// to take (a node appends an attempt's outcome before it releases that
// claim). Streams of ids not claimed are read too, and dropped. Without
// ReadStreams it is ReleaseAndClaim.
func (c *Claims) ClaimLoading(ctx context.Context, release []webhooks.Claim, owner string, ids []string, ttl time.Duration) (webhooks.LoadedClaims, error) {
	if c.streams == nil || len(ids) == 0 {
		claimed, unreleased, err := c.ReleaseAndClaim(ctx, release, owner, ids, ttl)
		return webhooks.LoadedClaims{Claimed: claimed, Unreleased: unreleased}, err
	}
	key, err := c.sessionKey(ctx)
	if err != nil {
		return webhooks.LoadedClaims{}, err
	}
	token := webhooks.NewClaimToken()
	streams := make([]string, len(ids))
	for i, id := range ids {
		streams[i] = domain.DeliveryStream(id)
	}
	b := &pgx.Batch{}
	b.Queue(claimSQL, ids, owner, token, ttl.Microseconds(), key, c.deadGrace().Microseconds())
	if len(release) > 0 {
		rids, rtokens := releaseArgs(release)
		b.Queue(releaseNowaitSQL, rids, rtokens)
	}
	b.Queue(c.streams.sql, streams)
	br := c.pool.SendBatch(ctx, b)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return webhooks.LoadedClaims{}, fmt.Errorf("webhook claims: claim: %w", err)
	}
	var out webhooks.LoadedClaims
	if out.Claimed, err = scanClaims(rows, token); err != nil {
		return webhooks.LoadedClaims{}, err
	}
	released := map[string]bool{}
	if len(release) > 0 {
		if rows, err = br.Query(); err != nil {
			return webhooks.LoadedClaims{}, fmt.Errorf("webhook claims: release: %w", err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return webhooks.LoadedClaims{}, fmt.Errorf("webhook claims: release: %w", err)
			}
			released[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return webhooks.LoadedClaims{}, fmt.Errorf("webhook claims: release: %w", err)
		}
	}
	if rows, err = br.Query(); err != nil {
		return webhooks.LoadedClaims{}, fmt.Errorf("webhook claims: read the claimed deliveries: %w", err)
	}
	byStream, err := c.streams.collect(rows)
	if err != nil {
		return webhooks.LoadedClaims{}, fmt.Errorf("webhook claims: read the claimed deliveries: %w", err)
	}
	// The implicit transaction commits at the batch's end: an error there
	// undoes the claim and the release.
	if err := br.Close(); err != nil {
		return webhooks.LoadedClaims{}, fmt.Errorf("webhook claims: claim and read: %w", err)
	}
	for _, cl := range release {
		if !released[cl.DeliveryID] {
			out.Unreleased = append(out.Unreleased, cl)
		}
	}
	out.Streams = make(map[string][]events.Recorded, len(out.Claimed))
	for _, cl := range out.Claimed {
		recs, ok := byStream[domain.DeliveryStream(cl.DeliveryID)]
		if !ok {
			continue
		}
		for i := range recs {
			if recs[i], err = c.streams.open(ctx, recs[i]); err != nil {
				// The claims hold: the attempts read their streams
				// themselves, as without ReadStreams.
				out.Streams = nil
				return out, nil
			}
		}
		out.Streams[cl.DeliveryID] = recs
	}
	return out, nil
}

// RideAppends tells the claims that the event store lives in the same
// database and that ride returns a context whose appends also write a
// statement (one bool row) in their own transaction, reporting its value
// once committed (events/postgres WithRider): ClaimWithAppend then claims
// in the append's transaction. Call it before use.
func (c *Claims) RideAppends(ride func(ctx context.Context, sql string, args []any, done func(bool)) context.Context) {
	c.rideAppend = ride
}

var _ webhooks.AppendClaims = (*Claims)(nil)

// claimWithAppendSQL is claimSQL reduced to whether it took every id.
const claimWithAppendSQL = `WITH c AS (` + claimSQL + `)
SELECT count(*) = (SELECT count(DISTINCT id) FROM unnest($1::text[]) AS id) FROM c`

// ClaimWithAppend implements webhooks.AppendClaims under RideAppends. The
// claims name this node's claims session, as Claim's do, so they end with
// the node's process as those do.
func (c *Claims) ClaimWithAppend(ctx context.Context, owner string, ids []string, ttl time.Duration) (context.Context, []webhooks.Claim, func() bool) {
	if c.rideAppend == nil || len(ids) == 0 {
		return ctx, nil, nil
	}
	key, err := c.sessionKey(ctx)
	if err != nil {
		return ctx, nil, nil
	}
	token := webhooks.NewClaimToken()
	claims := make([]webhooks.Claim, len(ids))
	for i, id := range ids {
		claims[i] = webhooks.Claim{DeliveryID: id, Token: token}
	}
	var all atomic.Bool
	args := []any{ids, owner, token, ttl.Microseconds(), key, c.deadGrace().Microseconds()}
	return c.rideAppend(ctx, claimWithAppendSQL, args, all.Store), claims, all.Load
}

// releaseWithAppendSQL is releaseNowaitSQL reduced to whether it released
// every claim: in an append's transaction, which holds the log's append
// lock, it must not wait for a row a claimer has locked.
const releaseWithAppendSQL = `WITH r AS (` + releaseNowaitSQL + `)
SELECT count(*) = cardinality($1::text[]) FROM r`

// ReleaseWithAppend implements webhooks.AppendClaims under RideAppends.
func (c *Claims) ReleaseWithAppend(ctx context.Context, claims []webhooks.Claim) (context.Context, func() bool) {
	if c.rideAppend == nil || len(claims) == 0 {
		return ctx, nil
	}
	ids, tokens := releaseArgs(claims)
	var all atomic.Bool
	return c.rideAppend(ctx, releaseWithAppendSQL, []any{ids, tokens}, all.Store), all.Load
}
