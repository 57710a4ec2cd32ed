// Package memory keeps webhook delivery claims in the process, for the
// embedded deployment (one node): the sender's claims then only guard
// against its own overlapping attempts.
package memory

import (
	"context"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/webhooks"
)

// Claims is webhooks.Claims in a map; safe for concurrent use.
type Claims struct {
	mu   sync.Mutex
	held map[string]hold
	now  func() time.Time
}

type hold struct {
	token string
	until time.Time
}

var _ webhooks.Claims = (*Claims)(nil)

// NewClaims returns an empty claim table on the system clock.
func NewClaims() *Claims {
	return &Claims{held: map[string]hold{}, now: time.Now}
}

// Claim implements webhooks.Claims.
func (c *Claims) Claim(_ context.Context, _ string, ids []string, ttl time.Duration) ([]webhooks.Claim, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	token := webhooks.NewClaimToken()
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	var out []webhooks.Claim
	for _, id := range ids {
		if h, ok := c.held[id]; ok && (h.token == token || now.Before(h.until)) {
			continue // held by another claim, or a duplicate of this one's
		}
		c.held[id] = hold{token: token, until: now.Add(ttl)}
		out = append(out, webhooks.Claim{DeliveryID: id, Token: token})
	}
	return out, nil
}

// Release implements webhooks.Claims.
func (c *Claims) Release(_ context.Context, claims []webhooks.Claim) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cl := range claims {
		if h, ok := c.held[cl.DeliveryID]; ok && h.token == cl.Token {
			delete(c.held, cl.DeliveryID)
		}
	}
	return nil
}
