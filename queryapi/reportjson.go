package queryapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

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

// appendPullEnvelope appends the report pull's success envelope as
// httpapi.OK writes it for the map the pull used to build: the same keys in
// the same (sorted) order, strings escaped as encoding/json does without
// HTML escaping, raw_data and interpretation_detail spliced in byte for
// byte (null when absent or not valid JSON), and the encoder's trailing
// newline. It replaces a reflection walk of two maps, a placeholder copy of
// them and a splice pass per pull; reportjson_test.go holds it to the
// encoder's bytes.
func appendPullEnvelope(b []byte, rep *projections.Report, loc *time.Location, timestamp string) []byte {
	b = append(b, `{"success":true,"code":0,"message":"ok","data":{"app_id":`...)
	b = strconv.AppendInt(b, rep.AppID, 10)
	b = append(b, `,"device_sn":`...)
	b = appendOptString(b, rep.DeviceSN)
	b = append(b, `,"examined_at":`...)
	b = appendTimePtr(b, rep.ExaminedAt, loc)
	b = append(b, `,"file_path":`...)
	b = appendOptString(b, rep.FilePath)
	b = append(b, `,"id":`...)
	b = strconv.AppendInt(b, rep.ReportID, 10)
	b = append(b, `,"interpretation_detail":`...)
	b = appendRaw(b, rep.InterpretationDetail)
	b = append(b, `,"interpretation_method":`...)
	b = appendOptString(b, rep.InterpretationMethod)
	b = append(b, `,"interpretation_result":`...)
	b = appendOptString(b, rep.InterpretationResult)
	b = append(b, `,"interpreted_at":`...)
	b = appendTimePtr(b, rep.InterpretedAt, loc)
	b = append(b, `,"is_viewed":`...)
	b = strconv.AppendBool(b, rep.IsViewed)
	b = append(b, `,"measurement_no":`...)
	b = appendOptString(b, rep.MeasurementNo)
	b = append(b, `,"meta":{"data_source":`...)
	b = appendOptString(b, rep.DataSource)
	b = append(b, `,"operator_name":`...)
	b = appendOptString(b, rep.OperatorName)
	b = append(b, `,"operator_platform_user_id":`...)
	b = appendOptInt(b, rep.OperatorPlatformUserID)
	b = append(b, `,"points_code":`...)
	b = appendOptString(b, rep.PointsCode)
	b = append(b, `},"open_member_id":`...)
	b = appendOptInt(b, rep.OpenMemberID)
	b = append(b, `,"open_user_id":`...)
	b = strconv.AppendInt(b, rep.OpenUserID, 10)
	b = append(b, `,"raw_data":`...)
	b = appendRaw(b, rep.RawData)
	b = append(b, `,"report_type":`...)
	b = appendOptString(b, rep.ReportType)
	b = append(b, `,"request_report_id":`...)
	b = appendOptString(b, rep.RequestReportID)
	b = append(b, `,"uploaded_at":`...)
	b = append(b, '"')
	b = rep.UploadedAt.In(loc).AppendFormat(b, time.RFC3339)
	b = append(b, '"')
	b = append(b, `},"timestamp":`...)
	b = appendString(b, timestamp)
	return append(b, "}\n"...)
}

// appendRaw splices stored JSON as httpapi.Verbatim does: unchanged, or
// null when absent or not valid JSON.
func appendRaw(b, raw []byte) []byte {
	if raw == nil || !json.Valid(raw) {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

func appendTimePtr(b []byte, t *time.Time, loc *time.Location) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.In(loc).AppendFormat(b, time.RFC3339)
	return append(b, '"')
}
