package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// UpdateAudit is the audit read model's Update.
func (s *Store) UpdateAudit(ctx context.Context, projection string, pos events.Position, fn func(projections.AuditTx) error) error {
	return s.update(ctx, projection, pos, func(t *tx) error { return fn(t) })
}

// addAuditFact numbers the fact after the last one in the same statement;
// ON CONFLICT makes a replayed fact (same event id) a no-op.
const addAuditFact = `
INSERT INTO audit_facts (seq, event_id, actor, action, subjects, event_ids, report_id, app_id, reason, at)
SELECT COALESCE(max(seq), 0) + 1, $1, $2, $3, COALESCE($4::text[], '{}'), COALESCE($5::text[], '{}'), $6, $7, $8, $9
FROM audit_facts
ON CONFLICT DO NOTHING`

// AddAuditFact queues the fact's insert with the transaction's other writes.
func (t *tx) AddAuditFact(ctx context.Context, f projections.AuditFact) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	t.queue(addAuditFact, f.EventID, f.Actor, f.Action, f.Subjects, f.EventIDs, f.ReportID, f.AppID, f.Reason, f.At.UTC())
	return nil
}

const auditFactsQuery = `
SELECT seq, event_id, actor, action, subjects, event_ids, report_id, app_id, reason, at
FROM audit_facts
WHERE seq > $1
  AND ($2 = '' OR actor = $2)
  AND ($3 = '' OR subjects @> ARRAY[$3::text])
  AND ($4::timestamptz IS NULL OR at >= $4)
  AND ($5::timestamptz IS NULL OR at < $5)
  AND ($7 = '' OR action = $7)
  AND ($8::bigint = 0 OR app_id = $8)
ORDER BY seq
LIMIT $6`

// AuditFacts lists facts in seq order from the cursor on.
func (s *Store) AuditFacts(ctx context.Context, f projections.AuditFilter) ([]projections.AuditFact, error) {
	rows, _ := s.pool.Query(ctx, auditFactsQuery, max(f.After, 0), f.Actor, f.Subject,
		timeOrNil(f.From), timeOrNil(f.To), projections.AuditLimit(f.Limit), f.Action, f.App)
	facts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (projections.AuditFact, error) {
		var a projections.AuditFact
		err := row.Scan(&a.Seq, &a.EventID, &a.Actor, &a.Action, &a.Subjects, &a.EventIDs, &a.ReportID, &a.AppID, &a.Reason, &a.At)
		a.At = a.At.UTC()
		if a.Subjects == nil {
			a.Subjects = []string{}
		}
		if a.EventIDs == nil {
			a.EventIDs = []string{}
		}
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("projections/postgres: audit facts: %w", err)
	}
	return facts, nil
}

// timeOrNil is NULL for the zero time (an open end of a range).
func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}
