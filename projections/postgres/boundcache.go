package postgres

import (
	"sync"
	"time"
)

// boundCacheMax bounds the bindings a store remembers. A put that finds
// the cache full sweeps it once: expired bindings go, and if that frees too
// little, arbitrary ones too, down to boundCacheKeep, so the next sweep is
// boundCacheMax-boundCacheKeep puts away (a forgotten binding only costs
// its statement, never correctness). Sweeping at every put of a full cache
// instead scanned 65,536 entries under the write lock per signed request:
// every request of every app then queued on it (≈ 50 ms each under load).
const (
	boundCacheMax  = 1 << 16
	boundCacheKeep = boundCacheMax - boundCacheMax/8
)

// boundCache remembers bindings this store has seen hold in nonce_bindings,
// until they expire, so that the reads sharing a signature (every bodyless
// read of one app in one second signs alike) do not each read or write the
// binding's row: a hot row that every signed read would lock and update.
// It is sound across nodes because a stored binding never changes before it
// expires (bindQuery takes over expired rows only, the prunes delete expired
// rows only) and expiry is judged here with the clock that judges it in the
// statements; a binding this node has not seen yet is always asked of the
// shared table.
type boundCache struct {
	mu     sync.RWMutex
	m      map[boundKey]boundEntry
	sweeps int // full-cache sweeps so far (tests)
}

type boundKey struct{ scope, key string }

type boundEntry struct {
	value   string
	expires time.Time
}

// get returns the value bound to key in scope if remembered and unexpired at now.
func (c *boundCache) get(scope, key string, now time.Time) (string, bool) {
	c.mu.RLock()
	e, ok := c.m[boundKey{scope, key}]
	c.mu.RUnlock()
	if !ok || !now.Before(e.expires) {
		return "", false
	}
	return e.value, true
}

// put remembers that value holds for key in scope until expires.
func (c *boundCache) put(scope, key, value string, expires, now time.Time) {
	if !now.Before(expires) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[boundKey]boundEntry{}
	}
	if len(c.m) >= boundCacheMax {
		c.sweeps++
		for k, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, k)
			}
		}
		for k := range c.m { // map order: arbitrary ones
			if len(c.m) <= boundCacheKeep {
				break
			}
			delete(c.m, k)
		}
	}
	c.m[boundKey{scope, key}] = boundEntry{value: value, expires: expires}
}
