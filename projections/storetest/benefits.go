package storetest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// benefitCases are the cases of the benefits sub-suite.
var benefitCases = []testCase{
	{"BenefitItemsRoundTripAndOrder", testBenefitItems},
	{"ProvidersRoundTripAndFilter", testProviders},
	{"ProvidersOfADeveloper", testDeveloperProviders},
	{"CardRoundTripAndTenancy", testCards},
	{"CardItemsReplacedAndUnique", testCardItems},
	{"FulfillmentRoundTrip", testFulfillmentRoundTrip},
	{"BenefitTxReadsSeeOwnWrites", testBenefitTxReads},
	{"FailedUpdateChangesNoBenefits", testFailedUpdateBenefits},
	{"FulfillmentsFiltersOrderAndPaging", testFulfillmentsFilters},
	{"FulfillmentsLimits", testFulfillmentsLimits},
	{"FulfillmentsOfProviderAppOnePage", testFulfillmentsOfProviderApp},
}

// The benefit cases of Run, and the Reset of goods, orders and benefits.
// Every read-model store is also the benefit store, and its Update
// transaction is also a projections.BenefitTx, so a store without them
// fails these cases.

// ---- benefit fixtures ----

// cardNumber is the n-th fixture card number: 15 characters, like real ones.
func cardNumber(n int) string { return fmt.Sprintf("6200%011d", n) }

func benefitItemOf(id int64) projections.BenefitItem {
	return projections.BenefitItem{
		BenefitItemID: id,
		Name:          fmt.Sprintf("体检 %d", id),
		Status:        "ACTIVE",
		CreatedAt:     at(int(id)),
		UpdatedAt:     at(int(id) + 1),
	}
}

func providerOf(app, id int64) projections.ServiceProvider {
	return projections.ServiceProvider{
		ProviderID:     id,
		AppID:          app,
		Name:           fmt.Sprintf("健康小站 %d", id),
		Type:           "HEALTH_STATION",
		Contact:        "13900139000",
		PointsCode:     ptr(fmt.Sprintf("PC-%d", id)),
		Status:         "APPROVED",
		AllowedItemIDs: []int64{1, 2},
		CreatedAt:      at(int(id)),
		UpdatedAt:      at(int(id) + 1),
	}
}

// cardOf is card number n of issuer holding the given user benefit items.
func cardOf(issuer int64, n int, ubis ...int64) projections.Card {
	c := projections.Card{
		CardNumber:  cardNumber(n),
		IssuerAppID: issuer,
		HolderName:  fmt.Sprintf("持卡人 %d", n),
		HolderPhone: ptr("13800138000"),
		ExpiresAt:   at(1_000_000 + n),
		CreatedAt:   at(n),
		UpdatedAt:   at(n + 1),
	}
	for _, id := range ubis {
		c.Items = append(c.Items, projections.CardItem{UserBenefitItemID: id, BenefitItemID: id%3 + 1, Total: 5, Remaining: 5})
	}
	return c
}

func fulfillmentOf(id, provider, issuer int64, card string) projections.Fulfillment {
	return projections.Fulfillment{
		RecordID:          id,
		CardNumber:        card,
		IssuerAppID:       issuer,
		UserBenefitItemID: id + 100,
		BenefitItemID:     id%3 + 1,
		BenefitItemName:   "体检",
		ProviderID:        provider,
		ProviderAppID:     provider + 500,
		Quantity:          1,
		Status:            "COMPLETED",
		PointsCode:        ptr("PC-1"),
		InitiatedAt:       at(int(id)),
		UpdatedAt:         at(int(id) + 1),
	}
}

// sortedCard is c as the stores return it: its items in UserBenefitItemID order.
func sortedCard(c projections.Card) projections.Card {
	c.Items = slices.Clone(c.Items)
	slices.SortStableFunc(c.Items, func(a, b projections.CardItem) int {
		return cmp.Compare(a.UserBenefitItemID, b.UserBenefitItemID)
	})
	return c
}

// ascendingSet is p as the stores return it: AllowedItemIDs ascending, without repeats.
func ascendingSet(p projections.ServiceProvider) projections.ServiceProvider {
	p.AllowedItemIDs = slices.Compact(slices.Sorted(slices.Values(p.AllowedItemIDs)))
	return p
}

// ---- benefit helpers ----

func putBenefitItems(t *testing.T, s Store, rows ...projections.BenefitItem) {
	t.Helper()
	putRows(t, benefitsOf(s), projections.BenefitTx.PutBenefitItem, rows...)
}

func putProviders(t *testing.T, s Store, rows ...projections.ServiceProvider) {
	t.Helper()
	putRows(t, benefitsOf(s), projections.BenefitTx.PutProvider, rows...)
}

func putCards(t *testing.T, s Store, rows ...projections.Card) {
	t.Helper()
	putRows(t, benefitsOf(s), projections.BenefitTx.PutCard, rows...)
}

func putFulfillments(t *testing.T, s Store, rows ...projections.Fulfillment) {
	t.Helper()
	putRows(t, benefitsOf(s), projections.BenefitTx.PutFulfillment, rows...)
}

// fulfillmentModel is what Fulfillments must answer, computed the obvious way.
type fulfillmentModel map[int64]projections.Fulfillment

func (m fulfillmentModel) put(rs ...projections.Fulfillment) {
	for _, r := range rs {
		m[r.RecordID] = r
	}
}

func (m fulfillmentModel) list(f projections.FulfillmentFilter) []projections.Fulfillment {
	var out []projections.Fulfillment
	for _, r := range m {
		if (f.ProviderID != 0 && r.ProviderID != f.ProviderID) ||
			(f.IssuerAppID != 0 && r.IssuerAppID != f.IssuerAppID) ||
			(f.CardNumber != "" && r.CardNumber != f.CardNumber) ||
			r.RecordID <= f.After {
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b projections.Fulfillment) int { return cmp.Compare(a.RecordID, b.RecordID) })
	return out[:min(len(out), limitOf(f.Limit, 100, 1000))]
}

// ---- benefit cases ----

func testBenefitItems(t *testing.T, s Store) {
	if l := must(s.BenefitItems(ctx))(t); len(l) != 0 {
		t.Fatalf("BenefitItems of an empty store = %v", ids(l))
	}
	full := projections.BenefitItem{
		BenefitItemID: 1<<63 - 1,
		Name:          "年度体检 Zoë 🙂\n\"套餐\"",
		Status:        "SUSPENDED",
		CreatedAt:     time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.FixedZone("CST", 8*3600)),
		UpdatedAt:     time.Date(2038, 1, 19, 3, 14, 8, 1000, time.UTC),
	}
	bare := projections.BenefitItem{BenefitItemID: 0, CreatedAt: at(0), UpdatedAt: at(0)}
	b3, b1 := benefitItemOf(30), benefitItemOf(10)
	putBenefitItems(t, s, b3, full, b1, bare)
	want := []projections.BenefitItem{bare, b1, b3, full}
	wantRows(t, "BenefitItems", must(s.BenefitItems(ctx))(t), want)

	// The projector's status change: read, change, write, read again.
	write(t, benefitsOf(s), func(tx projections.BenefitTx) error {
		_, err := tx.BenefitItem(ctx, 424242)
		wantNotFound(t, "Tx.BenefitItem(unknown)", err)
		got, err := tx.BenefitItem(ctx, b1.BenefitItemID)
		if err != nil {
			return err
		}
		wantRow(t, "Tx.BenefitItem", got, b1)
		got.Status, got.UpdatedAt = "SUSPENDED", at(99)
		if err := tx.PutBenefitItem(ctx, got); err != nil {
			return err
		}
		again, err := tx.BenefitItem(ctx, b1.BenefitItemID)
		if err != nil {
			return err
		}
		wantRow(t, "Tx.BenefitItem after PutBenefitItem", again, got)
		b1 = got
		return nil
	})

	want = []projections.BenefitItem{bare, b1, b3, full}
	wantRows(t, "BenefitItems after a status change", must(s.BenefitItems(ctx))(t), want)
	l := must(s.BenefitItems(ctx))(t)
	l[1].Name = "mutated" // results are copies
	wantRows(t, "BenefitItems after a caller mutated a result", must(s.BenefitItems(ctx))(t), want)
}

func testProviders(t *testing.T, s Store) {
	full := projections.ServiceProvider{
		ProviderID:     1 << 62,
		AppID:          5,
		Name:           "Zoë 健康小站 🙂",
		Type:           "HEALTH_STATION",
		Contact:        "+86 139 0013 9000\n王",
		PointsCode:     ptr("PC-ü-1"),
		Status:         "APPROVED",
		AllowedItemIDs: []int64{5, 1, 3, 1, -2, 1 << 62, 5}, // sorted and de-duplicated by the stores
		CreatedAt:      time.Date(2020, 2, 29, 0, 0, 0, 1000, time.FixedZone("X", -7*3600)),
		UpdatedAt:      at(3),
	}
	bare := projections.ServiceProvider{ProviderID: 2, AppID: 5, CreatedAt: at(0), UpdatedAt: at(0)} // nil list reads back empty
	zeroes := projections.ServiceProvider{ProviderID: 3, AppID: 6, PointsCode: ptr(""), AllowedItemIDs: []int64{0},
		CreatedAt: at(0), UpdatedAt: at(0)}
	other := providerOf(7, 4)
	write(t, benefitsOf(s), func(tx projections.BenefitTx) error {
		// The caller may reuse its buffers once PutProvider returns.
		p := full
		p.AllowedItemIDs, p.PointsCode = slices.Clone(full.AllowedItemIDs), ptr(*full.PointsCode)
		if err := tx.PutProvider(ctx, p); err != nil {
			return err
		}
		p.AllowedItemIDs[0], *p.PointsCode = 77, "reused"
		for _, p := range []projections.ServiceProvider{other, zeroes, bare} {
			if err := tx.PutProvider(ctx, p); err != nil {
				return err
			}
		}
		return nil
	})

	sorted := ascendingSet(full)
	if !slices.Equal(sorted.AllowedItemIDs, []int64{-2, 1, 3, 5, 1 << 62}) {
		t.Fatalf("the suite's ascendingSet is wrong: %v", sorted.AllowedItemIDs)
	}
	wantRows(t, "Providers(all)", must(s.Providers(ctx, 0))(t), []projections.ServiceProvider{bare, zeroes, other, sorted})
	wantRows(t, "Providers(app 5)", must(s.Providers(ctx, 5))(t), []projections.ServiceProvider{bare, sorted})
	wantRows(t, "Providers(app 6)", must(s.Providers(ctx, 6))(t), []projections.ServiceProvider{zeroes})
	wantRows(t, "Providers(app 99)", must(s.Providers(ctx, 99))(t), nil)

	write(t, benefitsOf(s), func(tx projections.BenefitTx) error {
		got, err := tx.Provider(ctx, full.ProviderID)
		if err != nil {
			return err
		}
		wantRow(t, "Tx.Provider", got, sorted)
		_, err = tx.Provider(ctx, 424242)
		wantNotFound(t, "Tx.Provider(unknown)", err)
		got.AllowedItemIDs[0], *got.PointsCode = 99, "mutated" // a copy
		return nil
	})

	l := must(s.Providers(ctx, 0))(t)
	l[3].AllowedItemIDs[1], *l[3].PointsCode = 99, "mutated"
	wantRows(t, "Providers after callers mutated results", must(s.Providers(ctx, 5))(t), []projections.ServiceProvider{bare, sorted})

	// Replacing sets the pointer back to nil, empties the list and moves the provider.
	repl := projections.ServiceProvider{ProviderID: full.ProviderID, AppID: 6, Name: "renamed", Type: "SERVICE_PROVIDER",
		Status: "REJECTED", AllowedItemIDs: []int64{}, CreatedAt: at(10), UpdatedAt: at(11)}
	putProviders(t, s, repl)
	wantRows(t, "Providers(app 5) after a move", must(s.Providers(ctx, 5))(t), []projections.ServiceProvider{bare})
	wantRows(t, "Providers(app 6) after a move", must(s.Providers(ctx, 6))(t), []projections.ServiceProvider{zeroes, repl})
	wantRows(t, "Providers(all) after a move", must(s.Providers(ctx, 0))(t), []projections.ServiceProvider{bare, zeroes, other, repl})
}

// testDeveloperProviders: the portal lists a developer's own providers,
// follows a row that changes developer, and lists none for developer 0
// (providers registered through the partner API belong to no developer).
func testDeveloperProviders(t *testing.T, s Store) {
	mine, theirs, api, mine2 := providerOf(5, 10), providerOf(5, 11), providerOf(5, 12), providerOf(6, 13)
	mine.DeveloperID, theirs.DeveloperID, mine2.DeveloperID = 7, 8, 7
	putProviders(t, s, mine2, theirs, api, mine)
	wantRows(t, "DeveloperProviders(7)", must(s.DeveloperProviders(ctx, 7))(t), []projections.ServiceProvider{mine, mine2})
	wantRows(t, "DeveloperProviders(8)", must(s.DeveloperProviders(ctx, 8))(t), []projections.ServiceProvider{theirs})
	wantRows(t, "DeveloperProviders(0)", must(s.DeveloperProviders(ctx, 0))(t), nil)
	wantRows(t, "DeveloperProviders(99)", must(s.DeveloperProviders(ctx, 99))(t), nil)
	wantRows(t, "Providers(app 5) carries the developer", must(s.Providers(ctx, 5))(t), []projections.ServiceProvider{mine, theirs, api})

	moved := mine
	moved.DeveloperID, moved.Status, moved.ReviewNotes = 8, "REJECTED", "没有执照 (no licence)"
	putProviders(t, s, moved)
	wantRows(t, "DeveloperProviders(7) after a move", must(s.DeveloperProviders(ctx, 7))(t), []projections.ServiceProvider{mine2})
	wantRows(t, "DeveloperProviders(8) after a move", must(s.DeveloperProviders(ctx, 8))(t), []projections.ServiceProvider{moved, theirs})
	l := must(s.DeveloperProviders(ctx, 8))(t)
	l[0].AllowedItemIDs[0], l[0].Name = 99, "mutated" // results are copies
	wantRows(t, "DeveloperProviders after a caller mutated a result", must(s.DeveloperProviders(ctx, 8))(t), []projections.ServiceProvider{moved, theirs})
}

func testCards(t *testing.T, s Store) {
	full := projections.Card{
		CardNumber:  "6200-渠道-🙂",
		IssuerAppID: 1 << 40,
		HolderName:  "Zoë 王小明\n",
		HolderPhone: ptr("+86 138 0013 8000"),
		ExpiresAt:   time.Date(2038, 1, 19, 3, 14, 8, 999999000, time.FixedZone("CST", 8*3600)),
		CreatedAt:   time.Date(1999, 12, 31, 23, 59, 59, 1000, time.UTC),
		UpdatedAt:   at(3),
		Items: []projections.CardItem{ // written out of order
			{UserBenefitItemID: 30, BenefitItemID: 1 << 62, Total: 1<<63 - 1, Remaining: -1},
			{UserBenefitItemID: -10, BenefitItemID: 0, Total: 0, Remaining: 0},
			{UserBenefitItemID: 1<<63 - 1, BenefitItemID: 2, Total: 5, Remaining: 3},
		},
	}
	bare := projections.Card{CardNumber: cardNumber(1), IssuerAppID: 1 << 40, ExpiresAt: at(0), CreatedAt: at(0), UpdatedAt: at(0)}
	zeroes := projections.Card{CardNumber: cardNumber(2), IssuerAppID: 2, HolderPhone: ptr(""), ExpiresAt: at(0),
		CreatedAt: at(0), UpdatedAt: at(0), Items: []projections.CardItem{}}
	write(t, benefitsOf(s), func(tx projections.BenefitTx) error {
		// The caller may reuse its buffers once PutCard returns.
		c := full
		c.Items, c.HolderPhone = slices.Clone(full.Items), ptr(*full.HolderPhone)
		if err := tx.PutCard(ctx, c); err != nil {
			return err
		}
		c.Items[0].Remaining, *c.HolderPhone = 77, "reused"
		if err := tx.PutCard(ctx, bare); err != nil {
			return err
		}
		return tx.PutCard(ctx, zeroes)
	})

	for _, want := range []projections.Card{sortedCard(full), bare, zeroes} {
		wantRow(t, fmt.Sprintf("CardByNumber(issuer, %q)", want.CardNumber), must(s.CardByNumber(ctx, want.IssuerAppID, want.CardNumber))(t), want)
		wantRow(t, fmt.Sprintf("CardByNumber(any, %q)", want.CardNumber), must(s.CardByNumber(ctx, 0, want.CardNumber))(t), want)
	}

	// Tenancy: another issuer cannot see the card; numbers match exactly.
	for _, c := range []struct {
		issuer int64
		number string
	}{{2, full.CardNumber}, {1 << 40, zeroes.CardNumber}, {-1, bare.CardNumber}, {1 << 40, cardNumber(3)},
		{0, cardNumber(3)}, {0, ""}, {1 << 40, bare.CardNumber[:14]}, {1 << 40, bare.CardNumber + " "}, {0, "6200-渠道-🙂 "}} {
		got, err := s.CardByNumber(ctx, c.issuer, c.number)
		wantNotFound(t, fmt.Sprintf("CardByNumber(%d, %q)", c.issuer, c.number), err)
		if err != nil && got.CardNumber != "" {
			t.Errorf("CardByNumber(%d, %q) returned data with its error: %+v", c.issuer, c.number, got)
		}
	}

	// Inside a transaction too, whatever the issuer; what it reads is a copy.
	write(t, benefitsOf(s), func(tx projections.BenefitTx) error {
		got, err := tx.Card(ctx, full.CardNumber)
		if err != nil {
			return err
		}
		wantRow(t, "Tx.Card", got, sortedCard(full))
		_, err = tx.Card(ctx, cardNumber(3))
		wantNotFound(t, "Tx.Card(unknown)", err)
		got.Items[0].Remaining, *got.HolderPhone = 42, "mutated"
		return nil
	})

	got := must(s.CardByNumber(ctx, 0, full.CardNumber))(t)
	got.Items[1].Total, *got.HolderPhone = 42, "mutated"
	wantRow(t, "card after callers mutated results", must(s.CardByNumber(ctx, 0, full.CardNumber))(t), sortedCard(full))

	// Replacing sets the pointer back to nil, and moves the card to another issuer.
	repl := projections.Card{CardNumber: full.CardNumber, IssuerAppID: 2, HolderName: "renamed", ExpiresAt: at(50),
		CreatedAt: at(51), UpdatedAt: at(52), Items: []projections.CardItem{full.Items[0]}}
	putCards(t, s, repl)
	_, err := s.CardByNumber(ctx, 1<<40, full.CardNumber)
	wantNotFound(t, "CardByNumber in the old issuer after a move", err)
	wantRow(t, "card after replace", must(s.CardByNumber(ctx, 2, full.CardNumber))(t), repl)
}

// A card's items are replaced whole, and a user benefit item belongs to one
// card at most: the write that gives it to a second card fails its Update.
func testCardItems(t *testing.T, s Store) {
	a, b := cardOf(1, 1, 1, 2, 3), cardOf(1, 2, 10)
	putCards(t, s, a, b)
	wantRow(t, "card a", must(s.CardByNumber(ctx, 1, a.CardNumber))(t), a)

	// One item goes, one changes, one is new.
	a2 := a
	a2.Items = []projections.CardItem{{UserBenefitItemID: 4, BenefitItemID: 2, Total: 1, Remaining: 1},
		{UserBenefitItemID: 3, BenefitItemID: 1, Total: 5, Remaining: 4}}
	a2.UpdatedAt = at(40)
	putCards(t, s, a2)
	wantRow(t, "card a after replace", must(s.CardByNumber(ctx, 1, a.CardNumber))(t), sortedCard(a2))
	wantRow(t, "card b after a's replace", must(s.CardByNumber(ctx, 1, b.CardNumber))(t), b)

	// The items a gave up are free for another card.
	b2 := cardOf(1, 2, 10, 1, 2)
	putCards(t, s, b2)
	wantRow(t, "card b taking freed items", must(s.CardByNumber(ctx, 1, b.CardNumber))(t), sortedCard(b2))

	// An item a holds is not.
	pos := must(s.Checkpoint(ctx, "benefits"))(t)
	err := try(benefitsOf(s), func(tx projections.BenefitTx) error {
		if err := tx.PutCard(ctx, cardOf(1, 3, 30)); err != nil {
			return err
		}

		return tx.PutCard(ctx, cardOf(1, 2, 10, 3))
	})

	if err == nil {
		t.Fatal("Update giving one user benefit item to two cards succeeded")
	}
	// Nor can one card list an item twice.
	dup := cardOf(1, 4, 40, 41)
	dup.Items = append(dup.Items, dup.Items[0])
	if err := try(benefitsOf(s), func(tx projections.BenefitTx) error { return tx.PutCard(ctx, dup) }); err == nil {
		t.Error("PutCard listing a user benefit item twice succeeded")
	}
	wantCheckpoint(t, s, "benefits", pos)
	wantRow(t, "card a after the refused writes", must(s.CardByNumber(ctx, 1, a.CardNumber))(t), sortedCard(a2))
	wantRow(t, "card b after the refused writes", must(s.CardByNumber(ctx, 1, b.CardNumber))(t), sortedCard(b2))
	for _, n := range []int{3, 4} {
		_, err := s.CardByNumber(ctx, 0, cardNumber(n))
		wantNotFound(t, fmt.Sprintf("card %d of a refused write", n), err)
	}

	// Within one Update, an item freed by one write can be taken by the next.
	a3 := a2
	a3.Items = a2.Items[1:] // drops item 4
	b3 := cardOf(1, 2, 10, 1, 2, 4)
	putCards(t, s, a3, b3)
	wantRow(t, "card a after handing over an item", must(s.CardByNumber(ctx, 1, a.CardNumber))(t), sortedCard(a3))
	wantRow(t, "card b after taking it", must(s.CardByNumber(ctx, 1, b.CardNumber))(t), sortedCard(b3))

	// No items at all (nil as an empty list), then they are free again.
	empty := a3
	empty.Items = nil
	putCards(t, s, empty)
	wantRow(t, "card without items", must(s.CardByNumber(ctx, 1, a.CardNumber))(t), empty)
	putCards(t, s, cardOf(1, 5, 3))
	wantRow(t, "card taking a freed item", must(s.CardByNumber(ctx, 1, cardNumber(5)))(t), cardOf(1, 5, 3))
}

func testFulfillmentRoundTrip(t *testing.T, s Store) {
	full := projections.Fulfillment{
		RecordID:          1<<63 - 1,
		CardNumber:        "6200-渠道-🙂",
		IssuerAppID:       1 << 40,
		UserBenefitItemID: -3,
		BenefitItemID:     1 << 62,
		BenefitItemName:   "年度体检 Zoë\n\"套餐\"",
		ProviderID:        1 << 50,
		ProviderAppID:     -9,
		Quantity:          1<<62 + 1,
		Status:            "CANCELLED",
		PointsCode:        ptr("PC-ü"),
		Remark:            ptr("备注 🙂\tline\nline"),
		InitiatedAt:       time.Date(2024, 3, 5, 23, 59, 59, 999999000, time.FixedZone("CST", 8*3600)),
		Rating:            ptr(5),
		UpdatedAt:         time.Date(1999, 12, 31, 23, 59, 59, 1000, time.UTC),
	}
	bare := projections.Fulfillment{RecordID: 2, CardNumber: full.CardNumber, InitiatedAt: at(0), UpdatedAt: at(0)}
	zeroes := projections.Fulfillment{RecordID: 3, CardNumber: full.CardNumber, PointsCode: ptr(""), Remark: ptr(""),
		Rating: ptr(0), InitiatedAt: at(0), UpdatedAt: at(0)} // zero values are set, not nil
	write(t, benefitsOf(s), func(tx projections.BenefitTx) error {
		r := full
		r.Rating, r.Remark = ptr(*full.Rating), ptr(*full.Remark)
		if err := tx.PutFulfillment(ctx, r); err != nil {
			return err
		}
		*r.Rating, *r.Remark = 1, "reused" // the caller may reuse its pointers once PutFulfillment returns
		if err := tx.PutFulfillment(ctx, zeroes); err != nil {
			return err
		}
		return tx.PutFulfillment(ctx, bare)
	})

	all := []projections.Fulfillment{bare, zeroes, full}
	wantRows(t, "Fulfillments", must(s.Fulfillments(ctx, projections.FulfillmentFilter{}))(t), all)
	wantRows(t, "Fulfillments(card)", must(s.Fulfillments(ctx, projections.FulfillmentFilter{CardNumber: full.CardNumber}))(t), all)
	wantRows(t, "Fulfillments(provider)", must(s.Fulfillments(ctx, projections.FulfillmentFilter{ProviderID: full.ProviderID}))(t),
		[]projections.Fulfillment{full})

	wantRows(t, "Fulfillments(issuer)", must(s.Fulfillments(ctx, projections.FulfillmentFilter{IssuerAppID: full.IssuerAppID}))(t),
		[]projections.Fulfillment{full})

	write(t, benefitsOf(s), func(tx projections.BenefitTx) error {
		for _, want := range all {
			got, err := tx.Fulfillment(ctx, want.RecordID)
			if err != nil {
				return err
			}
			wantRow(t, fmt.Sprintf("Tx.Fulfillment(%d)", want.RecordID), got, want)
			if got.Rating != nil {
				*got.Rating = 42
			}
		}
		_, err := tx.Fulfillment(ctx, 424242)
		wantNotFound(t, "Tx.Fulfillment(unknown)", err)
		return nil
	})

	for _, r := range must(s.Fulfillments(ctx, projections.FulfillmentFilter{}))(t) {
		if r.Remark != nil {
			*r.Remark = "mutated"
		}
		if r.PointsCode != nil {
			*r.PointsCode = "mutated"
		}
	}
	wantRows(t, "Fulfillments after callers mutated results", must(s.Fulfillments(ctx, projections.FulfillmentFilter{}))(t), all)

	// Replacing sets the pointers back to nil and moves the record between the lists.
	repl := projections.Fulfillment{RecordID: full.RecordID, CardNumber: cardNumber(1), IssuerAppID: 2, ProviderID: 3,
		Status: "FAILED", InitiatedAt: at(20), UpdatedAt: at(21)}
	putFulfillments(t, s, repl)
	wantRows(t, "Fulfillments(old card) after replace",
		must(s.Fulfillments(ctx, projections.FulfillmentFilter{CardNumber: full.CardNumber}))(t), []projections.Fulfillment{bare, zeroes})

	wantRows(t, "Fulfillments(new card) after replace",
		must(s.Fulfillments(ctx, projections.FulfillmentFilter{CardNumber: repl.CardNumber}))(t), []projections.Fulfillment{repl})

	for _, f := range []projections.FulfillmentFilter{{ProviderID: full.ProviderID}, {IssuerAppID: full.IssuerAppID}} {
		if l := must(s.Fulfillments(ctx, f))(t); len(l) != 0 {
			t.Errorf("Fulfillments(%+v) after replace = %v, want none", f, ids(l))
		}
	}
	// The projector's rating: a read, a change, a write.
	write(t, benefitsOf(s), func(tx projections.BenefitTx) error {
		r, err := tx.Fulfillment(ctx, repl.RecordID)
		if err != nil {
			return err
		}
		r.Rating, r.UpdatedAt = ptr(4), at(30)
		repl = r
		return tx.PutFulfillment(ctx, r)
	})

	wantRows(t, "Fulfillments(provider) after rating",
		must(s.Fulfillments(ctx, projections.FulfillmentFilter{ProviderID: 3}))(t), []projections.Fulfillment{repl})
}

// testBenefitTxReads: within one transaction, reads find nothing before
// the puts and then each put, and the projectors' read-change-write of a
// provider and of a card reads back what was written; after the commit the
// store's reads answer the transaction's rows, and a later transaction
// reads committed rows of any app and survives a not-found read.
func testBenefitTxReads(t *testing.T, s Store) {
	item := benefitItemOf(1)
	p := providerOf(1, 7)
	c := cardOf(1, 1, 11, 12)
	r := fulfillmentOf(100, p.ProviderID, c.IssuerAppID, c.CardNumber)
	write(t, benefitsOf(s), func(tx projections.BenefitTx) error {
		wantBenefitRowsAbsent(t, tx, item, p, c, r)
		if err := tx.PutBenefitItem(ctx, item); err != nil {
			return err
		}
		if err := tx.PutProvider(ctx, p); err != nil {
			return err
		}
		if err := tx.PutCard(ctx, c); err != nil {
			return err
		}
		gotItem, err := tx.BenefitItem(ctx, item.BenefitItemID)
		if err != nil {
			return fmt.Errorf("Tx.BenefitItem after PutBenefitItem: %w", err)
		}
		wantRow(t, "Tx.BenefitItem after PutBenefitItem", gotItem, item)
		if p, err = txConfigureProvider(t, tx, p); err != nil {
			return err
		}
		if c, err = txSpendCard(t, tx, c, r); err != nil {
			return err
		}
		gotR, err := tx.Fulfillment(ctx, r.RecordID)
		if err != nil {
			return fmt.Errorf("Tx.Fulfillment after PutFulfillment: %w", err)
		}
		wantRow(t, "Tx.Fulfillment after PutFulfillment", gotR, r)
		return nil
	})

	t.Run("ReadsAfterCommitAnswerTheTransaction", func(t *testing.T) {
		wantRows(t, "BenefitItems after commit", must(s.BenefitItems(ctx))(t), []projections.BenefitItem{item})
		wantRows(t, "Providers after commit", must(s.Providers(ctx, 1))(t), []projections.ServiceProvider{p})
		wantRow(t, "card after commit", must(s.CardByNumber(ctx, 1, c.CardNumber))(t), c)
		wantRows(t, "Fulfillments after commit", must(s.Fulfillments(ctx, projections.FulfillmentFilter{}))(t), []projections.Fulfillment{r})
	})
	t.Run("LaterTxReadsCommittedRowsOfAnyApp", func(t *testing.T) {
		// Read models are separate transactions (each its own Update and
		// checkpoint): no case writes two read models at once.
		write(t, benefitsOf(s), func(tx projections.BenefitTx) error { return tx.PutCard(ctx, cardOf(2, 2, 21)) })

		// A later transaction reads committed rows of any app; a not-found read
		// handled by fn does not spoil it.
		third := cardOf(3, 3, 31)
		write(t, benefitsOf(s), func(tx projections.BenefitTx) error {
			got, err := tx.Card(ctx, cardNumber(2))
			if err != nil {
				return err
			}
			wantRow(t, "Tx.Card of another issuer", got, cardOf(2, 2, 21))
			if _, err := tx.Card(ctx, cardNumber(9)); !errors.Is(err, projections.ErrNotFound) {
				return fmt.Errorf("Tx.Card(unknown) = %v, want ErrNotFound", err)
			}
			if _, err := tx.Provider(ctx, 424242); !errors.Is(err, projections.ErrNotFound) {
				return fmt.Errorf("Tx.Provider(424242) = %v, want ErrNotFound", err)
			}
			return tx.PutCard(ctx, third)
		})

		wantRow(t, "card put after a not-found read", must(s.CardByNumber(ctx, 3, third.CardNumber))(t), third)
	})
}

// wantBenefitRowsAbsent checks that tx finds none of the rows before they
// are put.
func wantBenefitRowsAbsent(t *testing.T, tx projections.BenefitTx, item projections.BenefitItem, p projections.ServiceProvider, c projections.Card, r projections.Fulfillment) {
	t.Helper()
	_, err := tx.BenefitItem(ctx, item.BenefitItemID)
	wantNotFound(t, "Tx.BenefitItem before PutBenefitItem", err)
	_, err = tx.Provider(ctx, p.ProviderID)
	wantNotFound(t, "Tx.Provider before PutProvider", err)
	_, err = tx.Card(ctx, c.CardNumber)
	wantNotFound(t, "Tx.Card before PutCard", err)
	_, err = tx.Fulfillment(ctx, r.RecordID)
	wantNotFound(t, "Tx.Fulfillment before PutFulfillment", err)
}

// txConfigureProvider is the projector's item configuration: read the
// put provider, change its items, write, read again. It returns the
// provider as written.
func txConfigureProvider(t *testing.T, tx projections.BenefitTx, p projections.ServiceProvider) (projections.ServiceProvider, error) {
	t.Helper()
	gotP, err := tx.Provider(ctx, p.ProviderID)
	if err != nil {
		return p, fmt.Errorf("Tx.Provider after PutProvider: %w", err)
	}
	wantRow(t, "Tx.Provider after PutProvider", gotP, p)
	gotP.AllowedItemIDs = []int64{9, 3}
	if err := tx.PutProvider(ctx, gotP); err != nil {
		return p, err
	}
	againP, err := tx.Provider(ctx, p.ProviderID)
	if err != nil {
		return p, err
	}
	p = ascendingSet(gotP)
	wantRow(t, "Tx.Provider after second PutProvider", againP, p)
	return p, nil
}

// txSpendCard is the projector's fulfillment: read the put card, spend,
// write the card and the fulfillment r. A read changed without a PutCard
// changes nothing. It returns the card as written.
func txSpendCard(t *testing.T, tx projections.BenefitTx, c projections.Card, r projections.Fulfillment) (projections.Card, error) {
	t.Helper()
	gotC, err := tx.Card(ctx, c.CardNumber)
	if err != nil {
		return c, fmt.Errorf("Tx.Card after PutCard: %w", err)
	}
	wantRow(t, "Tx.Card after PutCard", gotC, c)
	gotC.Items[1].Remaining, gotC.UpdatedAt = 4, at(50)
	if err := tx.PutCard(ctx, gotC); err != nil {
		return c, err
	}
	if err := tx.PutFulfillment(ctx, r); err != nil {
		return c, err
	}
	unsaved, err := tx.Card(ctx, c.CardNumber)
	if err != nil {
		return c, err
	}
	unsaved.Items[0].Remaining = 0
	againC, err := tx.Card(ctx, c.CardNumber)
	if err != nil {
		return c, err
	}
	wantRow(t, "Tx.Card after second PutCard", againC, gotC)
	return gotC, nil
}

func testFailedUpdateBenefits(t *testing.T, s Store) {
	item := benefitItemOf(1)
	p := providerOf(1, 7)
	c := cardOf(1, 1, 11, 12)
	r := fulfillmentOf(100, p.ProviderID, c.IssuerAppID, c.CardNumber)
	r.Rating = ptr(3)
	failedUpdate(t, s, benefitsOf(s), func(tx projections.BenefitTx) error {
		return firstErr(tx.PutBenefitItem(ctx, item), tx.PutProvider(ctx, p), tx.PutCard(ctx, c), tx.PutFulfillment(ctx, r))
	}, func(tx projections.BenefitTx) error {
		item2 := item
		item2.Status = "SUSPENDED"
		p2 := p
		p2.AppID, p2.PointsCode, p2.AllowedItemIDs = 2, nil, []int64{5}
		// The card gives item 12 up, and a new card takes it.
		c2 := c
		c2.IssuerAppID, c2.HolderPhone = 2, nil
		c2.Items = []projections.CardItem{{UserBenefitItemID: 11, Total: 5, Remaining: 0}}
		r2 := r
		r2.ProviderID, r2.IssuerAppID, r2.CardNumber, r2.Rating = 8, 2, cardNumber(2), nil
		if err := firstErr(tx.PutBenefitItem(ctx, item2), tx.PutBenefitItem(ctx, benefitItemOf(2)),
			tx.PutProvider(ctx, p2), tx.PutProvider(ctx, providerOf(1, 8)),
			tx.PutCard(ctx, c2), tx.PutCard(ctx, cardOf(1, 2, 12)),
			tx.PutFulfillment(ctx, r2), tx.PutFulfillment(ctx, fulfillmentOf(101, 7, 1, c.CardNumber))); err != nil {
			return err
		}
		wantRow(t, "Tx.Card inside the failing Update", must(tx.Card(ctx, c.CardNumber))(t), c2)
		wantRow(t, "Tx.Fulfillment inside the failing Update", must(tx.Fulfillment(ctx, r.RecordID))(t), r2)
		return nil
	}, func(when string) {
		wantRows(t, "BenefitItems "+when, must(s.BenefitItems(ctx))(t), []projections.BenefitItem{item})
		wantRows(t, "Providers(all) "+when, must(s.Providers(ctx, 0))(t), []projections.ServiceProvider{p})
		wantRows(t, "Providers(app 2) "+when, must(s.Providers(ctx, 2))(t), nil)
		wantRow(t, "card "+when, must(s.CardByNumber(ctx, 1, c.CardNumber))(t), c)
		_, err := s.CardByNumber(ctx, 0, cardNumber(2))
		wantNotFound(t, "card put by the failed Update "+when, err)
		for _, f := range []projections.FulfillmentFilter{{}, {ProviderID: 7}, {IssuerAppID: 1}, {CardNumber: c.CardNumber}} {
			wantRows(t, fmt.Sprintf("Fulfillments(%+v) %s", f, when), must(s.Fulfillments(ctx, f))(t), []projections.Fulfillment{r})
		}
		for _, f := range []projections.FulfillmentFilter{{ProviderID: 8}, {IssuerAppID: 2}, {CardNumber: cardNumber(2)}} {
			wantIDs(t, fmt.Sprintf("Fulfillments(%+v) %s", f, when), must(s.Fulfillments(ctx, f))(t), nil)
		}
	})

	// The store is still usable, and the failed Update's writes do not count:
	// the item it freed is still the card's.
	if err := try(benefitsOf(s), func(tx projections.BenefitTx) error { return tx.PutCard(ctx, cardOf(1, 3, 12)) }); err == nil {
		t.Error("PutCard taking the item the failed Update freed succeeded")
	}
	putCards(t, s, cardOf(1, 3, 13))
	wantRow(t, "card put after the failed Update", must(s.CardByNumber(ctx, 1, cardNumber(3)))(t), cardOf(1, 3, 13))
}

// fulfillmentFixture puts 36 records over three providers, three issuers
// and four cards, in an order unlike their ids', and returns the model.
func fulfillmentFixture(t *testing.T, s Store) fulfillmentModel {
	t.Helper()
	m := fulfillmentModel{}
	var rs []projections.Fulfillment
	for n := range 36 {
		r := fulfillmentOf(int64(2*n+1), int64(1+n%3), int64(10+(n/2)%3), cardNumber((n/3)%4))
		if n%5 == 0 {
			r.Rating, r.Remark, r.PointsCode = ptr(n%6), ptr("r"), nil
		}
		rs = append(rs, r)
	}
	slices.Reverse(rs)
	putFulfillments(t, s, rs[:19]...)
	putFulfillments(t, s, rs[19:]...)
	m.put(rs...)
	return m
}

func testFulfillmentsFilters(t *testing.T, s Store) {
	m := fulfillmentFixture(t, s)
	filters := []projections.FulfillmentFilter{
		{},
		{ProviderID: 1},
		{ProviderID: 3},
		{ProviderID: 99},
		{IssuerAppID: 10},
		{IssuerAppID: 12},
		{IssuerAppID: 1},
		{CardNumber: cardNumber(1)},
		{CardNumber: cardNumber(3)},
		{CardNumber: cardNumber(1)[:14]}, // exact, not a prefix
		{ProviderID: 2, IssuerAppID: 10},
		{ProviderID: 3, CardNumber: cardNumber(2)},
		{IssuerAppID: 11, CardNumber: cardNumber(0)},
		{ProviderID: 1, IssuerAppID: 11, CardNumber: cardNumber(0)},
		{ProviderID: 1, IssuerAppID: 12, CardNumber: cardNumber(3)},
		{After: 35},
		{After: 36},
		{After: 71},
		{After: -1},
		{Limit: 5},
		{ProviderID: 2, After: 20, Limit: 2},
		{IssuerAppID: 12, After: 30, Limit: 3},
		{CardNumber: cardNumber(1), After: 11, Limit: 4},
	}
	for _, f := range filters {
		wantRows(t, fmt.Sprintf("Fulfillments(%+v)", f), must(s.Fulfillments(ctx, f))(t), m.list(f))
	}

	// The model itself, on cases worked out by hand.
	wantIDs := func(what string, f projections.FulfillmentFilter, want []int64) {
		t.Helper()
		if got := ids(must(s.Fulfillments(ctx, f))(t)); !slices.Equal(got, want) {
			t.Errorf("%s: Fulfillments(%+v) = %v, want %v", what, f, got, want)
		}
	}
	wantIDs("provider 2, issuer 10", projections.FulfillmentFilter{ProviderID: 2, IssuerAppID: 10}, []int64{3, 15, 27, 39, 51, 63})
	wantIDs("card 1", projections.FulfillmentFilter{CardNumber: cardNumber(1)}, []int64{7, 9, 11, 31, 33, 35, 55, 57, 59})
	wantIDs("card 2, provider 3", projections.FulfillmentFilter{CardNumber: cardNumber(2), ProviderID: 3}, []int64{17, 41, 65})
	wantIDs("issuer 12 after 30", projections.FulfillmentFilter{IssuerAppID: 12, After: 30, Limit: 3}, []int64{33, 35, 45})
	wantIDs("no match", projections.FulfillmentFilter{ProviderID: 1, IssuerAppID: 11, CardNumber: cardNumber(0)}, nil)

	// Paging with After visits every record once, in order, whatever the page size.
	for _, f := range []projections.FulfillmentFilter{{}, {ProviderID: 2}, {IssuerAppID: 11}, {CardNumber: cardNumber(3)},
		{ProviderID: 2, IssuerAppID: 10}} {
		all := f
		all.Limit = 1000
		wantPaging(t, lister(t, s.Fulfillments), f, m.list(all))
	}

	// Changing a record's provider, issuer and card moves it between the lists.
	moved := m[7]
	moved.ProviderID, moved.IssuerAppID, moved.CardNumber = 3, 12, cardNumber(3)
	putFulfillments(t, s, moved)
	m.put(moved)
	for _, f := range filters {
		wantRows(t, fmt.Sprintf("Fulfillments(%+v) after a move", f), must(s.Fulfillments(ctx, f))(t), m.list(f))
	}
}

func testFulfillmentsLimits(t *testing.T, s Store) {
	const n = 1005
	rs := make([]projections.Fulfillment, n)
	for i := range rs {
		rs[i] = fulfillmentOf(int64(i+1), 7, 8, cardNumber(9))
	}
	putFulfillments(t, s, rs...)
	wantLimits(t, lister(t, s.Fulfillments), []projections.FulfillmentFilter{{}, {ProviderID: 7}, {IssuerAppID: 8}, {CardNumber: cardNumber(9)}}, rs)
}

// ---- reset ----

func testResetCommerce(t *testing.T, s Store) {
	o := orderOf(1, 1, "APPROVED")
	c := cardOf(1, 1, 11, 12)
	putGoods(t, s, goodsOf(1))
	putOrders(t, s, o)
	putBenefitItems(t, s, benefitItemOf(1))
	putProviders(t, s, providerOf(1, 1))
	putCards(t, s, c)
	putFulfillments(t, s, fulfillmentOf(1, 1, 1, c.CardNumber))

	if err := s.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if gs := must(s.GoodsList(ctx))(t); len(gs) != 0 {
		t.Errorf("GoodsList after Reset = %v", ids(gs))
	}
	_, err := s.OrderByCode(ctx, 0, o.OrderCode)
	wantNotFound(t, "OrderByCode after Reset", err)
	for _, f := range []projections.OrderFilter{{}, {AppID: 1}, {Status: "APPROVED"}, {AppID: 1, Status: "APPROVED"}} {
		if l := must(s.Orders(ctx, f))(t); len(l) != 0 {
			t.Errorf("Orders(%+v) after Reset = %v", f, ids(l))
		}
	}
	if l := must(s.BenefitItems(ctx))(t); len(l) != 0 {
		t.Errorf("BenefitItems after Reset = %v", ids(l))
	}
	for _, app := range []int64{0, 1} {
		if l := must(s.Providers(ctx, app))(t); len(l) != 0 {
			t.Errorf("Providers(%d) after Reset = %v", app, ids(l))
		}
	}
	_, err = s.CardByNumber(ctx, 0, c.CardNumber)
	wantNotFound(t, "CardByNumber after Reset", err)
	for _, f := range []projections.FulfillmentFilter{{}, {ProviderID: 1}, {IssuerAppID: 1}, {CardNumber: c.CardNumber}} {
		if l := must(s.Fulfillments(ctx, f))(t); len(l) != 0 {
			t.Errorf("Fulfillments(%+v) after Reset = %v", f, ids(l))
		}
	}
	wantCheckpoint(t, s, "orders", events.Position{})
	wantCheckpoint(t, s, "benefits", events.Position{})
	write(t, ordersOf(s), func(tx projections.OrderTx) error {
		_, err := tx.Goods(ctx, 1)
		wantNotFound(t, "Tx.Goods after Reset", err)
		_, err = tx.Order(ctx, o.OrderID)
		wantNotFound(t, "Tx.Order after Reset", err)
		return nil
	})

	write(t, benefitsOf(s), func(tx projections.BenefitTx) error {
		_, err := tx.BenefitItem(ctx, 1)
		wantNotFound(t, "Tx.BenefitItem after Reset", err)
		_, err = tx.Provider(ctx, 1)
		wantNotFound(t, "Tx.Provider after Reset", err)
		_, err = tx.Card(ctx, c.CardNumber)
		wantNotFound(t, "Tx.Card after Reset", err)
		_, err = tx.Fulfillment(ctx, 1)
		wantNotFound(t, "Tx.Fulfillment after Reset", err)
		return nil
	})

	// Usable after Reset: the unique keys are free again, and the old rows
	// (the items of the order and the card) do not come back.
	g := goodsOf(2)
	g.GoodsCode = goodsOf(1).GoodsCode
	putGoods(t, s, g)
	o2 := orderOf(2, 2, "SHIPPED")
	o2.OrderCode, o2.Items = o.OrderCode, nil
	putOrders(t, s, o2)
	c2 := cardOf(2, 2, 11)
	putCards(t, s, c2, cardOf(1, 1))
	wantRows(t, "GoodsList after rebuild", must(s.GoodsList(ctx))(t), []projections.Goods{g})
	wantRow(t, "order after rebuild", must(s.OrderByCode(ctx, 2, o.OrderCode))(t), o2)
	wantRow(t, "card after rebuild", must(s.CardByNumber(ctx, 2, c2.CardNumber))(t), c2)
	wantRow(t, "old card number after rebuild", must(s.CardByNumber(ctx, 1, c.CardNumber))(t), cardOf(1, 1))
	again := orderOf(1, 1, "APPROVED")
	again.OrderCode, again.Items = "ORD-AGAIN", nil
	putOrders(t, s, again)
	wantRow(t, "order id put again after Reset", must(s.OrderByCode(ctx, 1, again.OrderCode))(t), again)
}

// testFulfillmentsOfProviderApp: an app's providers' records, interleaved,
// come as one page in record order with one cursor, and never another app's.
func testFulfillmentsOfProviderApp(t *testing.T, s Store) {
	putProviders(t, s, providerOf(7, 1), providerOf(7, 2), providerOf(7, 3), providerOf(8, 4))
	var mine []projections.Fulfillment
	for id := int64(1); id <= 12; id++ {
		r := fulfillmentOf(id, id%4+1, 9, cardNumber(1))
		r.ProviderAppID = 7
		if r.ProviderID == 4 {
			r.ProviderAppID = 8
		} else {
			mine = append(mine, r)
		}
		putFulfillments(t, s, r)
	}
	got := pageAll(t, lister(t, s.Fulfillments), projections.FulfillmentFilter{ProviderAppID: 7}, 2, len(mine)+2)
	wantRows(t, "ProviderAppID 7, paged by 2", got, mine)
	wantRows(t, "ProviderAppID 7 and ProviderID 2", must(s.Fulfillments(ctx, projections.FulfillmentFilter{ProviderAppID: 7, ProviderID: 2}))(t),
		[]projections.Fulfillment{mine[0], mine[3], mine[6]})

	wantRows(t, "ProviderAppID 8", must(s.Fulfillments(ctx, projections.FulfillmentFilter{ProviderAppID: 8}))(t),
		[]projections.Fulfillment{fulfillmentOfApp(3, 4, 8), fulfillmentOfApp(7, 4, 8), fulfillmentOfApp(11, 4, 8)})

	wantRows(t, "ProviderAppID without providers", must(s.Fulfillments(ctx, projections.FulfillmentFilter{ProviderAppID: 99}))(t), nil)
}

func fulfillmentOfApp(id, provider, app int64) projections.Fulfillment {
	r := fulfillmentOf(id, provider, 9, cardNumber(1))
	r.ProviderAppID = app
	return r
}
