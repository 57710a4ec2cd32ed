package commands

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

var (
	keyAt    = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	keyReq   = KeyRequest{Method: "POST", Path: "/open/v1/things", BodySHA256: "aa"}
	keyTTL   = DefaultKeyTTL
	keyLease = DefaultKeyLease
)

func claimedAt(at time.Time, req KeyRequest) catalog.IdempotencyClaimed {
	return catalog.IdempotencyClaimed{AppID: 1, Method: req.Method, Path: req.Path, BodySHA256: req.BodySHA256, ClaimedAt: at}
}

// Given a key's history, when a request with a fingerprint arrives at a
// time, then the record means free, in progress, replay or reused.
func TestDecideKey(t *testing.T) {
	completed := catalog.IdempotencyCompleted{AppID: 1, Status: 201, SealedBody: "x", CompletedAt: keyAt}
	released := catalog.IdempotencyReleased{AppID: 1, Status: 500, ReleasedAt: keyAt}
	other := keyReq
	other.BodySHA256 = "bb"
	for _, c := range []struct {
		name  string
		given []events.Payload
		req   KeyRequest
		now   time.Time
		want  KeyStatus
	}{
		{"never used", nil, keyReq, keyAt, KeyFree},
		{"claimed, within the lease", []events.Payload{claimedAt(keyAt, keyReq)}, keyReq, keyAt.Add(keyLease - time.Second), KeyInProgress},
		{"claimed, the lease lapsed (its node died)", []events.Payload{claimedAt(keyAt, keyReq)}, keyReq, keyAt.Add(keyLease), KeyFree},
		{"claimed for another request", []events.Payload{claimedAt(keyAt, keyReq)}, other, keyAt, KeyReused},
		{"answered", []events.Payload{claimedAt(keyAt, keyReq), completed}, keyReq, keyAt.Add(keyTTL - time.Second), KeyReplay},
		{"answered for another request", []events.Payload{claimedAt(keyAt, keyReq), completed}, other, keyAt, KeyReused},
		{"answered, past the TTL", []events.Payload{claimedAt(keyAt, keyReq), completed}, other, keyAt.Add(keyTTL), KeyFree},
		{"released (5xx)", []events.Payload{claimedAt(keyAt, keyReq), released}, other, keyAt, KeyFree},
		{"released, then claimed again", []events.Payload{claimedAt(keyAt, keyReq), released, claimedAt(keyAt, keyReq)}, keyReq, keyAt, KeyInProgress},
	} {
		rec := given(t, &KeyRecord{}, c.given...)
		if got := decideKey(rec, c.req, c.now, keyTTL, keyLease); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		status, ps := decideClaim(rec, 1, c.req, c.now, keyTTL, keyLease)
		if status != c.want || (len(ps) == 1) != (c.want == KeyFree) {
			t.Errorf("%s: claim decided %v %v; want %v and a claim only when free", c.name, status, ps, c.want)
		}
	}
}

// Given a claimed key, when its request ends, then a kept answer completes
// the generation, a 5xx or a concurrency conflict releases it, and a claim
// taken over since is not finished at all.
func TestDecideFinish(t *testing.T) {
	rec := given(t, &KeyRecord{}, claimedAt(keyAt, keyReq))
	for _, c := range []struct {
		a    KeyAnswer
		want string
	}{
		{KeyAnswer{Status: 201, SealedBody: "s"}, "idempotency.completed"},
		{KeyAnswer{Status: 422, Code: "VALIDATION_ERROR", SealedBody: "s"}, "idempotency.completed"},
		{KeyAnswer{Status: 500, Code: "INTERNAL_ERROR"}, "idempotency.released"},
		{KeyAnswer{Status: 409, Code: "CONCURRENT_MODIFICATION"}, "idempotency.released"},
	} {
		ps, err := decideFinish(rec, 1, 0, c.a, keyAt)
		if err != nil || len(ps) != 1 || ps[0].EventType() != c.want {
			t.Errorf("%+v: %v %v, want %s", c.a, ps, err, c.want)
		}
	}
	takenOver := given(t, &KeyRecord{}, claimedAt(keyAt, keyReq), claimedAt(keyAt.Add(keyLease), keyReq))
	if ps, err := decideFinish(takenOver, 1, 0, KeyAnswer{Status: 201}, keyAt); !errors.Is(err, errClaimLost) || ps != nil {
		t.Fatalf("finish of a claim taken over: %v %v, want errClaimLost", ps, err)
	}
}

// Given requests with one key racing on two handlers (nodes), when they
// claim, then exactly one holds the key; its answer is recorded right after
// its claim and the others then find it to replay. A claim taken over after
// its lease records nothing.
func TestClaimsOfOneKeyHaveOneWinner(t *testing.T) {
	eventStores(t, func(t *testing.T, store events.Store) {
		nodes := []*IdempotencyKeys{NewIdempotencyKeys(store, catalog.Registry(), 0, 0), NewIdempotencyKeys(store, catalog.Registry(), 0, 0)}
		const n = 8
		var wg sync.WaitGroup
		won := make(chan KeyRecord, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k := nodes[i%2]
				rec, st, err := k.Look(ctx, 1, "k1", keyReq, keyAt)
				if err != nil || st != KeyFree {
					return
				}
				rec, st, err = k.Claim(ctx, rec, 1, "k1", keyReq, keyAt, Meta{AppID: 1})
				if err != nil {
					t.Error(err)
				}
				if st == KeyFree {
					won <- rec
				}
			}()
		}
		wg.Wait()
		close(won)
		if len(won) != 1 {
			t.Fatalf("%d requests hold the key, want 1", len(won))
		}
		rec := <-won
		if err := nodes[0].Finish(ctx, rec, 1, "k1", KeyAnswer{Status: 201, SealedBody: "sealed"}, keyAt, Meta{AppID: 1}); err != nil {
			t.Fatal(err)
		}
		got, st, err := nodes[1].Look(ctx, 1, "k1", keyReq, keyAt.Add(time.Second))
		if answer, at := got.Answer(); err != nil || st != KeyReplay || answer.SealedBody != "sealed" || at.IsZero() {
			t.Fatalf("after the answer: %v %v %+v", st, err, answer)
		}

		// A claim whose lease lapsed is taken over; the first claimant's
		// late answer is then refused and appends nothing.
		late, _, _ := nodes[0].Look(ctx, 1, "k2", keyReq, keyAt)
		late, _, _ = nodes[0].Claim(ctx, late, 1, "k2", keyReq, keyAt, Meta{AppID: 1})
		next, st, err := nodes[1].Look(ctx, 1, "k2", keyReq, keyAt.Add(keyLease))
		if err != nil || st != KeyFree {
			t.Fatalf("after the lease: %v %v", st, err)
		}
		if _, st, err := nodes[1].Claim(ctx, next, 1, "k2", keyReq, keyAt.Add(keyLease), Meta{AppID: 1}); err != nil || st != KeyFree {
			t.Fatalf("take over: %v %v", st, err)
		}
		if err := nodes[0].Finish(ctx, late, 1, "k2", KeyAnswer{Status: 201, SealedBody: "late"}, keyAt, Meta{AppID: 1}); !errors.Is(err, errClaimLost) {
			t.Fatalf("late finish: %v, want errClaimLost", err)
		}
		recs, err := store.ReadStream(ctx, domain.IdempotencyStream(1, "k2"), 0, 0)
		if err != nil || len(recs) != 2 {
			t.Fatalf("stream holds %d events (%v), want the two claims only", len(recs), err)
		}
	})
}
