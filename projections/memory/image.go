package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// FamilyImage is one read-model family's rows at its checkpoint: what a
// snapshot keeps so that a start can restore the family and follow the log
// from Checkpoint instead of replaying it all. Only rows are kept; the
// indexes are rebuilt by the same writes the projector makes, so a restored
// family answers exactly as the replayed one did. Rows are ordered by their
// key, so two images of equal read models are equal.
type FamilyImage struct {
	Family     projections.Family
	Checkpoint events.Position

	Users   []projections.User
	Groups  []projections.Group
	Members []projections.Member

	Deliveries []projections.Delivery
	Attempts   []projections.Attempt

	Reports []projections.Report

	Goods  []projections.Goods
	Orders []projections.Order

	BenefitItems []projections.BenefitItem
	Providers    []projections.ServiceProvider
	Cards        []projections.Card
	Fulfillments []projections.Fulfillment

	AuditFacts []projections.AuditFact
}

// Rows counts the image's rows, for logs and metrics.
func (im *FamilyImage) Rows() int {
	return len(im.Users) + len(im.Groups) + len(im.Members) + len(im.Deliveries) + len(im.Attempts) + len(im.Reports) +
		len(im.Goods) + len(im.Orders) + len(im.BenefitItems) + len(im.Providers) + len(im.Cards) + len(im.Fulfillments) + len(im.AuditFacts)
}

// sortedValues lists a map's values ordered by key.
func sortedValues[K cmp.Ordered, V any](m map[K]V) []V {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]V, 0, len(m))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

// Image copies one family's rows and its checkpoint under the family's read
// lock, so the rows are exactly the effect of the log up to the checkpoint.
// Readers go on meanwhile; the family's projector waits for the copy.
func (s *Store) Image(ctx context.Context, f projections.Family) (FamilyImage, error) {
	if err := ctx.Err(); err != nil {
		return FamilyImage{}, err
	}
	mu, _, err := s.family(f)
	if err != nil {
		return FamilyImage{}, err
	}
	mu.RLock()
	defer mu.RUnlock()
	im := FamilyImage{Family: f}
	s.cpMu.Lock()
	im.Checkpoint = s.checkpoints[string(f)]
	s.cpMu.Unlock()
	switch f {
	case projections.FamilyUsers:
		// Rows share their pointees with the store: writes replace rows and
		// never change a pointee, and the image is only read.
		im.Users, im.Groups, im.Members = sortedValues(s.users), sortedValues(s.groups), sortedValues(s.members)
	case projections.FamilyDeliveries:
		im.Deliveries = sortedValues(s.deliveries)
		for _, list := range sortedValues(s.attempts) {
			im.Attempts = append(im.Attempts, list...)
		}
	case projections.FamilyReports:
		im.Reports = sortedValues(s.reports)
	case projections.FamilyOrders:
		im.Goods, im.Orders = sortedValues(s.goods), sortedValues(s.orders)
	case projections.FamilyBenefits:
		im.BenefitItems, im.Providers = sortedValues(s.benefitItems), sortedValues(s.providers)
		im.Cards, im.Fulfillments = sortedValues(s.cards), sortedValues(s.fulfillments)
	case projections.FamilyAudit:
		im.AuditFacts = slices.Clone(s.facts)
	}
	return im, nil
}

// Restore replaces one family's rows and checkpoint with the image's, under
// the family's write lock; on failure the family is left empty (checkpoint
// zero), so the runner replays it from the start of the log.
func (s *Store) Restore(ctx context.Context, im FamilyImage) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	mu, empty, err := s.family(im.Family)
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	empty()
	s.cpMu.Lock()
	delete(s.checkpoints, string(im.Family))
	s.cpMu.Unlock()
	defer func() {
		if err != nil {
			empty()
		}
	}()
	t := &tx{s: s}
	defer func() { t.s = nil }()
	// Every put goes through the projector's own write, which keeps the
	// indexes; the undo log is dropped as it goes (a failure empties all).
	each := func(n int, put func(i int) error) error {
		for i := 0; i < n; i++ {
			if err := put(i); err != nil {
				return fmt.Errorf("restore %s: %w", im.Family, err)
			}
			t.undo = t.undo[:0]
		}
		return nil
	}
	// Deliveries go in feed order, so each lands at the end of the feed
	// indexes (an append) instead of in their middle: in key order a
	// restore of n deliveries moved O(n²) bytes.
	deliveries := make([]*projections.Delivery, len(im.Deliveries))
	for i := range im.Deliveries {
		deliveries[i] = &im.Deliveries[i]
	}
	slices.SortFunc(deliveries, func(a, b *projections.Delivery) int { return compareFeed(feedKeyOf(*a), feedKeyOf(*b)) })
	puts := []error{
		each(len(im.Users), func(i int) error { return t.PutUser(ctx, im.Users[i]) }),
		each(len(im.Groups), func(i int) error { return t.PutGroup(ctx, im.Groups[i]) }),
		each(len(im.Members), func(i int) error { return t.PutMember(ctx, im.Members[i]) }),
		each(len(deliveries), func(i int) error { return t.PutDelivery(ctx, *deliveries[i]) }),
		each(len(im.Attempts), func(i int) error { return t.AddAttempt(ctx, im.Attempts[i]) }),
		each(len(im.Reports), func(i int) error { return t.PutReport(ctx, im.Reports[i]) }),
		each(len(im.Goods), func(i int) error { return t.PutGoods(ctx, im.Goods[i]) }),
		each(len(im.Orders), func(i int) error { return t.PutOrder(ctx, im.Orders[i]) }),
		each(len(im.BenefitItems), func(i int) error { return t.PutBenefitItem(ctx, im.BenefitItems[i]) }),
		each(len(im.Providers), func(i int) error { return t.PutProvider(ctx, im.Providers[i]) }),
		each(len(im.Cards), func(i int) error { return t.PutCard(ctx, im.Cards[i]) }),
		each(len(im.Fulfillments), func(i int) error { return t.PutFulfillment(ctx, im.Fulfillments[i]) }),
		each(len(im.AuditFacts), func(i int) error { return t.AddAuditFact(ctx, im.AuditFacts[i]) }),
	}
	for _, e := range puts {
		if e != nil {
			return e
		}
	}
	s.cpMu.Lock()
	s.checkpoints[string(im.Family)] = im.Checkpoint
	s.cpMu.Unlock()
	return nil
}

// clear empties a family and its checkpoint without telling OnReset (a
// snapshot that failed its checks is being dropped already).
func (s *Store) clear(f projections.Family) error {
	mu, empty, err := s.family(f)
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	empty()
	s.cpMu.Lock()
	delete(s.checkpoints, string(f))
	s.cpMu.Unlock()
	return nil
}
