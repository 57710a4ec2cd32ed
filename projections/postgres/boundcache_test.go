package postgres

import (
	"strconv"
	"testing"
	"time"
)

// A full cache of live bindings still remembers new ones, stays within its
// bound, and sweeps once per boundCacheMax-boundCacheKeep puts, not at
// every put (each sweep walks the whole map under the write lock).
func TestBoundCacheFullOfLiveBindings(t *testing.T) {
	t.Parallel()
	var c boundCache
	now := time.Now()
	live := now.Add(time.Hour)
	for i := range boundCacheMax {
		c.put("m", strconv.Itoa(i), "v", live, now)
	}
	if len(c.m) != boundCacheMax || c.sweeps != 0 {
		t.Fatalf("filled: %d entries, %d sweeps", len(c.m), c.sweeps)
	}
	const more = 3 * (boundCacheMax - boundCacheKeep)
	for i := range more {
		key := "new-" + strconv.Itoa(i)
		c.put("m", key, "w", live, now)
		if v, ok := c.get("m", key, now); !ok || v != "w" {
			t.Fatalf("put %d on a full cache: not remembered", i)
		}
		if len(c.m) > boundCacheMax {
			t.Fatalf("%d entries, bound %d", len(c.m), boundCacheMax)
		}
	}
	if c.sweeps != 3 {
		t.Fatalf("%d sweeps for %d puts on a full cache, want 3", c.sweeps, more)
	}
}

// Expired bindings are swept before live ones, and never answered.
func TestBoundCacheSweepsExpiredFirst(t *testing.T) {
	t.Parallel()
	var c boundCache
	now := time.Now()
	for i := range boundCacheMax {
		exp := now.Add(time.Hour)
		if i%2 == 0 {
			exp = now.Add(time.Millisecond)
		}
		c.put("m", strconv.Itoa(i), "v", exp, now)
	}
	later := now.Add(time.Second)
	if _, ok := c.get("m", "0", later); ok {
		t.Fatal("an expired binding was answered")
	}
	c.put("m", "new", "w", later.Add(time.Hour), later)
	if len(c.m) != boundCacheMax/2+1 {
		t.Fatalf("after the sweep: %d entries, want the %d live ones and the new one", len(c.m), boundCacheMax/2)
	}
	for i := 1; i < boundCacheMax; i += 2 {
		if _, ok := c.get("m", strconv.Itoa(i), later); !ok {
			t.Fatalf("live binding %d swept while expired ones were there", i)
		}
	}
}

// BenchmarkBoundCachePutFull: a put on a cache full of live bindings, as
// after a burst of signed requests within the bindings' lifetime.
func BenchmarkBoundCachePutFull(b *testing.B) {
	var c boundCache
	now := time.Now()
	live := now.Add(time.Hour)
	for i := range boundCacheMax {
		c.put("m", strconv.Itoa(i), "v", live, now)
	}
	keys := make([]string, 1<<14)
	for i := range keys {
		keys[i] = "k-" + strconv.Itoa(i)
	}
	for i := 0; b.Loop(); i++ {
		c.put("m", keys[i%len(keys)], "w", live, now)
	}
}
