// Package signedtest is the conformance suite of signed-write records
// (idempotency.ServeSigned) on a binding store: every store the nodes share
// their bindings in (the embedded nonce files, the memory and Postgres
// read-model stores) runs it.
package signedtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/idempotency"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// Run checks the records of signed writes on a binding store: a write is
// recorded in two bindings, its replays answer its first answer, and a
// record in the layout the release before writes (three bindings) replays
// too, as it must during a rolling upgrade. open is called once per case
// and returns an empty store.
func Run(t *testing.T, open func(t *testing.T) idempotency.SignedStore) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(t *testing.T, s idempotency.SignedStore)
	}{
		{"SignedWriteRecord", testSignedWriteRecord},
		{"ConcurrentSignedWrites", testConcurrentSignedWrites},
		{"SignedReplayOfOlderLayout", testSignedReplayOfOlderLayout},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open(t)) })
	}
}

var ctx = context.Background()

// signedLog is the store under test, recording the fresh bindings made
// through it.
type signedLog struct {
	idempotency.SignedStore
	mu    sync.Mutex
	binds []signedBinding
}

type signedBinding struct{ scope, key, value string }

func (b *signedLog) Bind(ctx context.Context, scope, key, value string, expires time.Time) (string, bool, error) {
	got, fresh, err := b.SignedStore.Bind(ctx, scope, key, value, expires)
	if err == nil && fresh {
		b.mu.Lock()
		b.binds = append(b.binds, signedBinding{scope, key, value})
		b.mu.Unlock()
	}
	return got, fresh, err
}

func (b *signedLog) bindings() []signedBinding {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]signedBinding(nil), b.binds...)
}

// signedWriter is a node's keeper and a write with a counted effect.
type signedWriter struct {
	k     *idempotency.Keeper
	runs  atomic.Int64
	delay time.Duration
}

func newSignedWriter(t *testing.T, delay time.Duration) *signedWriter {
	t.Helper()
	sealer, err := secrets.New(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return &signedWriter{k: &idempotency.Keeper{Sealer: sealer}, delay: delay}
}

type signedAnswer struct {
	status   int
	body     string
	replayed bool
	code     string
}

// send serves one signed write of body under signature sig.
func (w *signedWriter) send(store idempotency.SignedStore, sig, body string) signedAnswer {
	r := httptest.NewRequest(http.MethodPost, "/open/v1/channel/users", strings.NewReader(body))
	rec := httptest.NewRecorder()
	w.k.ServeSigned(rec, r, 42, []byte(body), store, idempotency.SignedKey(sig, r, []byte(body)), nil, func(rw http.ResponseWriter, r *http.Request, begin func() error) {
		if err := begin(); err != nil {
			return
		}
		n := w.runs.Add(1)
		time.Sleep(w.delay)
		httpapi.OK(rw, http.StatusCreated, map[string]any{"run": n, "body": body, "at": time.Now().UnixNano()})
	})
	a := signedAnswer{status: rec.Code, body: rec.Body.String(), replayed: rec.Header().Get(idempotency.ReplayedHeader) == "true"}
	if rec.Code == http.StatusConflict {
		a.code = rec.Body.String()
	}
	return a
}

// A signed write is two bindings, its claim then its level-0 done key
// holding "done" and the answer; an identical replay, on another node,
// answers the first answer marked replayed and runs nothing; another
// signature or body runs anew.
func testSignedWriteRecord(t *testing.T, s idempotency.SignedStore) {
	store := &signedLog{SignedStore: s}
	one, two := newSignedWriter(t, 0), newSignedWriter(t, 0)
	first := one.send(store, "a1", `{"name":"a"}`)
	if first.status != http.StatusCreated || first.replayed {
		t.Fatalf("write: %d %s", first.status, first.body)
	}
	binds := store.bindings()
	if len(binds) != 2 || !strings.HasSuffix(binds[0].key, ":run") ||
		!strings.HasSuffix(binds[1].key, ":done:0") || !strings.HasPrefix(binds[1].value, "done\n201\n") {
		t.Fatalf("bindings %+v, want the claim and the level-0 done key holding the answer", binds)
	}
	for i := range 3 {
		got := two.send(store, "a1", `{"name":"a"}`)
		if got.status != first.status || got.body != first.body || !got.replayed {
			t.Errorf("replay %d: %d %s (replayed %v), want the first answer %s replayed", i, got.status, got.body, got.replayed, first.body)
		}
	}
	if n := one.runs.Load() + two.runs.Load(); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
	if len(store.bindings()) != 2 {
		t.Errorf("the replays bound %+v, want nothing more", store.bindings()[2:])
	}
	for _, c := range []struct{ sig, body string }{{"a2", `{"name":"a"}`}, {"a1", `{"name":"b"}`}} {
		if got := two.send(store, c.sig, c.body); got.status != http.StatusCreated || got.replayed {
			t.Errorf("%+v: %d %s, want a new run", c, got.status, got.body)
		}
	}
}

// Identical signed writes sent at once through several nodes run once:
// every other answer is the first answer replayed or 409 in progress, and
// once the original is done every replay gets its answer.
func testConcurrentSignedWrites(t *testing.T, s idempotency.SignedStore) {
	const senders = 16
	nodes := []*signedWriter{newSignedWriter(t, 30*time.Millisecond), newSignedWriter(t, 30*time.Millisecond)}
	answers := make([]signedAnswer, senders)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range senders {
		wg.Go(func() {
			<-start
			answers[i] = nodes[i%2].send(s, "c1", `{"name":"c"}`)
		})
	}
	close(start)
	wg.Wait()
	if n := nodes[0].runs.Load() + nodes[1].runs.Load(); n != 1 {
		t.Fatalf("%d runs, want 1", n)
	}
	var original signedAnswer
	for _, a := range answers {
		if a.status == http.StatusCreated && !a.replayed {
			original = a
		}
	}
	if original.status == 0 {
		t.Fatalf("no sender got the original answer: %+v", answers)
	}
	for _, a := range answers {
		switch {
		case a.status == http.StatusConflict && strings.Contains(a.code, "IDEMPOTENCY_KEY_IN_PROGRESS"):
		case a.status == http.StatusCreated && a.body == original.body:
		default:
			t.Errorf("answer %d %s, want the original or 409 IDEMPOTENCY_KEY_IN_PROGRESS", a.status, a.body)
		}
	}
	for i, n := range nodes {
		if got := n.send(s, "c1", `{"name":"c"}`); got.status != original.status || got.body != original.body || !got.replayed {
			t.Errorf("replay on node %d after the burst: %d %s, want %s replayed", i, got.status, got.body, original.body)
		}
	}
}

// A record in the layout an older release writes (the claim, the answer
// under the level's own answer key, then the level's done key holding
// "done" alone) replays, as a record an older node wrote during a rolling
// upgrade must: its answer marked replayed, to concurrent replays on
// several nodes too, and nothing runs.
func testSignedReplayOfOlderLayout(t *testing.T, s idempotency.SignedStore) {
	const sig, body, answer = "0a1d", `{"name":"old"}`, `{"id":"u-older","name":"old"}`
	// The records' names as the older release made them: the KeyHash of
	// the signed key's text.
	bodySum := sha256.Sum256([]byte(body))
	name := "42:" + idempotency.KeyHash(sig+"\nPOST /open/v1/channel/users\n"+hex.EncodeToString(bodySum[:]))
	writer := newSignedWriter(t, 0)
	sealed, err := writer.k.Sealer.Seal(answer)
	if err != nil {
		t.Fatal(err)
	}
	expires := time.Now().Add(idempotency.SignatureTTL)
	for _, b := range []signedBinding{
		{"signed-write", name + ":run", "00112233445566778899aabbccddeeff"},
		{"signed-write", name + ":answer:0", "201\napplication/json\n" + sealed},
		{"signed-write", name + ":done:0", "done"},
	} {
		if _, fresh, err := s.Bind(ctx, b.scope, b.key, b.value, expires); err != nil || !fresh {
			t.Fatalf("Bind(%q): fresh %v, %v", b.key, fresh, err)
		}
	}
	nodes := []*signedWriter{writer, newSignedWriter(t, 0)}
	answers := make([]signedAnswer, 8)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range answers {
		wg.Go(func() {
			<-start
			answers[i] = nodes[i%2].send(s, sig, body)
		})
	}
	close(start)
	wg.Wait()
	for i, a := range answers {
		if a.status != http.StatusCreated || a.body != answer || !a.replayed {
			t.Errorf("replay %d of the older record: %d %s (replayed %v), want 201 %s replayed", i, a.status, a.body, a.replayed, answer)
		}
	}
	if n := nodes[0].runs.Load() + nodes[1].runs.Load(); n != 0 {
		t.Errorf("the replays ran the write %d times", n)
	}
}
