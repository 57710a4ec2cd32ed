package node

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/healthtech/partner-open-platform/events"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
	"github.com/healthtech/partner-open-platform/internal/idempotency"
	"github.com/healthtech/partner-open-platform/internal/lease"
	leasemem "github.com/healthtech/partner-open-platform/internal/lease/memory"
	leasepg "github.com/healthtech/partner-open-platform/internal/lease/postgres"
	"github.com/healthtech/partner-open-platform/internal/nonces"
	"github.com/healthtech/partner-open-platform/internal/secrets"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/directory"
	"github.com/healthtech/partner-open-platform/projections/memory"
	"github.com/healthtech/partner-open-platform/projections/postgres"
)

// The Postgres read-model store serves the signed writes of every node
// (openNonces): a scheme M write binds its route and claims itself in one
// statement there, which idempotency finds by this interface.
var _ idempotency.RouteClaimer = (*postgres.Store)(nil)

// readModels is the read side's store and what shares it: the leases that
// keep one writer per read model across nodes, the snapshots of embedded
// read models, and the pool the other shared state (claims, rate limits,
// checkpoints) uses.
type readModels struct {
	store ReadModels
	// shared is nil embedded: one process per data directory.
	shared    subscribe.Shared
	pool      *pgxpool.Pool
	leases    lease.Store
	snapshots *memory.Snapshotter // nil: Postgres, or snapshots off
	adapter   string
	leasing   string // how the leases are kept, for the adapters list
	closers   []func() error
}

// buildReadModels opens Postgres read models and leases when configured,
// else in-memory ones with their snapshots in the data directory.
func buildReadModels(ctx context.Context, cfg Config, keys *datakeys.Keys, stored events.Store, log *slog.Logger) (readModels, error) {
	if cfg.PostgresURL == "" {
		mem := memory.New()
		rm := readModels{store: mem, leases: leasemem.New(), closers: []func() error{mem.Close},
			adapter: "in memory, rebuilt from the log at start", leasing: "in memory (single node)"}
		if cfg.SnapshotInterval >= 0 {
			rm.snapshots = openSnapshots(cfg, mem, keys, stored, log)
		}
		return rm, nil
	}
	pg, err := postgres.Open(ctx, cfg.PostgresURL)
	if err != nil {
		return readModels{}, fmt.Errorf("read models: %w", err)
	}
	pg.SetLeaseTTL(cfg.LeaseTTL)
	if sameDatabase(cfg.EventStoreURL, cfg.PostgresURL) {
		// A snapshot read learns the head in its own round trip.
		pg.SeeHead(pgevents.HeadQuery, pgevents.PositionAt)
		// A signed write's recorded answer rides with its append.
		pg.RideAppends(pgevents.WithRider)
	}
	// Closing the lease store ends its session, which frees this node's leases.
	leases := leasepg.New(pg.Pool())
	return readModels{store: pg, shared: pg, pool: pg.Pool(), leases: leases, closers: []func() error{pg.Close, leases.Close},
		adapter: "Postgres", leasing: fmt.Sprintf("Postgres, node %s, TTL %s", cfg.NodeID, cfg.LeaseTTL)}, nil
}

// projectionSet is the projections every node runs: the directories that
// authenticate (apps, operators) and one runner per read model.
type projectionSet struct {
	apps             *directory.Apps
	operators        *directory.Operators
	appsJournal      *projections.Journal
	operatorsJournal *projections.Journal
	appsRunner       *subscribe.Runner
	operatorsRunner  *subscribe.Runner
	byReadModel      map[projections.ReadModel]*subscribe.Runner
	readModels       subscribe.RunnerSet
	all              []*subscribe.Runner
	// marks are the floors reads wait for: the log's head at start, and
	// with shared read models the head at each read (a partner's write
	// may have gone through another node).
	marks *projections.Watermarks
}

// buildProjections makes the runners over the node's log and read models
// (nothing runs until Open starts them) and the floors reads wait for.
func (n *Node) buildProjections(ctx context.Context, cfg Config, sealer *secrets.Sealer) (projectionSet, error) {
	p := projectionSet{apps: directory.NewApps(sealer), operators: directory.NewOperators(),
		byReadModel: map[projections.ReadModel]*subscribe.Runner{}, marks: projections.NewWatermarks()}
	head, err := n.Events.Head(ctx)
	if err != nil {
		return p, fmt.Errorf("event store: head of the log: %w", err)
	}
	p.marks.Floor(head)
	if n.shared != nil {
		p.marks.FollowHead(n.Events.Head)
	}
	// The directories journal the positions of their events, so a
	// snapshot restores them by reading those back, not the whole log.
	p.appsJournal = projections.NewJournal(p.apps, n.Events, n.Registry)
	p.appsRunner = subscribe.NewRunner(n.Events, n.Registry, p.appsJournal, n.log, n.Metrics.Projected)
	p.operatorsJournal = projections.NewJournal(p.operators, n.Events, n.Registry)
	p.operatorsRunner = subscribe.NewRunner(n.Events, n.Registry, p.operatorsJournal, n.log, n.Metrics.Projected)
	p.all = []*subscribe.Runner{p.appsRunner, p.operatorsRunner}
	n.eagerCheckpoints(p.appsRunner, p.operatorsRunner)
	for _, f := range projections.ReadModels {
		run := subscribe.NewRunner(n.Events, n.Registry, readModelProjector(f, n.ReadModel, n.Location), n.log, n.Metrics.Projected)
		run.SkipPoison(n.Metrics.Skipped)
		n.eagerCheckpoints(run)
		// One writer per read model across the nodes sharing the read models.
		run.Own(subscribe.Ownership{Leases: n.Leases, Holder: cfg.NodeID, TTL: cfg.LeaseTTL, Shared: n.shared})
		p.byReadModel[f] = run
		p.all = append(p.all, run)
		p.readModels = append(p.readModels, run)
	}
	return p, nil
}

// eagerCheckpoints makes the runners of what the embedded snapshot holds
// commit their checkpoints at every batch: those checkpoints are in
// memory and cost nothing, and kept at every batch, the snapshot's image of
// a projection that skips most of the log (orders, benefits, audit, the
// directories) holds the position it reached, not the last event it
// applied, so a start restored from it does not read again what it had
// passed. Without snapshots nothing reads them before a restart.
func (n *Node) eagerCheckpoints(runs ...*subscribe.Runner) {
	if n.snapshots == nil {
		return
	}
	for _, run := range runs {
		run.EagerCheckpoints()
	}
}

// ReadModels is a read-model adapter: every read model's port, the nonce store,
// and Close. Both projections/memory and projections/postgres are one.
type ReadModels interface {
	projections.UserStore
	projections.DeliveryStore
	projections.ReportStore
	projections.OrderStore
	projections.BenefitStore
	projections.AuditStore
	nonces.Store
	Close() error
}

// readModelProjector is the projector of one read model over the adapter.
func readModelProjector(f projections.ReadModel, rm ReadModels, loc *time.Location) subscribe.Projector {
	switch f {
	case projections.ReadModelUsers:
		return projections.UsersProjector(rm)
	case projections.ReadModelDeliveries:
		return projections.DeliveriesProjector(rm)
	case projections.ReadModelReports:
		return projections.ReportsProjector(rm, loc)
	case projections.ReadModelOrders:
		return projections.OrdersProjector(rm)
	case projections.ReadModelBenefits:
		return projections.BenefitsProjector(rm)
	case projections.ReadModelAudit:
		return projections.AuditProjector(rm)
	}
	panic("node: no projector for read-model family " + string(f))
}

// seePullHead narrows the head a report pull reads, with the log in the
// read models' database, to the events the reports read model applies:
// the audit facts other pulls append at the pace of the pulls are not
// events a pull must wait for its read model to pass.
func (n *Node) seePullHead() {
	pg, ok := n.ReadModel.(*postgres.Store)
	if !ok || !pg.SeesHead() {
		return
	}
	if t, ok := readModelProjector(projections.ReadModelReports, n.ReadModel, n.Location).(interface{ Types() []string }); ok {
		pg.SeePullHead(pgevents.HeadOfTypesQuery(t.Types()))
	}
}
