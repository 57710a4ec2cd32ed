// Package memory keeps leases in one process, for the embedded single-node
// mode: one process per data directory, so the only contenders are the
// process's own goroutines (and tests).
package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/internal/lease"
)

// Store is an in-process lease store. Session gives further handles on the
// same leases, each standing for a node: closing a handle frees its leases
// at once, as a process's death frees a node's leases in Postgres.
type Store struct {
	*shared
	sess *session
}

type shared struct {
	now func() time.Time

	mu     sync.Mutex
	leases map[string]entry
	// members are the holders that acquired, with the handle they last
	// acquired through, for Load.
	members map[string]*session
}

// entry is a lease with the handle that took it.
type entry struct {
	lease.Lease
	sess *session
}

type session struct{ closed bool }

// New returns an empty store on the system clock.
func New() *Store { return NewWithClock(time.Now) }

// NewWithClock returns an empty store on now, so tests can move time.
func NewWithClock(now func() time.Time) *Store {
	sh := &shared{now: now, leases: map[string]entry{}, members: map[string]*session{}}
	return sh.open()
}

func (sh *shared) open() *Store { return &Store{shared: sh, sess: &session{}} }

// Session returns another handle on the same leases, as another node's.
func (s *Store) Session() *Store { return s.open() }

// Close ends the handle: the leases it holds are free at once.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sess.closed = true
	return nil
}

var errClosed = errors.New("lease/memory: store closed")

// live says whether e's holder still has it at now.
func (e entry) live(now time.Time) bool {
	return e.Holder != "" && now.Before(e.Expires) && (e.sess == nil || !e.sess.closed)
}

// Acquire implements lease.Store.
func (s *Store) Acquire(ctx context.Context, name, holder string, ttl time.Duration) (lease.Lease, error) {
	if err := ctx.Err(); err != nil {
		return lease.Lease{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess.closed {
		return lease.Lease{}, errClosed
	}
	s.members[holder] = s.sess
	cur := s.leases[name]
	now := s.now()
	if cur.Holder != holder && cur.live(now) {
		return lease.Lease{}, fmt.Errorf("%w: %s holds %s until %s", lease.ErrHeld, cur.Holder, name, cur.Expires.Format(time.RFC3339Nano))
	}
	l := lease.Lease{Name: name, Holder: holder, Token: cur.Token + 1, Expires: now.Add(ttl)}
	s.leases[name] = entry{Lease: l, sess: s.sess}
	return l, nil
}

// Renew implements lease.Store.
func (s *Store) Renew(ctx context.Context, l lease.Lease, ttl time.Duration) (lease.Lease, error) {
	if err := ctx.Err(); err != nil {
		return lease.Lease{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess.closed {
		return lease.Lease{}, errClosed
	}
	cur := s.leases[l.Name]
	if cur.Token != l.Token || cur.Holder != l.Holder || cur.Holder == "" {
		return lease.Lease{}, fmt.Errorf("%w: %s token %d (now %d, %q)", lease.ErrLost, l.Name, l.Token, cur.Token, cur.Holder)
	}
	cur.Expires = s.now().Add(ttl)
	cur.sess = s.sess
	s.leases[l.Name] = cur
	return cur.Lease, nil
}

// Release implements lease.Store.
func (s *Store) Release(ctx context.Context, l lease.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.leases[l.Name]; cur.Token == l.Token {
		s.leases[l.Name] = entry{Lease: lease.Lease{Name: l.Name, Token: cur.Token}}
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
	if !cur.live(s.now()) {
		cur.Holder = ""
	}
	return cur.Lease, nil
}

// Load implements lease.Balancer: the nodes are the holders that acquired
// through a handle not closed.
func (s *Store) Load(ctx context.Context, holder string) (lease.Load, error) {
	if err := ctx.Err(); err != nil {
		return lease.Load{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	held := map[string]int{}
	for h, sess := range s.members {
		if !sess.closed {
			held[h] = 0
		}
	}
	for _, e := range s.leases {
		if _, member := held[e.Holder]; member && e.live(now) {
			held[e.Holder]++
		}
	}
	l := lease.Load{Nodes: len(held), Held: held[holder], Least: -1}
	for _, n := range held {
		if l.Least < 0 || n < l.Least {
			l.Least = n
		}
	}
	l.Least = max(l.Least, 0)
	return l, nil
}
