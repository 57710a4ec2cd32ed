package idempotency_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/idempotency"
	projmemory "github.com/healthtech/partner-open-platform/projections/memory"
)

func sendSigned(k *idempotency.Keeper, store idempotency.SignedStore, sig, path, key, body string, h idempotency.Handler) answer {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	if key != "" {
		r.Header.Set(idempotency.Header, key)
	}
	w := httptest.NewRecorder()
	k.ServeSigned(w, r, 7, []byte(body), store, idempotency.SignedKey(sig, r, []byte(body)), nil, h)
	return answer{w.Code, w.Header(), w.Body.String()}
}

// An identical signed write runs once: its replays, on any node sharing
// the store and whatever Idempotency-Key they carry, answer the first
// answer marked replayed; another signature, path or body runs anew;
// nothing is appended to the event log.
func TestSignedWriteRunsOnce(t *testing.T) {
	f := newFixture(t)
	store := projmemory.New()
	one, two := f.node(), f.node()
	e := &effect{}
	first := sendSigned(one, store, "aa", "/w", "", `{"name":"a"}`, e.handler)
	if first.status != http.StatusCreated || e.runs.Load() != 1 {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	f.clock.add(5 * time.Minute)
	for _, key := range []string{"", "k-1", "k-2"} {
		got := sendSigned(two, store, "aa", "/w?x=1", key, `{"name":"a"}`, e.handler)
		if got.status != first.status || got.body != first.body || got.header.Get(idempotency.ReplayedHeader) != "true" || got.header.Get("Cache-Control") != "no-store" {
			t.Errorf("replay with key %q: %d %s, want the first answer replayed", key, got.status, got.body)
		}
	}
	if n := e.runs.Load(); n != 1 {
		t.Fatalf("the replays ran %d more times", n-1)
	}
	for _, c := range []struct{ sig, path, body string }{{"bb", "/w", `{"name":"a"}`}, {"aa", "/v", `{"name":"a"}`}, {"aa", "/w", `{"name":"b"}`}} {
		if got := sendSigned(two, store, c.sig, c.path, "", c.body, e.handler); got.status != http.StatusCreated || got.header.Get(idempotency.ReplayedHeader) != "" {
			t.Errorf("%+v: %d %s, want a new run", c, got.status, got.body)
		}
	}
	if n := e.runs.Load(); n != 4 {
		t.Errorf("%d runs, want 4", n)
	}
	// A refusal is recorded too, so a replay cannot run later when the
	// state has changed, and bad input before the run is not.
	refused := &effect{status: http.StatusUnprocessableEntity}
	no := sendSigned(one, store, "cc", "/w", "", `{"name":"a"}`, refused.handler)
	if got := sendSigned(two, store, "cc", "/w", "", `{"name":"a"}`, e.handler); got.status != no.status || got.body != no.body {
		t.Errorf("replay of a refusal: %d %s, want %d %s", got.status, got.body, no.status, no.body)
	}
	if n := f.count(); n != 0 {
		t.Errorf("signed writes appended %d events to the log", n)
	}
}

// Identical signed writes sent at once run once; the others answer the
// first answer or 409 IDEMPOTENCY_KEY_IN_PROGRESS, never a second run.
func TestConcurrentIdenticalSignedWritesRunOnce(t *testing.T) {
	f := newFixture(t)
	store := projmemory.New()
	e := &effect{delay: 20 * time.Millisecond}
	var wg sync.WaitGroup
	answers := make([]answer, 12)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = sendSigned(f.node(), store, "dd", "/w", "", `{"name":"a"}`, e.handler)
		}()
	}
	wg.Wait()
	if n := e.runs.Load(); n != 1 {
		t.Fatalf("%d runs, want 1", n)
	}
	var created answer
	for _, a := range answers {
		if a.status == http.StatusCreated && a.header.Get(idempotency.ReplayedHeader) == "" {
			created = a
		}
	}
	for _, a := range answers {
		switch {
		case a.status == http.StatusConflict && code(t, a) == "IDEMPOTENCY_KEY_IN_PROGRESS":
		case a.status == http.StatusCreated && a.body == created.body:
		default:
			t.Errorf("answer %d %s", a.status, a.body)
		}
	}
	// Once the original is done, every replay gets its answer.
	if got := sendSigned(f.node(), store, "dd", "/w", "", `{"name":"a"}`, e.handler); got.body != created.body {
		t.Errorf("replay after the burst: %d %s, want %s", got.status, got.body, created.body)
	}
}
