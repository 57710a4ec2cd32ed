package harness

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Receiver is a partner's webhook endpoint written from the spec alone: it
// verifies the signature with its own code, rejects stale timestamps, and
// answers with the status the test scripts.
type Receiver struct {
	t      testing.TB
	Srv    *httptest.Server
	Secret string

	mu        sync.Mutex
	got       []Webhook
	statuses  []int // answers for the next requests; 200 once exhausted
	failFirst int   // when set, the answer to each delivery's first attempt
	seen      map[string]bool
	arrived   chan struct{}
}

type Webhook struct {
	ID, Event, Timestamp, Signature string
	Body                            []byte
	Verified                        bool
	Header                          http.Header // every header the receiver got
}

func NewReceiver(t testing.TB) *Receiver {
	r := &Receiver{t: t, arrived: make(chan struct{}, 1000)}
	r.Srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Srv.Close)
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	ts := req.Header.Get("X-Webhook-Timestamp")
	mac := hmac.New(sha256.New, []byte(r.Secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	got, _ := hex.DecodeString(req.Header.Get("X-Webhook-Signature"))
	sec, _ := strconv.ParseInt(ts, 10, 64)
	fresh := time.Since(time.Unix(sec, 0)).Abs() <= 300*time.Second
	verified := hmac.Equal(got, mac.Sum(nil)) && fresh && req.Method == http.MethodPost
	r.mu.Lock()
	r.got = append(r.got, Webhook{ID: req.Header.Get("X-Webhook-Id"), Event: req.Header.Get("X-Webhook-Event"), Timestamp: ts,
		Signature: req.Header.Get("X-Webhook-Signature"), Body: body, Verified: verified, Header: req.Header.Clone()})
	status := http.StatusOK
	if len(r.statuses) > 0 {
		status, r.statuses = r.statuses[0], r.statuses[1:]
	}
	if id := req.Header.Get("X-Webhook-Id"); r.failFirst != 0 && !r.seen[id] {
		r.seen[id] = true
		status = r.failFirst
	}
	r.mu.Unlock()
	if !verified {
		status = http.StatusUnauthorized
	}
	w.WriteHeader(status)
	r.arrived <- struct{}{}
}

func (r *Receiver) Script(statuses ...int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statuses = append(r.statuses, statuses...)
}

// FailFirstAttempts answers status to the first attempt of every delivery
// that arrives from now on, by its X-Webhook-Id, and the others as usual:
// unlike a script, which answers requests in their order of arrival, it
// fails each delivery once however its attempts and its retries interleave
// with other deliveries'.
func (r *Receiver) FailFirstAttempts(status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failFirst, r.seen = status, map[string]bool{}
}

// WaitFor blocks until n webhooks have arrived in total.
func (r *Receiver) WaitFor(n int) []Webhook {
	r.t.Helper()
	deadline := time.After(WaitBound)
	for {
		r.mu.Lock()
		if len(r.got) >= n {
			out := append([]Webhook(nil), r.got...)
			r.mu.Unlock()
			return out
		}
		have := len(r.got)
		r.mu.Unlock()
		select {
		case <-r.arrived:
		case <-deadline:
			r.t.Fatalf("waited for %d webhooks, got %d", n, have)
		}
	}
}

// Quiet asserts that no further webhook arrives for a while.
func (r *Receiver) Quiet(total int, d time.Duration) {
	r.t.Helper()
	time.Sleep(d)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got) != total {
		r.t.Fatalf("expected %d webhooks, got %d", total, len(r.got))
	}
}

// FakeClock moves the dispatcher through the retry schedule on command.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func NewFakeClock() *FakeClock { return &FakeClock{now: time.Now()} }

func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *FakeClock) Until(t time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !t.After(c.now) {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{t, ch})
	return ch
}

func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	keep := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			keep = append(keep, w)
		}
	}
	c.waiters = keep
}

func (p *Platform) ConfigureWebhook(a *App, url string, evs ...string) {
	p.T.Helper()
	body := map[string]any{"webhook_url": url}
	if evs != nil {
		body["webhook_events"] = evs
	}
	if res := p.Admin("PATCH", fmt.Sprintf("/admin/v1/apps/%d", a.ID), body); res.Status != http.StatusOK {
		p.T.Fatalf("configure webhook: %d %s", res.Status, res.Raw)
	}
}

type UserWebhook struct {
	Event         string          `json:"event"`
	DeliveryID    string          `json:"delivery_id"`
	AppID         int64           `json:"app_id"`
	OpenUserID    int64           `json:"open_user_id"`
	ChannelUserID string          `json:"channel_user_id"`
	OccurredAt    string          `json:"occurred_at"`
	Data          json.RawMessage `json:"data"`
}

type FeedItem struct {
	Cursor     string          `json:"cursor"`
	DeliveryID string          `json:"delivery_id"`
	Event      string          `json:"event"`
	Payload    json.RawMessage `json:"payload"`
}

type FeedPage struct {
	Events     []FeedItem `json:"events"`
	NextCursor string     `json:"next_cursor"`
	HasMore    bool       `json:"has_more"`
}

// FeedPage reads the feed, waiting (bounded) for deliveries the dispatcher creates asynchronously.
func (a *App) FeedPage(after string, limit int) FeedPage {
	a.P.T.Helper()
	var page FeedPage
	a.Expect("GET", fmt.Sprintf("/open/v1/webhooks/events?after=%s&limit=%d", after, limit), nil, http.StatusOK, "0").Data(a.P.T, &page)
	return page
}

type DeliveryView struct {
	DeliveryID string `json:"delivery_id"`
	Event      string `json:"event"`
	Status     string `json:"status"`
	Attempts   int    `json:"attempts"`
	AttemptLog []struct {
		Attempt    int    `json:"attempt"`
		StatusCode *int   `json:"status_code"`
		Outcome    string `json:"outcome"`
	} `json:"attempt_log"`
}

// WaitDelivery polls the delivery log until the delivery reaches status.
func (p *Platform) WaitDelivery(id, status string) DeliveryView {
	p.T.Helper()
	return p.WaitAttempts(id, status, 0)
}

// WaitAttempts polls the delivery log until the delivery reaches status
// with attempts recorded attempts (any number if 0): a status alone (say
// retrying) may still be the previous attempt's.
func (p *Platform) WaitAttempts(id, status string, attempts int) DeliveryView {
	p.T.Helper()
	deadline := time.Now().Add(WaitBound)
	var v DeliveryView
	for time.Now().Before(deadline) {
		res := p.Admin("GET", "/admin/v1/deliveries/"+id, nil)
		if res.Status == http.StatusOK {
			res.Data(p.T, &v)
			if v.Status == status && (attempts == 0 || v.Attempts == attempts) {
				return v
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.T.Fatalf("delivery %s never reached %s with %d attempts: %+v", id, status, attempts, v)
	return v
}
