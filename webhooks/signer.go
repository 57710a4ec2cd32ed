package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strconv"
	"sync"
)

// maxSigners bounds the secrets whose keyed HMACs the sender keeps; past
// it the set starts over (a rotated secret's entry is never used again).
const maxSigners = 4096

// signers keeps, per endpoint secret, HMAC-SHA256 states already keyed with
// it: Sign keys a fresh HMAC per call (two SHA-256 blocks of key schedule
// and six allocations), which every POST of a drain paid for the same
// secret. Reset returns a keyed HMAC to its keyed state, so a reused one
// signs exactly as a fresh one does.
type signers struct {
	mu sync.Mutex
	m  map[string]*sync.Pool
}

// pool is the pool of HMACs keyed with secret.
func (s *signers) pool(secret string) *sync.Pool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.m[secret]; ok {
		return p
	}
	if s.m == nil || len(s.m) >= maxSigners {
		s.m = map[string]*sync.Pool{}
	}
	key := []byte(secret)
	p := &sync.Pool{New: func() any { return hmac.New(sha256.New, key) }}
	s.m[secret] = p
	return p
}

// sign is Sign(secret, strconv.FormatInt(unix, 10), body): the timestamp
// header value and the signature of the body under secret.
func (s *signers) sign(secret string, unix int64, body []byte) (timestamp, signature string) {
	var tsBuf [20]byte
	ts := strconv.AppendInt(tsBuf[:0], unix, 10)
	p := s.pool(secret)
	m := p.Get().(hash.Hash)
	m.Reset()
	m.Write(ts)
	m.Write([]byte{'.'})
	m.Write(body)
	var sum [sha256.Size]byte
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], m.Sum(sum[:0]))
	p.Put(m)
	return string(ts), string(out[:])
}
