package projections

import (
	"context"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// AccessEntry is one recorded read of some of an app's users' data, as the
// app is shown it (access transparency): the reader by role and
// pseudonymous id, never by name, and the app's own users only.
type AccessEntry struct {
	Seq          int64
	At           time.Time
	Action       string
	AccessorRole string
	Accessor     string
	Reason       string
	OpenUserIDs  []int64
	ReportID     int64 // the app's own pulled report; 0 otherwise
}

// AccessFilter selects an app's access log: one of its users (0: all),
// a time range (From inclusive, To exclusive; zero: open), after a seq, at
// most Limit entries.
type AccessFilter struct {
	App, User int64
	From, To  time.Time
	After     int64
	Limit     int
}

// AccessLookups are what the access log needs beyond the audit facts: the
// app a user belongs to (0: unknown) and the role of an operator actor
// ("" when no longer known).
type AccessLookups struct {
	UserApp func(ctx context.Context, openUserID int64) (int64, error)
	Role    func(actor string) string
}

// IsAccess reports the audit actions that read a person's data: an app's
// report pulls and the operators' reveals (not erasures, their
// acknowledgements or portal actions).
func IsAccess(action string) bool {
	return action == catalog.AuditReportPull || strings.HasPrefix(action, "reveal.")
}

// accessor is who read, as an app is shown it.
func accessor(actor string, role func(string) string) (string, string) {
	switch {
	case strings.HasPrefix(actor, "app:"):
		return "app", actor
	case strings.HasPrefix(actor, "operator:"):
		if r := role(actor); r != "" {
			return r, actor
		}
		return "operator", actor
	}
	return "platform", "platform"
}

// AccessLog lists the accesses to f.App's users' data in seq order: the
// audit facts that name the app (its stream, which recording adds for
// every user a fact names), or one of its users when f.User is set; next is
// the cursor of the next page (0: none). A user of another app is
// domain.ErrUserNotFound, as a missing one.
func AccessLog(ctx context.Context, audit AuditStore, look AccessLookups, f AccessFilter) ([]AccessEntry, int64, error) {
	owned := map[int64]bool{}
	owns := func(id int64) (bool, error) {
		if o, ok := owned[id]; ok {
			return o, nil
		}
		app, err := look.UserApp(ctx, id)
		if err != nil {
			return false, err
		}
		owned[id] = app == f.App
		return owned[id], nil
	}
	af := AuditFilter{Subject: domain.AppStream(f.App), From: f.From, To: f.To, After: f.After, Limit: AuditPageSize}
	if f.User > 0 {
		if ok, err := owns(f.User); err != nil {
			return nil, 0, err
		} else if !ok {
			return nil, 0, domain.ErrUserNotFound
		}
		af.Subject = domain.UserStream(f.User)
	}
	var out []AccessEntry
	for {
		facts, err := audit.AuditFacts(ctx, af)
		if err != nil {
			return nil, 0, err
		}
		for _, a := range facts {
			af.After = a.Seq
			if !IsAccess(a.Action) {
				continue
			}
			var users []int64
			for _, s := range a.Subjects {
				id, ok := domain.UserStreamID(s)
				if !ok {
					continue
				}
				if mine, err := owns(id); err != nil {
					return nil, 0, err
				} else if mine {
					users = append(users, id)
				}
			}
			if len(users) == 0 {
				continue
			}
			e := AccessEntry{Seq: a.Seq, At: a.At, Action: a.Action, Reason: a.Reason, OpenUserIDs: users}
			e.AccessorRole, e.Accessor = accessor(a.Actor, look.Role)
			if a.ReportID > 0 && a.AppID == f.App {
				e.ReportID = a.ReportID
			}
			out = append(out, e)
			if len(out) == f.Limit {
				return out, a.Seq, nil
			}
		}
		if len(facts) < AuditPageSize {
			return out, 0, nil
		}
	}
}
