package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
	ratelimitpg "github.com/healthtech/partner-open-platform/internal/ratelimit/postgres"
	"github.com/healthtech/partner-open-platform/projections"
)

// headQuery is the event store's own statement for its head and the
// conversion of its result to a position (events/postgres exports both).
type headQuery struct {
	sql      string
	position func(int64) events.Position
}

// SeeHead tells the store that the event store lives in the same database
// and reads its head with sql (one bigint) converted by position, so that
// Snapshot returns the head in the same round trip as the rows instead of
// the query side asking the event store first. Call it before serving.
func (s *Store) SeeHead(sql string, position func(int64) events.Position) {
	s.head = &headQuery{sql: sql, position: position}
	s.routeClaimAtHead = bindRouteAndClaimAtHeadQuery(s.head)
}

// SeesHead reports whether Snapshot returns the log's head (SeeHead).
func (s *Store) SeesHead() bool { return s.head != nil }

// bindCTE records a binding only when none holds yet, as one statement's
// common table expressions: cur is the binding this statement's snapshot
// sees unexpired, ins runs bindQuery's upsert only when cur is empty. A
// binding never changes before it expires (bindQuery takes over expired
// rows only, the prune deletes expired rows only), so one seen unexpired
// in any snapshot is the value that holds; one not seen is written with
// bindQuery's conflict lock, which sees rows committed since. The common
// case, a read whose signature (one per app and second for bodyless reads)
// another read already bound, thus writes nothing and commits no WAL.
const bindCTE = `WITH cur AS (
    SELECT value, expires_at FROM nonce_bindings WHERE scope = $1 AND key = $2 AND expires_at > $6),
ins AS (
    INSERT INTO nonce_bindings AS b (scope, key, value, claim, expires_at)
    SELECT $1, $2, $3, $4, $5 WHERE NOT EXISTS (SELECT 1 FROM cur)
    ON CONFLICT (scope, key) DO UPDATE SET
        value      = CASE WHEN b.expires_at <= $6 THEN EXCLUDED.value ELSE b.value END,
        claim      = CASE WHEN b.expires_at <= $6 THEN EXCLUDED.claim ELSE b.claim END,
        expires_at = CASE WHEN b.expires_at <= $6 THEN EXCLUDED.expires_at ELSE b.expires_at END
    RETURNING b.value, b.expires_at)
`

// Snapshot reads a user's snapshot in one statement: the users read model's
// checkpoint (and the log's head under SeeHead) and the user's document in
// user_snapshots (see migrations/snapshots), which the read model writes in
// the transaction that moves its checkpoint, so the rows reflect exactly
// the checkpoint read with them: a caller that finds the checkpoint at or
// past the position it must see can answer with these rows at once.
//
// With q.Bind, the replay guard's binding is read or recorded by the same
// statement (bindCTE), unless this store already knows the binding holds
// (bindings are immutable until they expire, see boundCache); then the
// read touches no binding at all.
func (s *Store) Snapshot(ctx context.Context, q projections.SnapshotQuery) (projections.Snapshot, error) {
	var snap projections.Snapshot
	if err := s.snapshot(ctx, q, &snap); err != nil {
		return projections.Snapshot{}, fmt.Errorf("projections/postgres: snapshot of user %d %q of app %d: %w", q.OpenUserID, q.ChannelUserID, q.AppID, err)
	}
	return snap, nil
}

// snapshotSQL is Snapshot's statement text in its eight forms (with or
// without the binding, by open or channel user id, with or without a
// bucket take), built once per head statement instead of formatted on
// every read.
type snapshotSQL struct {
	head *headQuery
	// text[bind][byChannel][take]
	text [2][2][2]string
}

func buildSnapshotSQL(head *headQuery) *snapshotSQL {
	h := "NULL::bigint"
	if head != nil {
		h = "(" + head.sql + ")"
	}
	out := &snapshotSQL{head: head}
	for bind := range 2 {
		for byChannel := range 2 {
			for take := range 2 {
				out.text[bind][byChannel][take] = snapshotText(h, bind == 1, byChannel == 1, take == 1)
			}
		}
	}
	return out
}

// snapshotText is one form of Snapshot's statement, h the head's bigint
// expression. Its parameters: the binding's six (bindCTE) when bind, then
// the users read model's name, the app and the user, then the bucket
// take's seven (ratelimitpg.TakeWhenFrom) when take. The take runs
// whatever the binding: the token is spent as a request's token is spent
// before its binding is judged, and a refused take is answered 429 by the
// caller, which then sends none of the rows it read.
func snapshotText(h string, bind, byChannel, take bool) string {
	sql, n := "", 0
	if bind {
		sql, n = bindCTE, 6
	}
	if take {
		if bind {
			sql += ", "
		} else {
			sql += "WITH "
		}
		sql += "t AS (" + ratelimitpg.TakeWhenFrom("true", n+4) + ")\n"
	}
	if bind {
		sql += `SELECT coalesce((SELECT value FROM ins), (SELECT value FROM cur)),
    coalesce((SELECT expires_at FROM ins), (SELECT expires_at FROM cur)), `
	} else {
		sql += `SELECT NULL::text, NULL::timestamptz, `
	}
	sql += fmt.Sprintf(`c.commit_pos, c.prepare_pos, %s, s.open_user_id, s.channel_user_id, s.doc`, h)
	if take {
		sql += `, (SELECT tokens FROM t), (SELECT granted FROM t)`
	}
	sql += fmt.Sprintf(`
FROM (SELECT 1) AS one
LEFT JOIN checkpoints c ON c.projection = $%d
LEFT JOIN user_snapshots s ON `, n+1)
	if byChannel {
		sql += fmt.Sprintf(`s.app_id = $%d AND s.channel_user_id = $%d`, n+2, n+3)
	} else {
		sql += fmt.Sprintf(`s.app_id = $%d AND s.open_user_id = $%d`, n+2, n+3)
	}
	return sql
}

// snapshotText returns the statement for a read with or without a binding,
// by channel or open user id, with or without a take, for the head
// statement SeeHead set.
func (s *Store) snapshotText(bind, byChannel, take bool) string {
	c := s.snapSQL.Load()
	if c == nil || c.head != s.head {
		c = buildSnapshotSQL(s.head)
		s.snapSQL.Store(c)
	}
	b, ch, tk := 0, 0, 0
	if bind {
		b = 1
	}
	if byChannel {
		ch = 1
	}
	if take {
		tk = 1
	}
	return c.text[b][ch][tk]
}

// snapshotRow is the one row Snapshot's statement returns.
type snapshotRow struct {
	bound              *string
	until              *time.Time
	commit, prepare, h *int64
	doc                []byte
	openUserID         *int64
	channelUserID      *string
	// take: the statement carries a bucket take, whose level and grant
	// are its last two columns.
	take    bool
	tokens  *float64
	granted *int32
}

func (r *snapshotRow) scan(row pgx.Row) error {
	if pr, ok := row.(*pipeRow); ok {
		if ok, err := r.raw(pr.rr); ok {
			return err
		}
	}
	if r.take {
		return row.Scan(&r.bound, &r.until, &r.commit, &r.prepare, &r.h, &r.openUserID, &r.channelUserID, &r.doc, &r.tokens, &r.granted)
	}
	return row.Scan(&r.bound, &r.until, &r.commit, &r.prepare, &r.h, &r.openUserID, &r.channelUserID, &r.doc)
}

// snapshotColumns are the types of Snapshot's columns, in order, then
// those of a take's two.
var (
	snapshotColumns = [...]uint32{oidText, oidTimestamptz, oidInt8, oidInt8, oidInt8, oidInt8, oidText, oidBytea}
	takeColumns     = [...]uint32{oidFloat8, oidInt4}
)

// raw decodes the row from its binary values without pgx's scan plans
// (paramEncoder asks for these types in binary); ok is false, with
// nothing read, when the columns are not what it expects, and the caller
// scans through pgx instead.
func (r *snapshotRow) raw(rr *pgconn.ResultReader) (ok bool, err error) {
	fds := rr.FieldDescriptions()
	want := len(snapshotColumns)
	if r.take {
		want += len(takeColumns)
	}
	if len(fds) != want {
		return false, nil
	}
	for i, fd := range fds {
		oid := uint32(0)
		if i < len(snapshotColumns) {
			oid = snapshotColumns[i]
		} else {
			oid = takeColumns[i-len(snapshotColumns)]
		}
		if fd.DataTypeOID != oid || fd.Format != pgx.BinaryFormatCode {
			return false, nil
		}
	}
	if !rr.NextRow() {
		if _, err := rr.Close(); err != nil {
			return true, err
		}
		return true, pgx.ErrNoRows
	}
	v := rr.Values()
	if len(v) != want {
		return true, fmt.Errorf("snapshot row: %d values, want %d", len(v), want)
	}
	int8At := func(i int) (*int64, error) {
		if v[i] == nil {
			return nil, nil
		}
		if len(v[i]) != 8 {
			return nil, fmt.Errorf("snapshot row: column %d: %d bytes for a bigint", i, len(v[i]))
		}
		n := int64(binary.BigEndian.Uint64(v[i]))
		return &n, nil
	}
	if v[0] != nil {
		b := string(v[0])
		r.bound = &b
	}
	if v[1] != nil {
		t, err := int8At(1)
		if err != nil {
			return true, err
		}
		u := time.UnixMicro(pgEpoch.UnixMicro() + *t)
		r.until = &u
	}
	for i, dst := range []**int64{&r.commit, &r.prepare, &r.h, &r.openUserID} {
		if *dst, err = int8At(2 + i); err != nil {
			return true, err
		}
	}
	if v[6] != nil {
		c := string(v[6])
		r.channelUserID = &c
	}
	if v[7] != nil {
		r.doc = slices.Clone(v[7])
	}
	if r.take {
		if v[8] != nil {
			if len(v[8]) != 8 {
				return true, fmt.Errorf("snapshot row: %d bytes for a double", len(v[8]))
			}
			f := math.Float64frombits(binary.BigEndian.Uint64(v[8]))
			r.tokens = &f
		}
		if v[9] != nil {
			if len(v[9]) != 4 {
				return true, fmt.Errorf("snapshot row: %d bytes for an integer", len(v[9]))
			}
			g := int32(binary.BigEndian.Uint32(v[9]))
			r.granted = &g
		}
	}
	return true, nil
}

func (s *Store) snapshot(ctx context.Context, q projections.SnapshotQuery, snap *projections.Snapshot) error {
	bind := q.Bind
	if bind != nil {
		if v, ok := s.bound.get(bind.Scope, bind.Key, time.Now()); ok {
			snap.Bound, bind = v, nil
		}
	}
	var args []any
	prune := false
	if bind != nil {
		now := time.Now()
		// Expired bindings are pruned as Bind prunes them, in the same
		// round trip, first.
		if s.pruneNow != nil {
			prune = s.pruneNow()
		} else {
			prune = rand.IntN(pruneEvery) == 0
		}
		args = append(make([]any, 0, 9), bind.Scope, bind.Key, bind.Value, rand.Int64(), bind.Expires, now)
	} else {
		args = make([]any, 0, 3)
	}
	args = append(args, string(projections.ReadModelUsers), q.AppID)
	if q.ChannelUserID != "" {
		args = append(args, q.ChannelUserID)
	} else {
		args = append(args, q.OpenUserID)
	}
	if tk := q.Take; tk != nil {
		var now any // nil: the database's clock
		if tk.Bucket.Now != nil {
			now = tk.Bucket.Now()
		}
		args = append(args, tk.Bucket.Name, tk.Key, float64(tk.Bucket.Limit), ratelimit.Rate(tk.Bucket.Limit, tk.Bucket.Period),
			float64(max(tk.Want, 0)), float64(max(tk.Back, 0)), now)
	}
	sql := s.snapshotText(bind != nil, q.ChannelUserID != "", q.Take != nil)
	r := snapshotRow{take: q.Take != nil}
	if prune {
		b := &pgx.Batch{}
		b.Queue(pruneBindingsQuery, args[5], pruneBatch) // args[5] is now
		b.Queue(sql, args...).QueryRow(r.scan)
		// Close reads every result in order (the prune's, then the row's
		// through its callback) and returns the first error.
		if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
	} else if err := s.reads.queryRow(ctx, s.pool, sql, args, r.scan); err != nil {
		// Without a prune, the read is one statement, sent alone or, when
		// reads queue behind the round trips in flight, pipelined with
		// them, each its own implicit transaction (pipeReader).
		return err
	}
	if bind != nil {
		if r.bound == nil || r.until == nil {
			return errors.New("bind: no binding returned")
		}
		snap.Bound = *r.bound
		s.bound.put(bind.Scope, bind.Key, *r.bound, *r.until, time.Now())
	}
	if q.Take != nil {
		if r.tokens == nil || r.granted == nil {
			return errors.New("take: no grant returned")
		}
		snap.Grant, snap.Took = ratelimit.Grant{Tokens: *r.tokens, Granted: int(*r.granted)}, true
	}
	if r.commit != nil && r.prepare != nil {
		snap.Checkpoint = events.Position{Commit: uint64(*r.commit), Prepare: uint64(*r.prepare)}
	}
	if s.head != nil && r.h != nil {
		snap.Head, snap.HeadKnown = s.head.position(*r.h), true
	}
	if r.openUserID == nil || r.channelUserID == nil {
		return nil
	}
	return decodeSnapshot(r.doc, q, *r.openUserID, *r.channelUserID, snap)
}

func micro(us int64) time.Time { return time.UnixMicro(us).UTC() }

// refreshSnapshotsQuery rewrites the documents of the touched users (and
// of the owners of deleted members) from the rows as this transaction
// sees them, through the one definition of a document, user_snapshot_docs.
// The users are one = ANY over an array, so that the generic plan
// Postgres may settle on for the prepared statement looks them up by
// primary key too: the earlier IN over a UNION of unnest planned as
// a hash join over a sequential scan of users on every users read model
// transaction. It is a predicate
// on users' rows, so a user listed twice is still written once.
var refreshSnapshotsQuery = `
INSERT INTO user_snapshots AS s (open_user_id, app_id, channel_user_id, doc)
SELECT d.open_user_id, d.app_id, d.channel_user_id, d.doc FROM user_snapshot_docs d
WHERE d.open_user_id = ANY($1::bigint[] || ARRAY(
    SELECT m.open_user_id FROM family_members m WHERE m.member_id = ANY($2::bigint[])))
` + upsertSnapshot[strings.Index(upsertSnapshot, "ON CONFLICT"):]

// refreshSnapshots queues the documents of the users this transaction
// registered (built in Go, freshdoc.go) and the refresh of those of the
// other users it touched, after its writes and before its checkpoint, so
// a document is never behind the checkpoint it commits with.
func (t *tx) refreshSnapshots() {
	t.writeFreshSnapshots()
	if len(t.touchedUsers) == 0 && len(t.deletedMembers) == 0 {
		return
	}
	users := slices.Compact(slices.Sorted(slices.Values(t.touchedUsers)))
	members := slices.Compact(slices.Sorted(slices.Values(t.deletedMembers)))
	t.queue(refreshSnapshotsQuery, users, members)
	t.touchedUsers, t.deletedMembers = nil, nil
}
