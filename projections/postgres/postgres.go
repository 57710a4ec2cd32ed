// Package postgres is the read-model store for deployments that keep their
// read models in PostgreSQL, so that several query-API processes can share
// them and a restart does not have to replay the whole log.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/lease"
	leasepg "github.com/healthtech/partner-open-platform/internal/lease/postgres"
	"github.com/healthtech/partner-open-platform/internal/nonces"
	"github.com/healthtech/partner-open-platform/projections"
)

// Store implements projections.UserStore, DeliveryStore, ReportStore,
// NonceStore, OrderStore, BenefitStore and AuditStore on a pgx connection pool.
//
// An Update is one transaction. The writes fn makes are queued and sent as
// pipelined batches, so a run of writes costs one round trip however many
// events the projector applied; a Tx read first sends what is queued.
// Checkpoints keep positions in bigint columns holding the uint64's bits (see
// migrations/0001_channel_users.sql); deliveries, whose positions SQL orders,
// keep them in numeric(20,0) (see migrations/0003_webhook_deliveries.sql).
type Store struct {
	pool *pgxpool.Pool
	// fenceIdle bounds how long a fenced write transaction may sit idle.
	fenceIdle time.Duration
	// watch serves Watch: one LISTEN connection for the node.
	watch watcher
	// progress gathers concurrent Progress reads into one statement.
	progress progressGroup
	// announce groups the owners' announcements into one statement.
	announce announcer
	// instance names this Store in its listener's greeting, so that it
	// tells its own greeting from other nodes'.
	instance string
	// others says another node listens for announcements (see peers).
	others peers
	// head reads the log's head inside Snapshot's round trip (SeeHead).
	head *headQuery
	// routeClaimAtHead is BindRouteAndClaimAtHead's statement for head.
	routeClaimAtHead string
	// rideAppend, when set, makes a context whose event appends write a
	// statement in their own transaction (RideAppends).
	rideAppend func(ctx context.Context, sql string, args []any, done func(bool)) context.Context
	// bound remembers the signature bindings seen to hold (Bind, Snapshot).
	bound boundCache
	// binds groups concurrent Binds into one statement per round trip.
	binds binder
	// reads sends Snapshot's statements, pipelining concurrent ones.
	reads pipeReader
	// snapSQL caches Snapshot's four statements for the head they read.
	snapSQL atomic.Pointer[snapshotSQL]
	// pullSQL caches PullReport's statement for the head it reads.
	pullSQL atomic.Pointer[pullSQL]
	// pullHead, when set, is the head statement PullReport reads in place
	// of head's (SeePullHead).
	pullHead string
	// pruneNow decides whether a Snapshot that records a binding prunes
	// expired bindings first; nil is one in pruneEvery, at random (tests
	// set it to exercise the prune inside the snapshot's round trip).
	pruneNow func() bool
	// single writes every row with a statement of its own and sends the
	// queued writes before every read, as the store did before it wrote
	// runs of rows at once (rows.go): the reference the tests compare the
	// runs' tables with.
	single bool
}

var (
	_ projections.UserStore     = (*Store)(nil)
	_ projections.UserTx        = (*tx)(nil)
	_ projections.DeliveryStore = (*Store)(nil)
	_ projections.DeliveryTx    = (*tx)(nil)
	_ projections.ReportStore   = (*Store)(nil)
	_ projections.ReportTx      = (*tx)(nil)
	_ nonces.Store              = (*Store)(nil)
	_ projections.OrderStore    = (*Store)(nil)
	_ projections.OrderTx       = (*tx)(nil)
	_ projections.BenefitStore  = (*Store)(nil)
	_ projections.BenefitTx     = (*tx)(nil)
	_ projections.AuditStore    = (*Store)(nil)
	_ projections.AuditTx       = (*tx)(nil)
)

// Open connects to the database at url (a postgres:// URL or key=value DSN)
// and brings its schema up to date, so a process can start against an empty
// database or one another version already migrated.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("projections/postgres: connect: %w", err)
	}
	// A node's one pool for this database: the read models, the reads, the
	// leases, delivery claims, rate limits and the relay checkpoint share
	// it. pgx's default (max(4, CPUs)) suits one of them, not all; a
	// pool_max_conns in the URL still decides.
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = max(cfg.MaxConns, 16)
	}
	// The leases renew on this pool (see leasepg.ShouldPing).
	cfg.ShouldPing = leasepg.ShouldPing
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("projections/postgres: connect: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	// The leases writes are fenced on live in the same database.
	if err := leasepg.Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return &Store{pool: pool, fenceIdle: lease.DefaultTTL, instance: strconv.FormatUint(rand.Uint64(), 36)}, nil
}

// SetLeaseTTL sets the lease TTL the cluster runs with: a fenced write
// transaction left idle longer (its node paused) is ended by the server,
// so it cannot hold up a takeover.
func (s *Store) SetLeaseTTL(ttl time.Duration) {
	if ttl > 0 {
		s.fenceIdle = ttl
	}
}

// Pool is the store's connection pool, for adapters that keep their
// tables beside the read models (the leases the writes are fenced on).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close stops the notification listener and releases the pool's connections.
func (s *Store) Close() error {
	s.watch.close()
	s.pool.Close()
	return nil
}

// Checkpoint returns the named projection's position, zero if it never ran.
func (s *Store) Checkpoint(ctx context.Context, projection string) (events.Position, error) {
	var commit, prepare int64
	err := s.pool.QueryRow(ctx,
		`SELECT commit_pos, prepare_pos FROM checkpoints WHERE projection = $1`,
		projection).Scan(&commit, &prepare)
	if errors.Is(err, pgx.ErrNoRows) {
		return events.Position{}, nil
	}
	if err != nil {
		return events.Position{}, fmt.Errorf("projections/postgres: checkpoint %q: %w", projection, err)
	}
	return events.Position{Commit: uint64(commit), Prepare: uint64(prepare)}, nil
}

// advanceCheckpoint moves a checkpoint forward, never back: the guard
// compares positions as uint64 (flipping the sign bit of the stored bigint
// orders the whole uint64 range as Go does), and a move back calls
// checkpoint_backwards (migrations/common/0003), which fails the
// transaction on the server with checkpointBackwards; the apply reports it
// as ErrCheckpointBackwards. CASE evaluates the call only for a move back,
// and being volatile it is never evaluated at planning. The guard is in the
// upsert's own SET because in its WHERE clause, with the call in a CTE
// around it for an upsert that returns no row, the statement would cost the
// backend about 30,000 more instructions (callgrind), an eighth of a
// minimal apply's.
const advanceCheckpoint = `
INSERT INTO checkpoints AS c (projection, commit_pos, prepare_pos, updated_at)
VALUES ($1, $2, $3, now())
ON CONFLICT (projection) DO UPDATE SET
    commit_pos = CASE
        WHEN (c.commit_pos # (-9223372036854775807 - 1), c.prepare_pos # (-9223372036854775807 - 1))
          <= (EXCLUDED.commit_pos # (-9223372036854775807 - 1), EXCLUDED.prepare_pos # (-9223372036854775807 - 1))
        THEN EXCLUDED.commit_pos
        ELSE checkpoint_backwards($1) END,
    prepare_pos = EXCLUDED.prepare_pos,
    updated_at = EXCLUDED.updated_at`

// checkpointBackwards is the SQLSTATE of a refused checkpoint move, in a
// class the SQL standard leaves to implementations (first letter I-Z)
// and Postgres does not use.
const checkpointBackwards = "K0001"

// Update runs fn inside one transaction, then writes the checkpoint in it
// and commits. fn's writes are queued and sent as pipelined batches: before
// each Tx read (so it sees them) and with the checkpoint at the end.
func (s *Store) Update(ctx context.Context, projection string, pos events.Position, fn func(projections.UserTx) error) error {
	return s.update(ctx, projection, pos, func(t *tx) error { return fn(t) })
}

// rollbackTimeout bounds the ROLLBACK of a failed apply, whose own
// context may have ended: a connection that does not answer in time is
// dropped by the pool instead.
const rollbackTimeout = 5 * time.Second

// update is Update and UpdateDeliveries: one transaction, one checkpoint.
//
// The transaction takes one round trip when fn only writes: BEGIN, the
// lease's fence, fn's writes, the checkpoint and COMMIT in one pipeline.
// The fence and the checkpoint fail on the server when they do not hold
// (the lease is no longer current, the checkpoint would move back), which
// aborts the transaction and skips the rest of the pipeline, its COMMIT
// included. A read of fn's sends what is queued first, so it runs inside
// the transaction and sees fn's writes; it is a round trip of its own.
func (s *Store) update(ctx context.Context, projection string, pos events.Position, fn func(*tx) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("projections/postgres: update %q to %v: %w", projection, pos, err)
	}
	// A connection handed back inside a transaction (a failure below that
	// did not end it) is closed by the pool, never reused.
	defer conn.Release()
	t := &tx{db: conn.Conn(), batch: &pgx.Batch{}, single: s.single, unsent: true}
	defer func() { t.db = nil }() // a Tx kept past its Update must not write
	t.batch.Queue("BEGIN")
	// Under a lease, the fence goes first, in the opening round trip: the
	// transaction commits only while the lease is this writer's.
	if l, ok := lease.FenceFrom(ctx); ok {
		leasepg.QueueFence(t.batch, l, s.fenceIdle)
	}
	fnErr := fn(t)
	if fnErr == nil && t.err != nil { // fn went on after a failed flush
		err = t.err
	}
	if fnErr == nil && err == nil {
		t.refreshSnapshots()
		// Bit-preserving conversion: see the Store doc.
		t.queue(advanceCheckpoint, projection, int64(pos.Commit), int64(pos.Prepare))
		// A transaction already aborted (fn went on after a failed read)
		// fails the checkpoint's statement, so COMMIT never answers for it.
		t.queue("COMMIT")
		err = t.flush(ctx)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == checkpointBackwards {
			err = fmt.Errorf("%w: %s to %v", subscribe.ErrCheckpointBackwards, projection, pos)
		}
	}
	if (fnErr != nil || err != nil) && !t.unsent {
		// Ends an open or failed transaction; if even that fails the
		// connection is not idle and the pool drops it on Release.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		_, _ = conn.Exec(rctx, "ROLLBACK")
		cancel()
	}
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return fmt.Errorf("projections/postgres: update %q to %v: %w", projection, pos, err)
	}
	return nil
}

// readModelTables are the tables of each read model, truncated
// together when the read model is rebuilt.
var readModelTables = map[projections.ReadModel]string{
	projections.ReadModelUsers:      "users, family_groups, family_members, user_snapshots",
	projections.ReadModelDeliveries: "webhook_deliveries, webhook_attempts",
	projections.ReadModelReports:    "reports",
	projections.ReadModelOrders:     "goods, orders, order_items",
	projections.ReadModelBenefits:   "benefit_items, service_providers, cards, card_items, fulfillments",
	projections.ReadModelAudit:      "audit_facts",
}

// UpdateReports is the reports read model's Update.
func (s *Store) UpdateReports(ctx context.Context, projection string, pos events.Position, fn func(projections.ReportTx) error) error {
	return s.update(ctx, projection, pos, func(t *tx) error { return fn(t) })
}

// UpdateOrders is the orders read model's Update.
func (s *Store) UpdateOrders(ctx context.Context, projection string, pos events.Position, fn func(projections.OrderTx) error) error {
	return s.update(ctx, projection, pos, func(t *tx) error { return fn(t) })
}

// UpdateBenefits is the benefits read model's Update.
func (s *Store) UpdateBenefits(ctx context.Context, projection string, pos events.Position, fn func(projections.BenefitTx) error) error {
	return s.update(ctx, projection, pos, func(t *tx) error { return fn(t) })
}

// ResetReadModel empties one read model's tables and its checkpoint in one
// transaction, for its rebuild; the other read models keep serving.
func (s *Store) ResetReadModel(ctx context.Context, f projections.ReadModel) error {
	tables, ok := readModelTables[f]
	if !ok {
		return fmt.Errorf("projections/postgres: no read-model family %q", f)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(db pgx.Tx) error {
		if l, ok := lease.FenceFrom(ctx); ok {
			if err := leasepg.Fence(ctx, db, l, s.fenceIdle); err != nil {
				return err
			}
		}
		if _, err := db.Exec(ctx, `TRUNCATE `+tables); err != nil {
			return err
		}
		if _, err := db.Exec(ctx, `DELETE FROM checkpoints WHERE projection = $1`, string(f)); err != nil {
			return err
		}
		return s.nextGeneration(ctx, db, string(f))
	})
	if err != nil {
		return fmt.Errorf("projections/postgres: reset %s: %w", f, err)
	}
	return nil
}

// Reset empties every read model and checkpoint in one statement (and so one
// transaction). The nonces stay: the log cannot rebuild them.
func (s *Store) Reset(ctx context.Context) error {
	all := "checkpoints"
	for _, f := range projections.ReadModels {
		all += ", " + readModelTables[f]
	}
	if _, err := s.pool.Exec(ctx, `TRUNCATE `+all); err != nil {
		return fmt.Errorf("projections/postgres: reset: %w", err)
	}
	return nil
}

// ---- users ----

const userColumns = `app_id, open_user_id, channel_user_id, name, nickname, gender,
    avatar, phone, email, birth_date, status, registered_at, updated_at`

func scanUser(row pgx.Row) (projections.User, error) {
	var u projections.User
	err := row.Scan(&u.AppID, &u.OpenUserID, &u.ChannelUserID, &u.Name, &u.Nickname, &u.Gender,
		&u.Avatar, &u.Phone, &u.Email, &u.BirthDate, &u.Status, &u.RegisteredAt, &u.UpdatedAt)
	u.RegisteredAt, u.UpdatedAt = u.RegisteredAt.UTC(), u.UpdatedAt.UTC()
	return u, err
}

// User returns the user if it belongs to appID.
func (s *Store) User(ctx context.Context, appID, openUserID int64) (projections.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx,
		`SELECT `+userColumns+` FROM users WHERE open_user_id = $1 AND app_id = $2`,
		openUserID, appID))
	return u, notFound(err, "user %d of app %d", openUserID, appID)
}

// UserByChannelID finds a user by the partner's own id within appID.
func (s *Store) UserByChannelID(ctx context.Context, appID int64, channelUserID string) (projections.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx,
		`SELECT `+userColumns+` FROM users WHERE app_id = $1 AND channel_user_id = $2`,
		appID, channelUserID))
	return u, notFound(err, "channel user %q of app %d", channelUserID, appID)
}

// ---- groups ----

const groupColumns = `g.app_id, g.open_user_id, g.family_group_id, g.app_group_id, g.name, g.dissolved,
    (SELECT count(*) FROM family_members m
      WHERE m.family_group_id = g.family_group_id AND NOT m.deleted),
    g.created_at, g.updated_at`

func scanGroup(row pgx.Row) (projections.Group, error) {
	var g projections.Group
	err := row.Scan(&g.AppID, &g.OpenUserID, &g.FamilyGroupID, &g.AppGroupID, &g.Name, &g.Dissolved,
		&g.MemberCount, &g.CreatedAt, &g.UpdatedAt)
	g.CreatedAt, g.UpdatedAt = g.CreatedAt.UTC(), g.UpdatedAt.UTC()
	return g, err
}

// Groups returns the user's non-dissolved groups with their live member counts.
func (s *Store) Groups(ctx context.Context, appID, openUserID int64) ([]projections.Group, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+groupColumns+` FROM family_groups g
WHERE g.open_user_id = $1 AND g.app_id = $2 AND NOT g.dissolved
ORDER BY g.family_group_id`, openUserID, appID)
	gs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (projections.Group, error) {
		return scanGroup(row)
	})
	if err != nil {
		return nil, fmt.Errorf("projections/postgres: groups of user %d: %w", openUserID, err)
	}
	return gs, nil
}

// ---- members ----

const memberColumns = `app_id, open_user_id, member_id, app_user_id, app_group_id, family_group_id,
    name, relationship, gender, birth_date, phone, id_type, id_number, height, weight,
    blood_type, is_default, deleted, deleted_at, updated_at`

func scanMember(row pgx.Row) (projections.Member, error) {
	var m projections.Member
	err := row.Scan(&m.AppID, &m.OpenUserID, &m.MemberID, &m.AppUserID, &m.AppGroupID, &m.FamilyGroupID,
		&m.Name, &m.Relationship, &m.Gender, &m.BirthDate, &m.Phone, &m.IDType, &m.IDNumber, &m.Height, &m.Weight,
		&m.BloodType, &m.IsDefault, &m.Deleted, &m.DeletedAt, &m.UpdatedAt)
	if m.DeletedAt != nil {
		*m.DeletedAt = m.DeletedAt.UTC()
	}
	m.UpdatedAt = m.UpdatedAt.UTC()
	return m, err
}

// Members returns the user's non-deleted members in id order, only those
// updated strictly after updatedAfter when it is non-zero.
func (s *Store) Members(ctx context.Context, appID, openUserID int64, updatedAfter time.Time) ([]projections.Member, error) {
	var rows pgx.Rows
	// Two statements rather than "$3 IS NULL OR ...", so each gets a plan
	// that uses the (open_user_id, updated_at) index as it should.
	if updatedAfter.IsZero() {
		rows, _ = s.pool.Query(ctx, `SELECT `+memberColumns+` FROM family_members
WHERE open_user_id = $1 AND app_id = $2 AND NOT deleted
ORDER BY member_id`, openUserID, appID)
	} else {
		rows, _ = s.pool.Query(ctx, `SELECT `+memberColumns+` FROM family_members
WHERE open_user_id = $1 AND app_id = $2 AND NOT deleted AND updated_at > $3
ORDER BY member_id`, openUserID, appID, updatedAfter)
	}
	ms, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (projections.Member, error) {
		return scanMember(row)
	})
	if err != nil {
		return nil, fmt.Errorf("projections/postgres: members of user %d: %w", openUserID, err)
	}
	return ms, nil
}

// Member returns one member row even when soft-deleted, so that tests and
// tools can see what DeleteMember recorded.
func (s *Store) Member(ctx context.Context, appID, memberID int64) (projections.Member, error) {
	m, err := scanMember(s.pool.QueryRow(ctx,
		`SELECT `+memberColumns+` FROM family_members WHERE member_id = $1 AND app_id = $2`,
		memberID, appID))
	return m, notFound(err, "member %d of app %d", memberID, appID)
}

func notFound(err error, format string, args ...any) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: "+format, append([]any{projections.ErrNotFound}, args...)...)
	default:
		return fmt.Errorf("projections/postgres: "+format+": %w", append(args, err)...)
	}
}

// ---- writes ----

// opt dereferences an optional field when it is queued (NULL for nil), so a
// caller reusing its struct after PutX cannot change what is sent.
func opt[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// tx is one Update's transaction: writes are queued in batch and sent
// before the next read or at commit.
type tx struct {
	db    *pgx.Conn // in the transaction once unsent is false
	batch *pgx.Batch
	err   error // the first failed flush; the transaction is then aborted
	// The users whose snapshot documents this transaction must refresh
	// (refreshSnapshots): owners written, and members deleted by id.
	touchedUsers, deletedMembers []int64
	// fresh are the users this transaction registered whose documents it
	// builds itself (freshdoc.go).
	fresh map[int64]*freshUser
	// runs are the open runs of rows (rows.go), in the order they opened.
	runs []*rowRun
	// users and deliveries are the rows this transaction wrote, as a read
	// of them returns them (rows.go); a nil user was deleted.
	users      map[int64]*projections.User
	deliveries map[string]projections.Delivery
	// single: see Store.single.
	single bool
	// unsent: the batch holds the transaction's BEGIN (and the lease's
	// fence), which a read must send first.
	unsent bool
}

var errTxDone = errors.New("projections/postgres: Tx used after its Update returned")

func (t *tx) check(ctx context.Context) error {
	switch {
	case t.db == nil:
		return errTxDone
	case t.err != nil:
		return t.err
	}
	return ctx.Err()
}

// flush sends the queued writes in one round trip.
func (t *tx) flush(ctx context.Context) error {
	if t.err != nil {
		return t.err
	}
	t.endRuns()
	if t.batch.Len() == 0 {
		return t.err
	}
	b := t.batch
	t.batch = &pgx.Batch{}
	t.unsent = false
	if err := t.db.SendBatch(ctx, b).Close(); err != nil {
		t.err = fmt.Errorf("projections/postgres: write: %w", err)
	}
	return t.err
}

// queryRow reads one row in the transaction. With send, what the batch
// holds goes first (the transaction's BEGIN, the lease's fence, queued
// writes the read must see), in the read's own round trip; without, the
// queued writes wait for the next flush.
func (t *tx) queryRow(ctx context.Context, send bool, sql string, args ...any) pgx.Row {
	return &txRow{t: t, ctx: ctx, send: send, sql: sql, args: args}
}

// txRow is queryRow's row, read when it is scanned.
type txRow struct {
	t    *tx
	ctx  context.Context
	send bool
	sql  string
	args []any
}

func (r *txRow) Scan(dest ...any) error {
	t := r.t
	if t.err != nil {
		return t.err
	}
	if r.send {
		t.endRuns()
	}
	if !r.send || t.batch.Len() == 0 {
		return t.db.QueryRow(r.ctx, r.sql, r.args...).Scan(dest...)
	}
	// A row not found is the read's answer, not a failed transaction.
	var scanned error
	t.batch.Queue(r.sql, r.args...).QueryRow(func(row pgx.Row) error {
		if scanned = row.Scan(dest...); errors.Is(scanned, pgx.ErrNoRows) {
			return nil
		}
		return scanned
	})
	if err := t.flush(r.ctx); err != nil {
		return err
	}
	return scanned
}

// Group reads a group, dissolved or not, as this transaction sees it.
func (t *tx) Group(ctx context.Context, familyGroupID int64) (projections.Group, error) {
	if err := t.check(ctx); err != nil {
		return projections.Group{}, err
	}
	g, err := scanGroup(t.queryRow(ctx, true, `SELECT `+groupColumns+` FROM family_groups g
WHERE g.family_group_id = $1`, familyGroupID))
	return g, notFound(err, "group %d", familyGroupID)
}

const upsertUser = `
INSERT INTO users (` + userColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT (open_user_id) DO UPDATE SET
    app_id = EXCLUDED.app_id,
    channel_user_id = EXCLUDED.channel_user_id,
    name = EXCLUDED.name,
    nickname = EXCLUDED.nickname,
    gender = EXCLUDED.gender,
    avatar = EXCLUDED.avatar,
    phone = EXCLUDED.phone,
    email = EXCLUDED.email,
    birth_date = EXCLUDED.birth_date,
    status = EXCLUDED.status,
    registered_at = EXCLUDED.registered_at,
    updated_at = EXCLUDED.updated_at`

// userRows writes runs of users (rows.go).
var userRows = rowStmt{table: "users", one: upsertUser, many: unnestOf(upsertUser,
	"bigint", "bigint", "text", "text", "text", "text", "text", "text", "text", "text", "text", "timestamptz", "timestamptz")}

func (t *tx) PutUser(ctx context.Context, u projections.User) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	kept := t.writeUser(u)
	// The document holds only the groups of the user's app (the view's
	// join), which the kept groups are judged by.
	if f := t.fresh[u.OpenUserID]; f != nil && f.user.AppID == kept.AppID {
		f.user = kept
	} else {
		t.touchUser(u.OpenUserID)
	}
	return nil
}

// writeUser queues the user's row and returns it as a read returns it.
func (t *tx) writeUser(u projections.User) projections.User {
	t.queueRow(&userRows, u.OpenUserID, u.AppID, u.OpenUserID, u.ChannelUserID, u.Name, opt(u.Nickname), u.Gender,
		opt(u.Avatar), opt(u.Phone), opt(u.Email), opt(u.BirthDate), u.Status, u.RegisteredAt, u.UpdatedAt)
	kept := asReadUser(u)
	t.wroteUser(u.OpenUserID, &kept)
	return asReadUser(kept)
}

const upsertGroup = `
INSERT INTO family_groups (app_id, open_user_id, family_group_id, app_group_id, name, dissolved, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (family_group_id) DO UPDATE SET
    app_id = EXCLUDED.app_id,
    open_user_id = EXCLUDED.open_user_id,
    app_group_id = EXCLUDED.app_group_id,
    name = EXCLUDED.name,
    dissolved = EXCLUDED.dissolved,
    created_at = EXCLUDED.created_at,
    updated_at = EXCLUDED.updated_at`

func (t *tx) PutGroup(ctx context.Context, g projections.Group) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	t.touchUser(g.OpenUserID)
	t.queue(upsertGroup, g.AppID, g.OpenUserID, g.FamilyGroupID, g.AppGroupID, g.Name, g.Dissolved,
		g.CreatedAt, g.UpdatedAt)
	return nil
}

// nameGroup inserts a new group as given; an existing one keeps everything
// but its name and updated_at (projections' FamilyGroupUpserted).
const nameGroup = `
INSERT INTO family_groups (app_id, open_user_id, family_group_id, app_group_id, name, dissolved, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, false, $6, $7)
ON CONFLICT (family_group_id) DO UPDATE SET
    name = EXCLUDED.name,
    updated_at = EXCLUDED.updated_at`

// nameGroupRows writes runs of nameGroup (rows.go).
var nameGroupRows = rowStmt{table: "family_groups", one: nameGroup, many: `
INSERT INTO family_groups (app_id, open_user_id, family_group_id, app_group_id, name, dissolved, created_at, updated_at)
SELECT u.app_id, u.open_user_id, u.family_group_id, u.app_group_id, u.name, false, u.created_at, u.updated_at
FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::timestamptz[], $7::timestamptz[])
    AS u(app_id, open_user_id, family_group_id, app_group_id, name, created_at, updated_at)
ON CONFLICT (family_group_id) DO UPDATE SET
    name = EXCLUDED.name,
    updated_at = EXCLUDED.updated_at`}

// NameGroup queues a group upsert that needs no read of the group (see
// projections' groupNamer), so a batch of registers is one round trip.
func (t *tx) NameGroup(ctx context.Context, g projections.Group) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	if f := t.fresh[g.OpenUserID]; f != nil && f.user.AppID == g.AppID {
		f.nameGroup(g)
	} else {
		t.touchUser(g.OpenUserID)
	}
	t.queueRow(&nameGroupRows, g.FamilyGroupID, g.AppID, g.OpenUserID, g.FamilyGroupID, g.AppGroupID, g.Name, g.CreatedAt, g.UpdatedAt)
	return nil
}

// upsertMember writes the member's row and, with it, the member's part of
// its owner's snapshot document (snapshot_json, migrations/snapshots 0002:
// the same object as the function snapshot_member_json builds from a row,
// stamped with the updated_at it was built for), so a refresh concatenates
// parts instead of building every member's JSON.
const upsertMember = `
INSERT INTO family_members (` + memberColumns + `, snapshot_json, snapshot_json_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
    json_build_object(
        'id', $3::bigint, 'au', $4::text, 'ag', $5::bigint, 'fg', $6::bigint,
        'n', $7::text, 'r', $8::text, 'g', $9::text, 'b', $10::text, 'p', $11::text,
        'it', $12::text, 'in', $13::text, 'h', $14::bigint, 'w', $15::bigint, 'bt', $16::text,
        'd', $17::boolean,
        't', (extract(epoch FROM $20::timestamptz) * 1000000)::bigint)::text,
    $20)
ON CONFLICT (member_id) DO UPDATE SET
    snapshot_json = EXCLUDED.snapshot_json,
    snapshot_json_at = EXCLUDED.snapshot_json_at,
    app_id = EXCLUDED.app_id,
    open_user_id = EXCLUDED.open_user_id,
    app_user_id = EXCLUDED.app_user_id,
    app_group_id = EXCLUDED.app_group_id,
    family_group_id = EXCLUDED.family_group_id,
    name = EXCLUDED.name,
    relationship = EXCLUDED.relationship,
    gender = EXCLUDED.gender,
    birth_date = EXCLUDED.birth_date,
    phone = EXCLUDED.phone,
    id_type = EXCLUDED.id_type,
    id_number = EXCLUDED.id_number,
    height = EXCLUDED.height,
    weight = EXCLUDED.weight,
    blood_type = EXCLUDED.blood_type,
    is_default = EXCLUDED.is_default,
    deleted = EXCLUDED.deleted,
    deleted_at = EXCLUDED.deleted_at,
    updated_at = EXCLUDED.updated_at`

// memberRows writes runs of members (rows.go): upsertMember's document
// built from each row's columns, typed as upsertMember casts its
// parameters, so that it is the same text.
var memberRows = rowStmt{table: "family_members", one: upsertMember, many: `
INSERT INTO family_members (` + memberColumns + `, snapshot_json, snapshot_json_at)
SELECT u.*,
    json_build_object(
        'id', u.member_id, 'au', u.app_user_id, 'ag', u.app_group_id, 'fg', u.family_group_id,
        'n', u.name, 'r', u.relationship, 'g', u.gender, 'b', u.birth_date, 'p', u.phone,
        'it', u.id_type, 'in', u.id_number, 'h', u.height, 'w', u.weight, 'bt', u.blood_type,
        'd', u.is_default,
        't', (extract(epoch FROM u.updated_at) * 1000000)::bigint)::text,
    u.updated_at
FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::bigint[], $6::bigint[],
    $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::bigint[], $15::bigint[],
    $16::text[], $17::boolean[], $18::boolean[], $19::timestamptz[], $20::timestamptz[])
    AS u(` + memberColumns + `)
` + upsertMember[strings.Index(upsertMember, "ON CONFLICT"):]}

func (t *tx) PutMember(ctx context.Context, m projections.Member) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	t.touchUser(m.OpenUserID)
	t.queueRow(&memberRows, m.MemberID, m.AppID, m.OpenUserID, m.MemberID, m.AppUserID, m.AppGroupID, m.FamilyGroupID,
		m.Name, m.Relationship, opt(m.Gender), opt(m.BirthDate), opt(m.Phone), opt(m.IDType), opt(m.IDNumber),
		opt(m.Height), opt(m.Weight), opt(m.BloodType), m.IsDefault, m.Deleted, opt(m.DeletedAt), m.UpdatedAt)
	return nil
}

// EraseUser deletes the user's rows (members, groups, user).
func (t *tx) EraseUser(ctx context.Context, openUserID int64) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	t.touchUser(openUserID)
	t.queue(`DELETE FROM family_members WHERE open_user_id = $1`, openUserID)
	t.queue(`DELETE FROM family_groups WHERE open_user_id = $1`, openUserID)
	t.queue(`DELETE FROM users WHERE open_user_id = $1`, openUserID)
	t.wroteUser(openUserID, nil)
	// The document goes with the rows, before the refresh at the end of
	// the transaction writes the others, so that a channel id freed and
	// taken in one transaction never collides. Only an erasure removes a
	// user, so no other transaction pays for a stale-document check (a
	// DELETE over every touched user took 4 ms per member-upsert batch
	// under load).
	t.queue(`DELETE FROM user_snapshots WHERE open_user_id = $1`, openUserID)
	return nil
}

// MarkErased records the position of an erasure the users read model applied:
// the deleted rows stay in the files until the erasure purge, which waits
// for every read model to pass this position, rewrites them.
func (t *tx) MarkErased(ctx context.Context, pos events.Position) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	t.queue(markErased, int64(pos.Commit), int64(pos.Prepare))
	return nil
}

func (t *tx) DeleteMember(ctx context.Context, memberID int64, at time.Time) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	t.deletedMembers = append(t.deletedMembers, memberID)
	t.queue(`UPDATE family_members SET deleted = true, deleted_at = $2, updated_at = $2 WHERE member_id = $1`,
		memberID, at)
	return nil
}
