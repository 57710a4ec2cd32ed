package filelog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/idempotency"
	"github.com/healthtech/partner-open-platform/internal/idempotency/signedtest"
	"github.com/healthtech/partner-open-platform/internal/nonces/bolt"
	"github.com/healthtech/partner-open-platform/internal/nonces/filelog"
	"github.com/healthtech/partner-open-platform/internal/nonces/noncetest"
	"github.com/healthtech/partner-open-platform/projections/memory"
)

func TestNoncesConformance(t *testing.T) {
	noncetest.Run(t, func(t *testing.T) noncetest.Store {
		n, err := filelog.Open(filepath.Join(t.TempDir(), "nonces.log"))
		if err != nil {
			t.Fatal(err)
		}
		return n
	})
	noncetest.RunDurable(t, func(path string) (noncetest.Store, error) { return filelog.Open(path) })
}

// Signed writes are recorded in and replayed from the embedded file.
func TestSignedWriteRecords(t *testing.T) {
	signedtest.Run(t, func(t *testing.T) idempotency.SignedStore {
		n, err := filelog.Open(filepath.Join(t.TempDir(), "nonces.log"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Close() })
		return n
	})
}

func open(t *testing.T, path string) *filelog.Nonces {
	t.Helper()
	n, err := filelog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A process killed without Close (kill -9) has written every record it
// answered: a copy of the file taken while the store is still open (what
// the next process finds) refuses the replay. A record cut short at the
// end (the crash came mid-write) is dropped and the file stays usable.
func TestAnsweredUsesSurviveAKillAndATornTail(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "nonces.log")
	n := open(t, path)
	defer n.Close()
	future := time.Now().Add(time.Hour)
	for i := range 50 {
		if fresh, err := n.Use(ctx, "h:1", fmt.Sprint("n-", i), future); err != nil || !fresh {
			t.Fatalf("use %d: %v, %v", i, fresh, err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The next record, half written.
	data = append(data, 0, 0, 0, 40, 1, 2, 3, 4, 5, 6)
	copyPath := filepath.Join(dir, "after-kill.log")
	if err := os.WriteFile(copyPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	c := open(t, copyPath)
	defer c.Close()
	for i := range 50 {
		if fresh, err := c.Use(ctx, "h:1", fmt.Sprint("n-", i), future); err != nil || fresh {
			t.Fatalf("replay of n-%d after the kill: fresh=%v, %v; want refused", i, fresh, err)
		}
	}
	if fresh, err := c.Use(ctx, "h:1", "new", future); err != nil || !fresh {
		t.Fatalf("a new nonce after the torn tail: %v, %v", fresh, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = open(t, copyPath)
	defer c.Close()
	if fresh, err := c.Use(ctx, "h:1", "new", future); err != nil || fresh {
		t.Fatalf("the nonce written after the torn tail was lost: fresh=%v, %v", fresh, err)
	}
}

// Expired entries leave memory, and the file is rewritten without them
// when it reopens: it stays near the entries still valid.
func TestExpiredNoncesArePruned(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nonces.log")
	n := open(t, path)
	past := time.Now().Add(-time.Minute)
	for i := range 20000 {
		if _, err := n.Use(ctx, "h:1", fmt.Sprint("n:", i), past); err != nil {
			t.Fatal(err)
		}
	}
	if fresh, err := n.Use(ctx, "h:1", "live", time.Now().Add(time.Hour)); err != nil || !fresh {
		t.Fatal("live nonce refused")
	}
	if k := n.Len(); k != 1 {
		t.Fatalf("%d entries kept after pruning, want only the live one", k)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	big, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	n = open(t, path)
	defer n.Close()
	small, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if small.Size() >= big.Size()/100 {
		t.Fatalf("file of %d bytes after reopening with one live entry (was %d): not compacted", small.Size(), big.Size())
	}
	if fresh, _ := n.Use(ctx, "h:1", "live", time.Now().Add(time.Hour)); fresh {
		t.Fatal("compaction dropped a live nonce")
	}
}

// While a node runs, a file holding mostly expired records is rewritten
// with the live ones, and nothing live is lost: every live nonce is still
// refused, before and after reopening.
func TestCompactionWhileRunningKeepsLiveEntries(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100,000 records")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nonces.log")
	n := open(t, path)
	past, future := time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	for i := range 100_000 {
		exp := past
		if i%1000 == 0 {
			exp = future
		}
		if fresh, err := n.Use(ctx, "h", fmt.Sprint(i), exp); err != nil || !fresh {
			t.Fatalf("use %d: %v, %v", i, fresh, err)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// Each record is at least 24 bytes: 100,000 of them are 2.4 MB; after
	// a compaction past 65,536 dead records, about 35,000 remain.
	if st.Size() > 1_500_000 {
		t.Fatalf("file of %d bytes for 100 live entries: never compacted while running", st.Size())
	}
	check := func(n *filelog.Nonces) {
		for i := 0; i < 100_000; i += 1000 {
			if fresh, err := n.Use(ctx, "h", fmt.Sprint(i), future); err != nil || fresh {
				t.Fatalf("live nonce %d: fresh=%v, %v; want refused", i, fresh, err)
			}
		}
	}
	check(n)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n = open(t, path)
	defer n.Close()
	check(n)
}

// Entries restored from the bbolt file of earlier releases hold as if used
// here; expired ones are not taken.
func TestRestoreFromBolt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	old, err := bolt.Open(filepath.Join(dir, "nonces.db"))
	if err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if _, err := old.Use(ctx, "h:1", "n:old", future); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Use(ctx, "h:1", "n:expired", time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := old.Bind(ctx, "m", "1:sig", "POST /a", future); err != nil {
		t.Fatal(err)
	}
	n := open(t, filepath.Join(dir, "nonces.log"))
	defer n.Close()
	err = old.Each(func(key string, expires time.Time, value string) error { return n.Restore(key, expires, value) })
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	if fresh, err := n.Use(ctx, "h:1", "n:old", future); err != nil || fresh {
		t.Fatalf("nonce used before the upgrade: fresh=%v, %v; want refused", fresh, err)
	}
	if fresh, err := n.Use(ctx, "h:1", "n:expired", future); err != nil || !fresh {
		t.Fatalf("expired nonce: fresh=%v, %v; want fresh", fresh, err)
	}
	if got, fresh, err := n.Bind(ctx, "m", "1:sig", "DELETE /b", future); err != nil || fresh || got != "POST /a" {
		t.Fatalf("binding made before the upgrade: %q, %v, %v; want POST /a held", got, fresh, err)
	}
}

// BenchmarkUse compares a use kept in this file with the bbolt file's and
// the in-memory store's, in the same run.
func BenchmarkUse(b *testing.B) {
	ctx := context.Background()
	n, err := filelog.Open(filepath.Join(b.TempDir(), "nonces.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	old, err := bolt.Open(filepath.Join(b.TempDir(), "nonces.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer old.Close()
	exp := time.Now().Add(time.Hour)
	type user interface {
		Use(ctx context.Context, scope, nonce string, expires time.Time) (bool, error)
	}
	for _, s := range []struct {
		name string
		u    user
	}{{"memory", memory.New()}, {"bolt", old}, {"filelog", n}} {
		b.Run("parallel/"+s.name, func(b *testing.B) {
			b.SetParallelism(16)
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.u.Use(ctx, "p", fmt.Sprint(next.Add(1)), exp); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
