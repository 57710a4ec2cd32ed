package webhooks_test

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

type failureView struct {
	DeliveryID     string  `json:"delivery_id"`
	Status         string  `json:"status"`
	LastError      *string `json:"last_error"`
	LastErrorClass *string `json:"last_error_class"`
	AttemptLog     []struct {
		StatusCode *int    `json:"status_code"`
		Error      *string `json:"error"`
		ErrorClass *string `json:"error_class"`
	} `json:"attempt_log"`
}

// A partner's delivery log shows a stable error class
// and never the transport's raw text (certificate details, addresses);
// operators see the class and the detail.
func TestDeliveryLogShowsPartnersTheClassAndOperatorsTheDetail(t *testing.T) {
	t.Parallel()
	selfSigned := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	selfSigned.Config.ErrorLog = log.New(io.Discard, "", 0)
	selfSigned.StartTLS()
	t.Cleanup(selfSigned.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := "http://" + l.Addr().String() + "/hook"
	l.Close()

	for _, c := range []struct {
		name, url, class string
		detail           []string // words of the raw error the operator sees
	}{
		{"self-signed certificate", selfSigned.URL + "/hook", "tls_error", []string{"x509", "unknown authority"}},
		{"closed port", closedPort, "connection_refused", []string{"connection refused", l.Addr().String()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := harness.Start(t, node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true})
			a := p.CreateApp("partner")
			p.ConfigureWebhook(a, c.url, "user.profile.updated")
			var reg harness.RegisterData
			a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
			a.Expect("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID), map[string]any{"nickname": "n"}, http.StatusOK, "0")

			var id string
			for deadline := time.Now().Add(harness.WaitBound); id == "" && time.Now().Before(deadline); {
				var page struct {
					Deliveries []failureView `json:"deliveries"`
				}
				a.Expect("GET", "/open/v1/webhooks/deliveries?status=retrying", nil, http.StatusOK, "0").Data(t, &page)
				if len(page.Deliveries) > 0 {
					id = page.Deliveries[0].DeliveryID
				} else {
					time.Sleep(50 * time.Millisecond)
				}
			}
			if id == "" {
				t.Fatal("no delivery was created")
			}
			p.WaitDelivery(id, "retrying")

			var admin failureView
			p.Admin("GET", "/admin/v1/deliveries/"+id, nil).Data(t, &admin)
			if admin.LastErrorClass == nil || *admin.LastErrorClass != c.class || len(admin.AttemptLog) != 1 ||
				admin.AttemptLog[0].ErrorClass == nil || *admin.AttemptLog[0].ErrorClass != c.class {
				t.Fatalf("operator view %+v, want class %s", admin, c.class)
			}
			for _, w := range c.detail {
				if admin.LastError == nil || !strings.Contains(*admin.LastError, w) || !strings.Contains(*admin.AttemptLog[0].Error, w) {
					t.Errorf("operator view lacks the detail %q: %v", w, show(admin.LastError))
				}
			}

			partnerViews := map[string][]byte{}
			var mine failureView
			res := a.Expect("GET", "/open/v1/webhooks/deliveries/"+id, nil, http.StatusOK, "0")
			res.Data(t, &mine)
			partnerViews["detail"] = res.Raw
			var page struct {
				Deliveries []failureView `json:"deliveries"`
			}
			res = a.Expect("GET", "/open/v1/webhooks/deliveries?event=user.profile.updated", nil, http.StatusOK, "0")
			res.Data(t, &page)
			partnerViews["list"] = res.Raw
			if len(page.Deliveries) != 1 || page.Deliveries[0].LastErrorClass == nil || *page.Deliveries[0].LastErrorClass != c.class {
				t.Errorf("partner list %s, want class %s", res.Raw, c.class)
			}
			if mine.LastErrorClass == nil || *mine.LastErrorClass != c.class || len(mine.AttemptLog) != 1 ||
				mine.AttemptLog[0].ErrorClass == nil || *mine.AttemptLog[0].ErrorClass != c.class || mine.AttemptLog[0].Error == nil {
				t.Fatalf("partner view %s, want class %s", partnerViews["detail"], c.class)
			}
			for what, raw := range partnerViews {
				for _, w := range append(c.detail, *admin.LastError, "127.0.0.1", "x509", "dial tcp", "Post ") {
					if strings.Contains(string(raw), w) {
						t.Errorf("partner %s view contains the raw text %q: %s", what, w, raw)
					}
				}
			}
		})
	}
}

func show(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}
