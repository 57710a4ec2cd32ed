package memory

import (
	"github.com/healthtech/partner-open-platform/projections"
)

// reportRow is a report as the reports' table keeps it (as the users'
// rows, userrows.go): times as microseconds, and every text and JSON of
// the report in one string: Day, then, when has says so, RequestReportID,
// MeasurementNo, DeviceSN, ReportType, FilePath, InterpretationResult,
// InterpretationMethod, PointsCode, DataSource and OperatorName, then
// InterpretationDetail and RawData (empty for none: nil and empty JSON
// both read as nil, the Postgres store's NULL). A row is 96 bytes in a
// table's chunk, and its texts one allocation.
type reportRow struct {
	appID, id, userID     int64
	uploaded, updated     int64 // UnixMicro, UTC
	examined, interpreted int64 // when has says so
	memberID, operatorID  int64 // when has says so
	text                  string
	has                   uint16
}

// The report row's has: its optional texts are bits 0-9, in text's order.
const (
	reportMember uint16 = 1 << (10 + iota)
	reportOperator
	reportExamined
	reportInterpreted
	reportViewed
)

func (r reportRow) rowID() int64 { return r.id }

// day is the report's Day, without making the row.
func (r *reportRow) day() string {
	t := textReader(r.text)
	return t.next()
}

// packReport is r as a row, its times normalized (normTime).
func packReport(r projections.Report) reportRow {
	var t rowText
	t.add(r.Day)
	t.opt(0, r.RequestReportID)
	t.opt(1, r.MeasurementNo)
	t.opt(2, r.DeviceSN)
	t.opt(3, r.ReportType)
	t.opt(4, r.FilePath)
	t.opt(5, r.InterpretationResult)
	t.opt(6, r.InterpretationMethod)
	t.opt(7, r.PointsCode)
	t.opt(8, r.DataSource)
	t.opt(9, r.OperatorName)
	t.addBytes(r.InterpretationDetail)
	t.addBytes(r.RawData)
	row := reportRow{appID: r.AppID, id: r.ReportID, userID: r.OpenUserID,
		uploaded: micros(r.UploadedAt), updated: micros(r.UpdatedAt), text: t.String(), has: t.has}
	if r.OpenMemberID != nil {
		row.memberID, row.has = *r.OpenMemberID, row.has|reportMember
	}
	if r.OperatorPlatformUserID != nil {
		row.operatorID, row.has = *r.OperatorPlatformUserID, row.has|reportOperator
	}
	if r.ExaminedAt != nil {
		row.examined, row.has = micros(*r.ExaminedAt), row.has|reportExamined
	}
	if r.InterpretedAt != nil {
		row.interpreted, row.has = micros(*r.InterpretedAt), row.has|reportInterpreted
	}
	if r.IsViewed {
		row.has |= reportViewed
	}
	return row
}

// view is the row as projections' type, its optional fields and JSON in
// a (nil: allocated).
func (r reportRow) view(a *ptrArena) projections.Report {
	t := textReader(r.text)
	v := projections.Report{ReportID: r.id, AppID: r.appID, OpenUserID: r.userID, IsViewed: r.has&reportViewed != 0,
		UploadedAt: fromMicros(r.uploaded), UpdatedAt: fromMicros(r.updated)}
	v.Day = t.next()
	v.RequestReportID, v.MeasurementNo, v.DeviceSN = t.opt(r.has, 0, a), t.opt(r.has, 1, a), t.opt(r.has, 2, a)
	v.ReportType, v.FilePath, v.InterpretationResult = t.opt(r.has, 3, a), t.opt(r.has, 4, a), t.opt(r.has, 5, a)
	v.InterpretationMethod, v.PointsCode, v.DataSource = t.opt(r.has, 6, a), t.opt(r.has, 7, a), t.opt(r.has, 8, a)
	v.OperatorName = t.opt(r.has, 9, a)
	v.InterpretationDetail, v.RawData = a.bytes(t.next()), a.bytes(t.next())
	if r.has&reportMember != 0 {
		v.OpenMemberID = a.int(r.memberID)
	}
	if r.has&reportOperator != 0 {
		v.OperatorPlatformUserID = a.int(r.operatorID)
	}
	if r.has&reportExamined != 0 {
		v.ExaminedAt = a.time(fromMicros(r.examined))
	}
	if r.has&reportInterpreted != 0 {
		v.InterpretedAt = a.time(fromMicros(r.interpreted))
	}
	return v
}
