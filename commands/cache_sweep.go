package commands

import (
	"context"

	"github.com/healthtech/partner-open-platform/events"
)

// SweepUnreadable empties every loaded user whose key no longer reads (its
// personal fields read back as erased), loaded or not since, and returns
// how many it emptied. A load already checks the key before deciding, but
// an entry no command loads again would keep what it decrypted for as long
// as the process runs; when the node that destroyed the key died before
// appending user.erased, no erasure follower tells this node either. Run
// periodically (the node does, every datakeys.CacheTTL), it bounds how long
// plaintext of an erased person stays in this cache: the key cache's TTL
// (until this node's key cache asks the key store again) plus the sweep's
// interval.
func (u *Users) SweepUnreadable(ctx context.Context) int {
	return u.loaded.sweepUnreadable(ctx, u.streams)
}

// sweepUnreadable drops the entries of a sealed cache whose subject's key
// no longer reads; the key lookups happen outside the cache's lock. A load
// that took an entry before it is dropped still answers as the store says
// (it checks the key itself); the entry's decrypted state is reset so
// nothing of it stays reachable from the cache.
func (c *aggregateCache[S]) sweepUnreadable(ctx context.Context, s streams) int {
	if c == nil || c.sealedBy == nil {
		return 0
	}
	c.mu.Lock()
	held := make([]*cachedAggregate[S], 0, len(c.entries))
	for _, el := range c.entries {
		held = append(held, el.Value.(*cachedAggregate[S]))
	}
	c.mu.Unlock()
	dropped := 0
	for _, e := range held {
		if ctx.Err() != nil {
			return dropped
		}
		e.mu.Lock()
		erased := e.plain && !c.readable(ctx, s, e.stream)
		if erased {
			e.state, e.version, e.pos, e.plain = c.fresh(), 0, events.Position{}, false
		}
		e.mu.Unlock()
		if !erased {
			continue
		}
		c.mu.Lock()
		if el, ok := c.entries[e.stream]; ok && el.Value == any(e) {
			c.lru.Remove(el)
			delete(c.entries, e.stream)
		}
		c.mu.Unlock()
		dropped++
	}
	return dropped
}
