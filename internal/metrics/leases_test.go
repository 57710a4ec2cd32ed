package metrics_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/healthtech/partner-open-platform/internal/lease"
	"github.com/healthtech/partner-open-platform/internal/lease/leasetest"
	leasemem "github.com/healthtech/partner-open-platform/internal/lease/memory"
	"github.com/healthtech/partner-open-platform/internal/metrics"
)

// The decorated store is still a lease store: it passes the port's suite.
func TestLeasesDecoratorConforms(t *testing.T) {
	leasetest.Run(t, func(t *testing.T) lease.Store { return metrics.New().Leases(leasemem.New()) })
}

// An operator reads which leases a node holds and how often it took them.
func TestLeasesReportHeldAndAcquisitions(t *testing.T) {
	ctx := context.Background()
	m := metrics.New()
	inner := leasemem.New()
	a := m.Leases(inner)
	other := metrics.New().Leases(inner)

	l, err := a.Acquire(ctx, "relay", "node-a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Acquire(ctx, "projection/users", "node-a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Acquire(ctx, "relay", "node-b", time.Minute); err == nil {
		t.Fatal("node-b took a held lease")
	}
	expect(t, m, `
platform_lease_acquisitions_total{lease="projection/users"} 1
platform_lease_acquisitions_total{lease="relay"} 1
platform_lease_held{lease="projection/users"} 1
platform_lease_held{lease="relay"} 1
`)
	if err := a.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Acquire(ctx, "relay", "node-b", time.Minute); err != nil {
		t.Fatal(err)
	}
	// Renewing the released acquisition fails as lost and stays 0.
	if _, err := a.Renew(ctx, l, time.Minute); err == nil {
		t.Fatal("renewed a lease another node holds")
	}
	expect(t, m, `
platform_lease_acquisitions_total{lease="projection/users"} 1
platform_lease_acquisitions_total{lease="relay"} 1
platform_lease_held{lease="projection/users"} 1
platform_lease_held{lease="relay"} 0
`)
}

func expect(t *testing.T, m *metrics.Metrics, want string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# HELP platform_lease_acquisitions_total Leases this node acquired, by lease: a fast-growing sum over nodes is lease churn.\n# TYPE platform_lease_acquisitions_total counter\n")
	held := "# HELP platform_lease_held 1 for each single-owner job's lease (projection families, webhook-creation, relay, mail, erasure-purge) this node holds.\n# TYPE platform_lease_held gauge\n"
	var acq, hl []string
	for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
		if strings.HasPrefix(line, "platform_lease_held") {
			hl = append(hl, line)
		} else {
			acq = append(acq, line)
		}
	}
	b.WriteString(strings.Join(acq, "\n") + "\n" + held + strings.Join(hl, "\n") + "\n")
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(b.String()), "platform_lease_held", "platform_lease_acquisitions_total"); err != nil {
		t.Error(err)
	}
}
