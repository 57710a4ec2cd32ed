package memory

import (
	"fmt"
	"testing"
	"time"
)

// The set prunes expired nonces as it grows, so a stream of one-off nonces
// keeps it bounded, and never forgets a nonce that is still valid.
func TestNonceSetPrunesExpiredOnly(t *testing.T) {
	n := newNonceSet()
	now := time.Date(2024, 3, 5, 8, 0, 0, 0, time.UTC)
	const live = 3000
	for i := range live {
		if !n.use(nonceKey{"s", fmt.Sprintf("live-%d", i)}, now.Add(time.Hour), now) {
			t.Fatalf("live nonce %d not fresh", i)
		}
	}
	const stream = 50 * minPrune
	peak := 0
	for i := range stream {
		// Each nonce is valid for a second; the clock moves a millisecond
		// per request, so older ones expire as newer ones arrive.
		at := now.Add(time.Duration(i) * time.Millisecond)
		if !n.use(nonceKey{"s", fmt.Sprintf("once-%d", i)}, at.Add(time.Second), at) {
			t.Fatalf("one-off nonce %d not fresh", i)
		}
		peak = max(peak, len(n.entries))
	}
	// At most 1000 one-off nonces are valid at once: the bound is about
	// twice what is valid plus minPrune, far below the stream's length.
	if limit := 2*(live+1000) + minPrune; peak > limit {
		t.Errorf("set grew to %d entries, want at most %d", peak, limit)
	}
	end := now.Add(stream * time.Millisecond)
	for i := range live {
		if n.use(nonceKey{"s", fmt.Sprintf("live-%d", i)}, end.Add(time.Hour), end) {
			t.Fatalf("live nonce %d was forgotten by a prune", i)
		}
	}
}
