package webhooks

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/webhooks/targets"
)

// Real transport failures get their stable class from the error's type.
func TestClassifyRealTransportErrors(t *testing.T) {
	selfSigned := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	selfSigned.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	selfSigned.StartTLS()
	defer selfSigned.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { time.Sleep(time.Second) }))
	defer slow.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/hook"
	l.Close()

	dev := targets.Guard{AllowLoopback: true}.Client(10 * time.Second)
	impatient := targets.Guard{AllowLoopback: true}.Client(300 * time.Millisecond)
	prod := targets.Guard{}.Client(10 * time.Second)
	for _, c := range []struct {
		name, url string
		client    *http.Client
		want      string
	}{
		{"self-signed certificate", selfSigned.URL + "/hook", dev, domain.ErrorClassTLS},
		{"closed port", closed, dev, domain.ErrorClassConnectionRefused},
		{"unresolvable host", "https://hook.platform-test.invalid/hook", dev, domain.ErrorClassDNS},
		{"slow receiver", slow.URL + "/hook", impatient, domain.ErrorClassTimeout},
		{"loopback in production", slow.URL + "/hook", prod, domain.ErrorClassRefusedTarget},
	} {
		res, err := c.client.Post(c.url, "application/json", strings.NewReader("{}"))
		if err == nil {
			res.Body.Close()
			t.Errorf("%s: POST succeeded", c.name)
			continue
		}
		if got := classify(err); got != c.want {
			t.Errorf("%s: classify(%v) = %q, want %q", c.name, err, got, c.want)
		}
		// The wording alone gives the same class, for events recorded
		// before classes existed.
		if got := domain.ClassifyDeliveryFailure(err.Error(), 0); got != c.want {
			t.Errorf("%s: ClassifyDeliveryFailure(%q) = %q, want %q", c.name, err, got, c.want)
		}
	}
}

// Every recorded failure has a class; a delivery has none.
func TestDecideAttemptRecordsTheClass(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		r    result
		want string
	}{
		{result{at: at, statusCode: 200}, ""},
		{result{at: at, statusCode: 302}, domain.ErrorClassRedirect},
		{result{at: at, statusCode: 500}, domain.ErrorClassHTTPStatus},
		{result{at: at, err: "dial tcp: i/o timeout", class: domain.ErrorClassTimeout}, domain.ErrorClassTimeout},
		{result{at: at, err: "something new"}, domain.ErrorClassOther},
	} {
		d := &delivery{}
		d.apply(events.Envelope{Payload: &catalog.DeliveryCreated{DeliveryID: "d", Deliver: true}})
		if ev := attempted(t, d, c.r); ev.ErrorClass != c.want {
			t.Errorf("%+v: class %q, want %q", c.r, ev.ErrorClass, c.want)
		}
	}
}
