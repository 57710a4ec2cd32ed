package webhooks

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/sigvectors"
	"github.com/healthtech/partner-open-platform/webhooks/targets"
)

// sentPost is what a receiver saw of one POST.
type sentPost struct {
	header http.Header
	body   string
}

// Every POST carries exactly the webhook headers of the spec, each
// endpoint's signature under its own secret (two endpoints alternating,
// so a signer kept for one secret never signs for the other), and the
// recorded outcome keeps the start of the receiver's answer: a long
// answer cut at a character boundary, a chunked one whole, none of an
// empty one.
func TestAttemptSendsTheSpecsHeadersAndKeepsTheAnswersStart(t *testing.T) {
	attemptSendsTheSpecsHeadersAndKeepsTheAnswersStart(t, (*httptest.Server).Client, false)
}

// The same through the delivery client, whose POSTs the sender sends
// through its Transport (no redirect followed, its timeout).
func TestDirectAttemptSendsTheSpecsHeadersAndKeepsTheAnswersStart(t *testing.T) {
	attemptSendsTheSpecsHeadersAndKeepsTheAnswersStart(t, func(*httptest.Server) *http.Client {
		return targets.Guard{AllowLoopback: true}.Client(10 * time.Second)
	}, true)
}

func attemptSendsTheSpecsHeadersAndKeepsTheAnswersStart(t *testing.T, client func(*httptest.Server) *http.Client, direct bool) {
	long := strings.Repeat("é", 200) // 400 bytes: cut to 256 at a boundary
	answers := map[string]string{"e1-0": long, "e1-1": "", "e1-2": "chunked answer"}
	var mu sync.Mutex
	got := map[string]sentPost{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id := r.Header.Get("X-Webhook-Id")
		mu.Lock()
		got[id] = sentPost{header: r.Header.Clone(), body: string(body)}
		mu.Unlock()
		switch a := answers[id]; {
		case id == "e1-2":
			_, _ = io.WriteString(w, a[:7])
			w.(http.Flusher).Flush() // no Content-Length: chunked
			_, _ = io.WriteString(w, a[7:])
		case a != "":
			_, _ = io.WriteString(w, a)
		}
	}))
	defer srv.Close()
	secrets := map[int64]string{0: "secret-default", 2: "secret-second"}
	app := domain.App{AppID: 1, WebhookURL: srv.URL, WebhookSecret: secrets[0],
		Endpoints: []domain.Endpoint{{EndpointID: 2, URL: srv.URL, Secret: secrets[2]}}}
	f := newKnownFixture(t, true)
	f.d.Apps = appDirectory{1: app}
	f.d.Client = client(srv)
	if got := f.d.direct(srv.URL); got != direct {
		t.Fatalf("POSTs sent through the Transport alone: %v, want %v", got, direct)
	}
	var ids []string
	for i := range 3 {
		for _, ep := range []int64{0, 2} {
			id := "e" + strconv.FormatInt(ep/2+1, 10) + "-" + strconv.Itoa(i)
			c := catalog.DeliveryCreated{DeliveryID: id, AppID: 1, EndpointID: ep, Event: "user.profile.updated", SourceStream: "user-7",
				Body: `{"delivery_id":"` + id + `","open_user_id":7}`, Deliver: true}
			if err := f.d.createOne(context.Background(), c, ""); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		ep := int64(0)
		if strings.HasPrefix(id, "e2-") {
			ep = 2
		}
		key := endpointKey{app: 1, endpoint: ep}
		f.eps.acquire(key, srv.URL, time.Now())
		f.d.attempt(context.Background(), f.eps, claimed{Claim: Claim{DeliveryID: id}, ep: key, url: srv.URL}, time.Now(), func() {}, func() {})
	}

	for _, id := range ids {
		p, ok := got[id]
		if !ok {
			t.Fatalf("%s was not posted", id)
		}
		ep := int64(0)
		if strings.HasPrefix(id, "e2-") {
			ep = 2
		}
		ts := p.header.Get("X-Webhook-Timestamp")
		unix, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || time.Since(time.Unix(unix, 0)).Abs() > time.Minute {
			t.Fatalf("%s: X-Webhook-Timestamp %q is not the current Unix time", id, ts)
		}
		want := map[string]string{
			"Content-Type":        "application/json",
			"User-Agent":          "partner-open-platform-webhooks/1",
			"X-Webhook-Id":        id,
			"X-Webhook-Event":     "user.profile.updated",
			"X-Webhook-Timestamp": ts,
			"X-Webhook-Signature": Sign(secrets[ep], ts, []byte(p.body)),
		}
		for k, v := range want {
			if vs := p.header.Values(k); len(vs) != 1 || vs[0] != v {
				t.Fatalf("%s: header %s = %q, want exactly %q", id, k, vs, v)
			}
		}
		if p.body != `{"delivery_id":"`+id+`","open_user_id":7}` {
			t.Fatalf("%s: body %q", id, p.body)
		}
	}
	excerpts := map[string]string{}
	for _, id := range ids {
		recs, err := f.store.Store.ReadStream(context.Background(), domain.DeliveryStream(id), 0, 0)
		if err != nil || len(recs) != 2 {
			t.Fatalf("%s: stream %d events, %v", id, len(recs), err)
		}
		env, err := f.d.Registry.Decode(recs[1])
		if err != nil {
			t.Fatal(err)
		}
		a := env.Payload.(*catalog.DeliveryAttempted)
		if a.Outcome != domain.OutcomeDelivered {
			t.Fatalf("%s: outcome %s", id, a.Outcome)
		}
		excerpts[id] = a.ResponseExcerpt
	}
	if want := strings.Repeat("é", 128); excerpts["e1-0"] != want {
		t.Fatalf("long answer's excerpt %q, want its first 256 bytes %q", excerpts["e1-0"], want)
	}
	if excerpts["e1-1"] != "" || excerpts["e2-1"] != "" {
		t.Fatalf("empty answers' excerpts %q, %q, want none", excerpts["e1-1"], excerpts["e2-1"])
	}
	if excerpts["e1-2"] != "chunked answer" {
		t.Fatalf("chunked answer's excerpt %q", excerpts["e1-2"])
	}
}

// The sender's kept signers sign exactly as Sign does: the shared vectors
// unchanged (also after a garbage collection emptied the pools), and under concurrent use with secrets alternating.
func TestKeptSignersSignAsSign(t *testing.T) {
	f := sigvectors.Load(t)
	var s signers
	for _, c := range f.Webhook.Cases {
		body := sigvectors.Bytes(t, c.Body, c.BodyBase64)
		stamp := sigvectors.Stamp(c.Timestamp)
		unix, err := strconv.ParseInt(stamp, 10, 64)
		if err != nil {
			t.Fatalf("%s: timestamp %q: %v", c.Name, stamp, err)
		}
		for i := range 3 { // a fresh signer, a reused one, then a copy of the kept keyed one
			if i == 2 {
				runtime.GC() // a collection empties the pools (a second one their victims)
				runtime.GC()
			}
			ts, sig := s.sign(f.Credentials.WebhookSecret, unix, body)
			if ts != stamp || sig != c.Signature {
				t.Fatalf("%s: sign = %s, %s; vector %s, %s", c.Name, ts, sig, stamp, c.Signature)
			}
		}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				secret := "secret-" + strconv.Itoa((g+i)%3)
				body := []byte(`{"n":` + strconv.Itoa(i) + `}`)
				unix := int64(1700000000 + i)
				ts, sig := s.sign(secret, unix, body)
				if want := Sign(secret, ts, body); ts != strconv.FormatInt(unix, 10) || sig != want {
					t.Errorf("sign(%s, %d) = %s, %s; want %s", secret, unix, ts, sig, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}
