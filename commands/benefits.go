package commands

import (
	"context"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
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
}

// maxCachedCards bounds the card cache; an evicted card is replayed once.
const maxCachedCards = 10000

// cardAt returns the card's current state, reading only the events appended
// since it was last seen (by this node or any other). Callers lead the card's queue.
//
// With trustCached, a card already cached is returned without reading its
// stream (read is false): a use decided on it is appended after the cached
// version, so an event another node appended meanwhile fails the append as
// a conflict, and the uses are decided again on what cardAt then reads. On
// Postgres this saves a round trip per use of a card this node holds.
func (b *Benefits) cardAt(ctx context.Context, number string, trustCached bool) (c *cachedCard, read bool, err error) {
	b.cacheMu.Lock()
	if b.cache == nil {
		b.cache = map[string]*cachedCard{}
	}
	c = b.cache[number]
	if c == nil {
		if len(b.cache) >= maxCachedCards {
			for k := range b.cache { // drop an arbitrary entry
				delete(b.cache, k)
				break
			}
		}
		c = &cachedCard{}
		b.cache[number] = c
	}
	b.cacheMu.Unlock()
	if trustCached && c.version > 0 {
		return c, false, nil
	}
	recs, err := b.store.ReadStream(ctx, domain.CardStream(number), c.version, 0)
	if err != nil {
		return nil, true, err
	}
	for _, r := range recs {
		env, err := b.reg.Decode(r)
		if err != nil {
			return nil, true, err
		}
		c.state.apply(env)
	}
	c.version += uint64(len(recs))
	return c, true, nil
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
