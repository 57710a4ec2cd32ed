package idempotency_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/idempotency"
	"github.com/healthtech/partner-open-platform/internal/nonces"
	projmemory "github.com/healthtech/partner-open-platform/projections/memory"
)

// riding is a SignedStore whose bindings ride with an "append" the handler
// makes (appendWith), as projections/postgres's ride with the event
// store's group commit. lost: the append commits the binding but its
// caller does not learn it (a commit whose answer was lost).
type riding struct {
	idempotency.SignedStore
	lost  bool
	binds atomic.Int64 // bindings written with an append
}

type rideKey struct{}

type ride struct {
	b    nonces.Binding
	mine atomic.Bool
}

func (s *riding) BindWithAppend(ctx context.Context, b nonces.Binding) (context.Context, func() bool) {
	rd := &ride{b: b}
	return context.WithValue(ctx, rideKey{}, rd), rd.mine.Load
}

// appendWith is the handler's event append, made with ctx.
func (s *riding) appendWith(ctx context.Context) {
	if rd, ok := ctx.Value(rideKey{}).(*ride); ok {
		s.binds.Add(1)
		_, fresh, err := s.Bind(ctx, rd.b.Scope, rd.b.Key, rd.b.Value, rd.b.Expires)
		rd.mine.Store(err == nil && fresh && !s.lost)
	}
}

// A handler that promises its answer before its append gets that answer
// recorded with the append: the client and every replay get the promised
// bytes, even when the handler writes something else after the append.
// Without an append (a refusal) the handler's own answer is recorded after
// it, and replays get that. A commit whose outcome was lost (the binding
// written, the caller not told) keeps the recorded promise: replays answer
// it, not the handler's later answer.
func TestPromisedAnswerRidesWithTheAppend(t *testing.T) {
	f := newFixture(t)
	for _, lost := range []bool{false, true} {
		store := &riding{SignedStore: projmemory.New(), lost: lost}
		runs := 0
		handler := func(appends bool) idempotency.Handler {
			return func(w http.ResponseWriter, r *http.Request, begin func() error) {
				runs++
				if err := begin(); err != nil {
					return
				}
				ctx := idempotency.Promise(r.Context(), http.StatusOK, "application/json", []byte(`{"promised":true}`))
				if appends {
					store.appendWith(ctx)
				}
				w.Header().Set("Content-Type", "application/json")
				if appends {
					// What the handler writes after the append differs
					// (say a timestamp a second later).
					w.WriteHeader(http.StatusOK)
					_, _ = w.Write([]byte(`{"promised":"later"}`))
					return
				}
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte(`{"refused":true}`))
			}
		}
		one, two := f.node(), f.node()
		first := sendSigned(one, store, "sig-a", "/w", "", `{}`, handler(true))
		want := `{"promised":true}`
		if lost {
			want = `{"promised":"later"}`
		}
		if first.status != http.StatusOK || first.body != want {
			t.Errorf("lost %v: first answer %d %s, want 200 %s", lost, first.status, first.body, want)
		}
		if store.binds.Load() != 1 {
			t.Errorf("lost %v: %d bindings rode with the append, want 1", lost, store.binds.Load())
		}
		replay := sendSigned(two, store, "sig-a", "/w", "", `{}`, handler(true))
		if replay.status != http.StatusOK || replay.body != `{"promised":true}` || replay.header.Get(idempotency.ReplayedHeader) != "true" {
			t.Errorf("lost %v: replay %d %s, want the promised answer replayed", lost, replay.status, replay.body)
		}

		refused := sendSigned(one, store, "sig-b", "/w", "", `{}`, handler(false))
		again := sendSigned(two, store, "sig-b", "/w", "", `{}`, handler(false))
		if refused.status != http.StatusNotFound || again.status != http.StatusNotFound || again.body != refused.body || again.header.Get(idempotency.ReplayedHeader) != "true" {
			t.Errorf("lost %v: refused %d %s, its replay %d %s; want the refusal replayed", lost, refused.status, refused.body, again.status, again.body)
		}
		if runs != 2 {
			t.Errorf("lost %v: the handler ran %d times, want 2 (replays run nothing)", lost, runs)
		}
	}
}
