package proc

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"
)

// HookAttempt is one webhook request as the receiver saw it.
type HookAttempt struct {
	ID, Event  string
	Body       []byte
	BodyID     string // delivery_id in the body
	Start, End time.Time
	Status     int // 0 while the request is being answered
	Verified   bool
}

// HookReceiver is the partner's webhook endpoint: it verifies signatures,
// records the start and end of every request, and, chosen by a hash of the
// delivery id, answers some slowly and fails some once to force retries.
type HookReceiver struct {
	srv       *httptest.Server
	secret    string
	slow      time.Duration
	failOnce  uint32 // 1 in failOnce deliveries fail their first attempt (0: none)
	slowEvery uint32 // 1 in slowEvery answers slowly (0: none)

	mu       sync.Mutex
	attempts map[string][]*HookAttempt
	total    int
	last     time.Time
	first    time.Time
}

func NewHookReceiver(t testing.TB, failOnce, slowEvery uint32, slow time.Duration) *HookReceiver {
	h := &HookReceiver{attempts: map[string][]*HookAttempt{}, failOnce: failOnce, slowEvery: slowEvery, slow: slow}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

// SetSecret sets the webhook secret signatures are verified with.
func (h *HookReceiver) SetSecret(secret string) {
	h.mu.Lock()
	h.secret = secret
	h.mu.Unlock()
}

// URL is the receiver's base URL.
func (h *HookReceiver) URL() string { return h.srv.URL }

func idHash(id string) uint32 {
	f := fnv.New32a()
	f.Write([]byte(id))
	return f.Sum32()
}

func (h *HookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	a := &HookAttempt{Start: time.Now(), ID: req.Header.Get("X-Webhook-Id"), Event: req.Header.Get("X-Webhook-Event")}
	a.Body, _ = io.ReadAll(req.Body)
	var b struct {
		DeliveryID string `json:"delivery_id"`
	}
	_ = json.Unmarshal(a.Body, &b)
	a.BodyID = b.DeliveryID
	ts := req.Header.Get("X-Webhook-Timestamp")
	h.mu.Lock()
	secret := h.secret
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(a.Body)
	got, _ := hex.DecodeString(req.Header.Get("X-Webhook-Signature"))
	sec, _ := strconv.ParseInt(ts, 10, 64)
	a.Verified = hmac.Equal(got, m.Sum(nil)) && time.Since(time.Unix(sec, 0)).Abs() <= 300*time.Second
	prior := len(h.attempts[a.ID])
	h.attempts[a.ID] = append(h.attempts[a.ID], a)
	h.total++
	if h.first.IsZero() {
		h.first = a.Start
	}
	h.mu.Unlock()

	hash := idHash(a.ID)
	status := http.StatusOK
	switch {
	case !a.Verified:
		status = http.StatusUnauthorized
	case h.failOnce > 0 && prior == 0 && hash%h.failOnce == 0:
		status = http.StatusServiceUnavailable
	case h.slowEvery > 0 && (hash/7)%h.slowEvery == 0:
		time.Sleep(h.slow)
	}
	// The end is taken before the answer leaves: a sender that waits for
	// the answer can only start the next attempt after it.
	end := time.Now()
	h.mu.Lock()
	a.End, a.Status = end, status
	h.last = end
	h.mu.Unlock()
	w.WriteHeader(status)
}

// Snapshot copies the attempts recorded so far.
func (h *HookReceiver) Snapshot() (map[string][]HookAttempt, int, time.Time, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string][]HookAttempt, len(h.attempts))
	for id, as := range h.attempts {
		for _, a := range as {
			out[id] = append(out[id], *a)
		}
		sort.Slice(out[id], func(i, j int) bool { return out[id][i].Start.Before(out[id][j].Start) })
	}
	return out, h.total, h.first, h.last
}

// Delivered counts delivery ids answered 2xx at least once.
func (h *HookReceiver) Delivered() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, as := range h.attempts {
		for _, a := range as {
			if a.Status/100 == 2 && !a.End.IsZero() {
				n++
				break
			}
		}
	}
	return n
}

// IdleFor reports whether the receiver has had no request for d.
func (h *HookReceiver) IdleFor(d time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last.IsZero() || time.Since(h.last) >= d
}
