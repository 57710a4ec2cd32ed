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

// A signed write records its answer in the layout every release reads:
// the claim, the answer under a key of its own, then the level marked done.
func TestSignedWriteRecordsTheLayoutEveryReleaseReads(t *testing.T) {
	f := newFixture(t)
	store := &bindLog{SignedStore: projmemory.New()}
	e := &effect{}
	if got := sendSigned(f.node(), store, "ee", "/w", "", `{"name":"a"}`, e.handler); got.status != http.StatusCreated {
		t.Fatalf("write: %d %s", got.status, got.body)
	}
	if len(store.binds) != 3 || !strings.HasSuffix(store.binds[0].key, ":run") ||
		!strings.HasSuffix(store.binds[1].key, ":answer:0") ||
		!strings.HasSuffix(store.binds[2].key, ":done:0") || store.binds[2].value != "done" {
		t.Fatalf("bindings %+v, want the claim, the level-0 answer and the level marked done", store.binds)
	}
}

// A replay answers from a record in the one-binding layout (the done key
// holding "done", a newline and the answer), which a later release will
// write: the recorded answer, marked replayed, and no run.
func TestSignedReplayReadsTheOneBindingRecord(t *testing.T) {
	f := newFixture(t)
	recorded := &bindLog{SignedStore: projmemory.New()}
	e := &effect{}
	first := sendSigned(f.node(), recorded, "ff", "/w", "", `{"name":"a"}`, e.handler)
	if first.status != http.StatusCreated || len(recorded.binds) != 3 {
		t.Fatalf("write: %d %s, bindings %+v", first.status, first.body, recorded.binds)
	}
	// The same write as the one-binding layout holds it, in a store of its own.
	claim, answer, done := recorded.binds[0], recorded.binds[1], recorded.binds[2]
	later := projmemory.New()
	ctx, exp := context.Background(), time.Now().Add(time.Hour)
	for _, b := range []binding{claim, {done.scope, done.key, "done\n" + answer.value}} {
		if _, _, err := later.Bind(ctx, b.scope, b.key, b.value, exp); err != nil {
			t.Fatal(err)
		}
	}
	got := sendSigned(f.node(), later, "ff", "/w", "", `{"name":"a"}`, e.handler)
	if got.status != first.status || got.body != first.body || got.header.Get(idempotency.ReplayedHeader) != "true" {
		t.Errorf("replay: %d %s, want the recorded %d %s replayed", got.status, got.body, first.status, first.body)
	}
	if n := e.runs.Load(); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
}
