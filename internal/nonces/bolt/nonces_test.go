package bolt_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/idempotency"
	"github.com/healthtech/partner-open-platform/internal/idempotency/signedtest"
	"github.com/healthtech/partner-open-platform/internal/nonces/bolt"
	"github.com/healthtech/partner-open-platform/internal/nonces/noncetest"
	"github.com/healthtech/partner-open-platform/projections/memory"
)

func TestNoncesConformance(t *testing.T) {
	noncetest.Run(t, func(t *testing.T) noncetest.Store {
		n, err := bolt.Open(filepath.Join(t.TempDir(), "nonces.db"))
		if err != nil {
			t.Fatal(err)
		}
		return n
	})
	noncetest.RunDurable(t, func(path string) (noncetest.Store, error) { return bolt.Open(path) })
}

// Signed writes are recorded in and replayed from the embedded file.
func TestSignedWriteRecords(t *testing.T) {
	signedtest.Run(t, func(t *testing.T) idempotency.SignedStore {
		n, err := bolt.Open(filepath.Join(t.TempDir(), "nonces.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Close() })
		return n
	})
}

// Expired entries are pruned as the file grows, so it stays near the
// entries still valid.
func TestExpiredNoncesArePruned(t *testing.T) {
	ctx := context.Background()
	n, err := bolt.Open(filepath.Join(t.TempDir(), "nonces.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	past := time.Now().Add(-time.Minute)
	for i := range 300 {
		if _, err := n.Use(ctx, "h:1", "n:"+string(rune(i)), past); err != nil {
			t.Fatal(err)
		}
	}
	live, err := n.Use(ctx, "h:1", "live", time.Now().Add(time.Hour))
	if err != nil || !live {
		t.Fatal("live nonce refused")
	}
	if _, err := n.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Prune(ctx); err != nil {
		t.Fatal(err)
	}
	if k, _ := n.Len(); k != 1 {
		t.Fatalf("%d entries kept after pruning, want only the live one", k)
	}
	if fresh, _ := n.Use(ctx, "h:1", "live", time.Now().Add(time.Hour)); fresh {
		t.Fatal("pruning dropped a live nonce")
	}
}

// BenchmarkUse compares a use kept in the file with the in-memory store's,
// in the same run.
func BenchmarkUse(b *testing.B) {
	ctx := context.Background()
	n, err := bolt.Open(filepath.Join(b.TempDir(), "nonces.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	mem := memory.New()
	exp := time.Now().Add(time.Hour)
	type user interface {
		Use(ctx context.Context, scope, nonce string, expires time.Time) (bool, error)
	}
	for _, s := range []struct {
		name string
		u    user
	}{{"memory", mem}, {"bolt", n}} {
		b.Run("serial/"+s.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				if _, err := s.u.Use(ctx, "s", "serial"+string(rune(i)), exp); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("parallel/"+s.name, func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				var k [8]byte
				for i := 0; pb.Next(); i++ {
					k[0], k[1], k[2] = byte(i), byte(i>>8), byte(i>>16)
					if _, err := s.u.Use(ctx, "p", string(k[:])+time.Now().String(), exp); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
