package commands

import (
	"context"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// providerState is a service provider's aggregate.
type providerState struct {
	reg     *catalog.ProviderRegistered
	status  string
	allowed []int64
}

func (s *providerState) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.ProviderRegistered:
		s.reg, s.status = p, ProviderPending
	case *catalog.ProviderReviewed:
		s.status = ProviderRejected
		if p.Approved {
			s.status = ProviderApproved
		}
	case *catalog.ProviderItemsConfigured:
		s.allowed = p.AllowedItemIDs
	}
}

// currentProvider is the provider's state as of now, for a decision that
// reads it without appending to it (verify-use, channel-partner checks):
// read incrementally through the cache. apply replaces the registration and
// the allowed list, never writes through them, so copies stay as read.
func (b *Benefits) currentProvider(ctx context.Context, id int64) (providerState, error) {
	return b.providerCache.read(ctx, b.streams, domain.ProviderStream(id), (*providerState).apply)
}

// ProviderInput is a service provider's registration.
type ProviderInput struct {
	AppID      int64
	Name       string
	Type       string
	Contact    string
	PointsCode *string
	// DeveloperID is the portal developer registering the provider (0: the
	// partner API), so the portal shows the provider to its developer only.
	DeveloperID int64
}

// validate checks a registration: a points_code for HEALTH_STATION
// providers only.
func (in ProviderInput) validate() error {
	v := &domain.ValidationError{}
	r := rules{v: v}
	if r.required("name", in.Name) {
		r.maxLen("name", in.Name, 100)
	}
	if r.required("type", in.Type) {
		r.oneOf("type", in.Type, set(ProviderHealthStation, ProviderService, ProviderChannelPartner), "HEALTH_STATION, SERVICE_PROVIDER, CHANNEL_PARTNER")
	}
	if r.required("contact", in.Contact) {
		r.maxLen("contact", in.Contact, 100)
	}
	switch {
	case in.Type == ProviderHealthStation && (in.PointsCode == nil || *in.PointsCode == ""):
		v.Add("points_code", "is required for HEALTH_STATION providers")
	case in.Type != ProviderHealthStation && in.PointsCode != nil:
		v.Add("points_code", "is only for HEALTH_STATION providers")
	case in.PointsCode != nil:
		r.maxLen("points_code", *in.PointsCode, 64)
	}
	return v.Err()
}

// decideRegisterProvider records a validated provider pending review under
// a fresh id (its stream is new).
func decideRegisterProvider(id int64, in ProviderInput) []events.Payload {
	return []events.Payload{catalog.ProviderRegistered{ProviderID: id, AppID: in.AppID, Name: in.Name, Type: in.Type, Contact: in.Contact, PointsCode: in.PointsCode, DeveloperID: in.DeveloperID}}
}

// RegisterProvider records a provider pending review, linked to an app.
func (b *Benefits) RegisterProvider(ctx context.Context, in ProviderInput, meta Meta) (int64, events.Position, error) {
	if err := in.validate(); err != nil {
		return 0, events.Position{}, err
	}
	id, err := b.ids.Next(ctx, "provider")
	if err != nil {
		return 0, events.Position{}, err
	}
	meta.AppID = in.AppID
	res, err := b.append(ctx, domain.ProviderStream(id), 0, meta, decideRegisterProvider(id, in)...)
	return id, res.Position, err
}

// validateReviewNotes bounds an operator's review notes.
func validateReviewNotes(notes string) error {
	if utf8.RuneCountInString(notes) > 500 {
		v := &domain.ValidationError{}
		v.Add("notes", "must be at most 500 characters")
		return v
	}
	return nil
}

// decideReviewProvider approves or rejects a provider once: only a pending
// one is reviewed.
func decideReviewProvider(st *providerState, approve bool, notes string) ([]events.Payload, error) {
	if st.reg == nil {
		return nil, domain.ErrProviderNotFound
	}
	if st.status != ProviderPending {
		return nil, domain.ErrProviderAlreadyReview
	}
	return []events.Payload{catalog.ProviderReviewed{ProviderID: st.reg.ProviderID, Approved: approve, Notes: notes}}, nil
}

// ReviewProvider approves or rejects a pending provider.
func (b *Benefits) ReviewProvider(ctx context.Context, id int64, approve bool, notes string, meta Meta) (events.Position, error) {
	if err := validateReviewNotes(notes); err != nil {
		return events.Position{}, err
	}
	return executeOnce(ctx, b.streams, replay[*providerState]{func() *providerState { return &providerState{} }}, domain.ProviderStream(id), &meta, domain.ErrProviderAlreadyReview, func(s *providerState) ([]events.Payload, error) {
		ps, err := decideReviewProvider(s, approve, notes)
		if err == nil {
			meta.AppID = s.reg.AppID
		}
		return ps, err
	})
}

// normalizeIDs sorts ids and drops repeats.
func normalizeIDs(ids []int64) []int64 {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return slices.Compact(ids)
}

// decideConfigureItems sets the benefit items (normalised, items[i] the
// state of ids[i]) a provider may verify: every one must exist, and a
// CHANNEL_PARTNER verifies none.
func decideConfigureItems(st *providerState, ids []int64, items []itemState) ([]events.Payload, error) {
	for i, it := range ids {
		if items[i].id == 0 {
			v := &domain.ValidationError{}
			v.Add("allowed_benefit_item_ids", fmt.Sprintf("benefit item %d does not exist", it))
			return nil, v
		}
	}
	if st.reg == nil {
		return nil, domain.ErrProviderNotFound
	}
	if st.reg.Type == ProviderChannelPartner && len(ids) > 0 {
		v := &domain.ValidationError{}
		v.Add("allowed_benefit_item_ids", "CHANNEL_PARTNER providers never verify benefit uses")
		return nil, v
	}
	return []events.Payload{catalog.ProviderItemsConfigured{ProviderID: st.reg.ProviderID, AllowedItemIDs: ids}}, nil
}

// ConfigureItems sets the benefit items a provider may verify.
func (b *Benefits) ConfigureItems(ctx context.Context, id int64, items []int64, meta Meta) (events.Position, error) {
	items = normalizeIDs(items)
	states := make([]itemState, len(items))
	for i, it := range items {
		s, _, _, err := b.item(ctx, it)
		if err != nil {
			return events.Position{}, err
		}
		states[i] = s
		if s.id == 0 {
			break // refused by the decision; the rest need not be read
		}
	}
	return execute(ctx, b.streams, replay[*providerState]{func() *providerState { return &providerState{} }}, domain.ProviderStream(id), &meta, func(s *providerState) ([]events.Payload, error) {
		ps, err := decideConfigureItems(s, items, states)
		if err == nil {
			meta.AppID = s.reg.AppID
		}
		return ps, err
	})
}
