// Package datakeys keeps one data key per person (a "subject"), sealed by the
// master key, outside the event log, so that destroying a subject's key makes
// every personal field encrypted with it unreadable forever (crypto-shredding,
// ARCHITECTURE.md invariant 10) while the log itself stays append-only.
//
// Subjects are platform ids, never personal data: "user-<open_user_id>" for a
// channel user and everything of theirs (profile, family groups, members,
// reports, plugin data bound to them), and, for personal data that belongs to
// no channel user, the aggregate that holds it ("order-<id>" for an order's
// receiver, "card-<id>" for a benefit card's holder, and so on; see package
// privacy for the full list).
//
// Adapters of the Backend port: keys/files (an append-only key log in the
// data directory) and keys/postgres (a table); both pass keys/keystest.
package datakeys

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// ErrNotFound says a subject or key id has no data key (never had one, or it
// was destroyed): data sealed with it can no longer be read.
var ErrNotFound = errors.New("keys: no such data key")

// ErrDestroyed says a subject's key was destroyed; the subject never gets a
// new key, so nothing written after an erasure is readable with an old one
// and nothing personal is sealed again under the erased person.
var ErrDestroyed = errors.New("keys: the subject's data key was destroyed")

// ErrInvalidSubject refuses a subject name that is not a short platform id
// ([A-Za-z0-9_.-], at most 128 characters, not starting with a dot), so that
// names are safe as file names and never carry personal data by accident.
var ErrInvalidSubject = errors.New("keys: invalid subject")

// SubjectOf returns the subject a key id belongs to.
func SubjectOf(keyID string) (string, bool) {
	i := strings.LastIndexByte(keyID, '~')
	if i <= 0 {
		return "", false
	}
	return keyID[:i], true
}

// ValidSubject reports whether s may name a subject (see
// ErrInvalidSubject), checked by hand because a start checks every subject of the
// key log (one per person) and the regexp was a fifth of that.
func ValidSubject(s string) bool {
	if len(s) == 0 || len(s) > 128 || s[0] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// Record is a data key as a backend stores it: sealed by the master key
// named MasterKeyID, never in clear. A key id is "<subject>~<16 hex>": it
// names its subject (a platform id, not personal data), so a backend finds
// a key by id with the subject's lookup.
type Record struct {
	Subject     string
	KeyID       string
	MasterKeyID string
	Sealed      string
	Created     time.Time
}

// Backend is the storage port of the key store; Keys does the sealing and
// caching above it, so adapters only store records.
type Backend interface {
	// Insert stores rec unless its subject already has a key; either way it
	// returns the subject's record, so concurrent first uses agree on one
	// key. A destroyed subject gives ErrDestroyed.
	Insert(ctx context.Context, rec Record) (Record, error)
	// InsertBatch is Insert for many subjects at once (keys made ahead of
	// use), durable with one write; the result has one record per input in
	// order, left zero for a destroyed subject.
	InsertBatch(ctx context.Context, recs []Record) ([]Record, error)
	// Get returns a subject's record, ErrNotFound or ErrDestroyed.
	Get(ctx context.Context, subject string) (Record, error)
	// GetByKeyID returns the record of a key id, or ErrNotFound (also once destroyed).
	GetByKeyID(ctx context.Context, keyID string) (Record, error)
	// Destroy deletes the subject's key for good and remembers that the
	// subject was destroyed; destroying twice, or a subject without a key, is fine.
	Destroy(ctx context.Context, subject string) error
	// Update replaces the sealed form of rec.KeyID if it is still sealed
	// under fromMaster (a re-seal racing another one changes nothing twice).
	Update(ctx context.Context, fromMaster string, rec Record) error
	// List calls fn for every live record.
	List(ctx context.Context, fn func(Record) error) error
	// Close releases the backend.
	Close() error
}

// Key is an opened data key, ready to encrypt with AES-256-GCM.
type Key struct {
	ID      string
	Subject string
	AEAD    cipher.AEAD
}

// Keys is the key store the rest of the platform uses: it creates a
// subject's key on first use, seals it with the current master key, opens
// keys sealed by any master key of its keyring, and caches opened keys.
//
// The cache is per process: on several nodes, a key destroyed on one node is
// still cached on the others until they see the erasure (Forget, called by
// each node's erasure follower) or CacheTTL passes.
type Keys struct {
	backend Backend
	current *secrets.Sealer
	older   map[string]*secrets.Sealer
	now     func() time.Time

	mu        sync.Mutex
	epoch     uint64 // bumped by Forget: a key read from the backend before it is not cached
	byID      map[string]cached
	bySubject map[string]cached
}

type cached struct {
	key Key
	at  time.Time
}

// CacheTTL bounds how long an opened key is used without asking the backend
// again, so an erasure on another node takes effect here too.
const CacheTTL = time.Minute

// New builds the key store over backend, sealing new keys with current and
// opening keys sealed by current or any of older (kept during a rotation).
func New(backend Backend, current *secrets.Sealer, older ...*secrets.Sealer) *Keys {
	k := &Keys{backend: backend, current: current, older: map[string]*secrets.Sealer{}, now: time.Now,
		byID: map[string]cached{}, bySubject: map[string]cached{}}
	for _, s := range older {
		k.older[s.KeyID()] = s
	}
	k.older[current.KeyID()] = current
	return k
}

// SetClock makes the key cache measure CacheTTL with now (the node's
// injectable clock), so a test can let another node's destroyed key expire
// here without waiting a minute. Call it before the first use.
func (k *Keys) SetClock(now func() time.Time) { k.now = now }

// Backend returns the storage port (tests and tools).
func (k *Keys) Backend() Backend { return k.backend }

// MasterKeyID is the id of the master key new data keys are sealed with.
func (k *Keys) MasterKeyID() string { return k.current.KeyID() }

// DataKey returns the subject's data key, creating it on first use.
func (k *Keys) DataKey(ctx context.Context, subject string) (Key, error) {
	if !ValidSubject(subject) {
		return Key{}, fmt.Errorf("%w: %q", ErrInvalidSubject, subject)
	}
	if key, ok := k.cachedSubject(subject); ok {
		return key, nil
	}
	epoch := k.currentEpoch()
	rec, err := k.backend.Get(ctx, subject)
	if errors.Is(err, ErrNotFound) {
		rec, err = k.create(ctx, subject)
	}
	if err != nil {
		return Key{}, err
	}
	return k.open(rec, epoch)
}

// Warm creates the subject's key if it has none yet, ahead of its first use.
func (k *Keys) Warm(ctx context.Context, subject string) error {
	_, err := k.DataKey(ctx, subject)
	return err
}

// Cached reports whether subject's key is in this process's cache, so its
// next use waits for no key store.
func (k *Keys) Cached(subject string) bool {
	_, ok := k.cachedSubject(subject)
	return ok
}

// Prepare creates the keys of subjects that have none yet, in one batch
// (one fsync, or one statement), and caches them, so that their first uses
// (registers of a freshly reserved block of user ids) wait for no key store
// write. Destroyed subjects are skipped.
func (k *Keys) Prepare(ctx context.Context, subjects []string) error {
	recs := make([]Record, 0, len(subjects))
	raws := make([][]byte, 0, len(subjects))
	for _, s := range subjects {
		if !ValidSubject(s) {
			return fmt.Errorf("%w: %q", ErrInvalidSubject, s)
		}
		if _, ok := k.cachedSubject(s); ok {
			continue
		}
		rec, raw, err := k.newRecord(s)
		if err != nil {
			return err
		}
		recs, raws = append(recs, rec), append(raws, raw)
	}
	if len(recs) == 0 {
		return nil
	}
	epoch := k.currentEpoch()
	stored, err := k.backend.InsertBatch(ctx, recs)
	if err != nil {
		return err
	}
	for i, rec := range stored {
		switch {
		case rec.KeyID == "":
			continue
		case i < len(recs) && rec.KeyID == recs[i].KeyID:
			// The key this call made was stored: it is already in
			// hand, and needs no unsealing with the master key.
			if _, err := k.cache(rec, raws[i], epoch); err != nil {
				return err
			}
		default:
			if _, err := k.open(rec, epoch); err != nil {
				return err
			}
		}
	}
	return nil
}

// Forget drops the subject's keys from this process's cache, so the next
// use asks the backend (which says ErrDestroyed or ErrNotFound once the key
// was destroyed, on any node).
func (k *Keys) Forget(subject string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.epoch++
	delete(k.bySubject, subject)
	for id, c := range k.byID {
		if c.key.Subject == subject {
			delete(k.byID, id)
		}
	}
}

// DropExpired removes the keys opened more than CacheTTL ago from this
// process's cache and says how many it removed. An expired key is asked
// from the backend again at its next use anyway, but it stayed in memory:
// a rebuild opens every person's key once, and each held an AES-GCM
// cipher (about 1.2 KB) for the life of the process.
func (k *Keys) DropExpired() int {
	now := k.now()
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for id, c := range k.byID {
		if now.Sub(c.at) >= CacheTTL {
			delete(k.byID, id)
			n++
		}
	}
	for subject, c := range k.bySubject {
		if now.Sub(c.at) >= CacheTTL {
			delete(k.bySubject, subject)
		}
	}
	return n
}

// Lookup returns a subject's existing key without creating one.
func (k *Keys) Lookup(ctx context.Context, subject string) (Key, error) {
	if key, ok := k.cachedSubject(subject); ok {
		return key, nil
	}
	epoch := k.currentEpoch()
	rec, err := k.backend.Get(ctx, subject)
	if err != nil {
		return Key{}, err
	}
	return k.open(rec, epoch)
}

// ByID returns the key named in an envelope, or ErrNotFound once destroyed.
func (k *Keys) ByID(ctx context.Context, keyID string) (Key, error) {
	if key, ok := k.cachedID(keyID); ok {
		return key, nil
	}
	return k.loadByID(ctx, keyID)
}

// ByIDBytes is ByID for a key id still in the envelope's bytes: a cached
// key is found without making the id a string (a replay opens every sealed
// event of the log, nearly all with a key already cached).
func (k *Keys) ByIDBytes(ctx context.Context, keyID []byte) (Key, error) {
	k.mu.Lock()
	c, ok := k.byID[string(keyID)] // the compiler looks up without a copy
	k.mu.Unlock()
	if ok && k.now().Sub(c.at) < CacheTTL {
		return c.key, nil
	}
	return k.loadByID(ctx, string(keyID))
}

// BatchGetter is a Backend that reads the records of many key ids in one
// round trip (the Postgres one): Prefetch uses it.
type BatchGetter interface {
	// GetByKeyIDs returns the records of those of keyIDs that exist, in
	// any order.
	GetByKeyIDs(ctx context.Context, keyIDs []string) ([]Record, error)
}

// CanPrefetch says whether Prefetch reads anything: the backend reads many
// keys at once. A backend held in memory (the embedded key log) answers
// each lookup without a round trip, and its callers skip collecting ids.
func (k *Keys) CanPrefetch() bool {
	_, ok := k.backend.(BatchGetter)
	return ok
}

// CachedID says whether keyID's key is cached and fresh (ByIDBytes would
// not read the backend).
func (k *Keys) CachedID(keyID []byte) bool {
	k.mu.Lock()
	c, ok := k.byID[string(keyID)]
	k.mu.Unlock()
	return ok && k.now().Sub(c.at) < CacheTTL
}

// Prefetch caches the keys of keyIDs that are not cached, with one read of
// the backend, so that the lookups that follow (a replay opening a page of
// events of people it meets for the first time) do not read it one key at
// a time. Keys it cannot read or open are left to those lookups, which
// report them; a backend without GetByKeyIDs reads nothing.
func (k *Keys) Prefetch(ctx context.Context, keyIDs [][]byte) {
	bg, ok := k.backend.(BatchGetter)
	if !ok {
		return
	}
	var missing []string
	seen := make(map[string]bool, len(keyIDs))
	for _, id := range keyIDs {
		if seen[string(id)] || k.CachedID(id) {
			continue
		}
		seen[string(id)] = true
		missing = append(missing, string(id))
	}
	if len(missing) == 0 {
		return
	}
	epoch := k.currentEpoch()
	recs, err := bg.GetByKeyIDs(ctx, missing)
	if err != nil {
		return
	}
	for _, rec := range recs {
		_, _ = k.open(rec, epoch)
	}
}

// cachedID is keyID's cached key while it is fresh.
func (k *Keys) cachedID(keyID string) (Key, bool) {
	k.mu.Lock()
	c, ok := k.byID[keyID]
	k.mu.Unlock()
	if ok && k.now().Sub(c.at) < CacheTTL {
		return c.key, true
	}
	return Key{}, false
}

// loadByID reads keyID's record from the backend and opens it.
func (k *Keys) loadByID(ctx context.Context, keyID string) (Key, error) {
	epoch := k.currentEpoch()
	rec, err := k.backend.GetByKeyID(ctx, keyID)
	if err != nil {
		return Key{}, err
	}
	return k.open(rec, epoch)
}

// Destroy deletes the subject's key for good (erasure).
func (k *Keys) Destroy(ctx context.Context, subject string) error {
	if !ValidSubject(subject) {
		return fmt.Errorf("%w: %q", ErrInvalidSubject, subject)
	}
	if err := k.backend.Destroy(ctx, subject); err != nil {
		return err
	}
	k.Forget(subject)
	return nil
}

// Reseal re-seals with the current master key every data key sealed by an
// older one (master-key rotation); the keys themselves, and so the events,
// do not change. It returns how many keys it re-sealed.
func (k *Keys) Reseal(ctx context.Context) (int, error) {
	var stale []Record
	err := k.backend.List(ctx, func(r Record) error {
		if r.MasterKeyID != k.current.KeyID() {
			stale = append(stale, r)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range stale {
		raw, err := k.unseal(r)
		if err != nil {
			return n, err
		}
		sealed, err := k.current.Seal(base64.StdEncoding.EncodeToString(raw))
		if err != nil {
			return n, err
		}
		from := r.MasterKeyID
		r.MasterKeyID, r.Sealed = k.current.KeyID(), sealed
		if err := k.backend.Update(ctx, from, r); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func (k *Keys) cachedSubject(subject string) (Key, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	c, ok := k.bySubject[subject]
	if !ok || k.now().Sub(c.at) >= CacheTTL {
		return Key{}, false
	}
	return c.key, true
}

func (k *Keys) create(ctx context.Context, subject string) (Record, error) {
	rec, _, err := k.newRecord(subject)
	if err != nil {
		return Record{}, err
	}
	return k.backend.Insert(ctx, rec)
}

// newRecord makes a fresh data key for subject, sealed by the current
// master key, and returns its raw bytes with the record.
func (k *Keys) newRecord(subject string) (Record, []byte, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return Record{}, nil, err
	}
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		return Record{}, nil, err
	}
	sealed, err := k.current.Seal(base64.StdEncoding.EncodeToString(raw))
	if err != nil {
		return Record{}, nil, err
	}
	return Record{Subject: subject, KeyID: subject + "~" + hex.EncodeToString(id),
		MasterKeyID: k.current.KeyID(), Sealed: sealed, Created: k.now().UTC()}, raw, nil
}

func (k *Keys) unseal(rec Record) ([]byte, error) {
	s, ok := k.older[rec.MasterKeyID]
	if !ok {
		return nil, fmt.Errorf("keys: data key %s is sealed by master key %s, which this node does not have", rec.KeyID, rec.MasterKeyID)
	}
	b64, err := s.Open(rec.Sealed)
	if err != nil {
		return nil, fmt.Errorf("keys: open data key %s: %w", rec.KeyID, err)
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != 32 {
		return nil, fmt.Errorf("keys: data key %s is malformed", rec.KeyID)
	}
	return raw, nil
}

// PlatformSecret returns the 32 random bytes of a platform secret kept in
// the key store under subject (a name outside the person and aggregate
// subjects, e.g. "platform.pseudonyms"), creating them on first use. The
// key store is what every node shares and keeps across restarts; the
// secret is sealed by the master key like every data key, and a master-key
// rotation (Reseal) re-seals it without changing it, so whatever is derived
// from it (stream names) stays stable. Concurrent first uses on any nodes
// agree on one secret (Backend.Insert keeps the first record). The caller
// derives its keys from the secret rather than using it directly.
func (k *Keys) PlatformSecret(ctx context.Context, subject string) ([]byte, error) {
	if !ValidSubject(subject) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidSubject, subject)
	}
	rec, err := k.backend.Get(ctx, subject)
	if errors.Is(err, ErrNotFound) {
		rec, err = k.create(ctx, subject)
	}
	if err != nil {
		return nil, fmt.Errorf("keys: platform secret %s: %w", subject, err)
	}
	return k.unseal(rec)
}

// Epoch counts the Forgets (and so the Destroys) this process has seen:
// whoever keeps data decrypted with these keys (package privacy's cache of
// opened events) drops it when the epoch moves, so an erasure reaches it
// as soon as it reaches the key cache.
func (k *Keys) Epoch() uint64 { return k.currentEpoch() }

func (k *Keys) currentEpoch() uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.epoch
}

// open opens rec and caches it unless a Forget happened since epoch (the
// record may be of a key destroyed meanwhile).
func (k *Keys) open(rec Record, epoch uint64) (Key, error) {
	raw, err := k.unseal(rec)
	if err != nil {
		return Key{}, err
	}
	return k.cache(rec, raw, epoch)
}

// cache makes rec's cipher from its raw key and keeps it while the cache's
// epoch is still epoch.
func (k *Keys) cache(rec Record, raw []byte, epoch uint64) (Key, error) {
	block, err := aes.NewCipher(raw)
	if err != nil {
		return Key{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return Key{}, err
	}
	key := Key{ID: rec.KeyID, Subject: rec.Subject, AEAD: aead}
	c := cached{key: key, at: k.now()}
	k.mu.Lock()
	if k.epoch == epoch {
		k.byID[key.ID] = c
		k.bySubject[key.Subject] = c
	}
	k.mu.Unlock()
	return key, nil
}
