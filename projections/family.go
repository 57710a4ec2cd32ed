package projections

import (
	"context"
	"fmt"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/subscribe"
)

// Family names a read-model family: the rows one projector owns, under one
// checkpoint of the same name, reset and rebuilt on their own.
type Family string

// The read-model families. Each has its own port (UserStore,
// DeliveryStore, ReportStore, OrderStore, BenefitStore, AuditStore), projector,
// checkpoint, migrations and rebuild, and projects concurrently with the
// others.
const (
	FamilyUsers      Family = "users"
	FamilyDeliveries Family = "deliveries"
	FamilyReports    Family = "reports"
	FamilyOrders     Family = "orders"
	FamilyBenefits   Family = "benefits"
	FamilyAudit      Family = "audit"
)

// Families lists every read-model family, in the order nodes start them.
var Families = []Family{FamilyUsers, FamilyDeliveries, FamilyReports, FamilyOrders, FamilyBenefits, FamilyAudit}

// Checkpoints is the part every family port shares: the family's position
// in the log, and a reset of the family alone (its rows and its checkpoint)
// for a rebuild that leaves the other families serving.
type Checkpoints interface {
	// Checkpoint returns the position the named projection has applied, zero if none.
	Checkpoint(ctx context.Context, projection string) (events.Position, error)
	// ResetFamily empties one family's read models and its checkpoint.
	ResetFamily(ctx context.Context, f Family) error
}

func typeSet(ps ...events.Payload) map[string]bool {
	m := make(map[string]bool, len(ps))
	for _, p := range ps {
		m[p.EventType()] = true
	}
	return m
}

// applyAll applies a batch through one family's transaction, naming the
// event that failed.
func applyAll[T any](ctx context.Context, tx T, batch []events.Envelope, apply func(context.Context, T, events.Envelope) error) error {
	for _, env := range batch {
		if err := apply(ctx, tx, env); err != nil {
			return fmt.Errorf("%s %s: %w", env.Type, env.ID, err)
		}
	}
	return nil
}

// projector builds a family's projector from its update method and its
// per-event apply function.
func projector[T any](f Family, store Checkpoints, update func(context.Context, string, events.Position, func(T) error) error,
	apply func(context.Context, T, events.Envelope) error, types ...events.Payload) subscribe.Projector {
	return &typedProjector[T]{family: f, store: store, update: update, apply: apply, types: typeSet(types...)}
}

type typedProjector[T any] struct {
	family Family
	store  Checkpoints
	update func(context.Context, string, events.Position, func(T) error) error
	apply  func(context.Context, T, events.Envelope) error
	types  map[string]bool
}

func (p *typedProjector[T]) Name() string                  { return string(p.family) }
func (p *typedProjector[T]) Handles(eventType string) bool { return p.types[eventType] }
func (p *typedProjector[T]) Checkpoint(ctx context.Context) (events.Position, error) {
	return p.store.Checkpoint(ctx, p.Name())
}
func (p *typedProjector[T]) Reset(ctx context.Context) error {
	return p.store.ResetFamily(ctx, p.family)
}
func (p *typedProjector[T]) Apply(ctx context.Context, batch []events.Envelope, pos events.Position) error {
	return p.update(ctx, p.Name(), pos, func(tx T) error { return applyAll(ctx, tx, batch, p.apply) })
}

// UsersProjector projects channel users, their groups and members.
func UsersProjector(s UserStore) subscribe.Projector {
	return projector(FamilyUsers, s, s.Update, applyChannelUser,
		&catalog.UserRegistered{}, &catalog.UserProfileUpdated{}, &catalog.FamilyGroupUpserted{}, &catalog.FamilyGroupDissolved{},
		&catalog.FamilyMemberCreated{}, &catalog.FamilyMemberUpdated{}, &catalog.FamilyMemberDeleted{}, &catalog.UserErased{})
}

// DeliveriesProjector projects the webhook delivery log and the partners' feed.
func DeliveriesProjector(s DeliveryStore) subscribe.Projector {
	return projector(FamilyDeliveries, s, s.UpdateDeliveries, applyDelivery,
		&catalog.DeliveryCreated{}, &catalog.DeliveryAttempted{}, &catalog.DeliveryResendRequested{}, &catalog.UserErased{})
}

// ReportsProjector projects health reports; loc is the platform zone of report days.
func ReportsProjector(s ReportStore, loc *time.Location) subscribe.Projector {
	apply := func(ctx context.Context, tx ReportTx, env events.Envelope) error {
		return applyReport(ctx, tx, env, loc)
	}
	return projector(FamilyReports, s, s.UpdateReports, apply,
		&catalog.ReportCreated{}, &catalog.ReportUpdated{}, &catalog.ReportViewed{}, &catalog.UserErased{})
}

// OrdersProjector projects the goods catalog and purchase orders.
func OrdersProjector(s OrderStore) subscribe.Projector {
	return projector(FamilyOrders, s, s.UpdateOrders, applyOrder,
		&catalog.GoodsCreated{}, &catalog.GoodsUpdated{}, &catalog.GoodsActivation{},
		&catalog.OrderCreated{}, &catalog.OrderReviewed{}, &catalog.OrderShipped{}, &catalog.UserErased{})
}

// BenefitsProjector projects benefit items, providers, cards and fulfillments.
func BenefitsProjector(s BenefitStore) subscribe.Projector {
	return projector(FamilyBenefits, s, s.UpdateBenefits, applyBenefit,
		&catalog.BenefitItemCreated{}, &catalog.BenefitItemStatusChanged{}, &catalog.ProviderRegistered{},
		&catalog.ProviderReviewed{}, &catalog.ProviderItemsConfigured{}, &catalog.CardIssued{},
		&catalog.BenefitFulfilled{}, &catalog.FulfillmentRated{})
}
