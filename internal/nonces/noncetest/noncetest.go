// Package noncetest is the conformance suite of the replay guard's port
// (nonces.Store): every adapter, the embedded files (bolt, filelog) and the
// read-model stores that implement it (memory, postgres), runs it.
package noncetest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/nonces"
)

// Store is a replay guard under test on its own (an embedded node's
// file, internal/nonces/filelog): the nonce port, Reset (which must leave
// nonces) and Close (which a case may call before the suite does: a second
// Close must be harmless).
type Store interface {
	nonces.Store
	Reset(ctx context.Context) error
	Close() error
}

// nonceTests are the cases of the nonces sub-suite.
var nonceTests = []struct {
	name string
	fn   func(t *testing.T, s Store)
}{
	{"NoncesFreshOnceUntilExpired", testNonces},
	{"ConcurrentNonceUse", testNonceRace},
	{"BindingsHoldUntilExpired", testBindings},
	{"ConcurrentBinding", testBindingRace},
	{"ConcurrentBindingsOfManyKeys", testBindingsOfManyKeys},
	{"ConcurrentUsesThenClose", testUsesThenClose},
}

// Case is one case of the suite, for a suite of a wider store (a
// read-model store that also implements the port) to run on its own stores.
type Case struct {
	Name string
	Fn   func(t *testing.T, s Store)
}

// Cases returns the cases Run runs.
func Cases() []Case {
	cs := make([]Case, len(nonceTests))
	for i, c := range nonceTests {
		cs[i] = Case{c.name, c.fn}
	}
	return cs
}

// Run checks a replay guard that is not a whole read-model store
// against the same cases as Run's nonces sub-suite; open is called once per
// case and must return an empty store, which Run closes.
func Run(t *testing.T, open func(t *testing.T) Store) {
	t.Helper()
	for _, c := range nonceTests {
		t.Run(c.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			c.fn(t, s)
		})
	}
}

// The cases of the nonce store: replay nonces (Use) and scheme M bindings (Bind), which are not read models and survive every reset.

var ctx = context.Background()

func useNonce(t *testing.T, s nonces.Store, scope, nonce string, expires time.Time) bool {
	t.Helper()
	fresh, err := s.Use(context.Background(), scope, nonce, expires)
	if err != nil {
		t.Fatalf("Use(%q, %q): %v", scope, nonce, err)
	}
	return fresh
}

// WantUse fails the test unless Use reports want.
func WantUse(t *testing.T, s nonces.Store, what, scope, nonce string, expires time.Time, want bool) {
	t.Helper()
	if got := useNonce(t, s, scope, nonce, expires); got != want {
		t.Errorf("%s: Use(%q, %q) = %v, want %v", what, scope, nonce, got, want)
	}
}

func testNonces(t *testing.T, s Store) {
	now := time.Now()
	future, past := now.Add(time.Hour), now.Add(-time.Hour)

	WantUse(t, s, "fresh", "sig", "abc", future, true)
	WantUse(t, s, "replay", "sig", "abc", future, false)
	WantUse(t, s, "replay with a later expiry", "sig", "abc", future.Add(time.Hour), false)
	WantUse(t, s, "replay with an earlier expiry", "sig", "abc", past, false)
	// A refused use leaves the first use's expiry: still refused.
	WantUse(t, s, "replay after a refused use", "sig", "abc", future, false)

	WantUse(t, s, "same nonce, other scope", "webhook", "abc", future, true)
	WantUse(t, s, "replay in the other scope", "webhook", "abc", future, false)
	WantUse(t, s, "other nonce", "sig", "abd", future, true)
	WantUse(t, s, "nonces are case-sensitive", "sig", "ABC", future, true)
	WantUse(t, s, "empty nonce", "sig", "", future, true)
	WantUse(t, s, "empty scope", "", "abc", future, true)
	WantUse(t, s, "empty nonce replayed", "sig", "", future, false)
	// Scope and nonce are a pair, not a concatenation.
	WantUse(t, s, "split elsewhere", "si", "gabc", future, true)
	long := strings.Repeat("n-🙂-", 100)
	WantUse(t, s, "long unicode nonce", "sig", long, future, true)
	WantUse(t, s, "long unicode nonce replayed", "sig", long, future, false)

	// A use that has expired no longer counts.
	WantUse(t, s, "fresh, already expired", "sig", "old", past, true)
	WantUse(t, s, "after the first use expired", "sig", "old", past, true)
	WantUse(t, s, "after the expired use, valid again", "sig", "old", future, true)
	WantUse(t, s, "replay of the renewed use", "sig", "old", future, false)
}

func testNonceRace(t *testing.T, s Store) {
	const goroutines = 20
	race := func(what, nonce string, expires time.Time) {
		t.Helper()
		var wg sync.WaitGroup
		var mu sync.Mutex
		fresh := 0
		var errs []error
		start := make(chan struct{})
		for range goroutines {
			wg.Go(func() {
				<-start
				ok, err := s.Use(ctx, "sig", nonce, expires)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				}
				if ok {
					fresh++
				}
			})
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			t.Errorf("%s: Use: %v", what, err)
		}
		if fresh != 1 {
			t.Errorf("%s: %d of %d concurrent uses of one nonce were fresh, want exactly 1", what, fresh, goroutines)
		}
	}
	future := time.Now().Add(time.Hour)
	race("new nonce", "raced", future)
	// Taking over an expired use races the same way.
	WantUse(t, s, "expired use", "sig", "renewed", time.Now().Add(-time.Hour), true)
	race("expired nonce", "renewed", future)
	WantUse(t, s, "after the races", "sig", "raced", future, false)
}

func bind(t *testing.T, s nonces.Store, scope, key, value string, expires time.Time) (string, bool) {
	t.Helper()
	existing, fresh, err := s.Bind(context.Background(), scope, key, value, expires)
	if err != nil {
		t.Fatalf("Bind(%q, %q, %q): %v", scope, key, value, err)
	}
	return existing, fresh
}

func wantBind(t *testing.T, s nonces.Store, what, scope, key, value string, expires time.Time, wantExisting string, wantFresh bool) {
	t.Helper()
	existing, fresh := bind(t, s, scope, key, value, expires)
	if existing != wantExisting || fresh != wantFresh {
		t.Errorf("%s: Bind(%q, %q, %q) = (%q, %v), want (%q, %v)", what, scope, key, value, existing, fresh, wantExisting, wantFresh)
	}
}

func testBindings(t *testing.T, s Store) {
	now := time.Now()
	future, past := now.Add(time.Hour), now.Add(-time.Hour)

	wantBind(t, s, "first binding", "m", "sig-1", "GET /a", future, "GET /a", true)
	wantBind(t, s, "same value again", "m", "sig-1", "GET /a", future, "GET /a", false)
	wantBind(t, s, "other value", "m", "sig-1", "DELETE /b", future, "GET /a", false)
	// A refused binding changes nothing, whatever expiry it asked for.
	wantBind(t, s, "other value, earlier expiry", "m", "sig-1", "DELETE /b", past, "GET /a", false)
	wantBind(t, s, "other value, later expiry", "m", "sig-1", "DELETE /b", future.Add(time.Hour), "GET /a", false)
	wantBind(t, s, "first value after refusals", "m", "sig-1", "GET /a", future, "GET /a", false)

	wantBind(t, s, "same key, other scope", "h", "sig-1", "DELETE /b", future, "DELETE /b", true)
	wantBind(t, s, "keys are case-sensitive", "m", "SIG-1", "POST /c", future, "POST /c", true)
	// Scope and key are a pair, not a concatenation.
	wantBind(t, s, "split elsewhere", "ms", "ig-1", "PUT /d", future, "PUT /d", true)
	wantBind(t, s, "empty value", "m", "sig-empty", "", future, "", true)
	wantBind(t, s, "empty value kept", "m", "sig-empty", "GET /x", future, "", false)
	long := strings.Repeat("/🙂-é", 500) + "?q=" + strings.Repeat("x", 4000)
	wantBind(t, s, "long unicode value", "m", "sig-long", long, future, long, true)
	wantBind(t, s, "long unicode value read back", "m", "sig-long", "GET /", future, long, false)

	// Bindings and nonces never collide, in either order.
	WantUse(t, s, "nonce named like a binding", "m", "sig-1", future, true)
	wantBind(t, s, "binding named like a used nonce", "sig", "n-used", "GET /a", future, "GET /a", true)
	WantUse(t, s, "nonce after a binding of its name", "sig", "n-used", future, true)

	// An expired binding no longer holds: the next caller's value replaces it.
	wantBind(t, s, "binding already expired", "m", "sig-old", "GET /old", past, "GET /old", true)
	wantBind(t, s, "after the binding expired", "m", "sig-old", "GET /new", future, "GET /new", true)
	wantBind(t, s, "the replacement holds", "m", "sig-old", "GET /old", future, "GET /new", false)

	// Bindings are not read models: a rebuild must not reopen them.
	if err := s.Reset(context.Background()); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	wantBind(t, s, "after Reset", "m", "sig-1", "DELETE /b", future, "GET /a", false)
}

// Fifty callers binding one key to fifty values at once: exactly one value
// wins, and every caller is told that value.
func testBindingRace(t *testing.T, s Store) {
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
				existing, fresh, err := s.Bind(ctx, "m", key, value, expires)
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
	wantBind(t, s, "after the race", "m", "raced", "GET /late", future, won, false)
	// Taking over an expired binding races the same way.
	wantBind(t, s, "expired binding", "m", "renewed", "GET /expired", time.Now().Add(-time.Hour), "GET /expired", true)
	won = race("expired key", "renewed", future)
	if won == "GET /expired" {
		t.Errorf("expired key: the expired binding survived the race")
	}
}

// Many callers binding many keys at once, as the signed requests of a node
// under load do (a store may send them together): some keys new, some
// reused by several callers, some already held, some held by an expired
// binding, and some bound by every caller with an expiry already past.
// Each answer is checked: per live key exactly one caller is fresh and told
// its own value, every other caller of that key is told the same value and
// is not fresh; a held key answers its holder to all; a key whose every
// binding is already expired answers each caller fresh with its own value,
// since each binding is judged against the last, which had expired.
func testBindingsOfManyKeys(t *testing.T, s Store) {
	const (
		keys    = 40
		callers = 6
	)
	now := time.Now()
	future, past := now.Add(time.Hour), now.Add(-time.Hour)
	key := func(k int) string { return fmt.Sprintf("many-%d", k) }
	held := func(k int) bool { return k%5 == 1 }
	expiredBefore := func(k int) bool { return k%5 == 2 }
	allPast := func(k int) bool { return k%5 == 3 }
	for k := range keys {
		switch {
		case held(k):
			wantBind(t, s, "held before the race", "m", key(k), "GET /held", future, "GET /held", true)
		case expiredBefore(k):
			wantBind(t, s, "expired before the race", "m", key(k), "GET /expired", past, "GET /expired", true)
		}
	}
	type answer struct {
		value, existing string
		fresh           bool
	}
	var mu sync.Mutex
	answers := map[int][]answer{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for c := range callers {
		for k := range keys {
			wg.Go(func() {
				<-start
				value := fmt.Sprintf("POST /open/v1/users/%d/caller/%d", k, c)
				expires := future
				if allPast(k) {
					expires = past
				}
				existing, fresh, err := s.Bind(ctx, "m", key(k), value, expires)
				if err != nil {
					t.Errorf("Bind(%q) by caller %d: %v", key(k), c, err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				answers[k] = append(answers[k], answer{value, existing, fresh})
			})
		}
	}
	close(start)
	wg.Wait()
	for k := range keys {
		as := answers[k]
		if len(as) != callers {
			continue // an error was reported above
		}
		var winners []answer
		seen := map[string]bool{}
		for _, a := range as {
			seen[a.existing] = true
			if a.fresh {
				winners = append(winners, a)
				if a.existing != a.value {
					t.Errorf("key %d: a fresh caller was told %q, not its own %q", k, a.existing, a.value)
				}
			}
		}
		switch {
		case allPast(k):
			if len(winners) != callers {
				t.Errorf("key %d, every binding already expired: %d of %d callers fresh, want all: %v", k, len(winners), callers, as)
			}
		case held(k):
			if len(winners) != 0 || len(seen) != 1 || !seen["GET /held"] {
				t.Errorf("key %d, held: answers %v, want every caller told GET /held, none fresh", k, as)
			}
		default:
			if len(winners) != 1 || len(seen) != 1 {
				t.Errorf("key %d: answers %v, want exactly one fresh caller and one value told to all", k, as)
				continue
			}
			wantBind(t, s, "after the race", "m", key(k), "GET /late", future, winners[0].value, false)
		}
	}
}

// RunDurable checks a replay guard kept in a file (an embedded node's)
// across restarts: open opens the file at path, again for each restart, and
// the cases close what they open. Together with Run it is the
// conformance suite of every file-backed nonce store, so each adapter's own
// tests keep only what is particular to its format.
func RunDurable(t *testing.T, open func(path string) (Store, error)) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(t *testing.T, reopen func() (Store, error))
	}{
		{"NoncesSurviveReopen", testNoncesSurviveReopen},
		{"OneNodePerFile", testOneNodePerFile},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "nonces")
			c.fn(t, func() (Store, error) { return open(path) })
		})
	}
}

// mustOpen opens the store or fails the test.
func mustOpen(t *testing.T, reopen func() (Store, error)) Store {
	t.Helper()
	s, err := reopen()
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}

// A nonce used before a restart is still refused after it, until it
// expires; so is a signature bound to one route, on another.
func testNoncesSurviveReopen(t *testing.T, reopen func() (Store, error)) {
	ctx := context.Background()
	n := mustOpen(t, reopen)
	future := time.Now().Add(time.Hour)
	if fresh, err := n.Use(ctx, "h:1", "n:abc", future); err != nil || !fresh {
		t.Fatalf("first use: %v, %v", fresh, err)
	}
	if fresh, err := n.Use(ctx, "h:1", "n:gone", time.Now().Add(-time.Second)); err != nil || !fresh {
		t.Fatalf("expired use: %v, %v", fresh, err)
	}
	if _, fresh, err := n.Bind(ctx, "m", "1:sig", "POST /a", future); err != nil || !fresh {
		t.Fatalf("bind: %v, %v", fresh, err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n = mustOpen(t, reopen)
	defer n.Close()
	if fresh, err := n.Use(ctx, "h:1", "n:abc", future); err != nil || fresh {
		t.Fatalf("replay after reopening: fresh=%v, %v; want refused", fresh, err)
	}
	if fresh, err := n.Use(ctx, "h:1", "n:gone", future); err != nil || !fresh {
		t.Fatalf("a use that had expired before the restart: fresh=%v, %v; want fresh", fresh, err)
	}
	if got, fresh, err := n.Bind(ctx, "m", "1:sig", "DELETE /b", future); err != nil || fresh || got != "POST /a" {
		t.Fatalf("binding after reopening: %q, %v, %v; want POST /a held", got, fresh, err)
	}
}

// A second process cannot open the file while a node holds it.
func testOneNodePerFile(t *testing.T, reopen func() (Store, error)) {
	n := mustOpen(t, reopen)
	defer n.Close()
	if testing.Short() {
		t.Skip("waits the file lock's timeout")
	}
	if other, err := reopen(); err == nil {
		other.Close()
		t.Fatal("a second open of a held file succeeded")
	}
}

// testUsesThenClose: concurrent uses are decided as one after the other
// however the adapter groups them (shared transactions, shared writes):
// over many callers and repeated nonces, each nonce is fresh exactly once.
// After Close every caller gets an error, and none hangs.
func testUsesThenClose(t *testing.T, s Store) {
	exp := time.Now().Add(time.Hour)
	var fresh atomic.Int64
	var wg sync.WaitGroup
	for w := range 50 {
		wg.Go(func() {
			for i := range 20 {
				ok, err := s.Use(ctx, "h", fmt.Sprintf("n-%d", (w*20+i)%100), exp)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					fresh.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := fresh.Load(); got != 100 {
		t.Fatalf("%d fresh uses of 100 nonces used 10 times each, want 100", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := s.Use(ctx, "h", "after-close", exp)
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err == nil {
			t.Fatal("a use after Close succeeded")
		}
	}
}
