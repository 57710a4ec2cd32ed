// Package memory keeps leases in one process, for the embedded single-node
// mode: one process per data directory, so the only contenders are the
// process's own goroutines (and tests).
package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/internal/lease"
)

// Store is an in-process lease store.
type Store struct {
	now func() time.Time

	mu     sync.Mutex
	leases map[string]lease.Lease
}

// New returns an empty store on the system clock.
func New() *Store { return NewWithClock(time.Now) }

// NewWithClock returns an empty store on now, so tests can move time.
func NewWithClock(now func() time.Time) *Store {
	return &Store{now: now, leases: map[string]lease.Lease{}}
}

// Acquire implements lease.Store.
func (s *Store) Acquire(ctx context.Context, name, holder string, ttl time.Duration) (lease.Lease, error) {
	if err := ctx.Err(); err != nil {
		return lease.Lease{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.leases[name]
	now := s.now()
	if cur.Holder != "" && cur.Holder != holder && now.Before(cur.Expires) {
		return lease.Lease{}, fmt.Errorf("%w: %s holds %s until %s", lease.ErrHeld, cur.Holder, name, cur.Expires.Format(time.RFC3339Nano))
	}
	l := lease.Lease{Name: name, Holder: holder, Token: cur.Token + 1, Expires: now.Add(ttl)}
	s.leases[name] = l
	return l, nil
}

// Renew implements lease.Store.
func (s *Store) Renew(ctx context.Context, l lease.Lease, ttl time.Duration) (lease.Lease, error) {
	if err := ctx.Err(); err != nil {
		return lease.Lease{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.leases[l.Name]
	if cur.Token != l.Token || cur.Holder != l.Holder || cur.Holder == "" {
		return lease.Lease{}, fmt.Errorf("%w: %s token %d (now %d, %q)", lease.ErrLost, l.Name, l.Token, cur.Token, cur.Holder)
	}
	cur.Expires = s.now().Add(ttl)
	s.leases[l.Name] = cur
	return cur, nil
}

// Release implements lease.Store.
func (s *Store) Release(ctx context.Context, l lease.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.leases[l.Name]; cur.Token == l.Token {
		s.leases[l.Name] = lease.Lease{Name: l.Name, Token: cur.Token}
	}
	return nil
}

// Check implements lease.Store.
func (s *Store) Check(ctx context.Context, l lease.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.leases[l.Name]; cur.Token != l.Token || cur.Holder == "" {
		return fmt.Errorf("%w: %s token %d (now %d)", lease.ErrLost, l.Name, l.Token, cur.Token)
	}
	return nil
}

// Get implements lease.Store.
func (s *Store) Get(ctx context.Context, name string) (lease.Lease, error) {
	if err := ctx.Err(); err != nil {
		return lease.Lease{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.leases[name]
	cur.Name = name
	if cur.Holder != "" && !s.now().Before(cur.Expires) {
		cur.Holder = ""
	}
	return cur, nil
}
