package memory_test

import (
	"testing"

	"github.com/healthtech/partner-open-platform/internal/lease"
	"github.com/healthtech/partner-open-platform/internal/lease/leasetest"
	"github.com/healthtech/partner-open-platform/internal/lease/memory"
)

func TestConformance(t *testing.T) {
	leasetest.Run(t, func(*testing.T) lease.Store { return memory.New() })
}
