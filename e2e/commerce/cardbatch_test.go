package commerce_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

type issuedCards struct {
	Cards []struct {
		CardNumber string `json:"card_number"`
		Items      []struct {
			UserBenefitItemID int64 `json:"user_benefit_item_id"`
			BenefitItemID     int64 `json:"benefit_item_id"`
			Quantity          int64 `json:"quantity"`
		} `json:"items"`
	} `json:"cards"`
}

// The same batch sent again answers the same cards and appends nothing; a
// partner cannot choose numbers, so issuance reveals no other issuer's card;
// verify-use answers a card the caller may not verify exactly like a missing one.
func TestCardBatchesAreIdempotentAndRevealNoOtherCard(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	station, partner, item := harness.BenefitSetup(t, p)
	expires := time.Now().Add(48 * time.Hour).Format(time.RFC3339)
	batch := map[string]any{"cards": []any{
		map[string]any{"holder_name": "韩梅梅", "expires_at": expires, "items": []any{map[string]any{"benefit_item_id": item, "quantity": 2}}},
		map[string]any{"holder_name": "李雷", "holder_phone": "13987654321", "expires_at": expires, "items": []any{map[string]any{"benefit_item_id": item, "quantity": 1}}},
	}}
	var first, again issuedCards
	partner.Expect("POST", "/open/v1/benefit-cards/batch-issue", batch, 201, "0").Data(t, &first)
	before := p.EventCount()
	partner.Expect("POST", "/open/v1/benefit-cards/batch-issue", batch, 201, "0").Data(t, &again)
	if !reflect.DeepEqual(first, again) || len(first.Cards) != 2 {
		t.Fatalf("retry answered %+v, first %+v", again, first)
	}
	if n := p.EventCount(); n != before {
		t.Fatalf("the retry appended %d events", n-before)
	}
	for _, c := range first.Cards {
		partner.Expect("GET", "/open/v1/benefit-cards/detail?card_number="+c.CardNumber, nil, 200, "0")
	}

	// Another issuer's number and a fresh number get the same answer, and nothing is appended.
	other := p.CreateApp("other insurer")
	var cp struct {
		ID int64 `json:"provider_id"`
	}
	p.AdminOK("POST", "/admin/v1/service-providers", map[string]any{"app_id": other.ID, "name": "Other", "type": "CHANNEL_PARTNER", "contact": "x"}, 201).Data(t, &cp)
	p.AdminOK("POST", fmt.Sprintf("/admin/v1/service-providers/%d/review", cp.ID), map[string]any{"decision": "approve"}, 200)
	numbered := func(number string) map[string]any {
		return map[string]any{"cards": []any{map[string]any{"card_number": number, "holder_name": "王五", "expires_at": expires,
			"items": []any{map[string]any{"benefit_item_id": item, "quantity": 1}}}}}
	}
	before = p.EventCount()
	taken := other.Expect("POST", "/open/v1/benefit-cards/batch-issue", numbered(first.Cards[0].CardNumber), 422, "VALIDATION_ERROR")
	fresh := other.Expect("POST", "/open/v1/benefit-cards/batch-issue", numbered("ZZZZZZZZZZZZZZZ"), 422, "VALIDATION_ERROR")
	if taken.Env.Message != fresh.Env.Message || !reflect.DeepEqual(taken.Env.Errors, fresh.Env.Errors) {
		t.Fatalf("another issuer's number answered %s, a fresh one %s", taken.Raw, fresh.Raw)
	}
	if n := p.EventCount(); n != before {
		t.Fatalf("refused batches appended %d events", n-before)
	}

	// A card item of an item the station may not verify is not its card to see.
	var dental struct {
		ID int64 `json:"benefit_item_id"`
	}
	p.AdminOK("POST", "/admin/v1/benefit-items", map[string]any{"name": "Dental"}, 201).Data(t, &dental)
	var d issuedCards
	partner.Expect("POST", "/open/v1/benefit-cards/batch-issue", map[string]any{"cards": []any{map[string]any{"holder_name": "韩梅梅", "expires_at": expires,
		"items": []any{map[string]any{"benefit_item_id": dental.ID, "quantity": 1}}}}}, 201, "0").Data(t, &d)
	hidden := station.Expect("POST", "/open/v1/benefit-cards/verify-use", map[string]any{"card_number": d.Cards[0].CardNumber,
		"user_benefit_item_id": d.Cards[0].Items[0].UserBenefitItemID, "points_code": "P-1"}, 404, "CARD_NOT_FOUND")
	missing := station.Expect("POST", "/open/v1/benefit-cards/verify-use", map[string]any{"card_number": "000000000000000",
		"user_benefit_item_id": d.Cards[0].Items[0].UserBenefitItemID, "points_code": "P-1"}, 404, "CARD_NOT_FOUND")
	if hidden.Env.Message != missing.Env.Message {
		t.Fatalf("a card the station may not verify answered %s, a missing one %s", hidden.Raw, missing.Raw)
	}
	// Naming an item it may not verify is refused from its own configuration, card or no card.
	station.Expect("POST", "/open/v1/benefit-cards/verify-use", map[string]any{"card_number": d.Cards[0].CardNumber, "benefit_item_id": dental.ID, "points_code": "P-1"}, 403, "SERVICE_PROVIDER_UNAUTHORIZED")
	station.Expect("POST", "/open/v1/benefit-cards/verify-use", map[string]any{"card_number": "000000000000000", "benefit_item_id": dental.ID, "points_code": "P-1"}, 403, "SERVICE_PROVIDER_UNAUTHORIZED")
}

// An app with several providers pages its records as one list: limit 2,
// cursor the last id, every record once and in order.
func TestProviderFulfillmentsPageAcrossProviders(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		cfg.VerifyCooldown = -1
		p := harness.Start(t, cfg)
		_, partner, item := harness.BenefitSetup(t, p)
		clinic := p.CreateApp("clinics")
		var providers []int64
		for i := range 3 {
			var sp struct {
				ID int64 `json:"provider_id"`
			}
			clinic.Expect("POST", "/open/v1/service-providers", map[string]any{"name": fmt.Sprintf("Clinic %d", i), "type": "SERVICE_PROVIDER", "contact": "x"}, 201, "0").Data(t, &sp)
			p.AdminOK("POST", fmt.Sprintf("/admin/v1/service-providers/%d/review", sp.ID), map[string]any{"decision": "approve"}, 200)
			p.AdminOK("PUT", fmt.Sprintf("/admin/v1/service-providers/%d/benefit-items", sp.ID), map[string]any{"allowed_benefit_item_ids": []int64{item}}, 200)
			providers = append(providers, sp.ID)
		}
		card := partner.Issue(item, 100, time.Now().Add(time.Hour).Format(time.RFC3339))
		var want []int64
		for i := range 7 { // interleaved: providers 0,1,2,0,1,2,0
			var v struct {
				ID int64 `json:"fulfillment_record_id"`
			}
			clinic.Expect("POST", "/open/v1/benefit-cards/verify-use", map[string]any{"card_number": card, "benefit_item_id": item,
				"service_provider_id": providers[i%3]}, 200, "0").Data(t, &v)
			want = append(want, v.ID)
		}
		var got []int64
		for after := int64(0); ; {
			var page struct {
				Fulfillments []struct {
					ID int64 `json:"fulfillment_record_id"`
				} `json:"fulfillments"`
			}
			clinic.Expect("GET", fmt.Sprintf("/open/v1/benefit-cards/fulfillments?role=provider&limit=2&after=%d", after), nil, 200, "0").Data(t, &page)
			if len(page.Fulfillments) > 2 {
				t.Fatalf("page after %d holds %d records", after, len(page.Fulfillments))
			}
			if len(page.Fulfillments) == 0 {
				break
			}
			for _, f := range page.Fulfillments {
				got = append(got, f.ID)
			}
			after = got[len(got)-1]
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("paged records %v, want %v", got, want)
		}
	})
}
