package commands

import (
	"context"
	"slices"
	"strconv"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// ratingState is a fulfillment record's rating stream.
type ratingState struct{ rated bool }

func (s *ratingState) apply(env events.Envelope) {
	if _, ok := env.Payload.(*catalog.FulfillmentRated); ok {
		s.rated = true
	}
}

// validateRating keeps a rating within 1..5.
func validateRating(rating int) error {
	if rating < 1 || rating > 5 {
		v := &domain.ValidationError{}
		v.Add("rating", "must be between 1 and 5")
		return v
	}
	return nil
}

// rateFulfillment is Rate with the directory's answer gathered: which app
// issued the card of the record (found false: no such record).
type rateFulfillment struct {
	IssuerAppID int64 // the caller
	RecordID    int64
	Rating      int
	Issuer      int64
	Found       bool
}

// decideRate adds the caller's rating to a record of its own card, once.
func decideRate(st *ratingState, c rateFulfillment) ([]events.Payload, error) {
	if err := validateRating(c.Rating); err != nil {
		return nil, err
	}
	if !c.Found || c.Issuer != c.IssuerAppID {
		return nil, domain.ErrFulfillmentNotFound
	}
	if st.rated {
		return nil, domain.ErrAlreadyRated
	}
	return []events.Payload{catalog.FulfillmentRated{RecordID: c.RecordID, IssuerAppID: c.IssuerAppID, Rating: c.Rating}}, nil
}

// Rate adds the user's 1-5 rating to a fulfillment of the issuer app's card, once.
func (b *Benefits) Rate(ctx context.Context, issuerAppID, recordID int64, rating int, meta Meta) (events.Position, error) {
	if err := validateRating(rating); err != nil {
		return events.Position{}, err // before the directory is asked
	}
	c := rateFulfillment{IssuerAppID: issuerAppID, RecordID: recordID, Rating: rating}
	var err error
	if c.Issuer, c.Found, err = b.providers.FulfillmentIssuer(ctx, recordID); err != nil {
		return events.Position{}, err
	}
	stream := "fulfillment-" + strconv.FormatInt(recordID, 10)
	meta.AppID = issuerAppID
	return executeOnce(ctx, b.streams, replay[*ratingState]{func() *ratingState { return &ratingState{} }}, stream, &meta, domain.ErrAlreadyRated, func(st *ratingState) ([]events.Payload, error) {
		return decideRate(st, c)
	})
}

// isChannelPartner reports whether one of the app's providers (as loaded
// from their streams) is an approved CHANNEL_PARTNER.
func isChannelPartner(appID int64, providers []providerState) bool {
	return slices.ContainsFunc(providers, func(s providerState) bool {
		return s.reg != nil && s.reg.AppID == appID && s.reg.Type == ProviderChannelPartner && s.status == ProviderApproved
	})
}

// IsChannelPartner reports whether the app has an approved CHANNEL_PARTNER
// provider, which may issue cards in batches.
func (b *Benefits) IsChannelPartner(ctx context.Context, appID int64) (bool, error) {
	ids, err := b.providers.ProviderIDs(ctx, appID)
	if err != nil {
		return false, err
	}
	for _, id := range ids {
		s, err := b.currentProvider(ctx, id)
		if err != nil {
			return false, err
		}
		if isChannelPartner(appID, []providerState{s}) {
			return true, nil
		}
	}
	return false, nil
}
