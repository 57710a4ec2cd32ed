package queryapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/projections"
)

// renderPull is the pull's body as a map, as the handler built it before
// writePull: httpapi.OK's encoding of it is the bytes writePull must write.
func renderPull(rep projections.Report, loc *time.Location) map[string]any {
	rfc3339 := func(t *time.Time) *string {
		if t == nil {
			return nil
		}
		s := t.In(loc).Format(time.RFC3339)
		return &s
	}
	jsonOrNull := func(b []byte) any {
		if b == nil {
			return nil
		}
		return httpapi.Verbatim(b)
	}
	uploaded := rep.UploadedAt.In(loc).Format(time.RFC3339)
	return map[string]any{
		"id": rep.ReportID, "app_id": rep.AppID, "open_user_id": rep.OpenUserID, "open_member_id": rep.OpenMemberID,
		"request_report_id": rep.RequestReportID, "measurement_no": rep.MeasurementNo, "device_sn": rep.DeviceSN,
		"report_type": rep.ReportType, "file_path": rep.FilePath, "interpretation_result": rep.InterpretationResult,
		"interpretation_detail": jsonOrNull(rep.InterpretationDetail), "interpretation_method": rep.InterpretationMethod,
		"is_viewed": rep.IsViewed, "uploaded_at": &uploaded, "examined_at": rfc3339(rep.ExaminedAt), "interpreted_at": rfc3339(rep.InterpretedAt),
		"meta": map[string]any{
			"points_code": rep.PointsCode, "data_source": rep.DataSource, "operator_name": rep.OperatorName,
			"operator_platform_user_id": rep.OperatorPlatformUserID,
		},
		"raw_data": jsonOrNull(rep.RawData),
	}
}

// TestPullBytesAsEncodingJSON: the pull's hand-written body is byte for
// byte what httpapi.OK writes for the map, headers and status included,
// for full and empty reports, strings encoding/json escapes, stored JSON
// with its own spacing (kept), invalid or empty stored JSON (null), and
// several zones. (Stored JSON is checked on upload, so invalid stored JSON
// does not occur; when it did and no valid stored JSON was beside it, the
// map path fell back to encoding/json's base64 of the bytes instead of the
// null it writes otherwise: TestPullInvalidStoredJSONIsNull.)
func TestPullBytesAsEncodingJSON(t *testing.T) {
	now := time.Date(2026, 11, 23, 19, 0, 1, 0, time.FixedZone("X", 3600))
	old := httpapi.Clock
	httpapi.Clock = func() time.Time { return now }
	defer func() { httpapi.Clock = old }()
	s := func(v string) *string { return &v }
	n := func(v int64) *int64 { return &v }
	at := time.Date(2026, 1, 2, 23, 4, 5, 999999000, time.UTC)
	at2 := at.Add(-25 * time.Hour)
	odd := "a\"b\\c\x00\x01\b\f\n\r\t\x1f\x7f<>&\u2028\u2029\xff\xc3 张三 🙂"
	reports := []projections.Report{
		{ReportID: 1, AppID: 2, OpenUserID: 3, UploadedAt: at},
		{ReportID: 1 << 62, AppID: -2, OpenUserID: -1 << 63, OpenMemberID: n(9), RequestReportID: s("r<1>&"), MeasurementNo: s("m"),
			DeviceSN: s("sn"), ReportType: s("BLOOD_PRESSURE"), FilePath: s("https://x/a.pdf?x=1&y=<2>"), InterpretationResult: s(odd),
			InterpretationDetail: []byte(`{ "a" : [1, 2.50, "<&>"] }`), InterpretationMethod: s("AI"), IsViewed: true, UploadedAt: at,
			ExaminedAt: &at2, InterpretedAt: &at, PointsCode: s(odd), DataSource: s("station"), OperatorName: s(odd), OperatorPlatformUserID: n(-7),
			RawData: []byte("{\"indicators\":[{\"code\":\"SBP\",\"value\":118}],\n  \"note\":\"\\u003c\"}")},
		{ReportID: 5, AppID: 6, OpenUserID: 7, UploadedAt: time.Unix(0, 0), InterpretationDetail: []byte(`{"a":`), RawData: []byte(`[]`)},
		{ReportID: 5, AppID: 6, OpenUserID: 7, UploadedAt: at, InterpretationDetail: []byte(`{}`), RawData: []byte{}},
		{ReportID: 5, AppID: 6, OpenUserID: 7, UploadedAt: at, RequestReportID: s(""), InterpretationDetail: []byte(`null`), RawData: []byte(` {} `)},
	}
	for _, loc := range []*time.Location{time.UTC, time.FixedZone("CST", 8*3600), time.FixedZone("W", -(9*3600 + 30*60))} {
		for i, rep := range reports {
			want := httptest.NewRecorder()
			httpapi.OK(want, http.StatusOK, renderPull(rep, loc))
			got := httptest.NewRecorder()
			writePull(got, &rep, loc)
			if got.Code != want.Code || !reflect.DeepEqual(got.Header(), want.Header()) || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
				t.Errorf("%s report %d:\n got %d %v %s\nwant %d %v %s", loc, i, got.Code, got.Header(), got.Body.Bytes(), want.Code, want.Header(), want.Body.Bytes())
			}
		}
	}
}

// TestPullInvalidStoredJSONIsNull: stored JSON that is not valid JSON (or
// empty) is null, whether or not valid stored JSON is beside it.
func TestPullInvalidStoredJSONIsNull(t *testing.T) {
	rep := projections.Report{ReportID: 5, AppID: 6, OpenUserID: 7, UploadedAt: time.Unix(0, 0), InterpretationDetail: []byte(`{"a":`), RawData: []byte{}}
	got := string(appendPullEnvelope(nil, &rep, time.UTC, "t"))
	for _, want := range []string{`"interpretation_detail":null,`, `"raw_data":null,`} {
		if !strings.Contains(got, want) {
			t.Errorf("%s: missing %s", got, want)
		}
	}
}
