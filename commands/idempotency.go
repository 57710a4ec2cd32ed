package commands

import (
	"context"
	"errors"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Idempotency keys on the write side: a partner write that carries an
// Idempotency-Key runs at most once per (app, key). Each key is an
// aggregate, one stream per (app, key) (domain.IdempotencyStream), because
// the event store is the one durable store every node shares: a claim
// appended with an expected revision is unique cluster-wide on every
// adapter, survives restarts, and an auditor reads it like any other
// history. The HTTP middleware (internal/idempotency) is the adapter: it
// reads the key's header, waits, records the answer and replays it.
//
// A stream holds generations, each opened by idempotency.claimed and closed
// by idempotency.completed (the stored answer) or idempotency.released (the
// request ended with a 5xx or a concurrency conflict, so a retry may run it
// again). A generation is current for TTL after its claim; later, the key
// may be used anew. A claim that neither completed nor released within
// Lease (its node died mid-request) may be taken over.

// Defaults of the key rules, documented in the OpenAPI file.
const (
	// DefaultKeyTTL is how long a key's answer is replayed (and its body kept to itself).
	DefaultKeyTTL = 24 * time.Hour
	// DefaultKeyLease is how long an unfinished claim blocks the key; past it
	// the claim's node is presumed dead and a retry runs the request again.
	DefaultKeyLease = 2 * time.Minute
)

// KeyStatus is what a key's record means for a request arriving now.
type KeyStatus int

const (
	KeyFree       KeyStatus = iota // no live generation: the request may claim it
	KeyReplay                      // answered for this request: replay the answer
	KeyReused                      // held or answered for another request
	KeyInProgress                  // held by a live request with this fingerprint
)

// KeyRequest is the request a key is bound to (its fingerprint): the same
// key with another is IDEMPOTENCY_KEY_REUSED.
type KeyRequest struct {
	Method, Path, BodySHA256 string
}

// KeyRecord is the current generation of a key's stream, as read.
type KeyRecord struct {
	count     uint64 // events in the stream
	claim     *catalog.IdempotencyClaimed
	claimRev  uint64 // revision of claim
	completed *catalog.IdempotencyCompleted
	released  bool
	last      events.Position // of the stream's last event
}

func (r *KeyRecord) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.IdempotencyClaimed:
		r.claim, r.claimRev, r.completed, r.released = p, r.count, nil, false
	case *catalog.IdempotencyCompleted:
		r.completed = p
	case *catalog.IdempotencyReleased:
		r.released = true
	}
	r.count++
}

func (r *KeyRecord) clone() *KeyRecord {
	c := *r
	return &c
}

// Answer is the stored answer of a replayed key (KeyReplay) and the log
// position of its record, which lies after the original write.
func (r KeyRecord) Answer() (*catalog.IdempotencyCompleted, events.Position) {
	// A completed generation is current only while nothing follows its
	// completion (a later claim opens a new one): it is the last event.
	return r.completed, r.last
}

// IdempotencyKeys decides the keys' records.
type IdempotencyKeys struct {
	streams
	// TTL and Lease default to DefaultKeyTTL and DefaultKeyLease when zero.
	TTL, Lease time.Duration
}

// NewIdempotencyKeys builds the handler over the shared event store.
func NewIdempotencyKeys(store events.Store, reg *events.Registry, ttl, lease time.Duration) *IdempotencyKeys {
	return &IdempotencyKeys{streams: streams{store, reg}, TTL: ttl, Lease: lease}
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// decideKey says what the record means for req arriving at now.
func decideKey(rec *KeyRecord, req KeyRequest, now time.Time, ttl, lease time.Duration) KeyStatus {
	c := rec.claim
	if c == nil || rec.released || !now.Before(c.ClaimedAt.Add(ttl)) {
		return KeyFree
	}
	if rec.completed == nil && !now.Before(c.ClaimedAt.Add(lease)) {
		return KeyFree // the claiming node died before it answered
	}
	if c.Method != req.Method || c.Path != req.Path || c.BodySHA256 != req.BodySHA256 {
		return KeyReused
	}
	if rec.completed == nil {
		return KeyInProgress
	}
	return KeyReplay
}

// decideClaim claims a free key for req; any other status decides nothing.
func decideClaim(rec *KeyRecord, appID int64, req KeyRequest, now time.Time, ttl, lease time.Duration) (KeyStatus, []events.Payload) {
	if s := decideKey(rec, req, now, ttl, lease); s != KeyFree {
		return s, nil
	}
	return KeyFree, []events.Payload{catalog.IdempotencyClaimed{
		AppID: appID, Method: req.Method, Path: req.Path, BodySHA256: req.BodySHA256, ClaimedAt: now.UTC(),
	}}
}

// KeptForReplay reports whether an answer is kept for replay: everything but
// 5xx and concurrency conflicts, whose retry may well succeed.
func KeptForReplay(status int, code string) bool {
	return status < 500 && code != "CONCURRENT_MODIFICATION" && code != "IDEMPOTENCY_KEY_IN_PROGRESS"
}

// KeyAnswer is the answer a claimed request ended with; SealedBody is set
// only when KeptForReplay.
type KeyAnswer struct {
	Status      int
	Code        string // the error envelope's code ("" on success)
	ContentType string
	SealedBody  string
}

// errClaimLost says the claim a request held is no longer the key's current
// generation (taken over after Lease): its answer is not recorded.
var errClaimLost = errors.New("idempotency: the key's claim was taken over before the answer was recorded")

// decideFinish closes the generation claimed at claimRev with the answer,
// or releases it when the answer is not kept.
func decideFinish(rec *KeyRecord, appID int64, claimRev uint64, a KeyAnswer, now time.Time) ([]events.Payload, error) {
	if rec.claim == nil || rec.claimRev != claimRev || rec.completed != nil || rec.released {
		return nil, errClaimLost
	}
	if KeptForReplay(a.Status, a.Code) {
		return []events.Payload{catalog.IdempotencyCompleted{AppID: appID, Status: a.Status, ContentType: a.ContentType, SealedBody: a.SealedBody, CompletedAt: now.UTC()}}, nil
	}
	return []events.Payload{catalog.IdempotencyReleased{AppID: appID, Status: a.Status, Code: a.Code, ReleasedAt: now.UTC()}}, nil
}

// keyRecords is the source of key records: a key's stream is short, so it
// is read whole; the first decision of a command may be made on the record
// its caller just read or wrote (known, trusting) without reading it again:
// the append's expected revision still catches anyone who wrote since.
type keyRecords struct{ known *KeyRecord }

func (keyRecords) loadLent(ctx context.Context, s streams, stream string) (*KeyRecord, uint64, events.Position, uint64, error) {
	rec := &KeyRecord{}
	v, pos, err := s.load(ctx, stream, rec.apply)
	rec.last = pos
	return rec, v, pos, 0, err
}

func (keyRecords) release(string, uint64) {}

func (keyRecords) appendAfter(ctx context.Context, s streams, stream string, version, _ uint64, meta Meta, ps ...events.Payload) (events.AppendResult, error) {
	return s.append(ctx, stream, version, meta, ps...)
}

func (s keyRecords) loadCached(string) (*KeyRecord, uint64, events.Position, uint64, bool) {
	if s.known == nil {
		return nil, 0, events.Position{}, 0, false
	}
	return s.known.clone(), s.known.count, s.known.last, 0, true
}

// Look reads a key's record and what it means for req at now.
func (k *IdempotencyKeys) Look(ctx context.Context, appID int64, keyHash string, req KeyRequest, now time.Time) (KeyRecord, KeyStatus, error) {
	rec, _, _, _, err := keyRecords{}.loadLent(ctx, k.streams, domain.IdempotencyStream(appID, keyHash))
	if err != nil {
		return KeyRecord{}, KeyFree, err
	}
	return *rec, decideKey(rec, req, now, orDefault(k.TTL, DefaultKeyTTL), orDefault(k.Lease, DefaultKeyLease)), nil
}

// Claim claims the key for req if it is free, deciding on rec (as Look
// returned it) and again on the stream as read when another request wrote
// it first. It returns the record and its status: with KeyFree this call
// holds the key, and the record is the one its claim opened (Finish
// records its answer); otherwise the record is the one decided on.
func (k *IdempotencyKeys) Claim(ctx context.Context, rec KeyRecord, appID int64, keyHash string, req KeyRequest, now time.Time, meta Meta) (KeyRecord, KeyStatus, error) {
	var status KeyStatus
	var decided KeyRecord
	var claim []events.Payload
	pos, err := execute(ctx, k.streams, source[*KeyRecord](keyRecords{&rec}), domain.IdempotencyStream(appID, keyHash), &meta, func(st *KeyRecord) ([]events.Payload, error) {
		status, claim = decideClaim(st, appID, req, now, orDefault(k.TTL, DefaultKeyTTL), orDefault(k.Lease, DefaultKeyLease))
		decided = *st
		return claim, nil
	})
	if err != nil {
		return KeyRecord{}, KeyFree, err
	}
	if claim != nil {
		decided.apply(events.Envelope{Payload: asDecoded(claim[0])})
		decided.last = pos
	}
	return decided, status, nil
}

// Finish records the answer of the request that claimed the key (claimed is
// the record Claim returned with KeyFree) right after its claim: completed,
// or released when the answer is not kept for replay. A claim taken over
// since is not finished (an error).
func (k *IdempotencyKeys) Finish(ctx context.Context, claimed KeyRecord, appID int64, keyHash string, a KeyAnswer, now time.Time, meta Meta) error {
	_, err := executeOnce(ctx, k.streams, source[*KeyRecord](keyRecords{&claimed}), domain.IdempotencyStream(appID, keyHash), &meta, errClaimLost, func(st *KeyRecord) ([]events.Payload, error) {
		return decideFinish(st, appID, claimed.claimRev, a, now)
	})
	return wrapAppend(err, "idempotency: record the answer")
}
