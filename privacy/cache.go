package privacy

import (
	"fmt"
	"sync"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/sharedguard"
)

// openedCache keeps the decrypted data of recently opened events, so that
// the dozen projection runners that each read every event (and a rebuild,
// where they all read the whole log together) decrypt it once, not once
// each. It is bounded (FIFO over at most maxEntries events and maxBytes of
// data) and emptied whenever the key store's epoch moves (keys.Keys.Epoch:
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
}

type cacheKey struct {
	id  string
	pos events.Position
}

const (
	maxEntries = 8192
	maxBytes   = 16 << 20
)

func newOpenedCache() *openedCache {
	return &openedCache{byID: map[cacheKey][]byte{}, order: make([]cacheKey, maxEntries)}
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
		return nil, false
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
	if c.epoch != epoch {
		if epoch < c.epoch {
			return
		}
		c.reset(epoch)
	}
	k := cacheKey{rec.ID, rec.Position}
	if _, ok := c.byID[k]; ok {
		return
	}
	for c.bytes+len(data) > maxBytes || c.byID[c.order[c.next]] != nil {
		old := c.order[c.next]
		c.check(old)
		c.bytes -= len(c.byID[old])
		delete(c.byID, old)
		c.order[c.next] = cacheKey{}
		c.next = (c.next + 1) % maxEntries
	}
	if !shared {
		data = append([]byte(nil), data...)
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

func (c *openedCache) reset(epoch uint64) {
	for k := range c.byID {
		c.check(k)
	}
	c.epoch = epoch
	clear(c.byID)
	clear(c.order)
	c.next, c.bytes = 0, 0
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
