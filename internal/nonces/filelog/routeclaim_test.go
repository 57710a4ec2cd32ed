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
)

var _ idempotency.RouteClaimer = (*filelog.Nonces)(nil)

// TestBindRouteAndClaim: a scheme M write's route binding and its claim
// decided together and written in one write. The first use binds both; an
// identical retry finds both (a replay); the signature on another route
// binds no claim, which the binding's refusal would otherwise leave
// behind; a binding an older release recorded without its time holds its
// route. What was answered survives a kill (a copy of the file taken while
// the store is open).
func TestBindRouteAndClaim(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "nonces.log")
	n := open(t, path)
	defer n.Close()
	exp := time.Now().Add(5 * time.Minute)
	route := func(key, value string) nonces.Binding {
		return nonces.Binding{Scope: "m", Key: key, Value: value, Expires: exp}
	}
	claim := func(key, value string) nonces.Binding {
		return nonces.Binding{Scope: "signed-write", Key: key, Value: value, Expires: exp}
	}
	firstUse := strconv.FormatInt(time.Now().UnixNano(), 10) + " PATCH /a"

	writes := n.Writes()
	bound, claimed, fresh, err := n.BindRouteAndClaim(ctx, route("1:sig", firstUse), claim("1:w:run", "run-1"), "PATCH /a")
	if err != nil || bound != firstUse || !claimed || !fresh {
		t.Fatalf("first use: %q claimed %v fresh %v, %v; want its own binding, claimed, fresh", bound, claimed, fresh, err)
	}
	if w := n.Writes() - writes; w != 1 {
		t.Fatalf("first use: %d writes, want the two records in one", w)
	}
	retry := strconv.FormatInt(time.Now().UnixNano(), 10) + " PATCH /a"
	bound, claimed, fresh, err = n.BindRouteAndClaim(ctx, route("1:sig", retry), claim("1:w:run", "run-2"), "PATCH /a")
	if err != nil || bound != firstUse || !claimed || fresh {
		t.Fatalf("identical retry: %q claimed %v fresh %v, %v; want the first binding, claimed, not fresh", bound, claimed, fresh, err)
	}
	other := strconv.FormatInt(time.Now().UnixNano(), 10) + " DELETE /b"
	bound, claimed, _, err = n.BindRouteAndClaim(ctx, route("1:sig", other), claim("1:w2:run", "run-3"), "DELETE /b")
	if err != nil || bound != firstUse || claimed {
		t.Fatalf("another route: %q claimed %v, %v; want the first binding and no claim", bound, claimed, err)
	}
	if got, isNew, err := n.Bind(ctx, "signed-write", "1:w2:run", "later", exp); err != nil || !isNew || got != "later" {
		t.Fatalf("the other route's claim key: %q fresh %v, %v; want unbound (nothing left behind)", got, isNew, err)
	}
	if _, _, err := n.Bind(ctx, "m", "1:legacy", "POST /c", exp); err != nil {
		t.Fatal(err)
	}
	bound, claimed, fresh, err = n.BindRouteAndClaim(ctx, route("1:legacy", "9 POST /c"), claim("1:w4:run", "run-5"), "POST /c")
	if err != nil || bound != "POST /c" || !claimed || !fresh {
		t.Fatalf("a binding without its time, same route: %q claimed %v fresh %v, %v; want claimed, fresh", bound, claimed, fresh, err)
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
	bound, claimed, fresh, err = c.BindRouteAndClaim(ctx, route("1:sig", retry), claim("1:w:run", "run-6"), "PATCH /a")
	if err != nil || bound != firstUse || !claimed || fresh {
		t.Fatalf("retry after a kill: %q claimed %v fresh %v, %v; want the first binding and its claim", bound, claimed, fresh, err)
	}
}
