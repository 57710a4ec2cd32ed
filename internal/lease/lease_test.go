package lease_test

import (
	"context"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/lease"
)

func TestNodeID(t *testing.T) {
	t.Setenv(lease.EnvNodeID, "")
	a, b := lease.NodeID(), lease.NodeID()
	if a == b || !strings.Contains(a, "-") {
		t.Fatalf("default node ids %q and %q: want distinct hostname-pid-random", a, b)
	}
	t.Setenv(lease.EnvNodeID, "node-7")
	if got := lease.NodeID(); got != "node-7" {
		t.Fatalf("NodeID = %q with %s=node-7", got, lease.EnvNodeID)
	}
}

func TestFenceTravelsInTheContext(t *testing.T) {
	if _, ok := lease.FenceFrom(context.Background()); ok {
		t.Fatal("a bare context carries a fence")
	}
	l := lease.Lease{Name: "job", Holder: "a", Token: 3}
	got, ok := lease.FenceFrom(lease.WithFence(context.Background(), l))
	if !ok || got != l {
		t.Fatalf("FenceFrom = %+v, %v", got, ok)
	}
}
