package reports_test

import (
	"net/http"
	"testing"

	"github.com/healthtech/partner-open-platform/e2e/harness"
)

// uploaded is a report uploaded for a user of the app that pulls it.
type uploaded struct {
	User int64 // the user's open_user_id
	ID   int64 // the report's id
}

// uploadReport registers user u-1 of app a and uploads a report of theirs
// as a station would.
func uploadReport(t *testing.T, p *harness.Platform, a *harness.App) uploaded {
	t.Helper()
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
	res := p.Ingest(p.Uploader("station"), "POST", "/admin/v1/health-reports", harness.ReportBody(reg.OpenUserID, ""))
	if res.Status != http.StatusCreated {
		t.Fatalf("ingest: %d %s", res.Status, res.Raw)
	}
	var created struct {
		ID int64 `json:"id"`
	}
	res.Data(t, &created)
	return uploaded{User: reg.OpenUserID, ID: created.ID}
}
