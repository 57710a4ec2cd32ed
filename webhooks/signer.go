package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strconv"
	"sync"
)

// maxSigners bounds the secrets whose keyed HMACs the sender keeps (about
// 700 bytes each); past it the set starts over (a rotated secret's entry is
// never used again). It is above the endpoints a node serves, since a node
// signing for more endpoints than it keeps keys a fresh HMAC for nearly
// every POST.
const maxSigners = 1 << 16

// signers keeps, per endpoint secret, an HMAC-SHA256 keyed with it and a
// pool of its copies: keying a fresh HMAC costs two SHA-256 blocks and
// six allocations, which every POST would pay. The pool serves the POSTs
// of a drain to one endpoint; a garbage collection empties it, so the
// POST after one (for most endpoints, with many apps, every POST) copies
// the kept keyed HMAC instead of keying one again. Reset returns a keyed
// HMAC to its keyed state, so a reused one signs exactly as a fresh one.
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
	keyed := hmac.New(sha256.New, []byte(secret))
	keyed.Reset() // keeps the keyed state, so copies need no key schedule
	p := &sync.Pool{New: func() any { return &keyedHMAC{h: clone(keyed)} }}
	s.m[secret] = p
	return p
}

// clone copies the keyed HMAC h, which is only ever copied.
func clone(h hash.Hash) hash.Hash {
	c, err := h.(hash.Cloner).Clone()
	if err != nil {
		panic("webhooks: an HMAC-SHA256 that cannot be copied: " + err.Error())
	}
	return c.(hash.Hash)
}

// keyedHMAC is a pooled HMAC keyed with a secret and the buffers a
// signature is made in, kept here because on the stack they escape through
// the hash's interface (three allocations per POST).
type keyedHMAC struct {
	h   hash.Hash
	sum [sha256.Size]byte
	// out holds the timestamp, then the signature in hex.
	out [20 + 2*sha256.Size]byte
}

// dot separates the timestamp from the body in what is signed.
var dot = []byte{'.'}

// sign is Sign(secret, strconv.FormatInt(unix, 10), body): the timestamp
// header value and the signature of the body under secret, both cut from
// one string.
func (s *signers) sign(secret string, unix int64, body []byte) (timestamp, signature string) {
	p := s.pool(secret)
	k := p.Get().(*keyedHMAC)
	ts := strconv.AppendInt(k.out[:0], unix, 10)
	k.h.Reset()
	k.h.Write(ts)
	k.h.Write(dot)
	k.h.Write(body)
	both := string(hex.AppendEncode(ts, k.h.Sum(k.sum[:0])))
	p.Put(k)
	return both[:len(ts)], both[len(ts):]
}
