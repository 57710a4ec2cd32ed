package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/healthtech/partner-open-platform/internal/lease"
)

// Leases decorates a lease store so the node reports which single-owner
// jobs (projection families, webhook creation, relay, mail, erasure purge)
// it runs and how often it took each one: summed over nodes, the held gauge
// says every job has an owner, and a fast-growing acquisitions count is
// lease churn (owners dying, renewals failing, nodes stealing leases back).
func (m *Metrics) Leases(s lease.Store) lease.Store {
	return &leaseStore{Store: s, m: m}
}

type leaseStore struct {
	lease.Store
	m *Metrics
}

func (s *leaseStore) Acquire(ctx context.Context, name, holder string, ttl time.Duration) (lease.Lease, error) {
	l, err := s.Store.Acquire(ctx, name, holder, ttl)
	if err == nil {
		s.m.LeaseAcquisitions.WithLabelValues(name).Inc()
		s.m.LeaseHeld.WithLabelValues(name).Set(1)
	}
	return l, err
}

func (s *leaseStore) Renew(ctx context.Context, l lease.Lease, ttl time.Duration) (lease.Lease, error) {
	nl, err := s.Store.Renew(ctx, l, ttl)
	if errors.Is(err, lease.ErrLost) {
		s.m.LeaseHeld.WithLabelValues(l.Name).Set(0)
	}
	return nl, err
}

func (s *leaseStore) Release(ctx context.Context, l lease.Lease) error {
	err := s.Store.Release(ctx, l)
	s.m.LeaseHeld.WithLabelValues(l.Name).Set(0)
	return err
}
