package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// Listing limits of Deliveries and Due, as the memory store applies them.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

// queued is the predicate of the partial index webhook_deliveries_due_idx;
// Due and NextDue must spell it the same for the planner to use the index.
const queued = `status IN ('` + domain.DeliveryPending + `', '` + domain.DeliveryRetrying + `')`

// feedOrder is the order of webhook_deliveries_cursor_idx and of the
// app_id-prefixed index: cursor, then id should two deliveries ever share one.
const feedOrder = `cursor_commit, cursor_prepare, delivery_id`

// feedOrderNewest is feedOrder backwards (the same index, scanned backwards).
const feedOrderNewest = `cursor_commit DESC, cursor_prepare DESC, delivery_id DESC`

const deliveryColumns = deliveryColumnsBefore + `body` + deliveryColumnsAfter

// deliveryColumnsNoBody reads deliveryColumns' row with a NULL body, for
// a list whose caller reads no body (DeliveryFilter.WithoutBodies).
const deliveryColumnsNoBody = deliveryColumnsBefore + `NULL::bytea` + deliveryColumnsAfter

const (
	deliveryColumnsBefore = `delivery_id, app_id, event_type, source_event_id, source_commit, source_prepare,
    cursor_commit, cursor_prepare, `
	deliveryColumnsAfter = `, status, attempts, next_attempt_at, last_status, last_error,
    created_at, updated_at, last_error_class, subject, endpoint_id`
)

func scanDelivery(row pgx.Row) (projections.Delivery, error) {
	var d projections.Delivery
	err := row.Scan(&d.DeliveryID, &d.AppID, &d.EventType, &d.SourceEventID,
		&d.SourcePosition.Commit, &d.SourcePosition.Prepare, &d.Cursor.Commit, &d.Cursor.Prepare,
		&d.Body, &d.Status, &d.Attempts, &d.NextAttemptAt, &d.LastStatus, &d.LastError,
		&d.CreatedAt, &d.UpdatedAt, &d.LastErrorClass, &d.Subject, &d.EndpointID)
	if d.NextAttemptAt != nil {
		*d.NextAttemptAt = d.NextAttemptAt.UTC()
	}
	d.CreatedAt, d.UpdatedAt = d.CreatedAt.UTC(), d.UpdatedAt.UTC()
	return d, err
}

func collectDeliveries(rows pgx.Rows) ([]projections.Delivery, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (projections.Delivery, error) {
		return scanDelivery(row)
	})
}

const attemptColumns = `delivery_id, attempt, at, status_code, latency_ms, error, outcome, error_class, response_excerpt`

func scanAttempt(row pgx.CollectableRow) (projections.Attempt, error) {
	var a projections.Attempt
	err := row.Scan(&a.DeliveryID, &a.Attempt, &a.At, &a.StatusCode, &a.LatencyMS, &a.Error, &a.Outcome, &a.ErrorClass, &a.ResponseExcerpt)
	a.At = a.At.UTC()
	return a, err
}

// UpdateDeliveries shares Update's transaction, batching and checkpoints, so both projections replay alike.
func (s *Store) UpdateDeliveries(ctx context.Context, projection string, pos events.Position, fn func(projections.DeliveryTx) error) error {
	return s.update(ctx, projection, pos, func(t *tx) error { return fn(t) })
}

// Delivery enforces tenancy in the query (appID 0: operators) and reads the attempts in the same round trip.
func (s *Store) Delivery(ctx context.Context, appID int64, id string) (projections.Delivery, []projections.Attempt, error) {
	b := &pgx.Batch{}
	if appID == 0 {
		b.Queue(`SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE delivery_id = $1`, id)
	} else {
		b.Queue(`SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE delivery_id = $1 AND app_id = $2`, id, appID)
	}
	b.Queue(`SELECT `+attemptColumns+` FROM webhook_attempts WHERE delivery_id = $1 ORDER BY attempt`, id)
	br := s.pool.SendBatch(ctx, b)
	d, derr := scanDelivery(br.QueryRow())
	rows, _ := br.Query()
	as, aerr := pgx.CollectRows(rows, scanAttempt)
	cerr := br.Close()
	if derr != nil {
		return projections.Delivery{}, nil, notFound(derr, "delivery %q of app %d", id, appID)
	}
	if err := errors.Join(aerr, cerr); err != nil {
		return projections.Delivery{}, nil, fmt.Errorf("projections/postgres: attempts of delivery %q: %w", id, err)
	}
	return d, as, nil
}

// Deliveries is one index range scan in cursor order, so a feed page costs its rows, not the table's.
func (s *Store) Deliveries(ctx context.Context, f domain.DeliveryFilter) ([]projections.Delivery, error) {
	sql, args := deliveriesQuery(f)
	rows, _ := s.pool.Query(ctx, sql, args...)
	ds, err := collectDeliveries(rows)
	if err != nil {
		return nil, fmt.Errorf("projections/postgres: deliveries: %w", err)
	}
	return ds, nil
}

// deliveriesQuery builds one statement per combination of filters rather
// than "$n IS NULL OR ...", so each gets a plan that walks the (app_id,
// cursor) or the cursor index from f.After.
func deliveriesQuery(f domain.DeliveryFilter) (string, []any) {
	var b strings.Builder
	args := []any{f.After.Commit, f.After.Prepare}
	b.WriteString(`SELECT `)
	if f.WithoutBodies {
		b.WriteString(deliveryColumnsNoBody)
	} else {
		b.WriteString(deliveryColumns)
	}
	switch {
	case !f.Newest:
		b.WriteString(` FROM webhook_deliveries
WHERE (cursor_commit, cursor_prepare) > ($1, $2)`)
	case f.Before == (events.Position{}):
		args = args[:0]
		b.WriteString(` FROM webhook_deliveries
WHERE TRUE`)
	default:
		args = []any{f.Before.Commit, f.Before.Prepare}
		b.WriteString(` FROM webhook_deliveries
WHERE (cursor_commit, cursor_prepare) < ($1, $2)`)
	}
	and := func(cond string, v any) {
		args = append(args, v)
		fmt.Fprintf(&b, "\n  AND "+cond, len(args))
	}
	if f.AppID != 0 {
		and("app_id = $%d", f.AppID)
	}
	if f.Status != "" {
		and("status = $%d", f.Status)
	}
	if f.EventType != "" {
		and("event_type = $%d", f.EventType)
	}
	if !f.From.IsZero() {
		and("created_at >= $%d", f.From)
	}
	if !f.To.IsZero() {
		and("created_at < $%d", f.To)
	}
	if f.EndpointID != nil {
		and("endpoint_id = $%d", *f.EndpointID)
	}
	if f.Feed {
		and("endpoint_id = 0 AND event_type <> $%d", domain.TestEvent)
	}
	args = append(args, clampLimit(f.Limit))
	order := feedOrder
	if f.Newest {
		order = feedOrderNewest
	}
	fmt.Fprintf(&b, "\nORDER BY %s\nLIMIT $%d", order, len(args))
	return b.String(), args
}

func clampLimit(n int) int {
	switch {
	case n <= 0:
		return defaultLimit
	case n > maxLimit:
		return maxLimit
	}
	return n
}

const dueQuery = `SELECT delivery_id, app_id, endpoint_id FROM webhook_deliveries
WHERE ` + queued + ` AND next_attempt_at <= $1 AND app_id <> ALL($3::bigint[])
ORDER BY next_attempt_at, ` + feedOrder + `
LIMIT $2`

// Due reads the head of the partial due index, which holds only the queue, for the dispatcher's frequent polls.
func (s *Store) Due(ctx context.Context, now time.Time, limit int, skipApps ...int64) ([]domain.DueDelivery, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	if skipApps == nil {
		skipApps = []int64{} // <> ALL of NULL is NULL: nothing would be due
	}
	rows, _ := s.pool.Query(ctx, dueQuery, now, limit, skipApps)
	var ds []domain.DueDelivery
	var d domain.DueDelivery
	_, err := pgx.ForEachRow(rows, []any{&d.DeliveryID, &d.AppID, &d.EndpointID}, func() error {
		ds = append(ds, d)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("projections/postgres: due deliveries: %w", err)
	}
	return ds, nil
}

// DueAndNext is Due and NextDue in one round trip (one transaction).
func (s *Store) DueAndNext(ctx context.Context, now time.Time, limit int, skipApps ...int64) ([]domain.DueDelivery, time.Time, bool, error) {
	if limit <= 0 {
		limit = defaultLimit
	}
	if skipApps == nil {
		skipApps = []int64{}
	}
	b := &pgx.Batch{}
	b.Queue(dueQuery, now, limit, skipApps)
	b.Queue(nextDueQuery)
	br := s.pool.SendBatch(ctx, b)
	ds, next, err := func() ([]domain.DueDelivery, *time.Time, error) {
		rows, err := br.Query()
		if err != nil {
			return nil, nil, err
		}
		var ds []domain.DueDelivery
		var d domain.DueDelivery
		if _, err := pgx.ForEachRow(rows, []any{&d.DeliveryID, &d.AppID, &d.EndpointID}, func() error {
			ds = append(ds, d)
			return nil
		}); err != nil {
			return nil, nil, err
		}
		var next *time.Time
		err = br.QueryRow().Scan(&next)
		return ds, next, err
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, time.Time{}, false, fmt.Errorf("projections/postgres: due deliveries: %w", err)
	}
	if next == nil {
		return ds, time.Time{}, false, nil
	}
	return ds, next.UTC(), true, nil
}

const nextDueQuery = `SELECT min(next_attempt_at) FROM webhook_deliveries WHERE ` + queued

// NextDue reads the first entry of the partial due index, so the dispatcher can sleep until then.
func (s *Store) NextDue(ctx context.Context) (time.Time, bool, error) {
	var next *time.Time
	if err := s.pool.QueryRow(ctx, nextDueQuery).Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("projections/postgres: next due delivery: %w", err)
	}
	if next == nil {
		return time.Time{}, false, nil
	}
	return next.UTC(), true, nil
}

// CountByStatus scans the table: it serves metrics, scraped rarely, and keeps writes free of counters.
func (s *Store) CountByStatus(ctx context.Context) (map[string]int, error) {
	rows, _ := s.pool.Query(ctx, `SELECT status, count(*) FROM webhook_deliveries GROUP BY status`)
	out := map[string]int{}
	var status string
	var n int
	_, err := pgx.ForEachRow(rows, []any{&status, &n}, func() error {
		out[status] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("projections/postgres: count deliveries by status: %w", err)
	}
	return out, nil
}

const lastSourceQuery = `SELECT source_commit, source_prepare FROM webhook_deliveries
ORDER BY source_commit DESC, source_prepare DESC
LIMIT 1`

// LastSource reads the end of the source index, so a restarting dispatcher finds its place at once.
func (s *Store) LastSource(ctx context.Context) (events.Position, error) {
	var p events.Position
	err := s.pool.QueryRow(ctx, lastSourceQuery).Scan(&p.Commit, &p.Prepare)
	if errors.Is(err, pgx.ErrNoRows) {
		return events.Position{}, nil
	}
	if err != nil {
		return events.Position{}, fmt.Errorf("projections/postgres: last source position: %w", err)
	}
	return p, nil
}

// ---- writes ----

// SubjectDeliveries reads through webhook_deliveries_subject_idx.
func (t *tx) SubjectDeliveries(ctx context.Context, subject string) ([]projections.Delivery, error) {
	if err := t.check(ctx); err != nil {
		return nil, err
	}
	if err := t.flush(ctx); err != nil {
		return nil, err
	}
	rows, _ := t.db.Query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE subject = $1 AND subject <> ''`, subject)
	ds, err := collectDeliveries(rows)
	if err != nil {
		return nil, fmt.Errorf("projections/postgres: deliveries of %s: %w", subject, err)
	}
	return ds, nil
}

const upsertDelivery = `
INSERT INTO webhook_deliveries (` + deliveryColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
ON CONFLICT (delivery_id) DO UPDATE SET
    app_id = EXCLUDED.app_id,
    event_type = EXCLUDED.event_type,
    source_event_id = EXCLUDED.source_event_id,
    source_commit = EXCLUDED.source_commit,
    source_prepare = EXCLUDED.source_prepare,
    cursor_commit = EXCLUDED.cursor_commit,
    cursor_prepare = EXCLUDED.cursor_prepare,
    body = EXCLUDED.body,
    status = EXCLUDED.status,
    attempts = EXCLUDED.attempts,
    next_attempt_at = EXCLUDED.next_attempt_at,
    last_status = EXCLUDED.last_status,
    last_error = EXCLUDED.last_error,
    last_error_class = EXCLUDED.last_error_class,
    created_at = EXCLUDED.created_at,
    updated_at = EXCLUDED.updated_at,
    subject = EXCLUDED.subject,
    endpoint_id = EXCLUDED.endpoint_id`

// deliveryRows writes runs of deliveries (rows.go).
var deliveryRows = rowStmt{table: "webhook_deliveries", one: upsertDelivery, many: unnestOf(upsertDelivery,
	"text", "bigint", "text", "text", "numeric", "numeric", "numeric", "numeric", "bytea", "text", "integer",
	"timestamptz", "integer", "text", "timestamptz", "timestamptz", "text", "text", "bigint")}

func (t *tx) PutDelivery(ctx context.Context, d projections.Delivery) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	// The body is copied when queued (and never NULL): the caller may reuse
	// its buffer before the batch is sent.
	body := append([]byte{}, d.Body...)
	t.queueRow(&deliveryRows, d.DeliveryID, d.DeliveryID, d.AppID, d.EventType, d.SourceEventID,
		d.SourcePosition.Commit, d.SourcePosition.Prepare, d.Cursor.Commit, d.Cursor.Prepare,
		body, d.Status, d.Attempts, opt(d.NextAttemptAt), opt(d.LastStatus), opt(d.LastError),
		d.CreatedAt, d.UpdatedAt, opt(d.LastErrorClass), d.Subject, d.EndpointID)
	t.wroteDelivery(asReadDelivery(d))
	return nil
}

// UpdateDeliveryState reads the row and writes it whole: the row's upsert
// is the one statement the batch holds for a delivery.
func (t *tx) UpdateDeliveryState(ctx context.Context, id string, fn func(st *projections.DeliveryState)) error {
	d, err := t.Delivery(ctx, id)
	if err != nil {
		return err
	}
	st := d.State()
	fn(&st)
	return t.PutDelivery(ctx, d.WithState(st))
}

const upsertAttempt = `
INSERT INTO webhook_attempts (` + attemptColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (delivery_id, attempt) DO UPDATE SET
    response_excerpt = EXCLUDED.response_excerpt,
    at = EXCLUDED.at,
    status_code = EXCLUDED.status_code,
    latency_ms = EXCLUDED.latency_ms,
    error = EXCLUDED.error,
    error_class = EXCLUDED.error_class,
    outcome = EXCLUDED.outcome`

// attemptRows writes runs of attempts (rows.go), keyed by attemptKey.
var attemptRows = rowStmt{table: "webhook_attempts", one: upsertAttempt, many: unnestOf(upsertAttempt,
	"text", "integer", "timestamptz", "integer", "bigint", "text", "text", "text", "text")}

// attemptKey is an attempt's primary key.
type attemptKey struct {
	delivery string
	attempt  int
}

func (t *tx) AddAttempt(ctx context.Context, a projections.Attempt) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	t.queueRow(&attemptRows, attemptKey{a.DeliveryID, a.Attempt}, a.DeliveryID, a.Attempt, a.At, opt(a.StatusCode), a.LatencyMS, opt(a.Error), a.Outcome, opt(a.ErrorClass), a.ResponseExcerpt)
	return nil
}

// ClearExcerpts empties a delivery's response excerpts in the batch.
func (t *tx) ClearExcerpts(ctx context.Context, id string) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	t.queue(`UPDATE webhook_attempts SET response_excerpt = '' WHERE delivery_id = $1 AND response_excerpt <> ''`, id)
	return nil
}
