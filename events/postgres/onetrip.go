package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/internal/groupcommit"
	"github.com/healthtech/partner-open-platform/events/internal/rules"
)

// The one-round-trip append. When every part of a group expects an exact
// revision or no stream, the group can be decided before anything is read:
// each stream's count is the one its first part expects, no event ID may
// be written already, and every append of the group writes. The server is
// then asked to confirm that decision rather than to supply the facts for
// it: BEGIN, the append lock, a guard that fails unless every stream's
// committed count is the one planned, the INSERT numbered after the head
// under the lock, the riders, NOTIFY and COMMIT go in one pipeline, and
// the lock is held for no round trip at all.
//
// The plan is what decideGroup would decide on the state the guard and
// the id index confirm (counts as expected, no ID found), so a confirmed
// plan gives every append exactly the results of the two-round-trip path.
// When the server refuses it (the guard: a conflict or a stale
// expectation; the unique id index: a retry of an append already written,
// or an ID reused) nothing was written, the transaction is rolled back
// and the group is decided again by the two-round-trip path, which tells
// a replay from a conflict and reports the conflict's actual count.

// staleExpectation is the SQLSTATE the guard raises
// (migrations/events/0003), in a class the SQL standard leaves to
// implementations (first letter I-Z) and Postgres does not use;
// uniqueViolation is Postgres's.
const (
	staleExpectation = "S0001"
	uniqueViolation  = "23505"
)

// appendGuardQuery reads the head and the transaction's start (the created
// column's default) and raises staleExpectation unless each stream in $1
// holds the count at the same index of $2. The CASE evaluates the raising
// function only when a stream differs.
const appendGuardQuery = `SELECT coalesce(max(position), 0), now(), CASE WHEN EXISTS (
    SELECT FROM unnest($1::text[], $2::bigint[]) AS x(s, n) WHERE ` + countOfS + ` <> n)
  THEN es_stale_expectation() END
FROM es_events`

// insertAfterHeadQuery writes rows numbered 1, 2, ... at the positions
// after the head, which it reads under the lock as the guard did.
const insertAfterHeadQuery = insertInto + `SELECT h.head + u.p, u.s, u.r, u.i, u.t, u.d, u.m
FROM (SELECT coalesce(max(position), 0) AS head FROM es_events) AS h, ` + unnestRows + ` AS u(p, s, r, i, t, d, m)`

// planned is a group decided on the counts its parts expect.
type planned struct {
	streams []string
	counts  []int64
	// rows are numbered 1, 2, ... until the head is known; so are the
	// positions in the appends' results.
	rows newRows
}

// plan decides group on the counts its parts expect, setting each append's
// results with positions counted from the head. ok is false for a group
// the two-round-trip path must decide: an append whose context ended, a
// part expecting any revision, a part whose expectation differs from what
// the group's earlier parts leave its stream at, and an append the rules
// refuse on its own (the two-round-trip path reports the refusal).
func plan(group []*groupcommit.Append) (pl planned, ok bool) {
	after := map[string]uint64{} // a stream's count once the group's parts so far are written
	notFound := func(string) (rules.Located, bool, error) { return rules.Located{}, false, nil }
	for _, p := range group {
		p.Res, p.Err, p.Wrote = make([]events.AppendResult, len(p.Parts)), nil, false
		if p.Ctx.Err() != nil {
			return pl, false
		}
		for i, part := range p.Parts {
			count, known := expectedCount(part.Expected)
			if !known {
				return pl, false
			}
			if prev, seen := after[part.Stream]; !seen {
				pl.streams, pl.counts = append(pl.streams, part.Stream), append(pl.counts, int64(count))
			} else if prev != count {
				return pl, false
			}
			if _, _, err := rules.Check(part.Stream, part.Expected, count, part.Events, notFound); err != nil {
				return pl, false
			}
			for j, ev := range part.Events {
				rev, at := count+uint64(j), int64(len(pl.rows.pos)+1)
				pl.rows.add(at, part.Stream, rev, ev)
				p.Res[i] = events.AppendResult{Revision: rev, Position: position(at)}
			}
			after[part.Stream] = count + uint64(len(part.Events))
		}
		p.Wrote = true
	}
	return pl, true
}

// expectedCount is the event count a stream must hold for e to match, if
// e names one.
func expectedCount(e events.ExpectedRevision) (count uint64, known bool) {
	if e.IsNoStream() {
		return 0, true
	}
	rev, exact := e.Revision()
	return rev + 1, exact && rev < 1<<62
}

// place moves the planned rows and the appends' positions after head.
func (pl planned) place(group []*groupcommit.Append, head int64) {
	for i := range pl.rows.pos {
		pl.rows.pos[i] += head
	}
	for _, p := range group {
		for i, r := range p.Res {
			p.Res[i].Position = position(head + int64(r.Position.Commit))
		}
	}
}

// commitOneTrip writes a planned group in one pipeline. refused is true
// when the server refused the plan: then nothing was written and the
// transaction is rolled back. On another error the caller rolls back.
func (s *Store) commitOneTrip(ctx context.Context, conn *pgx.Conn, group []*groupcommit.Append, pl planned, epoch uint64) (refused bool, err error) {
	var (
		head    int64
		created time.Time
	)
	riders := ridersOf(group)
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SELECT pg_advisory_xact_lock($1)`, appendLock)
	b.Queue(appendGuardQuery, pl.streams, pl.counts).QueryRow(func(row pgx.Row) error {
		return row.Scan(&head, &created, nil)
	})
	results := queueWrites(b, insertAfterHeadQuery, pl.rows, riders, s.instance)
	if err := sendAndCommit(ctx, conn, b); err != nil {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || (pe.Code != staleExpectation && pe.Code != uniqueViolation) {
			return false, err
		}
		if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
			return false, err
		}
		return true, nil
	}
	pl.place(group, head)
	s.committed(epoch, head, created, pl.rows, riders, results)
	return false, nil
}
