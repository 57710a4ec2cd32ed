package memory

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// auditIndexes holds the audit facts in Seq order and the event ids seen.
type auditIndexes struct {
	facts   []projections.AuditFact
	byEvent map[string]bool
}

func newAuditIndexes() auditIndexes { return auditIndexes{byEvent: map[string]bool{}} }

// UpdateAudit is the audit read model's Update.
func (s *Store) UpdateAudit(ctx context.Context, projection string, pos events.Position, fn func(projections.AuditTx) error) error {
	return s.update(ctx, &s.auditMu, projection, pos, func(t *tx) error { return fn(t) })
}

// AddAuditFact appends the fact with the next Seq, once per event id.
func (t *tx) AddAuditFact(ctx context.Context, f projections.AuditFact) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	if s.auditIndexes.byEvent[f.EventID] {
		return nil
	}
	f.Seq = int64(len(s.auditIndexes.facts)) + 1
	f.Subjects, f.EventIDs = listCopy(f.Subjects), listCopy(f.EventIDs)
	// The actor may share its bytes with the event's other metadata
	// (events.metaStrings): the copy keeps only its own.
	f.Actor = strings.Clone(f.Actor)
	f.At = f.At.UTC().Truncate(time.Microsecond)
	s.auditIndexes.facts = append(s.auditIndexes.facts, f)
	s.auditIndexes.byEvent[f.EventID] = true
	if !t.owned {
		t.undo = append(t.undo, func() {
			s.auditIndexes.facts = s.auditIndexes.facts[:len(s.auditIndexes.facts)-1]
			delete(s.auditIndexes.byEvent, f.EventID)
		})
	}
	return nil
}

// AuditFacts scans the facts after the cursor; audit listings are rare and
// the facts of an embedded node few.
func (s *Store) AuditFacts(ctx context.Context, f projections.AuditFilter) ([]projections.AuditFact, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.auditMu.RLock()
	defer s.auditMu.RUnlock()
	limit := projections.AuditLimit(f.Limit)
	start := max(f.After, 0)
	var out []projections.AuditFact
	for i := start; i < int64(len(s.auditIndexes.facts)) && len(out) < limit; i++ {
		a := s.auditIndexes.facts[i]
		if (f.Actor != "" && a.Actor != f.Actor) || (f.Action != "" && a.Action != f.Action) || (f.Subject != "" && !slices.Contains(a.Subjects, f.Subject)) || (f.App != 0 && a.AppID != f.App) ||
			(!f.From.IsZero() && a.At.Before(f.From)) || (!f.To.IsZero() && !a.At.Before(f.To)) {
			continue
		}
		a.Subjects, a.EventIDs = listCopy(a.Subjects), listCopy(a.EventIDs)
		out = append(out, a)
	}
	return out, nil
}

// listCopy copies a list; an empty list is empty, never nil, as Postgres returns it.
func listCopy(l []string) []string {
	return append([]string{}, l...)
}
