package queryapi

import (
	"encoding/json"
	"net/http"
	"time"

	jc "github.com/healthtech/partner-open-platform/events/jsoncodec"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/projections"
)

// writePull answers a report pull with appendPullEnvelope's bytes, in a
// recycled buffer (the snapshot read's pool: both are a few hundred bytes
// plus the raw device data).
func writePull(w http.ResponseWriter, rep *projections.Report, loc *time.Location) {
	bp := snapshotBufs.Get().(*[]byte)
	b := appendPullEnvelope((*bp)[:0], rep, loc, httpapi.Clock().Format(time.RFC3339))
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
	if cap(b) <= 64<<10 {
		*bp = b
		snapshotBufs.Put(bp)
	}
}

// appendPullEnvelope appends the report pull's success envelope byte for
// byte as httpapi.OK would encode the report as a map: the same keys in
// the same (sorted) order, strings escaped as encoding/json does without
// HTML escaping, raw_data and interpretation_detail spliced in byte for
// byte (null when absent or not valid JSON), and the encoder's trailing
// newline. Written directly, a pull makes no reflection walk of maps, no
// placeholder copy and no splice pass; reportjson_test.go holds it to the
// encoder's bytes.
func appendPullEnvelope(b []byte, rep *projections.Report, loc *time.Location, timestamp string) []byte {
	b = jc.Int(b, `{"success":true,"code":0,"message":"ok","data":{"app_id":`, rep.AppID)
	b = text.OptString(b, `,"device_sn":`, rep.DeviceSN)
	b = jc.OptTimeIn(b, `,"examined_at":`, rep.ExaminedAt, loc, time.RFC3339)
	b = text.OptString(b, `,"file_path":`, rep.FilePath)
	b = jc.Int(b, `,"id":`, rep.ReportID)
	b = appendRaw(b, `,"interpretation_detail":`, rep.InterpretationDetail)
	b = text.OptString(b, `,"interpretation_method":`, rep.InterpretationMethod)
	b = text.OptString(b, `,"interpretation_result":`, rep.InterpretationResult)
	b = jc.OptTimeIn(b, `,"interpreted_at":`, rep.InterpretedAt, loc, time.RFC3339)
	b = jc.Bool(b, `,"is_viewed":`, rep.IsViewed)
	b = text.OptString(b, `,"measurement_no":`, rep.MeasurementNo)
	b = text.OptString(b, `,"meta":{"data_source":`, rep.DataSource)
	b = text.OptString(b, `,"operator_name":`, rep.OperatorName)
	b = jc.OptInt(b, `,"operator_platform_user_id":`, rep.OperatorPlatformUserID)
	b = text.OptString(b, `,"points_code":`, rep.PointsCode)
	b = jc.OptInt(b, `},"open_member_id":`, rep.OpenMemberID)
	b = jc.Int(b, `,"open_user_id":`, rep.OpenUserID)
	b = appendRaw(b, `,"raw_data":`, rep.RawData)
	b = text.OptString(b, `,"report_type":`, rep.ReportType)
	b = text.OptString(b, `,"request_report_id":`, rep.RequestReportID)
	b = jc.TimeIn(b, `,"uploaded_at":`, rep.UploadedAt, loc, time.RFC3339)
	b = text.String(b, `},"timestamp":`, timestamp)
	return append(b, "}\n"...)
}

// appendRaw appends key and stored JSON as httpapi.Verbatim splices it:
// unchanged, or null when absent or not valid JSON.
func appendRaw(b []byte, key string, raw []byte) []byte {
	if raw == nil || !json.Valid(raw) {
		return append(append(b, key...), "null"...)
	}
	return append(append(b, key...), raw...)
}
