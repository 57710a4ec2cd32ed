package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/events"
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
}

// SeesHead reports whether Snapshot returns the log's head (SeeHead).
func (s *Store) SeesHead() bool { return s.head != nil }

// Snapshot reads a user's snapshot in one round trip: the users family's
// checkpoint (and the log's head under SeeHead) first, then the user, its
// live groups and its live members, as one pipelined batch. The checkpoint
// is read before the rows and commits with them, so the rows reflect at
// least the checkpoint: a caller that finds the checkpoint at or past the
// position it must see can answer with these rows at once.
func (s *Store) Snapshot(ctx context.Context, q projections.SnapshotQuery) (projections.Snapshot, error) {
	head := "NULL::bigint"
	if s.head != nil {
		head = "(" + s.head.sql + ")"
	}
	// The user's id, as a subquery when the partner names it by its own id,
	// so that the groups and members need no second round trip.
	id, args := "$2::bigint", []any{q.AppID, q.OpenUserID}
	if q.ChannelUserID != "" {
		id, args = "(SELECT open_user_id FROM users WHERE app_id = $1 AND channel_user_id = $2)", []any{q.AppID, q.ChannelUserID}
	}
	b := &pgx.Batch{}
	pruned := false
	if q.Bind != nil {
		// The replay guard's write rides the same round trip, first, as
		// Bind would make it (expiry judged by this process's clock).
		now := time.Now()
		if pruned = rand.IntN(pruneEvery) == 0; pruned {
			b.Queue(pruneBindingsQuery, now, pruneBatch)
		}
		b.Queue(bindQuery, q.Bind.Scope, q.Bind.Key, q.Bind.Value, rand.Int64(), q.Bind.Expires, now)
	}
	b.Queue(`SELECT (SELECT commit_pos FROM checkpoints WHERE projection = $1),
       (SELECT prepare_pos FROM checkpoints WHERE projection = $1), `+head, string(projections.FamilyUsers))
	b.Queue(`SELECT `+userColumns+` FROM users WHERE open_user_id = `+id+` AND app_id = $1`, args...)
	b.Queue(`SELECT `+groupColumns+` FROM family_groups g
WHERE g.open_user_id = `+id+` AND g.app_id = $1 AND NOT g.dissolved
ORDER BY g.family_group_id`, args...)
	if q.UpdatedAfter.IsZero() {
		b.Queue(`SELECT `+memberColumns+` FROM family_members
WHERE open_user_id = `+id+` AND app_id = $1 AND NOT deleted
ORDER BY member_id`, args...)
	} else {
		b.Queue(`SELECT `+memberColumns+` FROM family_members
WHERE open_user_id = `+id+` AND app_id = $1 AND NOT deleted AND updated_at > $3
ORDER BY member_id`, append(args, q.UpdatedAfter)...)
	}
	br := s.pool.SendBatch(ctx, b)
	snap, err := readBound(br, pruned, q.Bind != nil)
	if err == nil {
		var rows projections.Snapshot
		rows, err = readSnapshot(br, s.head)
		rows.Bound = snap.Bound
		snap = rows
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return projections.Snapshot{}, fmt.Errorf("projections/postgres: snapshot of user %d %q of app %d: %w", q.OpenUserID, q.ChannelUserID, q.AppID, err)
	}
	return snap, nil
}

// readBound reads the results of the binding's statements, when queued.
func readBound(br pgx.BatchResults, pruned, bound bool) (projections.Snapshot, error) {
	var snap projections.Snapshot
	if pruned {
		if _, err := br.Exec(); err != nil {
			return snap, fmt.Errorf("prune expired bindings: %w", err)
		}
	}
	if bound {
		var fresh bool
		if err := br.QueryRow().Scan(&snap.Bound, &fresh); err != nil {
			return snap, fmt.Errorf("bind: %w", err)
		}
	}
	return snap, nil
}

func readSnapshot(br pgx.BatchResults, head *headQuery) (projections.Snapshot, error) {
	var snap projections.Snapshot
	var commit, prepare, h *int64
	if err := br.QueryRow().Scan(&commit, &prepare, &h); err != nil {
		return snap, err
	}
	if commit != nil && prepare != nil {
		snap.Checkpoint = events.Position{Commit: uint64(*commit), Prepare: uint64(*prepare)}
	}
	if head != nil && h != nil {
		snap.Head, snap.HeadKnown = head.position(*h), true
	}
	u, err := scanUser(br.QueryRow())
	switch {
	case err == nil:
		snap.User, snap.Found = u, true
	case errors.Is(err, pgx.ErrNoRows):
	default:
		return snap, err
	}
	groups, err := pgx.CollectRows(must(br.Query()), func(row pgx.CollectableRow) (projections.Group, error) { return scanGroup(row) })
	if err != nil {
		return snap, err
	}
	members, err := pgx.CollectRows(must(br.Query()), func(row pgx.CollectableRow) (projections.Member, error) { return scanMember(row) })
	if err != nil {
		return snap, err
	}
	if snap.Found {
		snap.Groups, snap.Members = groups, members
	}
	return snap, nil
}

// must drops Query's error, which pgx also reports from the rows it
// returns (and CollectRows returns it from there).
func must(rows pgx.Rows, _ error) pgx.Rows { return rows }
