package memory_test

import (
	"testing"

	"github.com/healthtech/partner-open-platform/internal/lease"
	"github.com/healthtech/partner-open-platform/internal/lease/leasetest"
	"github.com/healthtech/partner-open-platform/internal/lease/memory"
)

func TestConformance(t *testing.T) {
	leasetest.Run(t, func(*testing.T) lease.Store { return memory.New() })
	leasetest.RunCluster(t, func(*testing.T) leasetest.Cluster { return &cluster{first: memory.New()} })
}

// cluster hands out handles on one store; the first node gets the store
// itself.
type cluster struct {
	first *memory.Store
	used  bool
}

func (c *cluster) Node(*testing.T) lease.Store {
	if !c.used {
		c.used = true
		return c.first
	}
	return c.first.Session()
}

func (c *cluster) Kill(_ *testing.T, s lease.Store) { _ = s.(*memory.Store).Close() }
