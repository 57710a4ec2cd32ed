package harness

import (
	"fmt"
	"net/http"
)

type AppRead struct {
	Scopes           []string `json:"scopes"`
	Suspended        bool     `json:"suspended"`
	SuspensionReason string   `json:"suspension_reason"`
	WebhookPending   bool     `json:"webhook_secret_pending"`
}

func (p *Platform) ReadApp(a *App) AppRead {
	p.T.Helper()
	var v AppRead
	res := p.Admin("GET", fmt.Sprintf("/admin/v1/apps/%d", a.ID), nil)
	if res.Status != http.StatusOK {
		p.T.Fatalf("read app: %d %s", res.Status, res.Raw)
	}
	res.Data(p.T, &v)
	return v
}
