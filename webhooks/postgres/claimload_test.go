package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/webhooks"
	"github.com/healthtech/partner-open-platform/webhooks/postgres"
)

// opened marks what ClaimLoading's open made of a stored event, so the
// test sees every returned event went through it.
func opened(_ context.Context, r events.Recorded) (events.Recorded, error) {
	r.Data = append([]byte(`{"opened":`), append(bytes.Clone(r.Data), '}')...)
	return r, nil
}

// With the event store in its database, a claim also reads the claimed
// deliveries' streams, in the claim's one round trip (with the release of
// earlier claims too): each stream as ReadStream reads it, opened by the
// given open; a delivery another node holds, or one left unclaimed, comes
// back without its stream. The stream is read after the claim was taken:
// an outcome another node appended before releasing the claim is in it.
func TestClaimLoadingReadsTheClaimedStreamsInItsRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	es, err := pgevents.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { es.Close() })
	appendTo := func(id string, n int) {
		t.Helper()
		evs := make([]events.Proposed, n)
		for i := range evs {
			evs[i] = events.Proposed{ID: fmt.Sprintf("%s-%d-%d", id, time.Now().UnixNano(), i), Type: "test.event",
				Data: []byte(fmt.Sprintf(`{"n":%d}`, i)), Meta: []byte(`{"actor":"t"}`)}
		}
		if _, err := es.Append(ctx, domain.DeliveryStream(id), events.Any(), evs...); err != nil {
			t.Fatal(err)
		}
	}
	appendTo("d1", 1)
	appendTo("d2", 3)
	appendTo("d4", 1)
	appendTo("d5", 1)
	appendTo("other", 2)

	pool, count := pgtest.TracedPool(t, db)
	a, err := postgres.New(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	a.ReadStreams(pgevents.StreamsQuery, pgevents.CollectStreams, opened)
	b, err := postgres.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })

	// The first claim connects the claims session.
	first, err := a.ClaimLoading(ctx, nil, "node-a", []string{"d1"}, time.Minute)
	if err != nil || len(first.Claimed) != 1 || len(first.Streams["d1"]) != 1 {
		t.Fatalf("first claim: %+v %v", first, err)
	}
	if _, err := b.Claim(ctx, "node-b", []string{"d4"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	before := count.RoundTrips()
	got, err := a.ClaimLoading(ctx, first.Claimed, "node-a", []string{"d2", "d3", "d4"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if n := count.RoundTrips() - before; n != 1 {
		t.Errorf("claim, release and read: %d round trips, want 1", n)
	}
	ids := []string{}
	for _, c := range got.Claimed {
		ids = append(ids, c.DeliveryID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"d2", "d3"}) || len(got.Unreleased) != 0 {
		t.Fatalf("claimed %v, unreleased %v; want d2 and d3, none", ids, got.Unreleased)
	}
	want, err := es.ReadStream(ctx, domain.DeliveryStream("d2"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		want[i], _ = opened(ctx, want[i])
	}
	if !reflect.DeepEqual(got.Streams["d2"], want) {
		t.Errorf("d2's stream with its claim:\n%+v\nwant as ReadStream reads it, opened:\n%+v", got.Streams["d2"], want)
	}
	if s, ok := got.Streams["d3"]; ok {
		t.Errorf("d3 has no stream, got %v", s)
	}
	if s, ok := got.Streams["d4"]; ok {
		t.Errorf("d4 is node-b's claim, yet its stream came back: %v", s)
	}
	// d1's claim was released with it: node-b can take d1 now.
	if c, err := b.Claim(ctx, "node-b", []string{"d1"}, time.Minute); err != nil || len(c) != 1 {
		t.Fatalf("d1 after its release: %v %v", c, err)
	}

	// Node b attempts d5, appends its outcome and releases; node a's next
	// claim of d5 reads the stream with that outcome.
	held, err := b.Claim(ctx, "node-b", []string{"d5"}, time.Minute)
	if err != nil || len(held) != 1 {
		t.Fatalf("node-b's claim of d5: %v %v", held, err)
	}
	if got, err := a.ClaimLoading(ctx, nil, "node-a", []string{"d5"}, time.Minute); err != nil || len(got.Claimed) != 0 || got.Streams["d5"] != nil {
		t.Fatalf("d5 while node-b holds it: %+v %v", got, err)
	}
	appendTo("d5", 1)
	if err := b.Release(ctx, held); err != nil {
		t.Fatal(err)
	}
	got, err = a.ClaimLoading(ctx, nil, "node-a", []string{"d5"}, time.Minute)
	if err != nil || len(got.Claimed) != 1 {
		t.Fatalf("d5 after node-b released it: %+v %v", got, err)
	}
	if n := len(got.Streams["d5"]); n != 2 {
		t.Errorf("d5's stream with its claim has %d events, want 2 (node-b's outcome included)", n)
	}
}

// Without ReadStreams a claim reads no streams: the sender's attempts read
// their own.
func TestClaimLoadingWithoutStreamsIsReleaseAndClaim(t *testing.T) {
	ctx := context.Background()
	c, err := postgres.Open(ctx, pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	got, err := c.ClaimLoading(ctx, nil, "n", []string{"x", "y"}, time.Minute)
	if err != nil || len(got.Claimed) != 2 || got.Streams != nil {
		t.Fatalf("%+v %v, want both claimed and no streams", got, err)
	}
	var _ webhooks.LoadingClaims = c
}
