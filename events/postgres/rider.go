package postgres

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/events/internal/groupcommit"
)

// A Rider is one statement that a caller's append writes in the append's
// own transaction, so that a row which must exist exactly when the append
// committed (a signed write's recorded answer) costs no transaction of its
// own. The statement returns one row of one bool. A rider is written by
// the first transaction that commits an append whose context carries it
// (WithRider), and only by one that writes that append's events: a refused
// append (a conflict, an ended context) and one whose events were all
// written before carry none.
type Rider struct {
	sql  string
	args []any
	// done is told the statement's bool once its transaction committed.
	done func(bool)
	used atomic.Bool
}

type riderKey struct{}

// WithRider returns ctx carrying a rider: sql (one row, one bool column)
// with args, and done, called at most once, after the commit, with the
// statement's value. Appends made with ctx on another store ignore it.
func WithRider(ctx context.Context, sql string, args []any, done func(bool)) context.Context {
	return context.WithValue(ctx, riderKey{}, &Rider{sql: sql, args: args, done: done})
}

// riderOf is p's rider when it is to be written with p's events.
func riderOf(p *groupcommit.Append) *Rider {
	r, _ := p.Ctx.Value(riderKey{}).(*Rider)
	if r == nil || r.used.Load() || p.Err != nil || !p.Wrote {
		return nil
	}
	return r
}

// queueRiders queues the group's riders into b; each one's value is in
// the result once b's batch succeeded.
func queueRiders(b *pgx.Batch, riders []*Rider) []bool {
	results := make([]bool, len(riders))
	for i, r := range riders {
		b.Queue(r.sql, r.args...).QueryRow(func(row pgx.Row) error { return row.Scan(&results[i]) })
	}
	return results
}
