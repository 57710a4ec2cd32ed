package files

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/secrets"
	"github.com/healthtech/partner-open-platform/keys"
	"github.com/healthtech/partner-open-platform/keys/keystest"
)

func TestConformance(t *testing.T) {
	keystest.Run(t, func(t *testing.T) keys.Backend {
		s, err := Open(filepath.Join(t.TempDir(), "keys"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestDestroyRemovesTheBytes reopens the directory and reads every file left:
// the destroyed key's sealed form is nowhere, and the survivor reopens.
func TestDestroyRemovesTheBytes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := secrets.New(bytes.Repeat([]byte{7}, 32))
	ks := keys.New(s, m)
	ctx := context.Background()
	gone, _ := ks.DataKey(ctx, "user-1")
	kept, _ := ks.DataKey(ctx, "user-2")
	rec, _ := s.GetByKeyID(ctx, gone.ID)
	if err := ks.Destroy(ctx, "user-1"); err != nil {
		t.Fatal(err)
	}
	err = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if bytes.Contains(b, []byte(rec.Sealed)) || bytes.Contains(b, []byte(gone.ID)) {
			t.Errorf("%s still holds the destroyed key", path)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v", path, info.Mode().Perm())
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Open(dir)
	if k, err := keys.New(again, m).ByID(ctx, kept.ID); err != nil || k.Subject != "user-2" {
		t.Fatalf("after reopen: %v", err)
	}
}
