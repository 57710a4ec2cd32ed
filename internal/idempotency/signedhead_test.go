package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/idempotency"
	"github.com/healthtech/partner-open-platform/internal/nonces"
	projmemory "github.com/healthtech/partner-open-platform/projections/memory"
)

// headClaimer binds a route and claims a write as one statement would,
// and answers the head that statement read.
type headClaimer struct {
	*projmemory.Store
	head events.Position
}

func (c headClaimer) BindRouteAndClaimAtHead(ctx context.Context, route, claim nonces.Binding, _ string) (idempotency.RouteClaim, error) {
	bound, _, err := c.Bind(ctx, route.Scope, route.Key, route.Value, route.Expires)
	if err != nil || bound != route.Value {
		return idempotency.RouteClaim{Bound: bound, Head: c.head, HeadKnown: err == nil}, err
	}
	_, fresh, err := c.Bind(ctx, claim.Scope, claim.Key, claim.Value, claim.Expires)
	return idempotency.RouteClaim{Bound: bound, Claimed: true, Fresh: fresh, Head: c.head, HeadKnown: true}, err
}

// confirmingRoute is a route binding whose app authentication left to
// confirm at the claim's head: refuse is what the app's entry there says.
type confirmingRoute struct {
	refuse error
	heads  []events.Position
}

func (r *confirmingRoute) Binding() nonces.Binding {
	return nonces.Binding{Scope: "m", Key: "7:sig", Value: "v PATCH /w", Expires: time.Now().Add(time.Hour)}
}
func (r *confirmingRoute) Route() string { return "PATCH /w" }
func (r *confirmingRoute) Check(bound string) error {
	if r.refuse != nil {
		return r.refuse
	}
	return nil
}
func (r *confirmingRoute) Record() error { return r.Check("") }
func (r *confirmingRoute) CheckAt(bound string, head events.Position, _ time.Time) error {
	r.heads = append(r.heads, head)
	return r.Check(bound)
}

// A signed write whose app is confirmed at the head its claim's statement
// read: the confirmation gets that head, and a request it refuses (the app
// was suspended through another node before the request arrived) runs
// nothing and appends nothing, although its claim was made in that
// statement; the refusal is recorded as the write's answer, so its replays
// answer it, marked replayed, instead of 409 until the claim expires.
func TestSignedWriteRefusedAtTheClaimsHeadAnswersItsReplays(t *testing.T) {
	f := newFixture(t)
	store := headClaimer{Store: projmemory.New(), head: events.Position{Commit: 12, Prepare: 12}}
	k := f.node()
	e := &effect{}
	send := func(route *confirmingRoute) answer {
		body := `{"name":"a"}`
		r := httptest.NewRequest(http.MethodPatch, "/w", strings.NewReader(body))
		w := httptest.NewRecorder()
		k.ServeSigned(w, r, 7, []byte(body), store, idempotency.SignedKey("sig", r, []byte(body)), route, e.handler)
		return answer{w.Code, w.Header(), w.Body.String()}
	}
	refused := &confirmingRoute{refuse: domain.ErrAppSuspended}
	first := send(refused)
	if first.status != http.StatusForbidden || code(t, first) != "APP_SUSPENDED" {
		t.Fatalf("refused at the claim's head: %d %s", first.status, first.body)
	}
	if len(refused.heads) != 1 || refused.heads[0] != store.head {
		t.Fatalf("confirmed at %v, want the claim's head %v", refused.heads, store.head)
	}
	if n := e.runs.Load(); n != 0 {
		t.Fatalf("the refused write ran %d times", n)
	}
	// Its replay, whose app now passes, gets the refusal.
	replay := send(&confirmingRoute{})
	if replay.status != first.status || replay.body != first.body || replay.header.Get(idempotency.ReplayedHeader) != "true" {
		t.Fatalf("replay: %d %s (replayed %q), want the refusal replayed", replay.status, replay.body, replay.header.Get(idempotency.ReplayedHeader))
	}
	if n := e.runs.Load(); n != 0 {
		t.Fatalf("the replay ran the write (%d runs)", n)
	}
	if n := f.count(); n != 0 {
		t.Fatalf("%d events appended", n)
	}
}
