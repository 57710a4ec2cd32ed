package webhooks

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/webhooks/targets"
)

// observed is what a POST came back with, as the attempt records it.
type observed struct {
	status   int
	location string
	body     string
	err      string
	class    string
	refused  bool
	timeout  bool
}

func observe(res *http.Response, err error) observed {
	if err != nil {
		var ne net.Error
		return observed{err: err.Error(), class: classify(err), refused: errors.Is(err, targets.ErrRefused),
			timeout: errors.Is(err, context.DeadlineExceeded) && errors.As(err, &ne) && ne.Timeout()}
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return observed{status: res.StatusCode, location: res.Header.Get("Location"), body: string(body)}
}

// sendDirect is the sender's POST through the client's Transport.
func sendDirect(ctx context.Context, c *http.Client, target string) observed {
	budget, _ := ctx.Deadline()
	ctx, deadline, cancel := postContext(ctx, budget, c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader([]byte(`{"n":1}`)))
	if err != nil {
		return observed{err: err.Error()}
	}
	return observe(roundTrip(c.Transport, req, deadline))
}

// sendDo is the same POST through http.Client.Do.
func sendDo(ctx context.Context, c *http.Client, target string) observed {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader([]byte(`{"n":1}`)))
	if err != nil {
		return observed{err: err.Error()}
	}
	return observe(c.Do(req))
}

// A POST sent through the delivery client's Transport comes back exactly
// as http.Client.Do brings it back, for every answer and failure a
// receiver can cause: the answer and its status, redirects not followed
// (the receiver sees one request), a Location Do cannot parse, the
// client's timeout and a shorter context deadline (same text, a timeout
// and context.DeadlineExceeded both), a refused connection, a target the
// guard refuses, and an HTTP answer to an https URL.
func TestDirectPostAnswersAsClientDo(t *testing.T) {
	var hits atomic.Int64
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/ok":
			_, _ = io.WriteString(w, "thanks")
		case "/found":
			w.Header().Set("Location", "/elsewhere")
			w.WriteHeader(http.StatusFound)
		case "/temporary":
			w.Header().Set("Location", "http://127.0.0.1:1/other")
			w.WriteHeader(http.StatusTemporaryRedirect)
		case "/bad-location":
			w.Header().Set("Location", "http://[::1")
			w.WriteHeader(http.StatusFound)
		case "/no-location":
			w.WriteHeader(http.StatusMovedPermanently)
		case "/hold":
			<-hold
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	defer close(hold) // before the server's Close, which waits for held handlers
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	loopback := targets.Guard{AllowLoopback: true}
	cases := []struct {
		name   string
		client *http.Client
		target string
		ctx    time.Duration // a deadline of the POST's context (0: none)
		want   func(observed) bool
	}{
		{"answer", loopback.Client(10 * time.Second), srv.URL + "/ok", 0, func(o observed) bool { return o.status == 200 && o.body == "thanks" }},
		{"302 not followed", loopback.Client(10 * time.Second), srv.URL + "/found", 0, func(o observed) bool { return o.status == 302 && o.location == "/elsewhere" }},
		{"307 not followed", loopback.Client(10 * time.Second), srv.URL + "/temporary", 0, func(o observed) bool { return o.status == 307 }},
		{"unparsable Location", loopback.Client(10 * time.Second), srv.URL + "/bad-location", 0, func(o observed) bool {
			return strings.Contains(o.err, "failed to parse Location header")
		}},
		{"redirect without Location", loopback.Client(10 * time.Second), srv.URL + "/no-location", 0, func(o observed) bool { return o.status == 301 }},
		{"client timeout", loopback.Client(100 * time.Millisecond), srv.URL + "/hold", 0, func(o observed) bool {
			return strings.HasSuffix(o.err, "(Client.Timeout exceeded while awaiting headers)") && o.timeout && o.class == "timeout"
		}},
		{"context deadline first", loopback.Client(10 * time.Second), srv.URL + "/hold", 100 * time.Millisecond, func(o observed) bool {
			return strings.HasSuffix(o.err, "context deadline exceeded") && o.timeout && o.class == "timeout"
		}},
		{"connection refused", loopback.Client(10 * time.Second), closedURL + "/ok", 0, func(o observed) bool { return o.class == "connection_refused" }},
		{"guard refuses loopback", targets.Guard{}.Client(10 * time.Second), srv.URL + "/ok", 0, func(o observed) bool { return o.refused }},
		{"http answer to https", loopback.Client(10 * time.Second), strings.Replace(srv.URL, "http://", "https://", 1) + "/ok", 0, func(o observed) bool {
			return strings.Contains(o.err, http.ErrSchemeMismatch.Error())
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !targets.FollowsNoRedirects(c.client) {
				t.Fatal("the delivery client is not recognised: the sender would not send through its Transport")
			}
			run := func(send func(context.Context, *http.Client, string) observed) observed {
				ctx := context.Background()
				if c.ctx > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, c.ctx)
					defer cancel()
				}
				return send(ctx, c.client, c.target)
			}
			before := hits.Load()
			viaDo := run(sendDo)
			doHits := hits.Load() - before
			direct := run(sendDirect)
			directHits := hits.Load() - before - doHits
			if direct != viaDo {
				t.Fatalf("direct POST observed %+v\nClient.Do observed %+v", direct, viaDo)
			}
			if !c.want(direct) {
				t.Fatalf("observed %+v", direct)
			}
			if directHits != doHits || directHits > 1 {
				t.Fatalf("the receiver got %d requests from the direct POST and %d from Do; want the same, at most one", directHits, doHits)
			}
		})
	}
}

// Only the delivery client's policies let the sender skip Client.Do: a
// client that follows redirects or keeps cookies, and a URL with user
// info, go through Do.
func TestDirectPostOnlyForTheDeliveryClient(t *testing.T) {
	guard := targets.Guard{AllowLoopback: true}.Client(time.Second)
	withJar := *guard
	withJar.Jar = cookieJar{}
	follows := *guard
	follows.CheckRedirect = nil
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	for _, c := range []struct {
		name   string
		client *http.Client
		target string
		want   bool
	}{
		{"delivery client", guard, "https://partner.example/hook", true},
		{"user info", guard, "https://user:pw@partner.example/hook", false},
		{"follows redirects", &follows, "https://partner.example/hook", false},
		{"cookie jar", &withJar, "https://partner.example/hook", false},
		{"httptest client", plain.Client(), "https://partner.example/hook", false},
	} {
		d := &Dispatcher{Client: c.client}
		if got := d.direct(c.target); got != c.want {
			t.Errorf("%s: direct = %v, want %v", c.name, got, c.want)
		}
	}
}

type cookieJar struct{}

func (cookieJar) SetCookies(*url.URL, []*http.Cookie) {}
func (cookieJar) Cookies(*url.URL) []*http.Cookie     { return nil }

// Through the delivery client, an attempt's failures are recorded as
// before: a 503 is a retry with its status, the retry is delivered, both
// POSTs signed; a receiver that holds the POST past the client's timeout
// is a retry of class timeout with Client.Do's wording.
func TestDirectAttemptRecordsRetriesAndTimeouts(t *testing.T) {
	f := newKnownFixture(t, true, http.StatusServiceUnavailable)
	f.d.Client = targets.Guard{AllowLoopback: true}.Client(10 * time.Second)
	f.create(t, "d1")
	f.attempt("d1")
	time.Sleep(5 * time.Millisecond) // the fixture's schedule retries after 1 ms
	f.attempt("d1")
	if got := f.outcomes(t, "d1"); !equalStrings(got, []string{"created", "attempt retry", "attempt delivered"}) {
		t.Fatalf("d1's stream: %v", got)
	}
	if p := f.rcv.posts(); len(p) != 2 || f.rcv.badSig != 0 {
		t.Fatalf("receiver got %v, %d bad signatures", p, f.rcv.badSig)
	}
	first := attemptOf(t, f, "d1", 1)
	if first.StatusCode != http.StatusServiceUnavailable || first.ErrorClass != "http_status" {
		t.Fatalf("first attempt recorded %+v", first)
	}

	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hold }))
	defer srv.Close()
	defer close(hold)
	f.d.Apps = appDirectory{1: {AppID: 1, WebhookURL: srv.URL, WebhookSecret: "secret"}}
	f.d.Client = targets.Guard{AllowLoopback: true}.Client(100 * time.Millisecond)
	f.create(t, "d2")
	f.attempt("d2")
	a := attemptOf(t, f, "d2", 1)
	if a.Outcome != "retry" || a.ErrorClass != "timeout" || !strings.HasSuffix(a.Error, "(Client.Timeout exceeded while awaiting headers)") ||
		!strings.HasPrefix(a.Error, `Post "`+srv.URL+`": `) {
		t.Fatalf("timed-out attempt recorded %+v", a)
	}
}

// attemptOf is the n-th event of id's stream, an attempt.
func attemptOf(t *testing.T, f knownFixture, id string, n int) catalog.DeliveryAttempted {
	t.Helper()
	recs, err := f.store.Store.ReadStream(context.Background(), domain.DeliveryStream(id), 0, 0)
	if err != nil || len(recs) <= n {
		t.Fatalf("%s: %d events, %v", id, len(recs), err)
	}
	env, err := f.d.Registry.Decode(recs[n])
	if err != nil {
		t.Fatal(err)
	}
	return *env.Payload.(*catalog.DeliveryAttempted)
}
