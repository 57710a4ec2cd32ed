package filelog_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/idempotency"
	"github.com/healthtech/partner-open-platform/internal/nonces"
	"github.com/healthtech/partner-open-platform/internal/nonces/filelog"
	"github.com/healthtech/partner-open-platform/internal/nonces/noncetest"
)

var _ idempotency.RouteClaimer = (*filelog.Nonces)(nil)

// TestBindRouteAndClaim: a scheme M write's route binding and its claim
// decided together (noncetest.RouteClaims) and written in one write; what
// was answered survives a kill (a copy of the file taken while the store
// is open).
func TestBindRouteAndClaim(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nonces.log")
	n := open(t, path)
	defer n.Close()
	noncetest.RouteClaims(t, func() noncetest.RouteClaimer { return n })

	ctx := context.Background()
	exp := time.Now().Add(5 * time.Minute)
	firstUse := strconv.FormatInt(time.Now().UnixNano(), 10) + " POST /d"
	writes := n.Writes()
	_, claimed, fresh, err := n.BindRouteAndClaim(ctx, nonces.Binding{Scope: "m", Key: "2:sig", Value: firstUse, Expires: exp},
		nonces.Binding{Scope: "signed-write", Key: "2:w:run", Value: "run-1", Expires: exp}, "POST /d")
	if err != nil || !claimed || !fresh {
		t.Fatalf("first use: claimed %v fresh %v, %v", claimed, fresh, err)
	}
	if w := n.Writes() - writes; w != 1 {
		t.Fatalf("first use: %d writes, want the two records in one", w)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "after-kill.log")
	if err := os.WriteFile(copyPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	c := open(t, copyPath)
	defer c.Close()
	retry := strconv.FormatInt(time.Now().UnixNano(), 10) + " POST /d"
	bound, claimed, fresh, err := c.BindRouteAndClaim(ctx, nonces.Binding{Scope: "m", Key: "2:sig", Value: retry, Expires: exp},
		nonces.Binding{Scope: "signed-write", Key: "2:w:run", Value: "run-2", Expires: exp}, "POST /d")
	if err != nil || bound != firstUse || !claimed || fresh {
		t.Fatalf("retry after a kill: %q claimed %v fresh %v, %v; want the first binding and its claim", bound, claimed, fresh, err)
	}
}
