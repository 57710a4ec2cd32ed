package memory

import (
	"context"
	"time"

	"github.com/healthtech/partner-open-platform/projections"
)

// reportIndexes holds the reports and the index of the daily report, so
// ReportsOfDay reads one user's day and never scans every report.
type reportIndexes struct {
	reports map[int64]projections.Report // by ReportID
	byDay   map[dayKey][]int64           // (AppID, OpenUserID, Day) -> ReportIDs, sorted
}

type dayKey struct {
	app, user int64
	day       string
}

// initReports empties the reports read model; a paged image of it being
// read then fails (paging.gen).
func (s *Store) initReports() {
	s.reportsPaging.gen++
	s.reportIndexes = newReportIndexes()
}

func newReportIndexes() reportIndexes {
	return reportIndexes{
		reports: map[int64]projections.Report{},
		byDay:   map[dayKey][]int64{},
	}
}

func dayKeyOf(r projections.Report) dayKey { return dayKey{r.AppID, r.OpenUserID, r.Day} }

// setReport replaces cur (if had) by next (if keep) in the rows and the day
// index; the undo of a write is the same call with the sides swapped.
func (s *Store) setReport(cur projections.Report, had bool, next projections.Report, keep bool) {
	if had && (!keep || dayKeyOf(cur) != dayKeyOf(next)) {
		k := dayKeyOf(cur)
		if ids := removeID(s.byDay[k], cur.ReportID); len(ids) == 0 {
			delete(s.byDay, k)
		} else {
			s.byDay[k] = ids
		}
	}
	if had {
		s.reportsCOW.keepIn(s.reports, cur.ReportID)
		delete(s.reports, cur.ReportID)
	}
	if keep {
		s.reportsCOW.keepIn(s.reports, next.ReportID)
		s.reports[next.ReportID] = next
		k := dayKeyOf(next)
		s.byDay[k] = insertID(s.byDay[k], next.ReportID)
	}
}

// ---- reads ----

// Report enforces tenancy in the lookup, so no caller can forget it.
func (s *Store) Report(ctx context.Context, appID, id int64) (projections.Report, error) {
	if err := ctx.Err(); err != nil {
		return projections.Report{}, err
	}
	s.reportsMu.RLock()
	defer s.reportsMu.RUnlock()
	r, ok := s.reports[id]
	if !ok || r.AppID != appID {
		return projections.Report{}, projections.ErrNotFound
	}
	return copyReport(r), nil
}

// ReportsOfDay reads the day index, so a daily report costs its own rows.
func (s *Store) ReportsOfDay(ctx context.Context, appID, openUserID int64, day string) ([]projections.Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.reportsMu.RLock()
	defer s.reportsMu.RUnlock()
	ids := s.byDay[dayKey{appID, openUserID, day}]
	out := make([]projections.Report, 0, len(ids))
	for _, id := range ids {
		out = append(out, copyReport(s.reports[id]))
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
	r, ok := t.s.reports[id]
	if !ok {
		return projections.Report{}, projections.ErrNotFound
	}
	return copyReport(r), nil
}

func (t *tx) PutReport(ctx context.Context, r projections.Report) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	r = normReport(r)
	old, had := s.reports[r.ReportID]
	s.setReport(old, had, r, true)
	if !t.owned {
		t.undo = append(t.undo, func() { s.setReport(r, true, old, had) })
	}
	return nil
}

// restoreReports adds an image's reports (unique ids) to the emptied
// reports read model, keeping each row's pointees as they are: a
// snapshot decodes a report's texts, bytes and times into allocations of
// its own, and an image's rows are never written (a time is normalized
// into a new one), so copies of them (as PutReport makes) would leave the
// decoded ones as garbage among the reports that stay. The caller holds
// the read model's write lock.
func (s *Store) restoreReports(rows []projections.Report) {
	for _, r := range rows {
		r.ExaminedAt, r.InterpretedAt = normTimeShared(r.ExaminedAt), normTimeShared(r.InterpretedAt)
		r.UploadedAt, r.UpdatedAt = normTime(r.UploadedAt), normTime(r.UpdatedAt)
		if len(r.InterpretationDetail) == 0 {
			r.InterpretationDetail = nil
		}
		if len(r.RawData) == 0 {
			r.RawData = nil
		}
		s.setReport(projections.Report{}, false, r, true)
	}
}

// normTimeShared is p normalized: p itself when it is already.
func normTimeShared(p *time.Time) *time.Time {
	if p == nil {
		return nil
	}
	if v := normTime(*p); v != *p {
		return &v
	}
	return p
}

// EraseUserReports blanks the personal fields of the user's reports.
func (t *tx) EraseUserReports(ctx context.Context, openUserID int64) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	for _, old := range s.reports {
		if old.OpenUserID != openUserID {
			continue
		}
		next := copyReport(old)
		next.FilePath, next.InterpretationResult, next.InterpretationDetail, next.OperatorName, next.RawData = nil, nil, nil, nil, nil
		next = normReport(next)
		s.setReport(old, true, next, true)
		t.undo = append(t.undo, func() { s.setReport(next, true, old, true) })
	}
	return nil
}

// ---- copies and normalisation ----

// cloneJSON copies JSON bytes; nil and empty both mean JSON null, which the
// Postgres store keeps as NULL and reads back as nil.
func cloneJSON(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

func normTimePtr(p *time.Time) *time.Time {
	if p == nil {
		return nil
	}
	v := normTime(*p)
	return &v
}

func copyReport(r projections.Report) projections.Report {
	r.OpenMemberID, r.OperatorPlatformUserID = cloneInt(r.OpenMemberID), cloneInt(r.OperatorPlatformUserID)
	r.RequestReportID, r.MeasurementNo, r.DeviceSN = cloneStr(r.RequestReportID), cloneStr(r.MeasurementNo), cloneStr(r.DeviceSN)
	r.ReportType, r.FilePath = cloneStr(r.ReportType), cloneStr(r.FilePath)
	r.InterpretationResult, r.InterpretationMethod = cloneStr(r.InterpretationResult), cloneStr(r.InterpretationMethod)
	r.PointsCode, r.DataSource, r.OperatorName = cloneStr(r.PointsCode), cloneStr(r.DataSource), cloneStr(r.OperatorName)
	r.ExaminedAt, r.InterpretedAt = cloneTime(r.ExaminedAt), cloneTime(r.InterpretedAt)
	r.InterpretationDetail, r.RawData = cloneJSON(r.InterpretationDetail), cloneJSON(r.RawData)
	return r
}

func normReport(r projections.Report) projections.Report {
	r = copyReport(r)
	r.ExaminedAt, r.InterpretedAt = normTimePtr(r.ExaminedAt), normTimePtr(r.InterpretedAt)
	r.UploadedAt, r.UpdatedAt = normTime(r.UploadedAt), normTime(r.UpdatedAt)
	return r
}
