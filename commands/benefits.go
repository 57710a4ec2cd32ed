package commands

import (
	"context"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// Provider types and states.
const (
	ProviderHealthStation  = "HEALTH_STATION"
	ProviderService        = "SERVICE_PROVIDER"
	ProviderChannelPartner = "CHANNEL_PARTNER"
	ProviderPending        = "PENDING_REVIEW"
	ProviderApproved       = "APPROVED"
	ProviderRejected       = "REJECTED"
	ItemActive             = "ACTIVE"
	ItemSuspended          = "SUSPENDED"
)

// ProviderDirectory lists an app's providers; the read model answers it,
// and each candidate's state is then loaded from its own stream.
type ProviderDirectory interface {
	ProviderIDs(ctx context.Context, appID int64) ([]int64, error)
	FulfillmentIssuer(ctx context.Context, recordID int64) (int64, bool, error)
}

// Benefits handles benefit items, providers, cards and verification.
type Benefits struct {
	streams
	ids       *Allocator
	now       func() time.Time
	cooldown  time.Duration
	providers ProviderDirectory
	batches   keyedMutex // card batches being issued, by stream

	// Verifications wait in their card's queue; one of them at a time
	// decides the waiting ones and appends them together (verifyBatch).
	queueMu sync.Mutex
	queues  map[string]*cardQueue

	cacheMu sync.Mutex
	cache   map[string]*cachedCard // card aggregates, read incrementally

	// The providers and benefit items verify-use reads, incrementally.
	providerCache readCache[providerState]
	itemCache     readCache[itemState]
}

// cachedCard is a card's state as of version events; only the card's
// leading verification (cardQueue) touches it.
type cachedCard struct {
	state   cardState
	version uint64
	pos     events.Position
}

// maxCachedCards bounds the card cache; an evicted card is replayed once.
const maxCachedCards = 10000

// cards is the source verify-use decides on (executeBatch): the card
// states this node keeps by stream, read incrementally, and, for the first
// decision of a batch, lent without reading the stream at all (trusting):
// a use decided on it is appended after the cached version, so an event
// another node appended meanwhile fails the append as a conflict, and the
// uses are decided again on what a read then gives. On Postgres this saves
// a round trip per use of a card this node holds. Callers lead the card's
// queue, so no two of them touch one entry at once. decided, when set, is
// where the decision leaves the state it built by applying its own uses
// (verifyBatch): the cache adopts it after the append instead of folding
// the same uses again.
type cards struct {
	b       *Benefits
	decided **cardState
}

// entry returns the card's cache entry, creating it when missing.
func (c cards) entry(stream string) *cachedCard {
	b := c.b
	b.cacheMu.Lock()
	defer b.cacheMu.Unlock()
	if b.cache == nil {
		b.cache = map[string]*cachedCard{}
	}
	e := b.cache[stream]
	if e == nil {
		if len(b.cache) >= maxCachedCards {
			for k := range b.cache { // drop an arbitrary entry
				delete(b.cache, k)
				break
			}
		}
		e = &cachedCard{}
		b.cache[stream] = e
	}
	return e
}

func (c cards) loadCached(stream string) (*cardState, uint64, events.Position, uint64, bool) {
	e := c.entry(stream)
	if e.version == 0 {
		return nil, 0, events.Position{}, 0, false
	}
	st := e.state.clone()
	return &st, e.version, e.pos, 0, true
}

// loadLent reads the events appended since the card was last seen (by this
// node or any other) and lends a copy of its state.
func (c cards) loadLent(ctx context.Context, s streams, stream string) (*cardState, uint64, events.Position, uint64, error) {
	e := c.entry(stream)
	recs, err := s.store.ReadStream(ctx, stream, e.version, 0)
	if err != nil {
		return nil, 0, events.Position{}, 0, err
	}
	for _, r := range recs {
		env, err := s.reg.Decode(r)
		if err != nil {
			return nil, 0, events.Position{}, 0, err
		}
		e.state.apply(env)
		e.version++
		e.pos = r.Position
	}
	st := e.state.clone()
	return &st, e.version, e.pos, 0, nil
}

func (cards) release(string, uint64) {}

// appendAfter appends the uses and, when they landed right after the cached
// version, applies them to the cached card as a read would decode them, so
// the next batch reads and decodes nothing of its own writes.
func (c cards) appendAfter(ctx context.Context, s streams, stream string, version, _ uint64, meta Meta, ps ...events.Payload) (events.AppendResult, error) {
	res, err := s.append(ctx, stream, version, meta, ps...)
	if err != nil {
		return res, err
	}
	if e := c.entry(stream); e.version == version {
		if c.decided != nil && *c.decided != nil {
			e.state = **c.decided
		} else {
			for _, p := range ps {
				e.state.apply(events.Envelope{Payload: asDecoded(p)})
			}
		}
		e.version, e.pos = version+uint64(len(ps)), res.Position
	}
	return res, nil
}

// NewBenefits builds the handler; cooldown is the DUPLICATE_FULFILLMENT window.
func NewBenefits(store events.Store, reg *events.Registry, ids *Allocator, now func() time.Time, cooldown time.Duration, providers ProviderDirectory) *Benefits {
	return &Benefits{streams: streams{store, reg}, ids: ids, now: now, cooldown: cooldown, providers: providers}
}

// keyedMutex serialises commands on one key inside this process, so a hot
// card's verifications queue instead of conflicting; across processes the
// expected revision still decides.
type keyedMutex struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	mu   sync.Mutex
	refs int
}

func (k *keyedMutex) lock(key string) func() {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyedEntry{}
	}
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{}
		k.m[key] = e
	}
	e.refs++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
