package postgres

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/projections"
)

// Rows written together. A read model's transaction applies a batch of
// up to a few hundred events, and most of them are upserts of one row each
// (a register's user, group and member, a delivery created). Sent one
// statement per row, a rebuild spent most of Postgres's CPU in the
// statements' own overhead (bind, executor start, a command tag each)
// rather than in the rows. A run of upserts of one statement is now sent
// as one INSERT ... SELECT FROM unnest of one array per column, which
// Postgres executes as the same rows in the same order.
//
// Order is what makes that the same as one statement per row: rows of one
// table are written in the order they were queued, because a run ends
// (is queued into the batch) as soon as anything else is queued for its
// table, and as soon as a row repeats a key the run already holds (an
// upsert cannot touch one row twice, and the second write must follow
// the first). Any statement that is not a run's (a delete, a refresh
// reading several tables, the checkpoint) ends every open run first. So
// a run only moves past the open runs of other tables, whose rows it
// cannot see: the read models keep no triggers or foreign keys between
// their tables.

// rowStmt is an upsert of one row that a run of rows can write at once.
type rowStmt struct {
	// table is the one table the statement writes.
	table string
	// one writes one row from $1..$n; many writes every row of a run
	// from n arrays, one per column, in the same order.
	one, many string
}

// rowRun is the open run of one rowStmt: its rows, column by column, and
// the keys they write.
type rowRun struct {
	stmt *rowStmt
	keys map[any]struct{}
	cols [][]any
	n    int
}

// queueRow queues one row of st, whose conflict key is key, into the run
// of its table.
func (t *tx) queueRow(st *rowStmt, key any, args ...any) {
	if t.single {
		t.batch.Queue(st.one, args...)
		return
	}
	var run *rowRun
	for i, r := range t.runs {
		if r.stmt.table != st.table {
			continue
		}
		if _, again := r.keys[key]; r.stmt == st && !again {
			run = r
		} else {
			t.endRun(i) // the table sees its writes in order
		}
		break
	}
	if run == nil {
		run = &rowRun{stmt: st, keys: make(map[any]struct{}, 16), cols: make([][]any, len(args))}
		t.runs = append(t.runs, run)
	}
	run.keys[key] = struct{}{}
	for i, a := range args {
		run.cols[i] = append(run.cols[i], a)
	}
	run.n++
}

// endRun queues the i-th open run into the batch and closes it.
func (t *tx) endRun(i int) {
	r := t.runs[i]
	t.runs = append(t.runs[:i], t.runs[i+1:]...)
	args := make([]any, len(r.cols))
	if r.n == 1 {
		for c, col := range r.cols {
			args[c] = col[0]
		}
		t.batch.Queue(r.stmt.one, args...)
		return
	}
	for c, col := range r.cols {
		args[c] = col
	}
	t.batch.Queue(r.stmt.many, args...)
}

// endRuns queues every open run, in the order they opened.
func (t *tx) endRuns() {
	for len(t.runs) > 0 {
		t.endRun(0)
	}
}

// queue queues a statement that is not a run's, after every open run.
func (t *tx) queue(sql string, args ...any) *pgx.QueuedQuery {
	t.endRuns()
	return t.batch.Queue(sql, args...)
}

// unnestOf is the many form of an upsert written as one VALUES row
// ($1..$n, nothing else): the same statement over
// unnest($1::types[0][], ...), one array per column.
func unnestOf(one string, types ...string) string {
	i := strings.Index(one, "VALUES (")
	if i < 0 {
		panic("projections/postgres: no VALUES row in " + one)
	}
	j := strings.Index(one[i:], ")")
	var b strings.Builder
	b.WriteString(one[:i])
	b.WriteString("SELECT * FROM unnest(")
	for k, typ := range types {
		if k > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(k+1) + "::" + typ + "[]")
	}
	b.WriteString(")")
	b.WriteString(one[i+j+1:])
	return b.String()
}

// ---- rows as this transaction wrote them ----

// A projector reads a row it is about to change (a profile update reads
// its user, an attempt its delivery). When this transaction wrote that
// row, the read is answered from what it wrote, as Postgres would return
// it, instead of sending the queued writes and a query: in a rebuild the
// row was most often written by an earlier event of the same batch. Any
// other read goes to the database; it need not send the queued writes
// first when none of them can change the row it reads (every write of
// the row's table in a transaction is one of those kept here), except
// the first of a transaction under a lease: the fence goes before
// anything the transaction reads.

// dbTime is t as a timestamptz column returns it: microseconds, UTC.
func dbTime(t time.Time) time.Time { return t.Truncate(time.Microsecond).UTC() }

func dbTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := dbTime(*t)
	return &v
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// asReadUser is u as a read of its row returns it, sharing nothing with u.
func asReadUser(u projections.User) projections.User {
	u.Nickname, u.Avatar, u.Phone, u.Email, u.BirthDate =
		clonePtr(u.Nickname), clonePtr(u.Avatar), clonePtr(u.Phone), clonePtr(u.Email), clonePtr(u.BirthDate)
	u.RegisteredAt, u.UpdatedAt = dbTime(u.RegisteredAt), dbTime(u.UpdatedAt)
	return u
}

// asReadDelivery is d as a read of its row returns it, sharing nothing
// with d (the body is never NULL).
func asReadDelivery(d projections.Delivery) projections.Delivery {
	d.Body = append([]byte{}, d.Body...)
	d.NextAttemptAt = dbTimePtr(d.NextAttemptAt)
	d.LastStatus, d.LastError, d.LastErrorClass = clonePtr(d.LastStatus), clonePtr(d.LastError), clonePtr(d.LastErrorClass)
	d.CreatedAt, d.UpdatedAt = dbTime(d.CreatedAt), dbTime(d.UpdatedAt)
	return d
}

// wroteUser remembers the user row this transaction wrote (nil: deleted).
func (t *tx) wroteUser(id int64, u *projections.User) {
	if t.users == nil {
		t.users = map[int64]*projections.User{}
	}
	t.users[id] = u
}

// wroteDelivery remembers the delivery row this transaction wrote.
func (t *tx) wroteDelivery(d projections.Delivery) {
	if t.deliveries == nil {
		t.deliveries = map[string]projections.Delivery{}
	}
	t.deliveries[d.DeliveryID] = d
}

// User reads a user as this transaction sees it, whatever its app.
func (t *tx) User(ctx context.Context, openUserID int64) (projections.User, error) {
	if err := t.check(ctx); err != nil {
		return projections.User{}, err
	}
	if u, ok := t.users[openUserID]; ok && !t.single {
		if u == nil {
			return projections.User{}, notFound(pgx.ErrNoRows, "user %d", openUserID)
		}
		return asReadUser(*u), nil
	}
	u, err := scanUser(t.queryRow(ctx, t.single || t.unsent, `SELECT `+userColumns+` FROM users WHERE open_user_id = $1`, openUserID))
	return u, notFound(err, "user %d", openUserID)
}

// Delivery reads a delivery as this transaction sees it, whatever its app.
func (t *tx) Delivery(ctx context.Context, id string) (projections.Delivery, error) {
	if err := t.check(ctx); err != nil {
		return projections.Delivery{}, err
	}
	if d, ok := t.deliveries[id]; ok && !t.single {
		return asReadDelivery(d), nil
	}
	d, err := scanDelivery(t.queryRow(ctx, t.single || t.unsent, `SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE delivery_id = $1`, id))
	return d, notFound(err, "delivery %q", id)
}
