package commands

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// PasswordParams are argon2id's costs. DefaultPasswordParams follows RFC
// 9106's second recommended option (t=3, 64 MiB) with two lanes for a
// two-core node; the costs are stored in each hash (PHC string), so raising
// them later still verifies old hashes.
type PasswordParams struct {
	Time    uint32 // passes over the memory
	Memory  uint32 // KiB
	Threads uint8
	// Concurrent bounds how many hashes this process computes at once
	// (default 2), so a burst of sign-ins cannot take Concurrent×Memory
	// beyond what the node planned for.
	Concurrent int
}

// DefaultPasswordParams are the production costs (see PasswordParams).
var DefaultPasswordParams = PasswordParams{Time: 3, Memory: 64 * 1024, Threads: 2, Concurrent: 2}

// hasher computes argon2id hashes under a concurrency bound.
type hasher struct {
	p   PasswordParams
	sem chan struct{}
}

func newHasher(p PasswordParams) *hasher {
	if p.Time == 0 || p.Memory == 0 || p.Threads == 0 {
		p = DefaultPasswordParams
	}
	if p.Concurrent <= 0 {
		p.Concurrent = 2
	}
	return &hasher{p: p, sem: make(chan struct{}, p.Concurrent)}
}

func (h *hasher) acquire(ctx context.Context) error {
	select {
	case h.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *hasher) release() { <-h.sem }

// hash returns the PHC string $argon2id$v=19$m=..,t=..,p=..$salt$key.
func (h *hasher) hash(ctx context.Context, password string) (string, error) {
	if err := h.acquire(ctx); err != nil {
		return "", err
	}
	defer h.release()
	salt := make([]byte, 16)
	_, _ = rand.Read(salt)
	key := argon2.IDKey([]byte(password), salt, h.p.Time, h.p.Memory, h.p.Threads, 32)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, h.p.Memory, h.p.Time, h.p.Threads,
		b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

var errBadHash = errors.New("commands: malformed password hash")

// verify compares password with a PHC string in constant time, with the
// costs the string names.
func (h *hasher) verify(ctx context.Context, phc, password string) (bool, error) {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var version int
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || t == 0 || p == 0 || m == 0 {
		return false, errBadHash
	}
	b64 := base64.RawStdEncoding
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false, errBadHash
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false, errBadHash
	}
	if err := h.acquire(ctx); err != nil {
		return false, err
	}
	defer h.release()
	got := argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}
