package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/webhooks"
	"github.com/healthtech/partner-open-platform/webhooks/postgres"
)

// ridingClaims opens, on a database of its own, an event store and two
// nodes' claims: a's ride the event store's appends, b's do not.
func ridingClaims(t *testing.T) (db string, es *pgevents.Store, a, b *postgres.Claims) {
	t.Helper()
	ctx := context.Background()
	db = pgtest.New(t)
	es, err := pgevents.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { es.Close() })
	if a, err = postgres.Open(ctx, db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	a.RideAppends(pgevents.WithRider)
	if b, err = postgres.Open(ctx, db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return db, es, a, b
}

// Deliveries created with ClaimWithAppend's context are claimed by the
// append's own transaction: once it committed another node cannot take
// them, and the claims release as any do. An append that wrote nothing (a
// conflict) took no claim, and another node takes those deliveries at once.
func TestClaimWithAppendClaimsInTheAppendsTransaction(t *testing.T) {
	ctx := context.Background()
	_, es, a, b := ridingClaims(t)
	create := func(ctx context.Context, try string, ids ...string) error {
		parts := make([]events.StreamAppend, len(ids))
		for i, id := range ids {
			parts[i] = events.StreamAppend{Stream: domain.DeliveryStream(id), Expected: events.NoStream(), Events: []events.Proposed{{
				ID: "created-" + id + try, Type: "test.created", Data: []byte(`{}`), Meta: []byte(`{"actor":"t"}`)}}}
		}
		_, err := events.AppendMulti(ctx, es, parts...)
		return err
	}
	ids := func(cs []webhooks.Claim) []string {
		out := []string{}
		for _, c := range cs {
			out = append(out, c.DeliveryID)
		}
		slices.Sort(out)
		return out
	}

	actx, claims, taken := a.ClaimWithAppend(ctx, "node-a", []string{"d1", "d2"}, time.Minute)
	if taken == nil {
		t.Fatal("ClaimWithAppend under RideAppends cannot claim")
	}
	if err := create(actx, "", "d1", "d2"); err != nil {
		t.Fatal(err)
	}
	if !taken() || !slices.Equal(ids(claims), []string{"d1", "d2"}) {
		t.Fatalf("after the append: taken %v, claims %v; want d1 and d2 taken", taken(), claims)
	}
	if got, err := b.Claim(ctx, "node-b", []string{"d1", "d2"}, time.Minute); err != nil || len(got) != 0 {
		t.Fatalf("another node claimed %v (%v) of deliveries the append claimed", got, err)
	}

	// A replay of the same append writes nothing and claims nothing.
	actx, _, taken = a.ClaimWithAppend(ctx, "node-a", []string{"d1", "d2"}, time.Minute)
	if err := create(actx, "", "d1", "d2"); err != nil {
		t.Fatal(err)
	}
	if taken() {
		t.Error("a replayed append reports its claims taken")
	}

	// Another creation of d1: the append conflicts and claims nothing.
	actx, again, taken := a.ClaimWithAppend(ctx, "node-a", []string{"d1", "d3"}, time.Minute)
	if err := create(actx, "-again", "d1", "d3"); !events.IsConflict(err) {
		t.Fatalf("creating d1 again: %v, want a conflict", err)
	}
	if taken() {
		t.Error("a refused append reports its claims taken")
	}
	if got, err := b.Claim(ctx, "node-b", []string{"d3"}, time.Minute); err != nil || len(got) != 1 {
		t.Fatalf("another node claimed %v (%v) of d3, which a refused append was to claim; want it", got, err)
	}
	if err := a.Release(ctx, again); err != nil {
		t.Fatal(err)
	}

	// The claims release as any claim does.
	if err := a.Release(ctx, claims); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Claim(ctx, "node-b", []string{"d1", "d2"}, time.Minute); err != nil || !slices.Equal(ids(got), []string{"d1", "d2"}) {
		t.Fatalf("after the release another node claimed %v (%v), want d1 and d2", got, err)
	}

	// Without RideAppends the caller claims as usual.
	if _, _, taken := b.ClaimWithAppend(ctx, "node-b", []string{"d4"}, time.Minute); taken != nil {
		t.Error("ClaimWithAppend without RideAppends claims")
	}
}

// An attempt's outcome appended with ReleaseWithAppend's context releases
// its claim in the append's transaction; a claim row another transaction
// has locked (a claimer about to look at taking it over) is left, without
// holding the append up, and reported not released.
func TestReleaseWithAppendReleasesInTheAppendsTransaction(t *testing.T) {
	ctx := context.Background()
	db, es, a, b := ridingClaims(t)
	outcome := func(ctx context.Context, id string) {
		t.Helper()
		ev := events.Proposed{ID: "outcome-" + id, Type: "test.attempted", Data: []byte(`{}`), Meta: []byte(`{"actor":"t"}`)}
		if _, err := es.Append(ctx, domain.DeliveryStream(id), events.Any(), ev); err != nil {
			t.Fatal(err)
		}
	}
	claims, err := a.Claim(ctx, "node-a", []string{"d1", "d2"}, time.Minute)
	if err != nil || len(claims) != 2 {
		t.Fatalf("claim: %v %v", claims, err)
	}
	byID := map[string]webhooks.Claim{}
	for _, c := range claims {
		byID[c.DeliveryID] = c
	}

	rctx, released := a.ReleaseWithAppend(ctx, []webhooks.Claim{byID["d1"]})
	if released == nil {
		t.Fatal("ReleaseWithAppend under RideAppends cannot release")
	}
	outcome(rctx, "d1")
	if !released() {
		t.Error("the outcome's append did not report d1's claim released")
	}
	if got, err := b.Claim(ctx, "node-b", []string{"d1"}, time.Minute); err != nil || len(got) != 1 {
		t.Fatalf("after the outcome another node claimed %v (%v) of d1, want it", got, err)
	}

	// d2's row locked by another transaction: the append does not wait.
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM webhook_delivery_claims WHERE delivery_id = 'd2' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rctx, released = a.ReleaseWithAppend(wctx, []webhooks.Claim{byID["d2"]})
	outcome(rctx, "d2")
	if released() {
		t.Error("a locked claim row reported released")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Claim(ctx, "node-b", []string{"d2"}, time.Minute); err != nil || len(got) != 0 {
		t.Fatalf("another node claimed %v (%v) of d2, whose claim was left held", got, err)
	}
	if err := a.Release(ctx, []webhooks.Claim{byID["d2"]}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Claim(ctx, "node-b", []string{"d2"}, time.Minute); err != nil || len(got) != 1 {
		t.Fatalf("after its release another node claimed %v (%v) of d2, want it", got, err)
	}

	if _, released := b.ReleaseWithAppend(ctx, claims); released != nil {
		t.Error("ReleaseWithAppend without RideAppends releases")
	}
}
