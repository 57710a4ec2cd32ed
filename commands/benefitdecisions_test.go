package commands

import (
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Given/When/Then of the benefit decisions: items, providers, card
// batches, verification and rating.

var (
	checkItem = catalog.BenefitItemCreated{BenefitItemID: 4, Name: "annual check"}
	dentItem  = catalog.BenefitItemCreated{BenefitItemID: 8, Name: "dental cleaning"}
	clinic    = catalog.ProviderRegistered{ProviderID: 6, AppID: 2, Name: "clinic", Type: ProviderService, Contact: "x"}
	station   = catalog.ProviderRegistered{ProviderID: 7, AppID: 2, Name: "station", Type: ProviderHealthStation, Contact: "x", PointsCode: ptr("P1")}
	partner   = catalog.ProviderRegistered{ProviderID: 9, AppID: 3, Name: "channel", Type: ProviderChannelPartner, Contact: "x"}
)

func item(t *testing.T, more ...events.Payload) itemState {
	return *given(t, &itemState{}, append([]events.Payload{checkItem}, more...)...)
}

var suspended = catalog.BenefitItemStatusChanged{BenefitItemID: 4, Status: ItemSuspended}

func TestCreateItemDecision(t *testing.T) {
	then(t, decideCreateItem(4, "annual check"), nil, checkItem)
	thenInvalid(t, validateItemName(""), "name")
	thenInvalid(t, validateItemName(strings.Repeat("项", 65)), "name")
	if err := validateItemName(strings.Repeat("项", 64)); err != nil {
		t.Fatalf("64 characters refused: %v", err)
	}
}

func TestSetItemStatusDecision(t *testing.T) {
	st := item(t)
	got, err := decideSetItemStatus(&st, ItemSuspended)
	then(t, got, err, suspended)

	st = item(t)
	got, err = decideSetItemStatus(&st, ItemActive)
	then(t, got, err) // active already

	st = item(t, suspended)
	got, err = decideSetItemStatus(&st, ItemActive)
	then(t, got, err, catalog.BenefitItemStatusChanged{BenefitItemID: 4, Status: ItemActive})

	st = item(t, suspended)
	got, err = decideSetItemStatus(&st, ItemSuspended)
	then(t, got, err)

	got, err = decideSetItemStatus(given(t, &itemState{}), ItemSuspended)
	thenError(t, got, err, domain.ErrBenefitItemNotFound)
}

func TestRegisterProviderDecision(t *testing.T) {
	in := ProviderInput{AppID: 2, Name: "station", Type: ProviderHealthStation, Contact: "x", PointsCode: ptr("P1")}
	if err := in.validate(); err != nil {
		t.Fatal(err)
	}
	then(t, decideRegisterProvider(7, in), nil, station)
	st := given(t, &providerState{}, station)
	if st.status != ProviderPending {
		t.Fatalf("registered provider is %s, want pending review", st.status)
	}
}

func TestRegisterProviderRejectsBadInput(t *testing.T) {
	ok := ProviderInput{AppID: 2, Name: "clinic", Type: ProviderService, Contact: "x"}
	if err := ok.validate(); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		field string
		edit  func(*ProviderInput)
	}{
		"no name":                 {"name", func(in *ProviderInput) { in.Name = "" }},
		"long name":               {"name", func(in *ProviderInput) { in.Name = strings.Repeat("a", 101) }},
		"unknown type":            {"type", func(in *ProviderInput) { in.Type = "HOSPITAL" }},
		"no contact":              {"contact", func(in *ProviderInput) { in.Contact = "" }},
		"station without code":    {"points_code", func(in *ProviderInput) { in.Type = ProviderHealthStation }},
		"station with empty code": {"points_code", func(in *ProviderInput) { in.Type, in.PointsCode = ProviderHealthStation, ptr("") }},
		"station with long code":  {"points_code", func(in *ProviderInput) { in.Type, in.PointsCode = ProviderHealthStation, ptr(strings.Repeat("p", 65)) }},
		"code on a service":       {"points_code", func(in *ProviderInput) { in.PointsCode = ptr("P1") }},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			in := ok
			c.edit(&in)
			thenInvalid(t, in.validate(), c.field)
		})
	}
}

func TestReviewProviderDecision(t *testing.T) {
	got, err := decideReviewProvider(given(t, &providerState{}, clinic), true, "ok")
	then(t, got, err, catalog.ProviderReviewed{ProviderID: 6, Approved: true, Notes: "ok"})
	got, err = decideReviewProvider(given(t, &providerState{}, clinic), false, "no licence")
	then(t, got, err, catalog.ProviderReviewed{ProviderID: 6, Notes: "no licence"})

	t.Run("PROVIDER_ALREADY_REVIEWED", func(t *testing.T) {
		for _, approved := range []bool{true, false} {
			st := given(t, &providerState{}, clinic, catalog.ProviderReviewed{ProviderID: 6, Approved: approved})
			got, err := decideReviewProvider(st, true, "")
			thenError(t, got, err, domain.ErrProviderAlreadyReview)
		}
	})
	t.Run("PROVIDER_NOT_FOUND", func(t *testing.T) {
		got, err := decideReviewProvider(given(t, &providerState{}), true, "")
		thenError(t, got, err, domain.ErrProviderNotFound)
	})
	thenInvalid(t, validateReviewNotes(strings.Repeat("n", 501)), "notes")
	if err := validateReviewNotes(strings.Repeat("注", 500)); err != nil {
		t.Fatalf("500 characters refused: %v", err)
	}
}

func TestConfigureItemsDecision(t *testing.T) {
	if got := normalizeIDs([]int64{8, 4, 8}); len(got) != 2 || got[0] != 4 || got[1] != 8 {
		t.Fatalf("normalised %v, want [4 8]", got)
	}
	items := []itemState{item(t), *given(t, &itemState{}, dentItem)}
	got, err := decideConfigureItems(given(t, &providerState{}, clinic), []int64{4, 8}, items)
	then(t, got, err, catalog.ProviderItemsConfigured{ProviderID: 6, AllowedItemIDs: []int64{4, 8}})

	t.Run("missing item", func(t *testing.T) {
		_, err := decideConfigureItems(given(t, &providerState{}, clinic), []int64{4, 5}, []itemState{item(t), {}})
		thenInvalid(t, err, "allowed_benefit_item_ids")
		_, err = decideConfigureItems(given(t, &providerState{}), []int64{5}, []itemState{{}})
		thenInvalid(t, err, "allowed_benefit_item_ids") // before the provider is looked at
	})
	t.Run("PROVIDER_NOT_FOUND", func(t *testing.T) {
		got, err := decideConfigureItems(given(t, &providerState{}), []int64{4}, items[:1])
		thenError(t, got, err, domain.ErrProviderNotFound)
	})
	t.Run("channel partners verify nothing", func(t *testing.T) {
		_, err := decideConfigureItems(given(t, &providerState{}, partner), []int64{4}, items[:1])
		thenInvalid(t, err, "allowed_benefit_item_ids")
		got, err := decideConfigureItems(given(t, &providerState{}, partner), nil, nil)
		then(t, got, err, catalog.ProviderItemsConfigured{ProviderID: 9})
	})
}

func TestIsChannelPartner(t *testing.T) {
	approved := *given(t, &providerState{}, partner, catalog.ProviderReviewed{ProviderID: 9, Approved: true})
	pending := *given(t, &providerState{}, partner)
	service := *given(t, &providerState{}, clinic, catalog.ProviderReviewed{ProviderID: 6, Approved: true})
	if !isChannelPartner(3, []providerState{service, approved}) {
		t.Fatal("an approved CHANNEL_PARTNER is not one")
	}
	for name, c := range map[string]struct {
		app int64
		ps  []providerState
	}{
		"pending":          {3, []providerState{pending}},
		"another app's":    {2, []providerState{approved}},
		"a service":        {2, []providerState{service}},
		"never registered": {3, []providerState{{}}},
	} {
		if isChannelPartner(c.app, c.ps) {
			t.Fatalf("%s: counted as a channel partner", name)
		}
	}
}

// batchCards: a chosen number with two lines, and a generated one.
func batchCards() CardBatch {
	return CardBatch{IssuerAppID: 1, Cards: []CardInput{
		{CardNumber: "C00000000000001", HolderName: "李雷", ExpiresAt: fixedNow.Add(time.Hour), Items: []CardItemInput{{BenefitItemID: 4, Quantity: 3}, {BenefitItemID: 8, Quantity: 1}}},
		{HolderName: "韩梅梅", HolderPhone: ptr("13800138000"), ExpiresAt: fixedNow.Add(time.Hour), Items: []CardItemInput{{BenefitItemID: 4, Quantity: 2}}},
	}}
}

func planCmd() planBatch {
	return planBatch{Batch: batchCards(), Key: "1-k", Numbers: []string{"", "G00000000000002"}, LineIDs: [][]int64{{50, 51}, {52}}}
}

var planned = catalog.CardBatchPlanned{IssuerAppID: 1, Key: "1-k", Cards: []catalog.PlannedCard{
	{CardNumber: "C00000000000001", UserBenefitItemIDs: []int64{50, 51}, NumberChosen: true},
	{CardNumber: "G00000000000002", UserBenefitItemIDs: []int64{52}},
}}

func TestPlanBatchDecision(t *testing.T) {
	items := func(t *testing.T) map[int64]itemState {
		return map[int64]itemState{4: item(t), 8: *given(t, &itemState{}, dentItem)}
	}
	got, err := decidePlanBatch(given(t, &batchState{}), items(t), nil, planCmd())
	then(t, got, err, planned)

	got, err = decidePlanBatch(given(t, &batchState{}, planned), items(t), nil, planCmd())
	then(t, got, err) // planned before: its plan wins

	t.Run("BENEFIT_ITEM_NOT_FOUND", func(t *testing.T) {
		its := items(t)
		delete(its, 8)
		got, err := decidePlanBatch(given(t, &batchState{}), its, nil, planCmd())
		thenError(t, got, err, domain.ErrBenefitItemNotFound)
	})
	t.Run("BENEFIT_ITEM_INACTIVE", func(t *testing.T) {
		its := items(t)
		its[4] = item(t, suspended)
		got, err := decidePlanBatch(given(t, &batchState{}), its, nil, planCmd())
		thenError(t, got, err, domain.ErrBenefitItemInactive)
	})
	t.Run("CARD_NUMBER_EXISTS", func(t *testing.T) {
		got, err := decidePlanBatch(given(t, &batchState{}), items(t), map[string]bool{"C00000000000001": true}, planCmd())
		thenError(t, got, err, domain.ErrCardNumberTaken)
		// Generated numbers are not checked here: a taken one is renumbered.
		got, err = decidePlanBatch(given(t, &batchState{}), items(t), map[string]bool{"G00000000000002": true}, planCmd())
		then(t, got, err, planned)
	})
}

func TestBatchRenumberAndCompleteDecisions(t *testing.T) {
	t.Run("generated number taken: renumbered", func(t *testing.T) {
		got, err := decideTakenNumber(given(t, &batchState{}, planned), 1, 1, "G00000000000003")
		then(t, got, err, catalog.CardBatchRenumbered{IssuerAppID: 1, Index: 1, CardNumber: "G00000000000003"})
		st := given(t, &batchState{}, planned, got[0])
		issued := issuedCards(batchCards(), *st, events.Position{})
		if issued[1].CardNumber != "G00000000000003" || issued[0].CardNumber != "C00000000000001" {
			t.Fatalf("after renumbering the batch answers %+v", issued)
		}
	})
	t.Run("CARD_NUMBER_EXISTS", func(t *testing.T) {
		got, err := decideTakenNumber(given(t, &batchState{}, planned), 1, 0, "G00000000000003")
		thenError(t, got, err, domain.ErrCardNumberTaken)
	})
	t.Run("completed once", func(t *testing.T) {
		then(t, decideCompleteBatch(given(t, &batchState{}, planned), 1), nil, catalog.CardBatchCompleted{IssuerAppID: 1, Cards: 2})
		done := catalog.CardBatchCompleted{IssuerAppID: 1, Cards: 2}
		then(t, decideCompleteBatch(given(t, &batchState{}, planned, done), 1), nil)
	})
	t.Run("cards as planned", func(t *testing.T) {
		st := given(t, &batchState{}, planned)
		got := []events.Payload{cardIssued(batchCards(), 0, st.cards[0], "op"), cardIssued(batchCards(), 1, st.cards[1], "op")}
		then(t, got, nil,
			catalog.CardIssued{CardNumber: "C00000000000001", IssuerAppID: 1, HolderName: "李雷", ExpiresAt: fixedNow.Add(time.Hour), IssuedBy: "op",
				Items: []catalog.CardLine{{UserBenefitItemID: 50, BenefitItemID: 4, Quantity: 3}, {UserBenefitItemID: 51, BenefitItemID: 8, Quantity: 1}}},
			catalog.CardIssued{CardNumber: "G00000000000002", IssuerAppID: 1, HolderName: "韩梅梅", HolderPhone: ptr("13800138000"), ExpiresAt: fixedNow.Add(time.Hour), IssuedBy: "op",
				Items: []catalog.CardLine{{UserBenefitItemID: 52, BenefitItemID: 4, Quantity: 2}}})
	})
}

func TestCardBatchRejectsBadInput(t *testing.T) {
	if err := validateBatch(batchCards(), fixedNow); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		field string
		edit  func(*CardBatch)
	}{
		"no cards":         {"cards", func(b *CardBatch) { b.Cards = nil }},
		"101 cards":        {"cards", func(b *CardBatch) { b.Cards = make([]CardInput, 101) }},
		"long batch_id":    {"batch_id", func(b *CardBatch) { b.BatchID = strings.Repeat("b", 65) }},
		"short number":     {"cards[0].card_number", func(b *CardBatch) { b.Cards[0].CardNumber = "C1" }},
		"number not alnum": {"cards[0].card_number", func(b *CardBatch) { b.Cards[0].CardNumber = "C0000000000000-" }},
		"number repeated":  {"cards[1].card_number", func(b *CardBatch) { b.Cards[1].CardNumber = b.Cards[0].CardNumber }},
		"partner chooses":  {"cards[0].card_number", func(b *CardBatch) { b.PlatformNumbers = true }},
		"no holder":        {"cards[1].holder_name", func(b *CardBatch) { b.Cards[1].HolderName = "" }},
		"bad phone":        {"cards[1].holder_phone", func(b *CardBatch) { b.Cards[1].HolderPhone = ptr("12345") }},
		"expires now":      {"cards[0].expires_at", func(b *CardBatch) { b.Cards[0].ExpiresAt = fixedNow }},
		"no items":         {"cards[0].items", func(b *CardBatch) { b.Cards[0].Items = nil }},
		"quantity 0":       {"cards[0].items[1].quantity", func(b *CardBatch) { b.Cards[0].Items[1].Quantity = 0 }},
		"quantity 100001":  {"cards[1].items[0].quantity", func(b *CardBatch) { b.Cards[1].Items[0].Quantity = 100001 }},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b := batchCards()
			c.edit(&b)
			thenInvalid(t, validateBatch(b, fixedNow), c.field)
		})
	}
}

// issuedC1 is the card C00000000000001 of app 1: 3 annual checks (line 50)
// and one dental cleaning (line 51), valid for an hour.
var issuedC1 = catalog.CardIssued{CardNumber: "C00000000000001", IssuerAppID: 1, HolderName: "李雷", ExpiresAt: fixedNow.Add(time.Hour),
	Items: []catalog.CardLine{{UserBenefitItemID: 50, BenefitItemID: 4, Quantity: 3}, {UserBenefitItemID: 51, BenefitItemID: 8, Quantity: 1}}}

func card(t *testing.T, more ...events.Payload) *cardState {
	return given(t, &cardState{}, append([]events.Payload{issuedC1}, more...)...)
}

// clinicMay is the approved clinic of app 2, allowed to verify items.
func clinicMay(t *testing.T, items ...int64) providerState {
	return *given(t, &providerState{}, clinic, catalog.ProviderReviewed{ProviderID: 6, Approved: true}, catalog.ProviderItemsConfigured{ProviderID: 6, AllowedItemIDs: items})
}

func verifyCmd(quantity int64) verifyUse {
	return verifyUse{AppID: 2, In: VerifyInput{CardNumber: "C00000000000001", BenefitItemID: ptr[int64](4), Quantity: quantity, Remark: ptr("left knee")},
		RecordID: 90, Now: fixedNow, Cooldown: 10 * time.Second}
}

func fulfilled(quantity, remaining int64, at time.Time) catalog.BenefitFulfilled {
	return catalog.BenefitFulfilled{RecordID: 90, CardNumber: "C00000000000001", IssuerAppID: 1, UserBenefitItemID: 50, BenefitItemID: 4,
		BenefitItemName: "annual check", ProviderID: 6, ProviderAppID: 2, Quantity: quantity, Remaining: remaining, Remark: ptr("left knee"), At: at}
}

func TestVerifyDecision(t *testing.T) {
	candidates := []providerState{clinicMay(t, 4)}
	got, err := decideVerify(card(t), candidates, item(t), verifyCmd(2))
	then(t, got, err, fulfilled(2, 1, fixedNow))

	t.Run("by user_benefit_item_id", func(t *testing.T) {
		c := verifyCmd(3)
		c.In.BenefitItemID, c.In.UserBenefitItemID = nil, ptr[int64](50)
		got, err := decideVerify(card(t), candidates, item(t), c)
		then(t, got, err, fulfilled(3, 0, fixedNow))
	})
	t.Run("CARD_NOT_FOUND", func(t *testing.T) {
		got, err := decideVerify(given(t, &cardState{}), candidates, item(t), verifyCmd(1))
		thenError(t, got, err, domain.ErrCardNotFound)
		c := verifyCmd(1)
		c.In.BenefitItemID, c.In.UserBenefitItemID = nil, ptr[int64](999)
		got, err = decideVerify(card(t), candidates, item(t), c)
		thenError(t, got, err, domain.ErrCardNotFound) // not on the card
		c.In.UserBenefitItemID = ptr[int64](51)
		got, err = decideVerify(card(t), candidates, item(t), c)
		thenError(t, got, err, domain.ErrCardNotFound) // on the card, not the clinic's to verify
	})
	t.Run("BENEFIT_ITEM_INACTIVE", func(t *testing.T) {
		got, err := decideVerify(card(t), candidates, item(t, suspended), verifyCmd(1))
		thenError(t, got, err, domain.ErrBenefitItemInactive)
	})
	t.Run("CARD_EXPIRED", func(t *testing.T) {
		c := verifyCmd(1)
		c.Now = issuedC1.ExpiresAt
		got, err := decideVerify(card(t), candidates, item(t), c)
		thenError(t, got, err, domain.ErrCardExpired)
		c.Now = issuedC1.ExpiresAt.Add(-time.Nanosecond)
		got, err = decideVerify(card(t), candidates, item(t), c)
		then(t, got, err, fulfilled(1, 2, c.Now))
	})
	t.Run("DUPLICATE_FULFILLMENT", func(t *testing.T) {
		used := fulfilled(1, 2, fixedNow)
		c := verifyCmd(1)
		c.Now = fixedNow.Add(10*time.Second - time.Nanosecond)
		got, err := decideVerify(card(t, used), candidates, item(t), c)
		thenError(t, got, err, domain.ErrDuplicateFulfillment)

		c.Now = fixedNow.Add(10 * time.Second) // the cooldown is over
		got, err = decideVerify(card(t, used), candidates, item(t), c)
		then(t, got, err, fulfilled(1, 1, c.Now))

		c.Now, c.Cooldown = fixedNow, 0 // no cooldown
		got, err = decideVerify(card(t, used), candidates, item(t), c)
		then(t, got, err, fulfilled(1, 1, fixedNow))

		other := used
		other.ProviderID = 7 // another provider's use does not count
		c.Cooldown = 10 * time.Second
		got, err = decideVerify(card(t, other), candidates, item(t), c)
		then(t, got, err, fulfilled(1, 1, fixedNow))
	})
	t.Run("NO_REMAINING_QUOTA", func(t *testing.T) {
		got, err := decideVerify(card(t), candidates, item(t), verifyCmd(4))
		thenError(t, got, err, domain.ErrNoRemainingQuota)
		used := fulfilled(3, 0, fixedNow.Add(-time.Minute))
		got, err = decideVerify(card(t, used), candidates, item(t), verifyCmd(1))
		thenError(t, got, err, domain.ErrNoRemainingQuota)
	})
	t.Run("a health station records its points_code", func(t *testing.T) {
		st := *given(t, &providerState{}, station, catalog.ProviderReviewed{ProviderID: 7, Approved: true}, catalog.ProviderItemsConfigured{ProviderID: 7, AllowedItemIDs: []int64{4}})
		c := verifyCmd(1)
		c.In.PointsCode = ptr("P1")
		got, err := decideVerify(card(t), []providerState{st}, item(t), c)
		want := fulfilled(1, 2, fixedNow)
		want.ProviderID, want.PointsCode = 7, ptr("P1")
		then(t, got, err, want)
	})
}

func TestVerifyProviders(t *testing.T) {
	approvedStation := *given(t, &providerState{}, station, catalog.ProviderReviewed{ProviderID: 7, Approved: true}, catalog.ProviderItemsConfigured{ProviderID: 7, AllowedItemIDs: []int64{8}})
	in := VerifyInput{CardNumber: "C00000000000001", BenefitItemID: ptr[int64](4), Quantity: 1}
	if got, err := verifyProviders(2, in, []providerState{approvedStation, clinicMay(t, 4)}); err != nil || len(got) != 1 || got[0].reg.ProviderID != 6 {
		t.Fatalf("candidates %v %v, want the clinic alone", got, err)
	}
	withCode := in
	withCode.BenefitItemID, withCode.PointsCode = ptr[int64](8), ptr("P1")
	if got, err := verifyProviders(2, withCode, []providerState{approvedStation, clinicMay(t, 4)}); err != nil || len(got) != 2 {
		t.Fatalf("candidates %v %v, want the station and the clinic", got, err)
	}
	cases := map[string]struct {
		app int64
		in  func(*VerifyInput)
		ps  []providerState
	}{
		"no provider":            {2, nil, nil},
		"another app's provider": {3, nil, []providerState{clinicMay(t, 4)}},
		"pending review":         {2, nil, []providerState{*given(t, &providerState{}, clinic)}},
		"rejected": {2, nil, []providerState{*given(t, &providerState{}, clinic, catalog.ProviderReviewed{ProviderID: 6},
			catalog.ProviderItemsConfigured{ProviderID: 6, AllowedItemIDs: []int64{4}})}},
		"channel partner":             {3, nil, []providerState{*given(t, &providerState{}, partner, catalog.ProviderReviewed{ProviderID: 9, Approved: true})}},
		"item not allowed":            {2, func(in *VerifyInput) { in.BenefitItemID = ptr[int64](8) }, []providerState{clinicMay(t, 4)}},
		"another service_provider_id": {2, func(in *VerifyInput) { in.ServiceProviderID = ptr[int64](7) }, []providerState{clinicMay(t, 4)}},
		"station without its code":    {2, func(in *VerifyInput) { in.BenefitItemID = ptr[int64](8) }, []providerState{approvedStation}},
		"station with another code": {2, func(in *VerifyInput) { in.BenefitItemID, in.PointsCode = ptr[int64](8), ptr("P2") },
			[]providerState{approvedStation}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			in := in
			if c.in != nil {
				c.in(&in)
			}
			if _, err := verifyProviders(c.app, in, c.ps); err != domain.ErrProviderUnauthorized {
				t.Fatalf("%v, want SERVICE_PROVIDER_UNAUTHORIZED", err)
			}
		})
	}
}

func TestVerifyRejectsBadInput(t *testing.T) {
	ok := VerifyInput{CardNumber: "C00000000000001", UserBenefitItemID: ptr[int64](50), Quantity: 1000}
	if err := ok.validate(); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		field string
		edit  func(*VerifyInput)
	}{
		"short card number": {"card_number", func(in *VerifyInput) { in.CardNumber = "C1" }},
		"no item":           {"user_benefit_item_id", func(in *VerifyInput) { in.UserBenefitItemID = nil }},
		"both items":        {"user_benefit_item_id", func(in *VerifyInput) { in.BenefitItemID = ptr[int64](4) }},
		"quantity 0":        {"quantity", func(in *VerifyInput) { in.Quantity = 0 }},
		"quantity 1001":     {"quantity", func(in *VerifyInput) { in.Quantity = 1001 }},
		"long remark":       {"remark", func(in *VerifyInput) { in.Remark = ptr(strings.Repeat("r", 201)) }},
		"long points_code":  {"points_code", func(in *VerifyInput) { in.PointsCode = ptr(strings.Repeat("p", 65)) }},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			in := ok
			c.edit(&in)
			thenInvalid(t, in.validate(), c.field)
		})
	}
}

func TestRateDecision(t *testing.T) {
	c := rateFulfillment{IssuerAppID: 1, RecordID: 90, Rating: 5, Issuer: 1, Found: true}
	got, err := decideRate(given(t, &ratingState{}), c)
	then(t, got, err, catalog.FulfillmentRated{RecordID: 90, IssuerAppID: 1, Rating: 5})

	t.Run("ALREADY_RATED", func(t *testing.T) {
		got, err := decideRate(given(t, &ratingState{}, catalog.FulfillmentRated{RecordID: 90, IssuerAppID: 1, Rating: 2}), c)
		thenError(t, got, err, domain.ErrAlreadyRated)
	})
	t.Run("FULFILLMENT_NOT_FOUND", func(t *testing.T) {
		for name, c := range map[string]rateFulfillment{
			"no such record":     {IssuerAppID: 1, RecordID: 90, Rating: 5},
			"another app's card": {IssuerAppID: 1, RecordID: 90, Rating: 5, Issuer: 3, Found: true},
		} {
			got, err := decideRate(given(t, &ratingState{}), c)
			if err != domain.ErrFulfillmentNotFound || got != nil {
				t.Fatalf("%s: %v %v, want FULFILLMENT_NOT_FOUND", name, got, err)
			}
		}
	})
	t.Run("rating range", func(t *testing.T) {
		for _, r := range []int{0, 6, -1} {
			c := c
			c.Rating = r
			_, err := decideRate(given(t, &ratingState{}), c)
			thenInvalid(t, err, "rating")
		}
		c.Rating = 1
		got, err := decideRate(given(t, &ratingState{}), c)
		then(t, got, err, catalog.FulfillmentRated{RecordID: 90, IssuerAppID: 1, Rating: 1})
	})
}
