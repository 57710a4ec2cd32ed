package projections

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/subscribe"
)

// ReadModel names one read model: the rows one projector owns, under one
// checkpoint of the same name, reset and rebuilt on their own. (The domain's
// family groups and members are rows of the users read model.)
type ReadModel string

// The read models. Each has its own port (UserStore,
// DeliveryStore, ReportStore, OrderStore, BenefitStore, AuditStore), projector,
// checkpoint, migrations and rebuild, and projects concurrently with the
// others.
const (
	ReadModelUsers      ReadModel = "users"
	ReadModelDeliveries ReadModel = "deliveries"
	ReadModelReports    ReadModel = "reports"
	ReadModelOrders     ReadModel = "orders"
	ReadModelBenefits   ReadModel = "benefits"
	ReadModelAudit      ReadModel = "audit"
)

// ReadModels lists every read model, in the order nodes start them.
var ReadModels = []ReadModel{ReadModelUsers, ReadModelDeliveries, ReadModelReports, ReadModelOrders, ReadModelBenefits, ReadModelAudit}

// Checkpoints is the part every read model's port shares: the read model's
// position in the log, and a reset of that read model alone (its rows and its
// checkpoint) for a rebuild that leaves the other read models serving.
type Checkpoints interface {
	// Checkpoint returns the position the named projection has applied, zero if none.
	Checkpoint(ctx context.Context, projection string) (events.Position, error)
	// ResetReadModel empties one read model's rows and its checkpoint.
	ResetReadModel(ctx context.Context, f ReadModel) error
}

func typeSet(ps ...events.Payload) map[string]bool {
	m := make(map[string]bool, len(ps))
	for _, p := range ps {
		m[p.EventType()] = true
	}
	return m
}

// applyAll applies a batch through one read model's transaction, naming the
// event that failed.
func applyAll[T any](ctx context.Context, tx T, batch []events.Envelope, apply func(context.Context, T, events.Envelope) error) error {
	for _, env := range batch {
		if err := apply(ctx, tx, env); err != nil {
			return fmt.Errorf("%s %s: %w", env.Type, env.ID, err)
		}
	}
	return nil
}

// projector builds a read model's projector from its update method and its
// per-event apply function.
func projector[T any](f ReadModel, store Checkpoints, update func(context.Context, string, events.Position, func(T) error) error,
	apply func(context.Context, T, events.Envelope) error, types ...events.Payload) subscribe.Projector {
	return &typedProjector[T]{readModel: f, store: store, update: update, apply: apply, types: typeSet(types...)}
}

type typedProjector[T any] struct {
	readModel ReadModel
	store     Checkpoints
	update    func(context.Context, string, events.Position, func(T) error) error
	apply     func(context.Context, T, events.Envelope) error
	types     map[string]bool
}

func (p *typedProjector[T]) Name() string                  { return string(p.readModel) }
func (p *typedProjector[T]) Handles(eventType string) bool { return p.types[eventType] }

// Types lists the event types the projector applies, sorted.
func (p *typedProjector[T]) Types() []string {
	out := make([]string, 0, len(p.types))
	for t := range p.types {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}
func (p *typedProjector[T]) Checkpoint(ctx context.Context) (events.Position, error) {
	return p.store.Checkpoint(ctx, p.Name())
}
func (p *typedProjector[T]) Reset(ctx context.Context) error {
	return p.store.ResetReadModel(ctx, p.readModel)
}
func (p *typedProjector[T]) Apply(ctx context.Context, batch []events.Envelope, pos events.Position) error {
	return p.update(ctx, p.Name(), pos, func(tx T) error { return applyAll(ctx, tx, batch, p.apply) })
}

// UsersProjector projects channel users, their groups and members.
func UsersProjector(s UserStore) subscribe.Projector {
	return projector(ReadModelUsers, s, s.Update, applyChannelUser,
		&catalog.UserRegistered{}, &catalog.UserProfileUpdated{}, &catalog.FamilyGroupUpserted{}, &catalog.FamilyGroupDissolved{},
		&catalog.FamilyMemberCreated{}, &catalog.FamilyMemberUpdated{}, &catalog.FamilyMemberDeleted{}, &catalog.UserErased{})
}

// DeliveriesProjector projects the webhook delivery log and the partners' feed.
func DeliveriesProjector(s DeliveryStore) subscribe.Projector {
	return projector(ReadModelDeliveries, s, s.UpdateDeliveries, applyDelivery,
		&catalog.DeliveryCreated{}, &catalog.DeliveryAttempted{}, &catalog.DeliveryResendRequested{}, &catalog.UserErased{})
}

// ReportsProjector projects health reports; loc is the platform zone of report days.
func ReportsProjector(s ReportStore, loc *time.Location) subscribe.Projector {
	apply := func(ctx context.Context, tx ReportTx, env events.Envelope) error {
		return applyReport(ctx, tx, env, loc)
	}
	return projector(ReadModelReports, s, s.UpdateReports, apply,
		&catalog.ReportCreated{}, &catalog.ReportUpdated{}, &catalog.ReportViewed{}, &catalog.UserErased{})
}

// OrdersProjector projects the goods catalog and purchase orders.
func OrdersProjector(s OrderStore) subscribe.Projector {
	return projector(ReadModelOrders, s, s.UpdateOrders, applyOrder,
		&catalog.GoodsCreated{}, &catalog.GoodsUpdated{}, &catalog.GoodsActivation{},
		&catalog.OrderCreated{}, &catalog.OrderReviewed{}, &catalog.OrderShipped{}, &catalog.UserErased{})
}

// BenefitsProjector projects benefit items, providers, cards and fulfillments.
func BenefitsProjector(s BenefitStore) subscribe.Projector {
	return projector(ReadModelBenefits, s, s.UpdateBenefits, applyBenefit,
		&catalog.BenefitItemCreated{}, &catalog.BenefitItemStatusChanged{}, &catalog.ProviderRegistered{},
		&catalog.ProviderReviewed{}, &catalog.ProviderItemsConfigured{}, &catalog.CardIssued{},
		&catalog.BenefitFulfilled{}, &catalog.FulfillmentRated{})
}
