package commands

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// staticProviders answers the provider lookup without a read model.
type staticProviders map[int64][]int64

func (s staticProviders) ProviderIDs(_ context.Context, appID int64) ([]int64, error) {
	return s[appID], nil
}
func (s staticProviders) FulfillmentIssuer(context.Context, int64) (int64, bool, error) {
	return 0, false, nil
}

// benefitFixture: one active item, one approved provider (app 2) allowed to
// verify it, one card (issued by app 1) holding remaining of it.
func benefitFixture(t *testing.T, store events.Store, remaining int64, cooldown time.Duration) (*Benefits, string, int64) {
	t.Helper()
	reg := catalog.Registry()
	ids := NewAllocator(store, reg, 20)
	providers := staticProviders{}
	b := NewBenefits(store, reg, ids, time.Now, cooldown, providers)
	item, _, err := b.CreateItem(ctx, "annual check", Meta{})
	if err != nil {
		t.Fatal(err)
	}
	pid, _, err := b.RegisterProvider(ctx, ProviderInput{AppID: 2, Name: "clinic", Type: ProviderService, Contact: "x"}, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	providers[2] = []int64{pid}
	if _, err := b.ReviewProvider(ctx, pid, true, "", Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ConfigureItems(ctx, pid, []int64{item}, Meta{}); err != nil {
		t.Fatal(err)
	}
	cards, err := b.IssueCards(ctx, 1, []CardInput{{HolderName: "李雷", ExpiresAt: time.Now().Add(time.Hour), Items: []CardItemInput{{BenefitItemID: item, Quantity: remaining}}}}, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	return b, cards[0].CardNumber, item
}

func TestNoOverConsumptionOnEveryAdapter(t *testing.T) {
	eventStores(t, func(t *testing.T, store events.Store) {
		// Two handlers share the store, as two nodes would: the in-process
		// lock serialises each, the expected revision decides between them.
		b, card, item := benefitFixture(t, store, 10, 0)
		other := NewBenefits(store, b.reg, NewAllocator(store, b.reg, 20), time.Now, 0, b.providers)
		var ok, quota atomic.Int64
		var wg sync.WaitGroup
		for i := range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h := b
				if i%2 == 1 {
					h = other
				}
				_, err := h.Verify(ctx, 2, VerifyInput{CardNumber: card, BenefitItemID: &item, Quantity: 1}, Meta{})
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, domain.ErrNoRemainingQuota):
					quota.Add(1)
				default:
					t.Errorf("verify: %v", err)
				}
			}()
		}
		wg.Wait()
		if ok.Load() != 10 || quota.Load() != 190 {
			t.Fatalf("%d successes, %d quota refusals", ok.Load(), quota.Load())
		}
		var st cardState
		if _, _, err := b.load(ctx, domain.CardStream(card), st.apply); err != nil {
			t.Fatal(err)
		}
		for _, r := range st.remaining {
			if r != 0 {
				t.Fatalf("remaining %d", r)
			}
		}
	})
}

func TestVerifyRefusals(t *testing.T) {
	store := newScenario(t).store
	b, card, item := benefitFixture(t, store, 3, time.Minute)
	one := int64(999)
	cases := []struct {
		name string
		app  int64
		in   VerifyInput
		want error
	}{
		{"unknown card", 2, VerifyInput{CardNumber: "999999999999999", BenefitItemID: &item, Quantity: 1}, domain.ErrCardNotFound},
		{"item not on card", 2, VerifyInput{CardNumber: card, UserBenefitItemID: &one, Quantity: 1}, domain.ErrCardNotFound},
		// Decided from the caller's configuration alone, card or no card.
		{"item not allowed", 2, VerifyInput{CardNumber: card, BenefitItemID: &one, Quantity: 1}, domain.ErrProviderUnauthorized},
		{"item not allowed, unknown card", 2, VerifyInput{CardNumber: "999999999999999", BenefitItemID: &one, Quantity: 1}, domain.ErrProviderUnauthorized},
		{"not a provider", 3, VerifyInput{CardNumber: card, BenefitItemID: &item, Quantity: 1}, domain.ErrProviderUnauthorized},
		{"too many", 2, VerifyInput{CardNumber: card, BenefitItemID: &item, Quantity: 4}, domain.ErrNoRemainingQuota},
	}
	for _, c := range cases {
		if _, err := b.Verify(ctx, c.app, c.in, Meta{}); !errors.Is(err, c.want) {
			t.Fatalf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := b.Verify(ctx, 2, VerifyInput{CardNumber: card, BenefitItemID: &item, Quantity: 1}, Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Verify(ctx, 2, VerifyInput{CardNumber: card, BenefitItemID: &item, Quantity: 1}, Meta{}); !errors.Is(err, domain.ErrDuplicateFulfillment) {
		t.Fatalf("within cooldown: %v", err)
	}
	if _, err := b.SetItemStatus(ctx, item, ItemSuspended, Meta{}); err != nil {
		t.Fatal(err)
	}
	b.cooldown = 0
	if _, err := b.Verify(ctx, 2, VerifyInput{CardNumber: card, BenefitItemID: &item, Quantity: 1}, Meta{}); !errors.Is(err, domain.ErrBenefitItemInactive) {
		t.Fatalf("suspended: %v", err)
	}
	b.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	if _, err := b.SetItemStatus(ctx, item, ItemActive, Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Verify(ctx, 2, VerifyInput{CardNumber: card, BenefitItemID: &item, Quantity: 1}, Meta{}); !errors.Is(err, domain.ErrCardExpired) {
		t.Fatalf("expired: %v", err)
	}
}

func TestConcurrentOrderCreatesMakeOneOrder(t *testing.T) {
	eventStores(t, func(t *testing.T, store events.Store) {
		reg := catalog.Registry()
		o := NewOrders(store, reg, NewAllocator(store, reg, 20), time.Now)
		code := fmt.Sprint("G", time.Now().UnixNano())
		if _, _, err := o.CreateGoods(ctx, code, "monitor", Meta{}); err != nil {
			t.Fatal(err)
		}
		in := OrderInput{ThirdOrderID: fmt.Sprint("T", time.Now().UnixNano()), ContactPerson: "Li", ContactPhone: "13812345678", Address: "Beijing",
			Items: []OrderItemIn{{GoodsCode: code, Quantity: 2, UnitPrice: 19900}}}
		var wg sync.WaitGroup
		var created atomic.Int64
		ids := sync.Map{}
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := o.CreateOrder(ctx, 7, in, Meta{})
				if err != nil {
					t.Error(err)
					return
				}
				if res.Created {
					created.Add(1)
				}
				ids.Store(res.OrderID, true)
			}()
		}
		wg.Wait()
		n := 0
		ids.Range(func(any, any) bool { n++; return true })
		if created.Load() != 1 || n != 1 {
			t.Fatalf("created %d, distinct orders %d", created.Load(), n)
		}
		in.Address = "Shanghai"
		if _, err := o.CreateOrder(ctx, 7, in, Meta{}); !errors.Is(err, domain.ErrDuplicateThirdOrder) {
			t.Fatalf("different body, same third_order_id: %v", err)
		}
	})
}

// TestVerifyReadsOtherNodesChanges: verify-use keeps providers, items and
// cards incrementally, yet a change another node appends (the provider's
// allowed items, the item's status, a use of the card) decides the next
// verification here.
func TestVerifyReadsOtherNodesChanges(t *testing.T) {
	store := newScenario(t).store
	b, card, item := benefitFixture(t, store, 5, 0)
	other := NewBenefits(store, b.reg, NewAllocator(store, b.reg, 20), time.Now, 0, b.providers)
	use := VerifyInput{CardNumber: card, BenefitItemID: &item, Quantity: 1}
	if _, err := b.Verify(ctx, 2, use, Meta{}); err != nil {
		t.Fatal(err)
	}
	v, err := other.Verify(ctx, 2, use, Meta{})
	if err != nil || v.Remaining != 3 {
		t.Fatalf("other node: remaining %d, %v", v.Remaining, err)
	}
	if v, err = b.Verify(ctx, 2, use, Meta{}); err != nil || v.Remaining != 2 {
		t.Fatalf("after the other node's use: remaining %d, %v", v.Remaining, err)
	}
	if _, err := other.SetItemStatus(ctx, item, ItemSuspended, Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Verify(ctx, 2, use, Meta{}); !errors.Is(err, domain.ErrBenefitItemInactive) {
		t.Fatalf("item suspended by the other node: %v", err)
	}
	if _, err := other.SetItemStatus(ctx, item, ItemActive, Meta{}); err != nil {
		t.Fatal(err)
	}
	pid := b.providers.(staticProviders)[2][0]
	if _, err := other.ConfigureItems(ctx, pid, []int64{}, Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Verify(ctx, 2, use, Meta{}); !errors.Is(err, domain.ErrProviderUnauthorized) {
		t.Fatalf("item no longer allowed by the other node: %v", err)
	}
	if _, err := other.ConfigureItems(ctx, pid, []int64{item}, Meta{}); err != nil {
		t.Fatal(err)
	}
	if v, err = b.Verify(ctx, 2, use, Meta{}); err != nil || v.Remaining != 1 {
		t.Fatalf("allowed again: remaining %d, %v", v.Remaining, err)
	}
}

// TestCachedCardMatchesReplay: the card state verify-use keeps after its
// own appends is the state a full replay of the card's stream builds.
func TestCachedCardMatchesReplay(t *testing.T) {
	store := newScenario(t).store
	b, card, item := benefitFixture(t, store, 50, 0)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.Verify(ctx, 2, VerifyInput{CardNumber: card, BenefitItemID: &item, Quantity: 2}, Meta{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	cached, version, _, _, err := cards{b: b}.loadLent(ctx, b.streams, domain.CardStream(card)) // nothing leads the card now
	if err != nil {
		t.Fatal(err)
	}
	var st cardState
	v, _, err := b.load(ctx, domain.CardStream(card), st.apply)
	if err != nil {
		t.Fatal(err)
	}
	if version != v || fmt.Sprint(cached.remaining) != fmt.Sprint(st.remaining) || len(cached.lastUse) != len(st.lastUse) {
		t.Fatalf("cached v%d %v %v, replayed v%d %v %v", version, cached.remaining, cached.lastUse, v, st.remaining, st.lastUse)
	}
	for k, at := range st.lastUse {
		if c := cached.lastUse[k]; c != at {
			t.Fatalf("last use %s: cached %v, replayed %v", k, c, at)
		}
	}
	for _, r := range st.remaining {
		if r != 10 {
			t.Fatalf("remaining %d, want 10", r)
		}
	}
}

// TestConcurrentUsesOfOneCardEachGetTheirOwnAnswer: uses of one card that
// queue behind each other (and are decided and appended together) each get
// their own answer: distinct record ids and remaining counts, each use in
// the log once with its own request's metadata; with a cooldown, one use
// per provider succeeds and every other is refused as a duplicate.
func TestConcurrentUsesOfOneCardEachGetTheirOwnAnswer(t *testing.T) {
	eventStores(t, func(t *testing.T, store events.Store) {
		const n = 100
		b, card, item := benefitFixture(t, store, n, 0)
		var mu sync.Mutex
		records, remaining := map[int64]bool{}, map[int64]bool{}
		byRecord := map[int64]string{}
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := fmt.Sprint("req-", i)
				v, err := b.Verify(ctx, 2, VerifyInput{CardNumber: card, BenefitItemID: &item, Quantity: 1}, Meta{RequestID: req})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				records[v.RecordID], remaining[v.Remaining] = true, true
				byRecord[v.RecordID] = req
			}()
		}
		wg.Wait()
		if len(records) != n || len(remaining) != n {
			t.Fatalf("%d distinct record ids and %d distinct remaining counts for %d uses", len(records), len(remaining), n)
		}
		for r := range int64(n) {
			if !remaining[r] {
				t.Fatalf("no use answered remaining %d", r)
			}
		}
		recs, err := store.ReadStream(ctx, domain.CardStream(card), 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != n {
			t.Fatalf("%d uses in the log, want %d", len(recs), n)
		}
		for _, rec := range recs {
			env, err := b.reg.Decode(rec)
			if err != nil {
				t.Fatal(err)
			}
			f := env.Payload.(*catalog.BenefitFulfilled)
			if want := byRecord[f.RecordID]; env.Metadata.RequestID != want || env.Metadata.AppID != 2 {
				t.Fatalf("record %d logged with request %q app %d, answered to %q", f.RecordID, env.Metadata.RequestID, env.Metadata.AppID, want)
			}
		}
		if _, err := b.Verify(ctx, 2, VerifyInput{CardNumber: card, BenefitItemID: &item, Quantity: 1}, Meta{}); !errors.Is(err, domain.ErrNoRemainingQuota) {
			t.Fatalf("after the quota: %v", err)
		}

		b, card, item = benefitFixture(t, store, n, time.Minute)
		var ok, dup atomic.Int64
		for range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := b.Verify(ctx, 2, VerifyInput{CardNumber: card, BenefitItemID: &item, Quantity: 1}, Meta{})
				switch {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, domain.ErrDuplicateFulfillment):
					dup.Add(1)
				default:
					t.Errorf("verify: %v", err)
				}
			}()
		}
		wg.Wait()
		if ok.Load() != 1 || dup.Load() != 39 {
			t.Fatalf("within the cooldown: %d successes, %d duplicates", ok.Load(), dup.Load())
		}
	})
}

// TestVerifyRefusalOnACachedCardIsTheCurrentOne: a node decides a use on
// the card it holds without reading the card's stream, and the append's
// expected version catches a use by another node; a refusal appends
// nothing, so it must still be the one the card's current state gives.
// Here this node holds remaining 1 with no use by the clinic; the other
// node's use through the clinic (within the cooldown) leaves 0: a use of 2
// through the clinic is DUPLICATE_FULFILLMENT (the cached card would say
// NO_REMAINING_QUOTA).
func TestVerifyRefusalOnACachedCardIsTheCurrentOne(t *testing.T) {
	eventStores(t, func(t *testing.T, store events.Store) {
		b, card, item := benefitFixture(t, store, 2, time.Minute)
		other := NewBenefits(store, b.reg, NewAllocator(store, b.reg, 20), time.Now, time.Minute, b.providers)
		station, _, err := b.RegisterProvider(ctx, ProviderInput{AppID: 3, Name: "second clinic", Type: ProviderService, Contact: "y"}, Meta{})
		if err != nil {
			t.Fatal(err)
		}
		b.providers.(staticProviders)[3] = []int64{station}
		if _, err := b.ReviewProvider(ctx, station, true, "", Meta{}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.ConfigureItems(ctx, station, []int64{item}, Meta{}); err != nil {
			t.Fatal(err)
		}
		use := func(h *Benefits, app, quantity int64) (Verified, error) {
			return h.Verify(ctx, app, VerifyInput{CardNumber: card, BenefitItemID: &item, Quantity: quantity}, Meta{})
		}
		if v, err := use(b, 3, 1); err != nil || v.Remaining != 1 {
			t.Fatalf("use through the second clinic: remaining %d, %v", v.Remaining, err)
		}
		if v, err := use(other, 2, 1); err != nil || v.Remaining != 0 {
			t.Fatalf("use through the clinic on the other node: remaining %d, %v", v.Remaining, err)
		}
		if _, err := use(b, 2, 2); !errors.Is(err, domain.ErrDuplicateFulfillment) {
			t.Fatalf("use of 2 through the clinic after the other node's: %v, want %v", err, domain.ErrDuplicateFulfillment)
		}
	})
}
