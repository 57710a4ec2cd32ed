package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// A partner's channel_user_id is often an e-mail address or a phone number,
// so it must not name a stream: stream names are never encrypted and outlive
// an erasure. The binding stream of (app_id, channel_user_id) is named after
// a keyed hash of the pair instead (Pseudonyms), and the clear value lives
// only in sealed event fields.

// Binding stream name prefixes: the hashed names written now, and the clear
// names a log written before keeps (read, never written).
const (
	bindingPrefix       = "channeluserhmac-"
	legacyBindingPrefix = "channeluser-"
)

// PseudonymKeySize is the length of a Pseudonyms key.
const PseudonymKeySize = 32

// Pseudonyms makes the keyed hashes that name channel users in stream names
// (and in keys derived from them): HMAC-SHA-256 under a platform key that
// every node shares and that no restart or master-key rotation changes (the
// node keeps it in the key store, see datakeys.Keys.PlatformSecret). The hash is
// deterministic, so one (app_id, channel_user_id) always names one stream,
// which is what makes the binding a uniqueness lock; without the key it
// cannot be recomputed from a guessed address.
type Pseudonyms struct {
	key []byte
	// macs keeps keyed HMACs (*keyedMAC) for reuse: Reset returns one to
	// its keyed state without hashing the key again, and a register
	// computes a pseudonym on every request.
	macs sync.Pool
}

// keyedMAC is a pooled HMAC with the buffers its input and sum are made
// in: written through hash.Hash, a buffer of the caller's would escape to
// the heap on every call.
type keyedMAC struct {
	mac hash.Hash
	in  []byte
	sum [sha256.Size]byte
}

// NewPseudonyms builds the hasher over a PseudonymKeySize-byte key.
func NewPseudonyms(key []byte) (*Pseudonyms, error) {
	if len(key) != PseudonymKeySize {
		return nil, fmt.Errorf("domain: pseudonym key must be %d bytes, got %d", PseudonymKeySize, len(key))
	}
	p := &Pseudonyms{key: append([]byte(nil), key...)}
	p.macs.New = func() any { return &keyedMAC{mac: hmac.New(sha256.New, p.key)} }
	return p, nil
}

// appendChannelUser appends the pseudonym of (appID, channelUserID) to
// dst: the lower-case hex HMAC-SHA-256 of "channel_user", the app id and
// the id, NUL-separated (the app id is inside the MAC, so one address has
// unrelated pseudonyms in two apps).
func (p *Pseudonyms) appendChannelUser(dst []byte, appID int64, channelUserID string) []byte {
	m := p.macs.Get().(*keyedMAC)
	defer p.macs.Put(m)
	m.mac.Reset()
	in := append(m.in[:0], "channel_user\x00"...)
	in = strconv.AppendInt(in, appID, 10)
	in = append(append(in, 0), channelUserID...)
	m.mac.Write(in)
	if cap(in) <= 1<<10 {
		m.in = in // kept for the next pseudonym; an unusually long id is not
	}
	return hex.AppendEncode(dst, m.mac.Sum(m.sum[:0]))
}

// BindingStream names the uniqueness claim of (appID, channelUserID): the
// app id in clear (operators page by app) and the pseudonym.
func (p *Pseudonyms) BindingStream(appID int64, channelUserID string) string {
	var b [len(bindingPrefix) + 20 + 1 + 2*sha256.Size]byte
	n := strconv.AppendInt(append(b[:0], bindingPrefix...), appID, 10)
	return string(p.appendChannelUser(append(n, '-'), appID, channelUserID))
}

// Stream is the name a reader may show for stream: a binding stream of a
// log written before hashed names (LegacyBindingStream) becomes the name
// the same channel user's binding has now; every other name is returned as
// it is. Admin reads and the internal Kafka keys use it, so no clear
// channel_user_id leaves the store through a stream name.
func (p *Pseudonyms) Stream(stream string) string {
	appID, id, ok := ParseLegacyBindingStream(stream)
	if !ok {
		return stream
	}
	return p.BindingStream(appID, id)
}

// LegacyBindingStream is the binding stream name that releases before
// hashed names wrote ("channeluser-<app_id>-<path-escaped channel_user_id>").
// Register still reads it, so a user bound there keeps their open_user_id;
// nothing writes it except the unbinding of such a user at erasure.
func LegacyBindingStream(appID int64, channelUserID string) string {
	return legacyBindingPrefix + strconv.FormatInt(appID, 10) + "-" + url.PathEscape(channelUserID)
}

// ParseLegacyBindingStream splits a LegacyBindingStream name.
func ParseLegacyBindingStream(stream string) (appID int64, channelUserID string, ok bool) {
	rest, found := strings.CutPrefix(stream, legacyBindingPrefix)
	if !found {
		return 0, "", false
	}
	app, escaped, found := strings.Cut(rest, "-")
	if !found || app == "" {
		return 0, "", false
	}
	appID, err := strconv.ParseInt(app, 10, 64)
	if err != nil || strconv.FormatInt(appID, 10) != app {
		return 0, "", false
	}
	id, err := url.PathUnescape(escaped)
	if err != nil || id == "" {
		return 0, "", false
	}
	return appID, id, true
}
