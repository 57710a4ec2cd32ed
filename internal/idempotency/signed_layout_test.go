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

// A signed write keeps two entries in the store the nodes share: its claim
// and its recorded answer (held there for SignatureTTL, one per write).
func TestSignedWriteRecordsOneEntryBesideItsClaim(t *testing.T) {
	f := newFixture(t)
	store := &bindLog{SignedStore: projmemory.New()}
	e := &effect{}
	if got := sendSigned(f.node(), store, "ee", "/w", "", `{"name":"a"}`, e.handler); got.status != http.StatusCreated {
		t.Fatalf("write: %d %s", got.status, got.body)
	}
	if len(store.binds) != 2 || !strings.HasSuffix(store.binds[0].key, ":run") || !strings.HasSuffix(store.binds[1].key, ":done:0") {
		t.Fatalf("bindings %+v, want the claim and the level-0 record", store.binds)
	}
}

// A replay answers from a record in the two-key layout (the answer bound
// to its own key, then the level marked "done"), as nodes of earlier
// releases wrote it: the recorded answer, marked replayed, and no run.
func TestSignedReplayReadsTheTwoKeyRecord(t *testing.T) {
	f := newFixture(t)
	recorded := &bindLog{SignedStore: projmemory.New()}
	e := &effect{}
	first := sendSigned(f.node(), recorded, "ff", "/w", "", `{"name":"a"}`, e.handler)
	if first.status != http.StatusCreated || len(recorded.binds) != 2 {
		t.Fatalf("write: %d %s, bindings %+v", first.status, first.body, recorded.binds)
	}
	// The same write as an earlier release recorded it, in a store of its own.
	claim, rec := recorded.binds[0], recorded.binds[1]
	name := strings.TrimSuffix(rec.key, ":done:0")
	answer, ok := strings.CutPrefix(rec.value, "done\n")
	if !ok {
		t.Fatalf("record %q has no done marker", rec.value)
	}
	legacy := projmemory.New()
	ctx, exp := context.Background(), time.Now().Add(time.Hour)
	for _, b := range []binding{claim, {rec.scope, name + ":answer:0", answer}, {rec.scope, name + ":done:0", "done"}} {
		if _, _, err := legacy.Bind(ctx, b.scope, b.key, b.value, exp); err != nil {
			t.Fatal(err)
		}
	}
	got := sendSigned(f.node(), legacy, "ff", "/w", "", `{"name":"a"}`, e.handler)
	if got.status != first.status || got.body != first.body || got.header.Get(idempotency.ReplayedHeader) != "true" {
		t.Errorf("replay: %d %s, want the recorded %d %s replayed", got.status, got.body, first.status, first.body)
	}
	if n := e.runs.Load(); n != 1 {
		t.Errorf("%d runs, want 1", n)
	}
}
