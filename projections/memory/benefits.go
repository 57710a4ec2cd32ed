package memory

import (
	"cmp"
	"context"
	"slices"
	"strconv"

	"github.com/healthtech/partner-open-platform/projections"
)

// benefitIndexes holds the benefit items, providers, cards and fulfillment
// records with the indexes their reads use, so a provider's or a card's
// records are read from their own sorted id list, never by a scan.
type benefitIndexes struct {
	benefitItems   map[int64]projections.BenefitItem // by BenefitItemID
	benefitItemIDs []int64                           // sorted

	providers    map[int64]projections.ServiceProvider // by ProviderID
	providerIDs  []int64                               // sorted
	appProviders map[int64][]int64                     // AppID -> ProviderIDs, sorted
	devProviders map[int64][]int64                     // DeveloperID -> ProviderIDs, sorted

	cards     map[string]projections.Card // by CardNumber, Items sorted by UserBenefitItemID
	cardItems map[int64]string            // UserBenefitItemID -> CardNumber holding it

	fulfillments         map[int64]projections.Fulfillment // by RecordID
	fulfillmentIDs       []int64                           // sorted
	providerFulfillments map[int64][]int64                 // ProviderID -> RecordIDs, sorted
	issuerFulfillments   map[int64][]int64                 // IssuerAppID -> RecordIDs, sorted
	cardFulfillments     map[string][]int64                // CardNumber -> RecordIDs, sorted
}

func newBenefitIndexes() benefitIndexes {
	return benefitIndexes{
		benefitItems:         map[int64]projections.BenefitItem{},
		providers:            map[int64]projections.ServiceProvider{},
		appProviders:         map[int64][]int64{},
		devProviders:         map[int64][]int64{},
		cards:                map[string]projections.Card{},
		cardItems:            map[int64]string{},
		fulfillments:         map[int64]projections.Fulfillment{},
		providerFulfillments: map[int64][]int64{},
		issuerFulfillments:   map[int64][]int64{},
		cardFulfillments:     map[string][]int64{},
	}
}

// The set functions replace cur (if had) by next (if keep) in the rows and
// indexes; the undo of a write is the same call with the sides swapped.

func (s *Store) setBenefitItem(cur projections.BenefitItem, had bool, next projections.BenefitItem, keep bool) {
	if had {
		delete(s.benefitItems, cur.BenefitItemID)
		if !keep {
			s.benefitItemIDs = removeID(s.benefitItemIDs, cur.BenefitItemID)
		}
	}
	if keep {
		s.benefitItems[next.BenefitItemID] = next
		if !had {
			s.benefitItemIDs = insertID(s.benefitItemIDs, next.BenefitItemID)
		}
	}
}

func (s *Store) setProvider(cur projections.ServiceProvider, had bool, next projections.ServiceProvider, keep bool) {
	same := had && keep
	if had {
		delete(s.providers, cur.ProviderID)
		if !same {
			s.providerIDs = removeID(s.providerIDs, cur.ProviderID)
		}
		if !same || cur.AppID != next.AppID {
			dropFromList(s.appProviders, cur.AppID, cur.ProviderID)
		}
		if !same || cur.DeveloperID != next.DeveloperID {
			dropFromList(s.devProviders, cur.DeveloperID, cur.ProviderID)
		}
	}
	if keep {
		s.providers[next.ProviderID] = next
		if !same {
			s.providerIDs = insertID(s.providerIDs, next.ProviderID)
		}
		if !same || cur.AppID != next.AppID {
			addToList(s.appProviders, next.AppID, next.ProviderID)
		}
		if !same || cur.DeveloperID != next.DeveloperID {
			addToList(s.devProviders, next.DeveloperID, next.ProviderID)
		}
	}
}

func (s *Store) setCard(cur projections.Card, had bool, next projections.Card, keep bool) {
	if had {
		delete(s.cards, cur.CardNumber)
		for _, it := range cur.Items {
			delete(s.cardItems, it.UserBenefitItemID)
		}
	}
	if keep {
		s.cards[next.CardNumber] = next
		for _, it := range next.Items {
			s.cardItems[it.UserBenefitItemID] = next.CardNumber
		}
	}
}

func (s *Store) setFulfillment(cur projections.Fulfillment, had bool, next projections.Fulfillment, keep bool) {
	same := had && keep
	if had {
		delete(s.fulfillments, cur.RecordID)
		if !same {
			s.fulfillmentIDs = removeID(s.fulfillmentIDs, cur.RecordID)
		}
		if !same || cur.ProviderID != next.ProviderID {
			dropFromList(s.providerFulfillments, cur.ProviderID, cur.RecordID)
		}
		if !same || cur.IssuerAppID != next.IssuerAppID {
			dropFromList(s.issuerFulfillments, cur.IssuerAppID, cur.RecordID)
		}
		if !same || cur.CardNumber != next.CardNumber {
			dropFromList(s.cardFulfillments, cur.CardNumber, cur.RecordID)
		}
	}
	if keep {
		s.fulfillments[next.RecordID] = next
		if !same {
			s.fulfillmentIDs = insertID(s.fulfillmentIDs, next.RecordID)
		}
		if !same || cur.ProviderID != next.ProviderID {
			addToList(s.providerFulfillments, next.ProviderID, next.RecordID)
		}
		if !same || cur.IssuerAppID != next.IssuerAppID {
			addToList(s.issuerFulfillments, next.IssuerAppID, next.RecordID)
		}
		if !same || cur.CardNumber != next.CardNumber {
			addToList(s.cardFulfillments, next.CardNumber, next.RecordID)
		}
	}
}

// ---- reads ----

// BenefitItems reads the sorted ids, so the items come in BenefitItemID order without a sort.
func (s *Store) BenefitItems(ctx context.Context) ([]projections.BenefitItem, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.benefitsMu.RLock()
	defer s.benefitsMu.RUnlock()
	out := make([]projections.BenefitItem, len(s.benefitItemIDs))
	for i, id := range s.benefitItemIDs {
		out[i] = s.benefitItems[id]
	}
	return out, nil
}

// Providers reads the app's own id list (appID 0: operators, every provider).
func (s *Store) Providers(ctx context.Context, appID int64) ([]projections.ServiceProvider, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.benefitsMu.RLock()
	defer s.benefitsMu.RUnlock()
	ids := s.providerIDs
	if appID != 0 {
		ids = s.appProviders[appID]
	}
	out := make([]projections.ServiceProvider, len(ids))
	for i, id := range ids {
		out[i] = copyProvider(s.providers[id])
	}
	return out, nil
}

// DeveloperProviders reads the developer's own sorted id list.
func (s *Store) DeveloperProviders(ctx context.Context, developerID int64) ([]projections.ServiceProvider, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if developerID == 0 {
		return nil, nil
	}
	s.benefitsMu.RLock()
	defer s.benefitsMu.RUnlock()
	ids := s.devProviders[developerID]
	out := make([]projections.ServiceProvider, len(ids))
	for i, id := range ids {
		out[i] = copyProvider(s.providers[id])
	}
	return out, nil
}

// CardByNumber enforces tenancy in the lookup (issuerAppID 0: operators), so no caller can forget it.
func (s *Store) CardByNumber(ctx context.Context, issuerAppID int64, number string) (projections.Card, error) {
	if err := ctx.Err(); err != nil {
		return projections.Card{}, err
	}
	s.benefitsMu.RLock()
	defer s.benefitsMu.RUnlock()
	c, ok := s.cards[number]
	if !ok || (issuerAppID != 0 && c.IssuerAppID != issuerAppID) {
		return projections.Card{}, projections.ErrNotFound
	}
	return copyCard(c), nil
}

// providesFor reports whether the provider belongs to the app, as the
// Postgres store's join with service_providers decides.
func (s *Store) providesFor(providerID, appID int64) bool {
	p, ok := s.providers[providerID]
	return ok && p.AppID == appID
}

// Fulfillments walks the narrowest id index from f.After (a card's, a
// provider's or an issuer's) and filters by the others, as the Postgres
// planner does with one index.
func (s *Store) Fulfillments(ctx context.Context, f projections.FulfillmentFilter) ([]projections.Fulfillment, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit := clampLimit(f.Limit)
	s.benefitsMu.RLock()
	defer s.benefitsMu.RUnlock()
	var ids []int64
	switch {
	case f.ProviderAppID != 0 && f.CardNumber == "" && f.ProviderID == 0:
		// Merge the app's providers' lists: at most limit ids from each.
		for _, p := range s.appProviders[f.ProviderAppID] {
			list := s.providerFulfillments[p]
			from := after(list, f.After)
			ids = append(ids, list[from:min(len(list), from+limit)]...)
		}
		slices.Sort(ids)
	case f.CardNumber != "":
		ids = s.cardFulfillments[f.CardNumber]
	case f.ProviderID != 0:
		ids = s.providerFulfillments[f.ProviderID]
	case f.IssuerAppID != 0:
		ids = s.issuerFulfillments[f.IssuerAppID]
	default:
		ids = s.fulfillmentIDs
	}
	out := []projections.Fulfillment{}
	for _, id := range ids[after(ids, f.After):] {
		if len(out) == limit {
			break
		}
		r := s.fulfillments[id]
		if (f.CardNumber != "" && r.CardNumber != f.CardNumber) ||
			(f.ProviderID != 0 && r.ProviderID != f.ProviderID) ||
			(f.ProviderAppID != 0 && (r.ProviderAppID != f.ProviderAppID || !s.providesFor(r.ProviderID, f.ProviderAppID))) ||
			(f.IssuerAppID != 0 && r.IssuerAppID != f.IssuerAppID) {
			continue
		}
		out = append(out, copyFulfillment(r))
	}
	return out, nil
}

// ---- writes ----

// BenefitItem reads a benefit item as this transaction sees it, whatever its status.
func (t *tx) BenefitItem(ctx context.Context, id int64) (projections.BenefitItem, error) {
	if err := t.check(ctx); err != nil {
		return projections.BenefitItem{}, err
	}
	b, ok := t.s.benefitItems[id]
	if !ok {
		return projections.BenefitItem{}, projections.ErrNotFound
	}
	return b, nil
}

// Provider reads a provider as this transaction sees it, whatever its app.
func (t *tx) Provider(ctx context.Context, id int64) (projections.ServiceProvider, error) {
	if err := t.check(ctx); err != nil {
		return projections.ServiceProvider{}, err
	}
	p, ok := t.s.providers[id]
	if !ok {
		return projections.ServiceProvider{}, projections.ErrNotFound
	}
	return copyProvider(p), nil
}

// Card reads a card as this transaction sees it, whatever its issuer.
func (t *tx) Card(ctx context.Context, number string) (projections.Card, error) {
	if err := t.check(ctx); err != nil {
		return projections.Card{}, err
	}
	c, ok := t.s.cards[number]
	if !ok {
		return projections.Card{}, projections.ErrNotFound
	}
	return copyCard(c), nil
}

// Fulfillment reads a record as this transaction sees it.
func (t *tx) Fulfillment(ctx context.Context, id int64) (projections.Fulfillment, error) {
	if err := t.check(ctx); err != nil {
		return projections.Fulfillment{}, err
	}
	r, ok := t.s.fulfillments[id]
	if !ok {
		return projections.Fulfillment{}, projections.ErrNotFound
	}
	return copyFulfillment(r), nil
}

func (t *tx) PutBenefitItem(ctx context.Context, b projections.BenefitItem) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	b.CreatedAt, b.UpdatedAt = normTime(b.CreatedAt), normTime(b.UpdatedAt)
	old, had := s.benefitItems[b.BenefitItemID]
	s.setBenefitItem(old, had, b, true)
	if !t.owned {
		t.undo = append(t.undo, func() { s.setBenefitItem(b, true, old, had) })
	}
	return nil
}

func (t *tx) PutProvider(ctx context.Context, p projections.ServiceProvider) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	p = normProvider(p)
	old, had := s.providers[p.ProviderID]
	s.setProvider(old, had, p, true)
	if !t.owned {
		t.undo = append(t.undo, func() { s.setProvider(p, true, old, had) })
	}
	return nil
}

func (t *tx) PutCard(ctx context.Context, c projections.Card) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	c = normCard(c)
	for i, it := range c.Items {
		if i > 0 && it.UserBenefitItemID == c.Items[i-1].UserBenefitItemID {
			return &ConflictError{Key: "user_benefit_item_id", Value: strconv.FormatInt(it.UserBenefitItemID, 10),
				Holder: "another item of card " + c.CardNumber}
		}
		if holder, taken := s.cardItems[it.UserBenefitItemID]; taken && holder != c.CardNumber {
			return &ConflictError{Key: "user_benefit_item_id", Value: strconv.FormatInt(it.UserBenefitItemID, 10),
				Holder: "card " + holder}
		}
	}
	old, had := s.cards[c.CardNumber]
	s.setCard(old, had, c, true)
	if !t.owned {
		t.undo = append(t.undo, func() { s.setCard(c, true, old, had) })
	}
	return nil
}

func (t *tx) PutFulfillment(ctx context.Context, r projections.Fulfillment) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	r = copyFulfillment(r)
	r.InitiatedAt, r.UpdatedAt = normTime(r.InitiatedAt), normTime(r.UpdatedAt)
	old, had := s.fulfillments[r.RecordID]
	s.setFulfillment(old, had, r, true)
	if !t.owned {
		t.undo = append(t.undo, func() { s.setFulfillment(r, true, old, had) })
	}
	return nil
}

// ---- copies and normalisation ----

// copyProvider gives the caller its own pointer and list; AllowedItemIDs is
// never nil, as the Postgres store reads an empty bigint[].
func copyProvider(p projections.ServiceProvider) projections.ServiceProvider {
	p.PointsCode = cloneStr(p.PointsCode)
	p.AllowedItemIDs = append(make([]int64, 0, len(p.AllowedItemIDs)), p.AllowedItemIDs...)
	return p
}

// normProvider makes AllowedItemIDs the ascending set the port promises,
// whatever order or repeats the writer gave, as the Postgres store does.
func normProvider(p projections.ServiceProvider) projections.ServiceProvider {
	p = copyProvider(p)
	slices.Sort(p.AllowedItemIDs)
	p.AllowedItemIDs = slices.Compact(p.AllowedItemIDs)
	p.CreatedAt, p.UpdatedAt = normTime(p.CreatedAt), normTime(p.UpdatedAt)
	return p
}

// copyCard gives the caller its own pointer and items; Items is never nil,
// as the Postgres store reads an empty item set.
func copyCard(c projections.Card) projections.Card {
	c.HolderPhone = cloneStr(c.HolderPhone)
	c.Items = append(make([]projections.CardItem, 0, len(c.Items)), c.Items...)
	return c
}

func normCard(c projections.Card) projections.Card {
	c = copyCard(c)
	slices.SortStableFunc(c.Items, func(a, b projections.CardItem) int {
		return cmp.Compare(a.UserBenefitItemID, b.UserBenefitItemID)
	})
	c.ExpiresAt, c.CreatedAt, c.UpdatedAt = normTime(c.ExpiresAt), normTime(c.CreatedAt), normTime(c.UpdatedAt)
	return c
}

func copyFulfillment(r projections.Fulfillment) projections.Fulfillment {
	r.PointsCode, r.Remark, r.Rating = cloneStr(r.PointsCode), cloneStr(r.Remark), cloneIntPtr(r.Rating)
	return r
}
