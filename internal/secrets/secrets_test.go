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

func TestPreviousKeysOpenButNeverSeal(t *testing.T) {
	a, _ := New([]byte(strings.Repeat("a", 32)))
	b, _ := New([]byte(strings.Repeat("b", 32)))
	old, err := a.Seal("from A")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Open(old); err == nil {
		t.Fatal("B alone opened a value sealed by A")
	}
	ring := WithPrevious(b, a, b, nil)
	if ring.KeyID() != b.KeyID() || len(ring.PreviousKeyIDs()) != 1 || ring.PreviousKeyIDs()[0] != a.KeyID() {
		t.Fatalf("ring %s %v", ring.KeyID(), ring.PreviousKeyIDs())
	}
	if plain, err := ring.Open(old); err != nil || plain != "from A" {
		t.Fatalf("open old %q %v", plain, err)
	}
	fresh, _ := ring.Seal("from ring")
	if _, err := a.Open(fresh); err == nil {
		t.Fatal("the ring sealed with the previous key")
	}
	if plain, err := b.Open(fresh); err != nil || plain != "from ring" {
		t.Fatalf("the ring does not seal with the current key: %q %v", plain, err)
	}
	bad := []byte(old)
	bad[len(bad)-2] ^= 1
	if _, err := ring.Open(string(bad)); err == nil {
		t.Fatal("opened a tampered value")
	}
	if _, err := ring.Open("v9:x"); err == nil {
		t.Fatal("opened an unknown format")
	}
}

func TestKeyLists(t *testing.T) {
	ka, kb := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	keys, err := ParseKeyList(" " + ka + " , " + kb)
	if err != nil || len(keys) != 2 {
		t.Fatalf("%d %v", len(keys), err)
	}
	if keys, err := ParseKeyList(""); err != nil || keys != nil {
		t.Fatal("empty list")
	}
	for _, bad := range []string{ka + ",", ka + ",," + kb, "nope", ka + ",short"} {
		if _, err := ParseKeyList(bad); err == nil {
			t.Fatalf("accepted %q", bad)
		}
	}
	dir := t.TempDir()
	if keys, err := LoadKeyListFile(filepath.Join(dir, "missing")); err != nil || keys != nil {
		t.Fatal("missing file")
	}
	path := filepath.Join(dir, "master.key.previous")
	os.WriteFile(path, []byte("# retired 2024\n"+ka+"\n\n"+kb+"\n"), 0o600)
	if keys, err := LoadKeyListFile(path); err != nil || len(keys) != 2 {
		t.Fatalf("%d %v", len(keys), err)
	}
	os.WriteFile(path, []byte(ka+"\nnot a key\n"), 0o600)
	if _, err := LoadKeyListFile(path); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("bad line: %v", err)
	}
}

// AppendSeal appends what Seal makes to what the buffer held: Open opens
// it, whatever the value's length, and the bytes before it are kept.
func TestAppendSealOpensAsSealKeepingThePrefix(t *testing.T) {
	s, _ := New(make([]byte, 32))
	for n := range 100 {
		plain := strings.Repeat("x", n)
		out, err := s.AppendSeal([]byte("head\n"), []byte(plain))
		if err != nil {
			t.Fatal(err)
		}
		sealed, ok := strings.CutPrefix(string(out), "head\n")
		if !ok || len(sealed) != len(mustSeal(t, s, plain)) {
			t.Fatalf("length %d: %q, want head then a value as long as Seal's", n, out)
		}
		if got, err := s.Open(sealed); err != nil || got != plain {
			t.Fatalf("length %d: open %q %v", n, got, err)
		}
	}
}

func mustSeal(t *testing.T, s *Sealer, plain string) string {
	t.Helper()
	sealed, err := s.Seal(plain)
	if err != nil {
		t.Fatal(err)
	}
	return sealed
}
