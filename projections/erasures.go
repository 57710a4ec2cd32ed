package projections

import (
	"context"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
)

// PendingErasure is an erasure the app that held the person has not
// acknowledged yet: Seq is the erasure's audit fact, the listing's cursor.
type PendingErasure struct {
	Seq        int64
	AppID      int64
	OpenUserID int64
	Subject    string
	ErasedBy   string
	Reason     string
	ErasedAt   time.Time
}

// AuditPageSize is the page size of the scans behind the erasure listing
// and the partners' access log.
const AuditPageSize = 1000

// PendingErasures lists, in erasure order after the cursor, the erasures
// of app (0: every app) whose app has not acknowledged them, at most
// limit; next is the cursor of the next page (0: none). Both sets come
// from the audit read model: user.erased facts minus the apps'
// user.erasure_acknowledged facts.
func PendingErasures(ctx context.Context, audit AuditStore, app, after int64, limit int) (out []PendingErasure, next int64, err error) {
	type key struct {
		app     int64
		subject string
	}
	acked := map[key]bool{}
	for cursor := int64(0); ; {
		facts, err := audit.AuditFacts(ctx, AuditFilter{Action: ErasureAcknowledgedAction, App: app, After: cursor, Limit: AuditPageSize})
		if err != nil {
			return nil, 0, err
		}
		for _, f := range facts {
			for _, s := range f.Subjects {
				acked[key{f.AppID, s}] = true
			}
		}
		if len(facts) < AuditPageSize {
			break
		}
		cursor = facts[len(facts)-1].Seq
	}
	for cursor := after; ; {
		facts, err := audit.AuditFacts(ctx, AuditFilter{Action: ErasureAction, App: app, After: cursor, Limit: AuditPageSize})
		if err != nil {
			return nil, 0, err
		}
		for _, f := range facts {
			cursor = f.Seq
			if len(f.Subjects) == 0 || acked[key{f.AppID, f.Subjects[0]}] {
				continue
			}
			id, ok := domain.UserStreamID(f.Subjects[0])
			if !ok {
				continue
			}
			out = append(out, PendingErasure{Seq: f.Seq, AppID: f.AppID, OpenUserID: id, Subject: f.Subjects[0], ErasedBy: f.Actor, Reason: f.Reason, ErasedAt: f.At})
			if len(out) == limit {
				return out, f.Seq, nil
			}
		}
		if len(facts) < AuditPageSize {
			return out, 0, nil
		}
	}
}
