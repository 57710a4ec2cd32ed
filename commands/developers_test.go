package commands

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

var testPasswords = PasswordParams{Time: 1, Memory: 1024, Threads: 1, Concurrent: 4}

func newTestDevelopers(t *testing.T, store events.Store, now func() time.Time) *Developers {
	t.Helper()
	sealer, err := secrets.New(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	reg := catalog.Registry()
	return NewDevelopers(store, reg, NewAllocator(store, reg, 5), sealer, []byte("email key"), testPasswords, now)
}

// TestConcurrentSignUpsOnEveryAdapter: one account per address, decided by
// the claim stream on every event-store adapter, with separate handlers
// standing for separate nodes.
func TestConcurrentSignUpsOnEveryAdapter(t *testing.T) {
	eventStores(t, func(t *testing.T, store events.Store) {
		handlers := []*Developers{newTestDevelopers(t, store, time.Now), newTestDevelopers(t, store, time.Now)}
		email := "dup-" + time.Now().Format("150405.000000000") + "@example.com"
		const n = 12
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, errs[i] = handlers[i%2].SignUp(context.Background(), email, "a long enough password", "")
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else if !errors.Is(err, domain.ErrEmailTaken) {
				t.Fatalf("sign-up: %v", err)
			}
		}
		if ok != 1 {
			t.Fatalf("%d concurrent sign-ups of one address succeeded, want 1", ok)
		}
	})
}

func TestSignUpStoresNoSecretInClear(t *testing.T) {
	store := newMemStore()
	d := newTestDevelopers(t, store, time.Now)
	id, _, err := d.SignUp(context.Background(), "Ann@Example.com", "a long enough password", "r1")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := store.ReadAll(context.Background(), events.Position{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if strings.Contains(string(r.Data), "argon2id") || strings.Contains(string(r.Data), "a long enough password") {
			t.Fatalf("%s holds the password or its hash in clear: %s", r.Type, r.Data)
		}
		if strings.HasPrefix(r.Stream, "developeremail-") && strings.Contains(r.Stream, "ann") {
			t.Fatalf("claim stream name reveals the address: %s", r.Stream)
		}
	}
	dev, err := d.Authenticate(context.Background(), " ANN@example.com ", "a long enough password")
	if err != nil || dev.ID != id || dev.Email != "ann@example.com" || dev.Status != catalog.DeveloperPending {
		t.Fatalf("authenticate: %+v %v", dev, err)
	}
	for _, c := range [][2]string{{"ann@example.com", "wrong password!"}, {"nobody@example.com", "a long enough password"}, {"not an email", "x"}} {
		if _, err := d.Authenticate(context.Background(), c[0], c[1]); !errors.Is(err, domain.ErrBadCredentials) {
			t.Fatalf("authenticate %v: %v", c, err)
		}
	}
}

func TestAbandonedClaimIsTakenOver(t *testing.T) {
	store := newMemStore()
	now := time.Now()
	clock := func() time.Time { return now }
	d := newTestDevelopers(t, store, clock)
	// A claim whose account was never written (a crash between the appends).
	ev, _ := d.reg.Encode(catalog.DeveloperEmailClaimed{DeveloperID: 999}, events.Metadata{Actor: "developer:999"})
	if _, err := store.Append(context.Background(), d.emailStream("lost@example.com"), events.NoStream(), ev); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.SignUp(context.Background(), "lost@example.com", "a long enough password", ""); !errors.Is(err, domain.ErrEmailTaken) {
		t.Fatalf("a fresh claim is not abandoned yet: %v", err)
	}
	now = now.Add(2 * abandonedClaim)
	id, _, err := d.SignUp(context.Background(), "lost@example.com", "a long enough password", "")
	if err != nil {
		t.Fatalf("sign-up over an abandoned claim: %v", err)
	}
	if dev, err := d.Authenticate(context.Background(), "lost@example.com", "a long enough password"); err != nil || dev.ID != id {
		t.Fatalf("the new account does not own the address: %+v %v", dev, err)
	}
}

func TestResetTokenSingleUseUnderConcurrency(t *testing.T) {
	store := newMemStore()
	d := newTestDevelopers(t, store, time.Now)
	if _, _, err := d.SignUp(context.Background(), "r@example.com", "a long enough password", ""); err != nil {
		t.Fatal(err)
	}
	token, _, err := d.RequestReset(context.Background(), "r@example.com", "")
	if err != nil || token == "" {
		t.Fatalf("request reset: %q %v", token, err)
	}
	if tok, id, err := d.RequestReset(context.Background(), "none@example.com", ""); tok != "" || id != 0 || err != nil {
		t.Fatalf("reset for an unknown address: %q %d %v", tok, id, err)
	}
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = d.ResetPassword(context.Background(), token, "new password number "+string(rune('a'+i)), "")
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else if !errors.Is(err, domain.ErrResetTokenInvalid) {
			t.Fatalf("reset: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d concurrent uses of one reset token succeeded, want 1", ok)
	}
}

func TestReviewDecisions(t *testing.T) {
	store := newMemStore()
	d := newTestDevelopers(t, store, time.Now)
	id, _, err := d.SignUp(context.Background(), "rv@example.com", "a long enough password", "")
	if err != nil {
		t.Fatal(err)
	}
	meta := Meta{Actor: "operator:1"}
	var v *domain.ValidationError
	if _, err := d.Review(context.Background(), id, "maybe", "", meta); !errors.As(err, &v) {
		t.Fatalf("unknown decision: %v", err)
	}
	if _, err := d.Review(context.Background(), id, catalog.DeveloperRejected, " ", meta); !errors.As(err, &v) {
		t.Fatalf("rejection without reason: %v", err)
	}
	if _, err := d.Review(context.Background(), 424242, catalog.DeveloperApproved, "", meta); !errors.Is(err, domain.ErrDeveloperNotFound) {
		t.Fatalf("unknown developer: %v", err)
	}
	if _, err := d.Review(context.Background(), id, catalog.DeveloperApproved, "fine", meta); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Review(context.Background(), id, catalog.DeveloperApproved, "fine", meta); !errors.Is(err, domain.ErrDeveloperReviewed) {
		t.Fatalf("same decision twice: %v", err)
	}
	dev, _ := d.Load(context.Background(), id)
	if !dev.Approved() || dev.Reason != "fine" {
		t.Fatalf("after approval: %+v", dev)
	}
}

func newMemStore() events.Store { return memory.New() }
