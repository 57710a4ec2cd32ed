package privacy

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/sharedguard"
)

// openedCache keeps the decrypted data of recently opened events, so that
// the dozen followers that each read every new event decrypt it once, not
// once each (a rebuild's replay, which no other follower reads, passes it
// by: Store.SubscribeReplay). It is bounded (FIFO over at most maxEntries events and maxBytes of
// data) and emptied whenever the key store's epoch moves (datakeys.Keys.Epoch:
// every Forget or Destroy, which erasures cause), so plaintext of an
// erased person never outlives their key in this process; and by the
// node's periodic sweep (Store.DropOpened), for a key destroyed by another
// node that never appended user.erased.
type openedCache struct {
	mu    sync.Mutex
	epoch uint64
	byID  map[cacheKey][]byte
	order []cacheKey // FIFO ring
	next  int
	bytes int
	sums  map[cacheKey]uint32 // sharedguard: each entry's checksum when put

	// appended holds the plaintext of events this process sealed for an
	// append, by event id, with the sealed bytes they were stored as (see
	// expect): the first read of such an event (a follower woken by the
	// commit) takes the plaintext from here instead of locating and
	// decrypting its fields again. FIFO-bounded like byID, and emptied
	// with it on every epoch move.
	appended      map[string]appendedEvent
	appendedOrder []string // FIFO ring
	appendedNext  int
	appendedBytes int
}

// appendedEvent is an event's data as sealed for the store and as it was
// before sealing.
type appendedEvent struct{ sealed, plain []byte }

type cacheKey struct {
	id  string
	pos events.Position
}

const (
	maxEntries = 8192
	maxBytes   = 16 << 20
	// maxAppended and maxAppendedBytes bound the plaintext kept of this
	// process's own appends until their first read: a few commits' worth
	// (a follower reads an event right after its commit).
	maxAppended      = 2048
	maxAppendedBytes = 4 << 20
)

func newOpenedCache() *openedCache {
	return &openedCache{
		byID: map[cacheKey][]byte{}, order: make([]cacheKey, maxEntries),
		appended: map[string]appendedEvent{}, appendedOrder: make([]string, maxAppended),
	}
}

// get returns the event's decrypted data if cached at epoch: a copy, or
// when shared (a subscription's read-only delivery) the cached bytes.
func (c *openedCache) get(rec events.Recorded, epoch uint64, shared bool) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch != epoch {
		c.reset(epoch)
		return nil, false
	}
	data, ok := c.byID[cacheKey{rec.ID, rec.Position}]
	if !ok {
		// An event this process appended reads as the plaintext it sealed
		// when the bytes read are exactly the bytes it sealed: opening
		// them would give that plaintext back (Seal and open1 locate the
		// same fields, and an envelope opens to the value's exact text),
		// and no key was forgotten or destroyed here since (same epoch).
		a, ok := c.appended[rec.ID]
		if !ok || !bytes.Equal(a.sealed, rec.Data) {
			return nil, false
		}
		data = a.plain
		c.putLocked(rec, data)
		c.appendedBytes -= len(a.sealed) + len(a.plain)
		delete(c.appended, rec.ID)
	}
	if shared {
		return data, true
	}
	return append([]byte(nil), data...), true
}

// put caches data opened at epoch, unless the epoch moved meanwhile (the
// data may have been opened with a key destroyed since). Shared data (a
// subscription's, read-only from now on) is kept as is, other data copied.
func (c *openedCache) put(rec events.Recorded, epoch uint64, data []byte, shared bool) {
	if len(data) > maxBytes/64 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at(epoch) {
		return
	}
	if _, ok := c.byID[cacheKey{rec.ID, rec.Position}]; ok {
		return
	}
	if !shared {
		data = append([]byte(nil), data...)
	}
	c.putLocked(rec, data)
}

// putLocked caches data, which nothing writes to from now on, for rec.
func (c *openedCache) putLocked(rec events.Recorded, data []byte) {
	k := cacheKey{rec.ID, rec.Position}
	for c.bytes+len(data) > maxBytes || c.byID[c.order[c.next]] != nil {
		old := c.order[c.next]
		c.check(old)
		c.bytes -= len(c.byID[old])
		delete(c.byID, old)
		c.order[c.next] = cacheKey{}
		c.next = (c.next + 1) % maxEntries
	}
	c.byID[k] = data
	if sharedguard.Enabled() {
		if c.sums == nil {
			c.sums = map[cacheKey]uint32{}
		}
		c.sums[k] = sharedguard.Sum(data)
	}
	c.bytes += len(data)
	c.order[c.next] = k
	c.next = (c.next + 1) % maxEntries
}

// at moves the cache to epoch when epoch is newer (emptying it) and says
// whether data of epoch may be kept: not when the epoch has moved past it
// (the data may have been opened or sealed with a key destroyed since).
// c.mu must be held.
func (c *openedCache) at(epoch uint64) bool {
	if epoch < c.epoch {
		return false
	}
	if epoch > c.epoch {
		c.reset(epoch)
	}
	return true
}

func (c *openedCache) reset(epoch uint64) {
	for k := range c.byID {
		c.check(k)
	}
	c.epoch = epoch
	clear(c.byID)
	clear(c.order)
	c.next, c.bytes = 0, 0
	clear(c.appended)
	clear(c.appendedOrder)
	c.appendedNext, c.appendedBytes = 0, 0
}

// expect keeps the plaintext of an event this process sealed at epoch (the
// key store's epoch read before the data key was) for an append, with the
// sealed bytes the store is given, until the event's first read. plain is
// copied; sealed is kept as given and only ever compared. An append that
// fails leaves its entry to the FIFO bound or the next epoch move.
func (c *openedCache) expect(id string, epoch uint64, sealed, plain []byte) {
	size := len(sealed) + len(plain)
	if size > maxAppendedBytes/64 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at(epoch) {
		return
	}
	for c.appendedBytes+size > maxAppendedBytes || c.appendedOrder[c.appendedNext] != "" {
		old := c.appendedOrder[c.appendedNext]
		if a, ok := c.appended[old]; ok {
			c.appendedBytes -= len(a.sealed) + len(a.plain)
			delete(c.appended, old)
		}
		c.appendedOrder[c.appendedNext] = ""
		c.appendedNext = (c.appendedNext + 1) % maxAppended
	}
	if a, ok := c.appended[id]; ok { // the same id sealed again: the newer counts
		c.appendedBytes -= len(a.sealed) + len(a.plain)
	}
	c.appended[id] = appendedEvent{sealed: sealed, plain: append([]byte(nil), plain...)}
	c.appendedBytes += size
	c.appendedOrder[c.appendedNext] = id
	c.appendedNext = (c.appendedNext + 1) % maxAppended
}

// drop empties the cache at its current epoch.
func (c *openedCache) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reset(c.epoch)
}

// check verifies (sharedguard) that nobody wrote into an entry's plaintext,
// which subscriptions hand out shared, and forgets its checksum.
func (c *openedCache) check(k cacheKey) {
	sum, ok := c.sums[k]
	if !ok {
		return
	}
	delete(c.sums, k)
	sharedguard.Check(sum, func() string { return fmt.Sprintf("the plaintext of event %s at %s (privacy)", k.id, k.pos) }, c.byID[k])
}
