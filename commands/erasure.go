package commands

import (
	"context"
	"fmt"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// DeliveryErasures answers, from a delivery's own stream, whether its
// payload was erased with the person it was about, so that a resend of it
// can be refused (domain.ErrDeliveryErased) rather than accepted and never
// sent. The stream is the authority: the person's key is destroyed before
// user.erased is appended, so the body reads as null at once, while the
// deliveries read model blanks it only when it projects the erasure.
type DeliveryErasures struct {
	streams
}

// NewDeliveryErasures reads delivery streams through store, which must be
// the decrypting store (a sealed body is not erased).
func NewDeliveryErasures(store events.Store, reg *events.Registry) *DeliveryErasures {
	return &DeliveryErasures{streams{store: store, reg: reg}}
}

// Check returns domain.ErrDeliveryErased when the delivery's body was
// erased, domain.ErrDeliveryNotFound when it belongs to another app than
// appID (0: any app, for operators), so a partner learns nothing of other
// apps' deliveries, and nil otherwise (an unknown delivery too: the
// resender answers DELIVERY_NOT_FOUND for it).
func (e *DeliveryErasures) Check(ctx context.Context, appID int64, deliveryID string) error {
	stream := domain.DeliveryStream(deliveryID)
	recs, err := e.store.ReadStream(ctx, stream, 0, 1)
	if err != nil {
		return fmt.Errorf("load %s: %w", stream, err)
	}
	if len(recs) == 0 {
		return nil
	}
	env, err := e.reg.Decode(recs[0])
	if err != nil {
		return fmt.Errorf("load %s: %w", stream, err)
	}
	c, ok := env.Payload.(*catalog.DeliveryCreated)
	if !ok {
		return nil
	}
	if appID != 0 && c.AppID != appID {
		return domain.ErrDeliveryNotFound
	}
	if c.Body == "" {
		return domain.ErrDeliveryErased
	}
	return nil
}
