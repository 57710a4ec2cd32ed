package commands

import (
	"context"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// itemState is a benefit item's aggregate.
type itemState struct {
	id     int64
	name   string
	status string
}

func (s *itemState) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.BenefitItemCreated:
		s.id, s.name, s.status = p.BenefitItemID, p.Name, ItemActive
	case *catalog.BenefitItemStatusChanged:
		s.status = p.Status
	}
}

// currentItem is the item's state as of now, for a decision that reads it
// without appending to it (verify-use): read incrementally through the cache.
func (b *Benefits) currentItem(ctx context.Context, id int64) (itemState, error) {
	return b.itemCache.read(ctx, b.streams, domain.BenefitItemStream(id), (*itemState).apply)
}

func (b *Benefits) item(ctx context.Context, id int64) (itemState, uint64, events.Position, error) {
	var s itemState
	v, pos, err := b.load(ctx, domain.BenefitItemStream(id), s.apply)
	return s, v, pos, err
}

// validateItemName checks a new benefit item's name.
func validateItemName(name string) error {
	v := &domain.ValidationError{}
	r := rules{v: v}
	if r.required("name", name) {
		r.maxLen("name", name, 64)
	}
	return v.Err()
}

// decideCreateItem creates an active benefit item under a fresh id (its
// stream is new).
func decideCreateItem(id int64, name string) []events.Payload {
	return []events.Payload{catalog.BenefitItemCreated{BenefitItemID: id, Name: name}}
}

// CreateItem adds a benefit item, active.
func (b *Benefits) CreateItem(ctx context.Context, name string, meta Meta) (int64, events.Position, error) {
	if err := validateItemName(name); err != nil {
		return 0, events.Position{}, err
	}
	id, err := b.ids.Next(ctx, "benefit_item")
	if err != nil {
		return 0, events.Position{}, err
	}
	res, err := b.append(ctx, domain.BenefitItemStream(id), 0, meta, decideCreateItem(id, name)...)
	return id, res.Position, err
}

// decideSetItemStatus suspends or reactivates an existing item; the status
// it already has decides nothing.
func decideSetItemStatus(st *itemState, status string) ([]events.Payload, error) {
	if st.id == 0 {
		return nil, domain.ErrBenefitItemNotFound
	}
	if st.status == status {
		return nil, nil
	}
	return []events.Payload{catalog.BenefitItemStatusChanged{BenefitItemID: st.id, Status: status}}, nil
}

// SetItemStatus suspends or reactivates a benefit item.
func (b *Benefits) SetItemStatus(ctx context.Context, id int64, status string, meta Meta) (events.Position, error) {
	return execute(ctx, b.streams, replay[*itemState]{func() *itemState { return &itemState{} }}, domain.BenefitItemStream(id), &meta, func(s *itemState) ([]events.Payload, error) {
		return decideSetItemStatus(s, status)
	})
}
