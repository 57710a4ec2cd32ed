package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/projections"
)

const reportColumns = `report_id, app_id, open_user_id, open_member_id, request_report_id, measurement_no,
    device_sn, report_type, file_path, interpretation_result, interpretation_detail, interpretation_method,
    is_viewed, uploaded_at, examined_at, interpreted_at, points_code, data_source, operator_name,
    operator_platform_user_id, raw_data, day, updated_at`

func scanReport(row pgx.Row) (projections.Report, error) {
	var r projections.Report
	err := row.Scan(reportDests(&r)...)
	fixReport(&r)
	return r, err
}

// reportDests are the scan destinations of reportColumns, in order.
func reportDests(r *projections.Report) []any {
	return []any{&r.ReportID, &r.AppID, &r.OpenUserID, &r.OpenMemberID, &r.RequestReportID, &r.MeasurementNo,
		&r.DeviceSN, &r.ReportType, &r.FilePath, &r.InterpretationResult, &r.InterpretationDetail, &r.InterpretationMethod,
		&r.IsViewed, &r.UploadedAt, &r.ExaminedAt, &r.InterpretedAt, &r.PointsCode, &r.DataSource, &r.OperatorName,
		&r.OperatorPlatformUserID, &r.RawData, &r.Day, &r.UpdatedAt}
}

// fixReport brings a scanned report to what the port promises: times in
// UTC, JSON null as nil.
func fixReport(r *projections.Report) {
	r.UploadedAt, r.UpdatedAt = r.UploadedAt.UTC(), r.UpdatedAt.UTC()
	if r.ExaminedAt != nil {
		*r.ExaminedAt = r.ExaminedAt.UTC()
	}
	if r.InterpretedAt != nil {
		*r.InterpretedAt = r.InterpretedAt.UTC()
	}
	r.InterpretationDetail, r.RawData = jsonOrNil(r.InterpretationDetail), jsonOrNil(r.RawData)
}

// jsonOrNil maps no bytes to nil, the JSON null the port promises; PutReport
// never stores an empty bytea, so this only guards rows written by hand.
func jsonOrNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// jsonArg is the bytea argument for JSON bytes: NULL for JSON null (nil or
// empty), else a copy, as the caller may reuse its buffer before the batch is sent.
func jsonArg(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}

// Report enforces tenancy in the query, so no caller can forget it.
func (s *Store) Report(ctx context.Context, appID, id int64) (projections.Report, error) {
	r, err := scanReport(s.pool.QueryRow(ctx,
		`SELECT `+reportColumns+` FROM reports WHERE report_id = $1 AND app_id = $2`, id, appID))
	return r, notFound(err, "report %d of app %d", id, appID)
}

const reportsOfDayQuery = `SELECT ` + reportColumns + ` FROM reports
WHERE app_id = $1 AND open_user_id = $2 AND day = $3
ORDER BY report_id`

// ReportsOfDay is one range of reports_user_day_idx, read in the order it returns.
func (s *Store) ReportsOfDay(ctx context.Context, appID, openUserID int64, day string) ([]projections.Report, error) {
	rows, _ := s.pool.Query(ctx, reportsOfDayQuery, appID, openUserID, day)
	rs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (projections.Report, error) {
		return scanReport(row)
	})
	if err != nil {
		return nil, fmt.Errorf("projections/postgres: reports of user %d on %s: %w", openUserID, day, err)
	}
	return rs, nil
}

const userByPhoneQuery = `SELECT ` + userColumns + ` FROM users
WHERE app_id = $1 AND phone = $2
ORDER BY open_user_id
LIMIT 1`

// UserByPhone reads the first entry of users_app_phone_idx, whose order makes the lowest id win.
func (s *Store) UserByPhone(ctx context.Context, appID int64, phone string) (projections.User, error) {
	u, err := scanUser(s.pool.QueryRow(ctx, userByPhoneQuery, appID, phone))
	return u, notFound(err, "user by phone in app %d", appID) // the phone stays out of errors and logs
}

// ---- writes ----

// Report reads a report as this transaction sees it, whatever its app.
func (t *tx) Report(ctx context.Context, id int64) (projections.Report, error) {
	if err := t.check(ctx); err != nil {
		return projections.Report{}, err
	}
	r, err := scanReport(t.queryRow(ctx, true, `SELECT `+reportColumns+` FROM reports WHERE report_id = $1`, id))
	return r, notFound(err, "report %d", id)
}

const upsertReport = `
INSERT INTO reports (` + reportColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)
ON CONFLICT (report_id) DO UPDATE SET
    app_id = EXCLUDED.app_id,
    open_user_id = EXCLUDED.open_user_id,
    open_member_id = EXCLUDED.open_member_id,
    request_report_id = EXCLUDED.request_report_id,
    measurement_no = EXCLUDED.measurement_no,
    device_sn = EXCLUDED.device_sn,
    report_type = EXCLUDED.report_type,
    file_path = EXCLUDED.file_path,
    interpretation_result = EXCLUDED.interpretation_result,
    interpretation_detail = EXCLUDED.interpretation_detail,
    interpretation_method = EXCLUDED.interpretation_method,
    is_viewed = EXCLUDED.is_viewed,
    uploaded_at = EXCLUDED.uploaded_at,
    examined_at = EXCLUDED.examined_at,
    interpreted_at = EXCLUDED.interpreted_at,
    points_code = EXCLUDED.points_code,
    data_source = EXCLUDED.data_source,
    operator_name = EXCLUDED.operator_name,
    operator_platform_user_id = EXCLUDED.operator_platform_user_id,
    raw_data = EXCLUDED.raw_data,
    day = EXCLUDED.day,
    updated_at = EXCLUDED.updated_at`

// EraseUserReports blanks the personal fields of the user's reports.
func (t *tx) EraseUserReports(ctx context.Context, openUserID int64) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	t.queue(`UPDATE reports SET file_path = NULL, interpretation_result = NULL, interpretation_detail = NULL,
		operator_name = NULL, raw_data = NULL WHERE open_user_id = $1`, openUserID)
	return nil
}

// reportRows writes runs of reports (rows.go).
var reportRows = rowStmt{table: "reports", one: upsertReport, many: unnestOf(upsertReport,
	"bigint", "bigint", "bigint", "bigint", "text", "text", "text", "text", "text", "text", "bytea", "text",
	"boolean", "timestamptz", "timestamptz", "timestamptz", "text", "text", "text", "bigint", "bytea", "text", "timestamptz")}

func (t *tx) PutReport(ctx context.Context, r projections.Report) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	t.queueRow(&reportRows, r.ReportID, r.ReportID, r.AppID, r.OpenUserID, opt(r.OpenMemberID), opt(r.RequestReportID),
		opt(r.MeasurementNo), opt(r.DeviceSN), opt(r.ReportType), opt(r.FilePath), opt(r.InterpretationResult),
		jsonArg(r.InterpretationDetail), opt(r.InterpretationMethod), r.IsViewed, r.UploadedAt, opt(r.ExaminedAt),
		opt(r.InterpretedAt), opt(r.PointsCode), opt(r.DataSource), opt(r.OperatorName), opt(r.OperatorPlatformUserID),
		jsonArg(r.RawData), r.Day, r.UpdatedAt)
	return nil
}
