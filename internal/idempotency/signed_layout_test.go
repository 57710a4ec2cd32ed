package idempotency_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/idempotency"
	projmemory "github.com/healthtech/partner-open-platform/projections/memory"
)

// bindLog is a SignedStore that records every binding made through it.
type bindLog struct {
	idempotency.SignedStore
	mu    sync.Mutex
	binds []binding
}

type binding struct{ scope, key, value string }

func (b *bindLog) Bind(ctx context.Context, scope, key, value string, expires time.Time) (string, bool, error) {
	got, fresh, err := b.SignedStore.Bind(ctx, scope, key, value, expires)
	if err == nil && fresh {
		b.mu.Lock()
		b.binds = append(b.binds, binding{scope, key, value})
		b.mu.Unlock()
	}
	return got, fresh, err
}

// A signed write is recorded in two bindings: its claim, then its level's
// done key holding "done" and the answer.
func TestSignedWriteRecordsTwoBindings(t *testing.T) {
	f := newFixture(t)
	store := &bindLog{SignedStore: projmemory.New()}
	e := &effect{}
	if got := sendSigned(f.node(), store, "ee", "/w", "", `{"name":"a"}`, e.handler); got.status != http.StatusCreated {
		t.Fatalf("write: %d %s", got.status, got.body)
	}
	if len(store.binds) != 2 || !strings.HasSuffix(store.binds[0].key, ":run") ||
		!strings.HasSuffix(store.binds[1].key, ":done:0") || !strings.HasPrefix(store.binds[1].value, "done\n201\napplication/json") {
		t.Fatalf("bindings %+v, want the claim and the level-0 done key holding the answer", store.binds)
	}
}

// A replay answers from a record in the layout of the release before (the
// answer under the level's own answer key, the done key holding "done"
// alone), which an older node writes during a rolling upgrade: the
// recorded answer, marked replayed, and no run.
func TestSignedReplayReadsTheThreeBindingRecord(t *testing.T) {
	f := newFixture(t)
	recorded := &bindLog{SignedStore: projmemory.New()}
	e := &effect{}
	first := sendSigned(f.node(), recorded, "ff", "/w", "", `{"name":"a"}`, e.handler)
	if first.status != http.StatusCreated || len(recorded.binds) != 2 {
		t.Fatalf("write: %d %s, bindings %+v", first.status, first.body, recorded.binds)
	}
	// The same write as the older writer binds it, in a store of its own.
	claim, done := recorded.binds[0], recorded.binds[1]
	answer, ok := strings.CutPrefix(done.value, "done\n")
	if !ok {
		t.Fatalf("done key %q", done.value)
	}
	older := projmemory.New()
	ctx, exp := context.Background(), time.Now().Add(time.Hour)
	for _, b := range []binding{claim, {done.scope, strings.TrimSuffix(done.key, "done:0") + "answer:0", answer}, {done.scope, done.key, "done"}} {
		if _, _, err := older.Bind(ctx, b.scope, b.key, b.value, exp); err != nil {
			t.Fatal(err)
		}
	}
	got := sendSigned(f.node(), older, "ff", "/w", "", `{"name":"a"}`, e.handler)
	if got.status != first.status || got.body != first.body || got.header.Get(idempotency.ReplayedHeader) != "true" {
		t.Errorf("replay: %d %s, want the recorded %d %s replayed", got.status, got.body, first.status, first.body)
	}
	if n := e.runs.Load(); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
}
