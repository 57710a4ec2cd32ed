package memory

import (
	"context"
	"math/bits"
	"time"

	"github.com/healthtech/partner-open-platform/projections"
)

// reportIndexes holds the reports (reportRow, in a table) and the index
// of the daily report, so ReportsOfDay reads one user's day and never
// scans every report.
type reportIndexes struct {
	reports idTable[reportRow]
	byDay   chainIndex // (AppID, OpenUserID, Day) -> the reports' places
}

// initReports empties the reports read model; a paged image of it being
// read then fails (paging.gen).
func (s *Store) initReports() {
	s.reportsPaging.gen++
	s.reportIndexes = reportIndexes{reports: newIDTable[reportRow](0), byDay: newChainIndex(0)}
}

// hashDay is the hash of a daily report's key.
func hashDay(app, user int64, day string) uint64 {
	return hashText(app, day) ^ bits.RotateLeft64(hashID(user), 1)
}

func (s *Store) dayHashAt(p uint32) uint64 {
	r := s.reports.rows.at(p)
	return hashDay(r.appID, r.userID, r.day())
}

// ofDay tells the index's rows of the daily report's key.
func (s *Store) ofDay(app, user int64, day string) func(uint32) bool {
	return func(p uint32) bool {
		r := s.reports.rows.at(p)
		return r.appID == app && r.userID == user && r.day() == day
	}
}

func (s *Store) reportLess(a, b uint32) bool {
	return s.reports.rows.at(a).id < s.reports.rows.at(b).id
}

func sameDay(a, b reportRow) bool {
	return a.appID == b.appID && a.userID == b.userID && a.day() == b.day()
}

// setReport replaces cur (if had) by next (if keep), which has cur's id,
// in the rows and the day index; the undo of a write is the same call with
// the sides swapped.
func (s *Store) setReport(cur reportRow, had bool, next reportRow, keep bool) {
	if had {
		s.reportsCOW.keep(cur.id, s.reports.row)
	} else if keep {
		s.reportsCOW.keep(next.id, s.reports.row)
	}
	moved := !had || !keep || !sameDay(cur, next) // the day index changes
	if had && moved {
		p, _ := s.reports.place(cur.id)
		day := cur.day()
		s.byDay.remove(hashDay(cur.appID, cur.userID, day), p, s.ofDay(cur.appID, cur.userID, day), s.reportLess, s.dayHashAt)
	}
	if !keep {
		s.reports.del(cur.id)
		return
	}
	// set writes next in cur's place, which the day index keeps when the
	// day did not change.
	p := s.reports.set(next.id, next)
	if moved {
		s.indexReport(p, next)
	}
}

func (s *Store) indexReport(p uint32, r reportRow) {
	day := r.day()
	s.byDay.add(hashDay(r.appID, r.userID, day), p, s.ofDay(r.appID, r.userID, day), s.reportLess, s.dayHashAt)
}

// ---- reads ----

// Report enforces tenancy in the lookup, so no caller can forget it.
func (s *Store) Report(ctx context.Context, appID, id int64) (projections.Report, error) {
	if err := ctx.Err(); err != nil {
		return projections.Report{}, err
	}
	s.reportsMu.RLock()
	defer s.reportsMu.RUnlock()
	r := s.reports.get(id)
	if r == nil || r.appID != appID {
		return projections.Report{}, projections.ErrNotFound
	}
	return r.view(nil), nil
}

// ReportsOfDay reads the day index, so a daily report costs its own rows.
func (s *Store) ReportsOfDay(ctx context.Context, appID, openUserID int64, day string) ([]projections.Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.reportsMu.RLock()
	defer s.reportsMu.RUnlock()
	var buf [8]uint32
	places := placesOf(&s.byDay, &s.reports.rows, hashDay(appID, openUserID, day), s.ofDay(appID, openUserID, day), buf[:0])
	out := make([]projections.Report, 0, len(places))
	for _, p := range places {
		out = append(out, s.reports.rows.at(p).view(nil))
	}
	return out, nil
}

// UserByPhone reads the phone index; of several users with the phone the
// lowest id wins.
func (s *Store) UserByPhone(ctx context.Context, appID int64, phone string) (projections.User, error) {
	if err := ctx.Err(); err != nil {
		return projections.User{}, err
	}
	s.usersMu.RLock()
	defer s.usersMu.RUnlock()
	u := s.userByPhone(appID, phone)
	if u == nil {
		return projections.User{}, projections.ErrNotFound
	}
	return u.user(nil), nil
}

// ---- writes ----

// Report reads a report as this transaction sees it, whatever its app.
func (t *tx) Report(ctx context.Context, id int64) (projections.Report, error) {
	if err := t.check(ctx); err != nil {
		return projections.Report{}, err
	}
	r := t.s.reports.get(id)
	if r == nil {
		return projections.Report{}, projections.ErrNotFound
	}
	return r.view(nil), nil
}

func (t *tx) PutReport(ctx context.Context, r projections.Report) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	next := packReport(r)
	old, had := s.reports.row(r.ReportID)
	s.setReport(old, had, next, true)
	t.keepUndo(func() { s.setReport(next, true, old, had) })
	return nil
}

// restoreReports adds an image's reports (unique ids) to the emptied
// reports read model. The caller holds the read model's write lock.
func (s *Store) restoreReports(rows []projections.Report) {
	for _, r := range rows {
		next := packReport(r)
		s.indexReport(s.reports.add(next.id, next), next)
	}
}

// EraseUserReports blanks the personal fields of the user's reports.
func (t *tx) EraseUserReports(ctx context.Context, openUserID int64) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	var mine []reportRow
	s.reports.each(func(_ int64, r reportRow) bool {
		if r.userID == openUserID {
			mine = append(mine, r)
		}
		return true
	})
	for _, old := range mine {
		r := old.view(nil)
		r.FilePath, r.InterpretationResult, r.InterpretationDetail, r.OperatorName, r.RawData = nil, nil, nil, nil, nil
		next := packReport(r)
		s.setReport(old, true, next, true)
		t.undo = append(t.undo, func() { s.setReport(next, true, old, true) })
	}
	return nil
}

// normTimePtr is a copy of *p, normalized.
func normTimePtr(p *time.Time) *time.Time {
	if p == nil {
		return nil
	}
	v := normTime(*p)
	return &v
}
