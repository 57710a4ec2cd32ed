package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/projections"
)

// The binding cases of Run: NonceStore.Bind, with which scheme M ties an
// accepted signature to the method and path it was first used on, on every
// node that shares the store.

func bind(t *testing.T, ns projections.NonceStore, scope, key, value string, expires time.Time) (string, bool) {
	t.Helper()
	existing, fresh, err := ns.Bind(context.Background(), scope, key, value, expires)
	if err != nil {
		t.Fatalf("Bind(%q, %q, %q): %v", scope, key, value, err)
	}
	return existing, fresh
}

func wantBind(t *testing.T, ns projections.NonceStore, what, scope, key, value string, expires time.Time, wantExisting string, wantFresh bool) {
	t.Helper()
	existing, fresh := bind(t, ns, scope, key, value, expires)
	if existing != wantExisting || fresh != wantFresh {
		t.Errorf("%s: Bind(%q, %q, %q) = (%q, %v), want (%q, %v)", what, scope, key, value, existing, fresh, wantExisting, wantFresh)
	}
}

func testBindings(t *testing.T, s Store) {
	ns := nonceStore(t, s)
	now := time.Now()
	future, past := now.Add(time.Hour), now.Add(-time.Hour)

	wantBind(t, ns, "first binding", "m", "sig-1", "GET /a", future, "GET /a", true)
	wantBind(t, ns, "same value again", "m", "sig-1", "GET /a", future, "GET /a", false)
	wantBind(t, ns, "other value", "m", "sig-1", "DELETE /b", future, "GET /a", false)
	// A refused binding changes nothing, whatever expiry it asked for.
	wantBind(t, ns, "other value, earlier expiry", "m", "sig-1", "DELETE /b", past, "GET /a", false)
	wantBind(t, ns, "other value, later expiry", "m", "sig-1", "DELETE /b", future.Add(time.Hour), "GET /a", false)
	wantBind(t, ns, "first value after refusals", "m", "sig-1", "GET /a", future, "GET /a", false)

	wantBind(t, ns, "same key, other scope", "h", "sig-1", "DELETE /b", future, "DELETE /b", true)
	wantBind(t, ns, "keys are case-sensitive", "m", "SIG-1", "POST /c", future, "POST /c", true)
	// Scope and key are a pair, not a concatenation.
	wantBind(t, ns, "split elsewhere", "ms", "ig-1", "PUT /d", future, "PUT /d", true)
	wantBind(t, ns, "empty value", "m", "sig-empty", "", future, "", true)
	wantBind(t, ns, "empty value kept", "m", "sig-empty", "GET /x", future, "", false)
	long := strings.Repeat("/🙂-é", 500) + "?q=" + strings.Repeat("x", 4000)
	wantBind(t, ns, "long unicode value", "m", "sig-long", long, future, long, true)
	wantBind(t, ns, "long unicode value read back", "m", "sig-long", "GET /", future, long, false)

	// Bindings and nonces never collide, in either order.
	wantUse(t, ns, "nonce named like a binding", "m", "sig-1", future, true)
	wantBind(t, ns, "binding named like a used nonce", "sig", "n-used", "GET /a", future, "GET /a", true)
	wantUse(t, ns, "nonce after a binding of its name", "sig", "n-used", future, true)

	// An expired binding no longer holds: the next caller's value replaces it.
	wantBind(t, ns, "binding already expired", "m", "sig-old", "GET /old", past, "GET /old", true)
	wantBind(t, ns, "after the binding expired", "m", "sig-old", "GET /new", future, "GET /new", true)
	wantBind(t, ns, "the replacement holds", "m", "sig-old", "GET /old", future, "GET /new", false)

	// Bindings are not read models: a rebuild must not reopen them.
	if err := s.Reset(context.Background()); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	wantBind(t, ns, "after Reset", "m", "sig-1", "DELETE /b", future, "GET /a", false)
}

// Fifty callers binding one key to fifty values at once: exactly one value
// wins, and every caller is told that value.
func testBindingRace(t *testing.T, s Store) {
	ctx := context.Background()
	ns := nonceStore(t, s)
	const goroutines = 50
	race := func(what, key string, expires time.Time) string {
		t.Helper()
		var wg sync.WaitGroup
		var mu sync.Mutex
		seen := map[string]int{}
		winners := 0
		var errs []error
		start := make(chan struct{})
		for i := range goroutines {
			wg.Go(func() {
				<-start
				value := fmt.Sprintf("POST /open/v1/channel/users/%d/family-groups", i)
				existing, fresh, err := ns.Bind(ctx, "m", key, value, expires)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				seen[existing]++
				if fresh {
					winners++
					if existing != value {
						errs = append(errs, fmt.Errorf("fresh binding reported %q, not its own %q", existing, value))
					}
				}
			})
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			t.Errorf("%s: %v", what, err)
		}
		if winners != 1 || len(seen) != 1 {
			t.Errorf("%s: %d of %d concurrent binders were fresh and they saw %d values %v, want 1 and 1", what, winners, goroutines, len(seen), seen)
		}
		for v := range seen {
			return v
		}
		return ""
	}
	future := time.Now().Add(time.Hour)
	won := race("new key", "raced", future)
	wantBind(t, ns, "after the race", "m", "raced", "GET /late", future, won, false)
	// Taking over an expired binding races the same way.
	wantBind(t, ns, "expired binding", "m", "renewed", "GET /expired", time.Now().Add(-time.Hour), "GET /expired", true)
	won = race("expired key", "renewed", future)
	if won == "GET /expired" {
		t.Errorf("expired key: the expired binding survived the race")
	}
}
