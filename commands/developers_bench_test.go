package commands

import (
	"context"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// BenchmarkSignInCost measures, in one run, what a sign-in's password check
// costs (argon2id with the production costs) against the session check
// every portal page makes (loading the cached account): report the ratio,
// not the times.
func BenchmarkSignInCost(b *testing.B) {
	store := memory.New()
	reg := catalog.Registry()
	sealer, _ := secrets.New(make([]byte, 32))
	d := NewDevelopers(store, reg, NewAllocator(store, reg, 5), sealer, []byte("k"), DefaultPasswordParams, time.Now)
	ctx := context.Background()
	id, _, err := d.SignUp(ctx, "bench@example.com", "a long enough password", "")
	if err != nil {
		b.Fatal(err)
	}
	for range 50 { // a developer who signed in often
		if _, err := d.StartSession(ctx, id, HashSession(secrets.Random("", 8)), ""); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("session-check", func(b *testing.B) {
		for b.Loop() {
			if _, err := d.Load(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("password-check", func(b *testing.B) {
		for b.Loop() {
			if _, err := d.Authenticate(ctx, "bench@example.com", "a long enough password"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
