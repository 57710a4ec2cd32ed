// Package secrets seals app and webhook secrets with a master key so that the
// event log, which is kept forever and read by auditors, never holds them in clear.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Sealer encrypts with AES-256-GCM; a sealed value is "v1:" + base64(nonce || ciphertext).
type Sealer struct {
	aead cipher.AEAD
	id   string
	// previous are older master keys kept for opening only (rotation).
	previous []*Sealer
}

// New builds a sealer from a 32-byte master key.
func New(key []byte) (*Sealer, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("secrets: master key must be 32 bytes, got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	return &Sealer{aead: aead, id: KeyID(key)}, nil
}

// KeyID names a master key without revealing it (the first 8 bytes of a
// SHA-256 over a fixed label and the key, in hex), so the key store can say
// which master key sealed each data key and a rotation can find the rest.
func KeyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("platform master key id\x00"), key...))
	return "mk-" + hex.EncodeToString(sum[:8])
}

// KeyID is the id of the master key this sealer seals with.
func (s *Sealer) KeyID() string { return s.id }

// WithPrevious returns a sealer that seals with s's key and opens values
// sealed by s's key or by any of previous (older master keys kept after a
// rotation: the secrets sealed in events are never re-sealed, since events
// are immutable). A sealed value names no key, so Open tries the current
// key first, then each previous one; AES-GCM authentication makes a wrong
// key fail rather than open garbage.
func WithPrevious(s *Sealer, previous ...*Sealer) *Sealer {
	out := &Sealer{aead: s.aead, id: s.id}
	seen := map[string]bool{s.id: true}
	for _, p := range previous {
		if p == nil || seen[p.id] {
			continue
		}
		seen[p.id] = true
		out.previous = append(out.previous, &Sealer{aead: p.aead, id: p.id})
	}
	return out
}

// PreviousKeyIDs are the ids of the older keys s opens with, oldest last.
func (s *Sealer) PreviousKeyIDs() []string {
	ids := make([]string, len(s.previous))
	for i, p := range s.previous {
		ids[i] = p.id
	}
	return ids
}

// Previous returns sealers of the older keys s opens with (each without
// previous keys of its own).
func (s *Sealer) Previous() []*Sealer { return append([]*Sealer(nil), s.previous...) }

// ParseKey accepts a master key as 64 hex characters or standard base64 of 32 bytes.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == 32 {
		return b, nil
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && len(b) == 32 {
		return b, nil
	}
	return nil, errors.New("secrets: master key must be 32 bytes as 64 hex characters or base64")
}

// LoadOrCreateKeyFile reads the master key file, creating it with mode 0600
// on first start of an embedded platform.
func LoadOrCreateKeyFile(path string) ([]byte, bool, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		key, err := ParseKey(string(b))
		return key, false, err
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, false, fmt.Errorf("secrets: read %s: %w", path, err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, false, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("secrets: create %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.WriteString(hex.EncodeToString(key) + "\n"); err != nil {
		return nil, false, err
	}
	return key, true, f.Sync()
}

// Seal encrypts a secret for storage in an event.
func (s *Sealer) Seal(plain string) (string, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	out := s.aead.Seal(nonce, nonce, []byte(plain), nil)
	return "v1:" + base64.StdEncoding.EncodeToString(out), nil
}

// AppendSeal appends plain sealed as Seal seals it ("v1:" and the base64
// of nonce || ciphertext) to dst, growing it once: the nonce and ciphertext
// are written past the room their base64 takes and encoded back into it,
// so a record that holds a sealed value is built in one buffer.
func (s *Sealer) AppendSeal(dst, plain []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	sealedLen := n + len(plain) + s.aead.Overhead()
	encLen := base64.StdEncoding.EncodedLen(sealedLen)
	dst = append(slices.Grow(dst, 3+encLen+sealedLen), "v1:"...)
	at := len(dst)
	nonce := dst[at+encLen : at+encLen+n]
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	base64.StdEncoding.Encode(dst[at:at+encLen], s.aead.Seal(nonce, nonce, plain, nil))
	return dst[:at+encLen], nil
}

// Open decrypts a sealed secret; a wrong master key is an error, never garbage.
func (s *Sealer) Open(sealed string) (string, error) {
	plain, err := s.open(sealed)
	if err == nil || len(s.previous) == 0 || !errors.Is(err, errWrongKey) {
		return plain, err
	}
	for _, p := range s.previous {
		if plain, perr := p.open(sealed); perr == nil {
			return plain, nil
		}
	}
	return "", errors.New("secrets: cannot open sealed value with the current or any previous master key (wrong master key?)")
}

var errWrongKey = errors.New("secrets: cannot open sealed value (wrong master key?)")

func (s *Sealer) open(sealed string) (string, error) {
	raw, ok := strings.CutPrefix(sealed, "v1:")
	if !ok {
		return "", errors.New("secrets: unknown sealed format")
	}
	b, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(b) < s.aead.NonceSize() {
		return "", errors.New("secrets: malformed sealed value")
	}
	n := s.aead.NonceSize()
	plain, err := s.aead.Open(nil, b[:n], b[n:], nil)
	if err != nil {
		return "", errWrongKey
	}
	return string(plain), nil
}

// Random returns a URL-safe random token with a readable prefix, for keys and secrets.
func Random(prefix string, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("secrets: crypto/rand failed: %v", err))
	}
	return prefix + hex.EncodeToString(b)
}

// ParseKeyList reads comma-separated keys (PLATFORM_MASTER_KEY_PREVIOUS);
// empty is no keys, an empty item or a malformed key is refused.
func ParseKeyList(s string) ([][]byte, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out [][]byte
	for i, part := range strings.Split(s, ",") {
		key, err := ParseKey(part)
		if err != nil {
			return nil, fmt.Errorf("key %d: %w", i+1, err)
		}
		out = append(out, key)
	}
	return out, nil
}

// LoadKeyListFile reads previous master keys from path, one per line (blank
// lines and lines starting with # are skipped); a missing file is no keys.
func LoadKeyListFile(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("secrets: read %s: %w", path, err)
	}
	var out [][]byte
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, err := ParseKey(line)
		if err != nil {
			return nil, fmt.Errorf("secrets: %s line %d: %w", path, i+1, err)
		}
		out = append(out, key)
	}
	return out, nil
}
