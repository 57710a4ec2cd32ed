package secrets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSealOpenRoundTripAndTampering(t *testing.T) {
	key, err := ParseKey(strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := New(key)
	sealed, err := s.Seal("as_secret")
	if err != nil || strings.Contains(sealed, "as_secret") {
		t.Fatalf("sealed %q %v", sealed, err)
	}
	if again, _ := s.Seal("as_secret"); again == sealed {
		t.Fatal("sealing is deterministic: the nonce is not random")
	}
	if plain, err := s.Open(sealed); err != nil || plain != "as_secret" {
		t.Fatalf("open %q %v", plain, err)
	}
	other, _ := New(make([]byte, 32))
	if _, err := other.Open(sealed); err == nil {
		t.Fatal("opened with the wrong key")
	}
	b := []byte(sealed)
	b[len(b)-2] ^= 1
	if _, err := s.Open(string(b)); err == nil {
		t.Fatal("opened a tampered value")
	}
	if _, err := New([]byte("short")); err == nil {
		t.Fatal("accepted a short key")
	}
}

func TestKeyFileIsCreatedPrivatelyOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "master.key")
	k1, created, err := LoadOrCreateKeyFile(path)
	if err != nil || !created {
		t.Fatal(err)
	}
	info, _ := os.Stat(path)
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", info.Mode().Perm())
	}
	k2, created, err := LoadOrCreateKeyFile(path)
	if err != nil || created || string(k1) != string(k2) {
		t.Fatal("the key changed on the second start")
	}
}
