package datakeys_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/datakeys"
	"github.com/healthtech/partner-open-platform/internal/datakeys/files"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// Cached says a key is in the cache once it was prepared or used, and not
// before nor after the subject was forgotten (the register then warms it).
func TestCached(t *testing.T) {
	b, err := files.Open(filepath.Join(t.TempDir(), "keys"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	m, err := secrets.New(bytes.Repeat([]byte{3}, 32))
	if err != nil {
		t.Fatal(err)
	}
	k, ctx := datakeys.New(b, m), context.Background()
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
