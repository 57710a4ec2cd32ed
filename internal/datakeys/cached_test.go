package datakeys_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/datakeys"
	"github.com/healthtech/partner-open-platform/internal/datakeys/files"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// Cached says a key is in the cache once it was prepared or used, and not
// before nor after the subject was forgotten (the register then warms it).
func TestCached(t *testing.T) {
	k, ctx := newKeys(t), context.Background()
	if k.Cached("user-1") {
		t.Fatal("cached before any use")
	}
	if err := k.Prepare(ctx, []string{"user-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := k.DataKey(ctx, "user-2"); err != nil {
		t.Fatal(err)
	}
	if !k.Cached("user-1") || !k.Cached("user-2") || k.Cached("user-3") {
		t.Errorf("cached: user-1 %v, user-2 %v, user-3 %v; want true, true, false", k.Cached("user-1"), k.Cached("user-2"), k.Cached("user-3"))
	}
	k.Forget("user-1")
	if k.Cached("user-1") {
		t.Error("cached after Forget")
	}
}

// DropExpired removes the keys opened longer than CacheTTL ago, which no
// use would take from the cache any more, and keeps the fresh ones usable
// without asking the backend.
func TestDropExpiredRemovesOnlyExpiredKeys(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k, ctx := newKeys(t), context.Background()
	k.SetClock(func() time.Time { return now })
	for _, s := range []string{"user-1", "user-2", "user-3"} {
		if _, err := k.DataKey(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(datakeys.CacheTTL)
	fresh, err := k.DataKey(ctx, "user-4")
	if err != nil {
		t.Fatal(err)
	}
	if n := k.DropExpired(); n != 3 {
		t.Fatalf("dropped %d expired keys, want 3", n)
	}
	if n := k.DropExpired(); n != 0 {
		t.Fatalf("a second sweep dropped %d keys, want 0", n)
	}
	if !k.Cached("user-4") || k.Cached("user-1") {
		t.Fatalf("cached after the sweep: user-4 %v, user-1 %v; want true, false", k.Cached("user-4"), k.Cached("user-1"))
	}
	got, err := k.ByID(ctx, fresh.ID)
	if err != nil || got.AEAD != fresh.AEAD {
		t.Fatalf("the fresh key by id after the sweep: %v, same cipher %v", err, err == nil && got.AEAD == fresh.AEAD)
	}
	// An expired key still opens: it is read from the backend again.
	if _, err := k.DataKey(ctx, "user-1"); err != nil {
		t.Fatal(err)
	}
}

// newKeys is a key store over a file backend in a temporary directory.
func newKeys(t testing.TB) *datakeys.Keys {
	t.Helper()
	b, err := files.Open(filepath.Join(t.TempDir(), "keys"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	m, err := secrets.New(bytes.Repeat([]byte{3}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return datakeys.New(b, m)
}

// The keys Prepare makes are cached from the bytes it made, not opened
// again from the store: what a prepared key seals, the key the store kept
// opens (another node, or this one after a restart), and a subject that
// already had a key keeps it.
func TestPreparedKeysAreTheStoredOnes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sealer, err := secrets.New(bytes.Repeat([]byte{3}, 32))
	if err != nil {
		t.Fatal(err)
	}
	backend, err := files.Open(filepath.Join(dir, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	k := datakeys.New(backend, sealer)
	before, err := k.DataKey(ctx, "user-2")
	if err != nil {
		t.Fatal(err)
	}
	subjects := []string{"user-1", "user-2", "user-3"}
	if err := k.Prepare(ctx, subjects); err != nil {
		t.Fatal(err)
	}
	other := datakeys.New(backend, sealer) // nothing cached
	for _, s := range subjects {
		key, err := k.DataKey(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if s == "user-2" && key.ID != before.ID {
			t.Fatalf("user-2's key %s replaced by %s", before.ID, key.ID)
		}
		nonce := make([]byte, key.AEAD.NonceSize())
		ct := key.AEAD.Seal(nil, nonce, []byte("李雷 "+s), nil)
		stored, err := other.ByID(ctx, key.ID)
		if err != nil {
			t.Fatal(err)
		}
		if plain, err := stored.AEAD.Open(nil, nonce, ct, nil); err != nil || string(plain) != "李雷 "+s {
			t.Fatalf("%s: the stored key does not open what the prepared one sealed: %q %v", s, plain, err)
		}
	}
}

// ByIDBytes finds the key an envelope names from the id's bytes: the same
// key as ByID, without an allocation once it is cached, opened again from
// the store after CacheTTL, and ErrNotFound once the key is destroyed.
func TestByIDBytesIsByID(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k, ctx := newKeys(t), context.Background()
	k.SetClock(func() time.Time { return now })
	made, err := k.DataKey(ctx, "user-1")
	if err != nil {
		t.Fatal(err)
	}
	id := []byte(made.ID + ":rest of an envelope")[:len(made.ID)]
	byID, err := k.ByID(ctx, made.ID)
	if err != nil {
		t.Fatal(err)
	}
	got, err := k.ByIDBytes(ctx, id)
	if err != nil || got.ID != byID.ID || got.AEAD != byID.AEAD {
		t.Fatalf("ByIDBytes = %v, %v; ByID = %v", got.ID, err, byID.ID)
	}
	if n := testing.AllocsPerRun(50, func() { _, _ = k.ByIDBytes(ctx, id) }); n != 0 {
		t.Errorf("a cached key took %.0f allocations to find by its id's bytes, want 0", n)
	}
	now = now.Add(datakeys.CacheTTL)
	if again, err := k.ByIDBytes(ctx, id); err != nil || again.ID != made.ID {
		t.Fatalf("after CacheTTL: %v, %v; want key %s", again.ID, err, made.ID)
	}
	if err := k.Destroy(ctx, "user-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := k.ByIDBytes(ctx, id); !errors.Is(err, datakeys.ErrNotFound) {
		t.Fatalf("after Destroy: %v, want %v", err, datakeys.ErrNotFound)
	}
}
