package commands

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Given/When/Then of the report and report-key decisions.

var reportNow = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func reportCmd() createReport {
	return createReport{
		In: ReportInput{OpenUserID: 5, OpenMemberID: domain.Val[int64](60), RequestReportID: domain.Val("r1"), ReportType: domain.Val("ecg"),
			RawData: json.RawMessage(`{"hr":72}`)},
		Uploader: "uploader:3", ReportID: 70, Now: reportNow,
	}
}

func report70() catalog.ReportCreated {
	return catalog.ReportCreated{ReportID: 70, AppID: 1, OpenUserID: 5, ChannelUserID: "c1", OpenMemberID: ptr[int64](60),
		RequestReportID: ptr("r1"), ReportType: ptr("ecg"), UploadedAt: reportNow, RawData: `{"hr":72}`, UploadedBy: "uploader:3"}
}

func TestCreateReportDecision(t *testing.T) {
	got, err := decideCreateReport(home(t), given(t, &reportState{}), reportCmd())
	then(t, got, err, report70())

	// A retried request_report_id for the same user: done, nothing new.
	got, err = decideCreateReport(home(t), given(t, &reportState{}, report70()), reportCmd())
	then(t, got, err)

	other := report70()
	other.OpenUserID = 6
	got, err = decideCreateReport(home(t), given(t, &reportState{}, other), reportCmd())
	thenError(t, got, err, domain.ErrDuplicateReportKey)

	got, err = decideCreateReport(given(t, newUserState()), given(t, &reportState{}), reportCmd())
	thenError(t, got, err, domain.ErrUserNotBound)

	c := reportCmd()
	c.In.OpenMemberID = domain.Val[int64](99)
	got, err = decideCreateReport(home(t), given(t, &reportState{}), c)
	thenInvalid(t, err, "open_member_id")
	then(t, got, nil)
}

func TestClaimReportKeyDecision(t *testing.T) {
	then(t, decideClaimReportKey(given(t, &reportKeyState{}), reportCmd()), nil, catalog.ReportKeyClaimed{Uploader: "uploader:3", RequestReportID: "r1", ReportID: 70})
	claimed := given(t, &reportKeyState{}, catalog.ReportKeyClaimed{Uploader: "uploader:3", RequestReportID: "r1", ReportID: 7})
	then(t, decideClaimReportKey(claimed, reportCmd()), nil)
	if claimed.reportID != 7 {
		t.Fatalf("the claimed key names report %d, want 7", claimed.reportID)
	}
}

func TestCreateReportRejectsBadInput(t *testing.T) {
	r := &Reports{}
	for field, in := range map[string]ReportInput{
		"open_user_id":          {RawData: json.RawMessage(`{}`)},
		"raw_data":              {OpenUserID: 5, RawData: json.RawMessage(`[1]`)},
		"interpretation_detail": {OpenUserID: 5, RawData: json.RawMessage(`{}`), InterpretationDetail: json.RawMessage(`"x"`)},
		"report_type":           {OpenUserID: 5, RawData: json.RawMessage(`{}`), ReportType: domain.Val(string(make([]byte, 65)))},
	} {
		t.Run(field, func(t *testing.T) { thenInvalid(t, r.validate(&in), field) })
	}
}

func TestUpdateReportDecision(t *testing.T) {
	updated := catalog.ReportUpdated{ReportID: 70, AppID: 1, OpenUserID: 5, ChannelUserID: "c1", ReportType: ptr("ecg"), UpdatedBy: "operator:9"}

	// A new interpretation without interpreted_at is stamped with now.
	want := updated
	want.InterpretationResult, want.InterpretedAt = ptr("normal"), ptr(reportNow)
	want.Changed = []string{"interpretation_result", "interpreted_at"}
	got, err := decideUpdateReport(given(t, &reportState{}, report70()), updateReport{Patch: ReportPatch{InterpretationResult: domain.Val("normal")}, By: "operator:9", Now: reportNow})
	then(t, got, err, want)

	// Only what differs is recorded; nothing different decides nothing.
	st := given(t, &reportState{}, report70(), want)
	got, err = decideUpdateReport(st, updateReport{Patch: ReportPatch{InterpretationResult: domain.Val("normal"), ReportType: domain.Val("ecg")}, By: "operator:9", Now: reportNow})
	then(t, got, err)
	next := want
	next.FilePath, next.Changed = ptr("/r.pdf"), []string{"file_path"}
	got, err = decideUpdateReport(st, updateReport{Patch: ReportPatch{FilePath: domain.Val("/r.pdf")}, By: "operator:9", Now: reportNow.Add(time.Hour)})
	then(t, got, err, next)

	// The uploader changes its own reports; another uploader's are not found.
	own := updated
	own.UpdatedBy, own.FilePath, own.Changed = "uploader:3", ptr("/r.pdf"), []string{"file_path"}
	got, err = decideUpdateReport(given(t, &reportState{}, report70()), updateReport{Patch: ReportPatch{FilePath: domain.Val("/r.pdf")}, By: "uploader:3"})
	then(t, got, err, own)
	got, err = decideUpdateReport(given(t, &reportState{}, report70()), updateReport{Patch: ReportPatch{FilePath: domain.Val("/r.pdf")}, By: "uploader:4"})
	thenError(t, got, err, domain.ErrReportNotFound)
	got, err = decideUpdateReport(given(t, &reportState{}), updateReport{Patch: ReportPatch{FilePath: domain.Val("/r.pdf")}, By: "operator:9"})
	thenError(t, got, err, domain.ErrReportNotFound)
}

func TestMarkViewedDecision(t *testing.T) {
	created := func(more ...events.Payload) *reportState {
		return given(t, &reportState{}, append([]events.Payload{report70()}, more...)...)
	}
	got, err := decideMarkViewed(created(), 1)
	then(t, got, err, catalog.ReportViewed{ReportID: 70, AppID: 1})
	got, err = decideMarkViewed(created(catalog.ReportViewed{ReportID: 70, AppID: 1}), 1)
	then(t, got, err) // the first pull only
	got, err = decideMarkViewed(created(), 2)
	thenError(t, got, err, domain.ErrReportNotFound)
	got, err = decideMarkViewed(given(t, &reportState{}), 1)
	thenError(t, got, err, domain.ErrReportNotFound)
}
