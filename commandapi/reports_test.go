package commandapi

import (
	"net/http"
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/projections/directory"
)

func TestHealthReports(t *testing.T) {
	h := newHarness(t)
	user := h.register(h.appA, "cu-1")

	up := h.do("POST", "/admin/v1/uploaders", map[string]any{"name": "lab"}, asAdmin)
	expect(t, "register uploader", up, http.StatusCreated, "0")
	token, _ := up.Data(t)["token"].(string)
	if token == "" || up.Data(t)["name"] != "lab" {
		t.Fatalf("uploader data: %s", up.Raw)
	}
	// The uploader directory learns the uploader as it would from the event.
	h.uploaders.mu.Lock()
	h.uploaders.byHash[domain.HashToken(token)] = directory.Uploader{UploaderID: up.Num(t, "uploader_id"), Name: "lab"}
	h.uploaders.mu.Unlock()
	asUploader := func(r *http.Request, _ []byte) { r.Header.Set("Authorization", "Bearer "+token) }

	report := map[string]any{"open_user_id": user, "request_report_id": "rr-1", "report_type": "ecg", "interpretation_result": "normal", "raw_data": map[string]any{"hr": 70}}
	r := h.do("POST", "/admin/v1/health-reports", report, asUploader)
	expect(t, "create report", r, http.StatusCreated, "0")
	id := r.Num(t, "id")
	if r.Data(t)["created"] != true {
		t.Fatalf("report data: %s", r.Raw)
	}
	before := h.head()
	// request_report_id is idempotent per uploader: the retry is the same
	// report and appends nothing.
	again := h.do("POST", "/admin/v1/health-reports", report, asUploader)
	if again.Status != http.StatusOK || again.Num(t, "id") != id || again.Data(t)["created"] != false || h.head() != before {
		t.Fatalf("same request_report_id again: %d %s", again.Status, again.Raw)
	}
	expect(t, "update report", h.do("PATCH", "/admin/v1/health-reports/"+itoa(id), map[string]any{"interpretation_result": "see a doctor"}, asUploader), http.StatusOK, "0")

	other := h.register(h.appA, "cu-2")
	h.refuses(t, []refusal{
		{"no token", "POST", "/admin/v1/health-reports", report, nil, http.StatusUnauthorized, "HTTP_401"},
		{"unknown uploader token", "POST", "/admin/v1/health-reports", report, func(r *http.Request, _ []byte) { r.Header.Set("Authorization", "Bearer nope") }, http.StatusUnauthorized, "HTTP_401"},
		{"no open_user_id", "POST", "/admin/v1/health-reports", map[string]any{"report_type": "ecg"}, asUploader, http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"unknown user", "POST", "/admin/v1/health-reports", map[string]any{"open_user_id": 888888, "report_type": "ecg", "raw_data": map[string]any{"hr": 70}}, asUploader, http.StatusUnprocessableEntity, "USER_NOT_BOUND"},
		{"request_report_id of another user", "POST", "/admin/v1/health-reports", map[string]any{"open_user_id": other, "request_report_id": "rr-1", "report_type": "ecg", "raw_data": map[string]any{"hr": 70}}, asUploader, http.StatusConflict, "DUPLICATE_REQUEST_REPORT_ID"},
		{"update unknown report", "PATCH", "/admin/v1/health-reports/888888", map[string]any{"interpretation_result": "x"}, asUploader, http.StatusNotFound, "REPORT_NOT_FOUND"},
		{"uploader registration by an uploader", "POST", "/admin/v1/uploaders", map[string]any{"name": "x"}, asUploader, http.StatusUnauthorized, "HTTP_401"},
	})
}
