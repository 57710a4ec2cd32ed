package noncetest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/nonces"
)

// RouteClaimer is a replay guard that binds a scheme M write's route and
// claims the signed write together (idempotency.RouteClaimer).
type RouteClaimer interface {
	nonces.Store
	BindRouteAndClaim(ctx context.Context, route, claim nonces.Binding, routeName string) (bound string, claimed, fresh bool, err error)
}

// RouteClaims checks BindRouteAndClaim on the stores node returns (a
// node of a cluster that has not seen the bindings, or the one embedded
// store): the first use binds both; an identical retry finds both (a
// replay); the signature on another route binds no claim, which the
// binding's refusal would otherwise leave behind; a binding an older
// release recorded without its time holds its route.
func RouteClaims(t *testing.T, node func() RouteClaimer) {
	t.Helper()
	exp := time.Now().Add(5 * time.Minute)
	route := func(key, value string) nonces.Binding {
		return nonces.Binding{Scope: "m", Key: key, Value: value, Expires: exp}
	}
	claim := func(key, value string) nonces.Binding {
		return nonces.Binding{Scope: "signed-write", Key: key, Value: value, Expires: exp}
	}
	firstUse := strconv.FormatInt(time.Now().UnixNano(), 10) + " PATCH /a"

	bound, claimed, fresh, err := node().BindRouteAndClaim(ctx, route("1:sig", firstUse), claim("1:w:run", "run-1"), "PATCH /a")
	if err != nil || bound != firstUse || !claimed || !fresh {
		t.Fatalf("first use: %q claimed %v fresh %v, %v; want its own binding, claimed, fresh", bound, claimed, fresh, err)
	}
	retry := strconv.FormatInt(time.Now().UnixNano(), 10) + " PATCH /a"
	bound, claimed, fresh, err = node().BindRouteAndClaim(ctx, route("1:sig", retry), claim("1:w:run", "run-2"), "PATCH /a")
	if err != nil || bound != firstUse || !claimed || fresh {
		t.Fatalf("identical retry: %q claimed %v fresh %v, %v; want the first binding, claimed, not fresh", bound, claimed, fresh, err)
	}
	other := strconv.FormatInt(time.Now().UnixNano(), 10) + " DELETE /b"
	bound, claimed, _, err = node().BindRouteAndClaim(ctx, route("1:sig", other), claim("1:w2:run", "run-3"), "DELETE /b")
	if err != nil || bound != firstUse || claimed {
		t.Fatalf("another route: %q claimed %v, %v; want the first binding and no claim", bound, claimed, err)
	}
	if got, isNew, err := node().Bind(ctx, "signed-write", "1:w2:run", "later", exp); err != nil || !isNew || got != "later" {
		t.Fatalf("the other route's claim key: %q fresh %v, %v; want unbound (nothing left behind)", got, isNew, err)
	}
	if _, _, err := node().Bind(ctx, "m", "1:legacy", "POST /c", exp); err != nil {
		t.Fatal(err)
	}
	bound, claimed, fresh, err = node().BindRouteAndClaim(ctx, route("1:legacy", "9 POST /c"), claim("1:w4:run", "run-5"), "POST /c")
	if err != nil || bound != "POST /c" || !claimed || !fresh {
		t.Fatalf("a binding without its time, same route: %q claimed %v fresh %v, %v; want claimed, fresh", bound, claimed, fresh, err)
	}
}
