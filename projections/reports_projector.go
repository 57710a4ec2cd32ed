package projections

import (
	"context"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

func rawOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// reportDay is the calendar day of a report in the platform zone: when it
// was examined, else when it was uploaded.
func reportDay(examined *time.Time, uploaded time.Time, loc *time.Location) string {
	t := uploaded
	if examined != nil {
		t = *examined
	}
	return t.In(loc).Format(time.DateOnly)
}

func applyReport(ctx context.Context, tx ReportTx, env events.Envelope, loc *time.Location) error {
	if loc == nil {
		loc = time.UTC
	}
	at := env.Metadata.OccurredAt.UTC()
	switch p := env.Payload.(type) {
	case *catalog.ReportCreated:
		return tx.PutReport(ctx, Report{
			ReportID: p.ReportID, AppID: p.AppID, OpenUserID: p.OpenUserID, OpenMemberID: p.OpenMemberID,
			RequestReportID: p.RequestReportID, MeasurementNo: p.MeasurementNo, DeviceSN: p.DeviceSN, ReportType: p.ReportType,
			FilePath: p.FilePath, InterpretationResult: p.InterpretationResult, InterpretationDetail: rawOrNil(p.InterpretationDetail),
			InterpretationMethod: p.InterpretationMethod, UploadedAt: p.UploadedAt.UTC(), ExaminedAt: p.ExaminedAt, InterpretedAt: p.InterpretedAt,
			PointsCode: p.Meta.PointsCode, DataSource: p.Meta.DataSource, OperatorName: p.Meta.OperatorName,
			OperatorPlatformUserID: p.Meta.OperatorPlatformUserID, RawData: rawOrNil(p.RawData),
			Day: reportDay(p.ExaminedAt, p.UploadedAt, loc), UpdatedAt: at,
		})
	case *catalog.ReportUpdated:
		r, err := tx.Report(ctx, p.ReportID)
		if err != nil {
			return err
		}
		r.ReportType, r.FilePath, r.InterpretationResult = p.ReportType, p.FilePath, p.InterpretationResult
		r.InterpretationDetail, r.InterpretationMethod, r.InterpretedAt = rawOrNil(p.InterpretationDetail), p.InterpretationMethod, p.InterpretedAt
		r.UpdatedAt = at
		return tx.PutReport(ctx, r)
	case *catalog.ReportViewed:
		r, err := tx.Report(ctx, p.ReportID)
		if err != nil {
			return err
		}
		r.IsViewed, r.UpdatedAt = true, at
		return tx.PutReport(ctx, r)
	case *catalog.UserErased:
		return tx.EraseUserReports(ctx, p.OpenUserID)
	}
	return nil
}
