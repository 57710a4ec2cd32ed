package projections

import (
	"context"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// Report is the read model of a health report, holding everything the pull
// returns. RawData and InterpretationDetail are JSON bytes exactly as the
// reporting side sent them (nil means JSON null): stores must return them
// byte for byte, so they are stored as bytes, never as a parsed JSON type.
type Report struct {
	ReportID               int64
	AppID                  int64
	OpenUserID             int64
	OpenMemberID           *int64
	RequestReportID        *string
	MeasurementNo          *string
	DeviceSN               *string
	ReportType             *string
	FilePath               *string
	InterpretationResult   *string
	InterpretationDetail   []byte
	InterpretationMethod   *string
	IsViewed               bool
	UploadedAt             time.Time
	ExaminedAt             *time.Time
	InterpretedAt          *time.Time
	PointsCode             *string
	DataSource             *string
	OperatorName           *string
	OperatorPlatformUserID *int64
	RawData                []byte
	// Day is the report's calendar day (Y-m-d in the platform zone) of
	// examined_at, or of uploaded_at when not examined: the daily report's key.
	Day       string
	UpdatedAt time.Time
}

// ReportTx is the part of a read-model transaction the report projector writes.
type ReportTx interface {
	// PutReport inserts or replaces the report keyed by ReportID.
	PutReport(ctx context.Context, r Report) error
	// Report reads a report inside the transaction (ErrNotFound if absent).
	Report(ctx context.Context, id int64) (Report, error)
	// EraseUserReports blanks the personal fields (file path, interpretation
	// result and detail, operator name, raw data) of every report of the
	// user, leaving what a replay of their erased events gives.
	EraseUserReports(ctx context.Context, openUserID int64) error
}

// ReportStore is what the report pull and the daily report read.
type ReportStore interface {
	Checkpoints
	// UpdateReports runs fn in one transaction with the named checkpoint.
	UpdateReports(ctx context.Context, projection string, pos events.Position, fn func(ReportTx) error) error
	// Report returns the report if it belongs to appID; otherwise ErrNotFound.
	Report(ctx context.Context, appID, id int64) (Report, error)
	// ReportsOfDay lists a user's reports of one Day, ordered by ReportID.
	ReportsOfDay(ctx context.Context, appID, openUserID int64, day string) ([]Report, error)
}
