// Package node assembles one platform process: it picks an adapter for each
// port from the configuration, starts the projections, and builds the HTTP
// handler. cmd/platform and the end-to-end tests both run exactly this.
//
// Open reads as the table of contents of a node: one builder per port
// (build_*.go), each returning what it built and what Close must release.
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // the platform zone must load on machines without tzdata

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
	"github.com/healthtech/partner-open-platform/internal/lease"
	"github.com/healthtech/partner-open-platform/internal/metrics"
	"github.com/healthtech/partner-open-platform/portal"
	"github.com/healthtech/partner-open-platform/portal/mail"
	"github.com/healthtech/partner-open-platform/privacy"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/directory"
	"github.com/healthtech/partner-open-platform/projections/memory"
	"github.com/healthtech/partner-open-platform/relay"
	"github.com/healthtech/partner-open-platform/webhooks"
)

// Node is one running platform process.
type Node struct {
	Handler http.Handler
	// Events is the store commands, projections and the dispatcher use:
	// personal fields decrypted.
	Events events.Store
	// Pseudonyms names channel users' binding streams by a keyed hash.
	Pseudonyms *domain.Pseudonyms
	// legacyBindings: the log may hold bindings under legacy names.
	legacyBindings bool
	// StoredEvents is the store as written (personal fields encrypted): the
	// relay reads it, so the Kafka topics carry ciphertext.
	StoredEvents events.Store
	// Keys is the per-person data key store.
	Keys        *datakeys.Keys
	erasureMu   sync.Mutex
	erasureSeen events.Position // see ErasureSeen
	erasures    *privacy.ErasureFollower
	ReadModel   ReadModels
	// ReadModelRunners are the runners projecting each read model.
	ReadModelRunners map[projections.ReadModel]*subscribe.Runner
	Dispatcher       *webhooks.Dispatcher
	Replayer         *webhooks.Replayer // runs the webhook replays partners ask for
	Apps             *directory.Apps
	Operators        *directory.Operators
	Runners          []*subscribe.Runner
	Registry         *events.Registry
	Metrics          *metrics.Metrics
	AdminToken       string
	InternalToken    string
	Location         *time.Location
	Adapters         map[string]string
	// NodeID is this node's identity as a lease holder.
	NodeID string
	// Leases keeps the read models' leases (and any other single-owner job's):
	// Postgres beside Postgres read models, in memory otherwise.
	Leases lease.Store
	// Watermarks are the floors this node's reads wait for.
	Watermarks *projections.Watermarks
	// Portal is the developer portal served at /portal/; Developers is its
	// directory of developer accounts and the mail outbox.
	Portal     *portal.Server
	Developers *directory.Developers
	mailSender *mail.Sender
	// decisionMails follows the log to mail review decisions (portal.DecisionMails).
	decisionMails *subscribe.Runner
	// writeSide is the command handlers the HTTP edges use (WriteSide).
	writeSide WriteSide

	log  *slog.Logger
	head *headStore

	// accessLog writes the access lines (Config.AccessLog).
	accessLog *slog.Logger
	// snapshots keeps the embedded read models' snapshot (nil: Postgres
	// read models, or snapshots off); restored says Open restored one.
	snapshots *memory.Snapshotter
	restored  bool
	// pool is the read-model database's pool (nil in embedded mode): the
	// leases, claims, rate limits and relay checkpoint share it.
	pool *pgxpool.Pool
	// shared is the read models' store when other nodes may share it (nil
	// embedded): runners own their read model by lease, reads wait for the head.
	shared subscribe.Shared
	// relayCheckpoints is where this node's relay keeps its position (nil: no relay here).
	relayCheckpoints relay.Checkpoints
	// deliveriesCreated is how far delivery creation from the store has
	// committed (nil: created from Kafka, whose marks are offsets).
	deliveriesCreated subscribe.Checkpoints
	// backup copies an embedded node's data directory (nil on shared stores).
	backup *dataBackup
	admin  auth.Admin
	// stopping closes at Drain: requests that wait (the feed's long-poll)
	// answer at once.
	stopping  chan struct{}
	drainOnce sync.Once
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closers   []func() error
}

// Open builds a node and starts its projections; Close stops it. A start
// that fails midway closes what it had opened, last opened first.
func Open(ctx context.Context, cfg Config) (_ *Node, err error) {
	cfg = cfg.WithDefaults()
	n := &Node{log: cfg.Logger, accessLog: cfg.AccessLog, Registry: catalog.Registry(), Metrics: metrics.New(), Adapters: map[string]string{}, NodeID: cfg.NodeID,
		stopping: make(chan struct{})}
	st := beginStartup(cfg)
	defer func() {
		if err != nil {
			st.restoreGC()
			n.Close()
		}
	}()
	madeUp, err := n.prepare(cfg)
	if err != nil {
		return nil, err
	}
	store, err := buildEventStore(ctx, cfg, n.Metrics)
	if n.own(store.closers, "event store", store.adapter); err != nil {
		return nil, err
	}
	st.phase("event_store")
	n.head, n.Events, n.StoredEvents = store.head, store.head, store.head
	keys, err := buildDataKeys(ctx, cfg, n.head, n.Registry, n.log)
	if n.own(keys.closers, "personal-data keys", keys.adapter); err != nil {
		return nil, err
	}
	st.phase("keys")
	n.Keys, n.Pseudonyms, n.legacyBindings, n.Events = keys.keys, keys.pseudonyms, keys.legacyBindings, keys.events
	n.backup = newDataBackup(cfg.DataDir, store.embedded, keys.files)
	rm, err := buildReadModels(ctx, cfg, n.Keys, n.StoredEvents, n.log)
	if n.own(rm.closers, "read models", rm.adapter); err != nil {
		return nil, err
	}
	if mem, ok := rm.store.(*memory.Store); ok {
		// Final deliveries' bodies are read from the log as the
		// projections read it, through the privacy layer.
		mem.KeepBodiesInLog(projections.LogBodies{Log: n.Events, Registry: n.Registry})
	}
	n.ReadModel, n.shared, n.pool, n.Leases, n.snapshots, n.Adapters["leases"] = rm.store, rm.shared, rm.pool, n.Metrics.Leases(rm.leases), rm.snapshots, rm.leasing
	if err := n.checkOperatorToken(ctx, cfg, madeUp); err != nil {
		return nil, err
	}
	n.logAdapters(cfg)
	proj, err := n.buildProjections(ctx, cfg, keys.sealer)
	if err != nil {
		return nil, err
	}
	n.Apps, n.Operators, n.ReadModelRunners, n.Runners, n.Watermarks = proj.apps, proj.operators, proj.byReadModel, proj.all, proj.marks
	au, err := n.buildAuth(ctx, cfg, proj)
	if n.own(au.closers, "", ""); err != nil {
		return nil, err
	}
	n.admin, n.Dispatcher = au.admin, n.buildDispatcher(cfg, proj)
	cmds := n.buildCommands(cfg, keys.sealer, proj)
	n.writeSide = WriteSide{Users: cmds.users, Reports: cmds.reports}
	n.Replayer = n.buildReplayer(cfg, cmds.replays)
	port, err := n.buildPortal(cfg, cmds, au.admin, proj)
	if err != nil {
		return nil, fmt.Errorf("developer portal: %w", err)
	}
	n.Portal, n.Developers, n.mailSender, n.Runners = port.server, port.developers, port.mailSender, append(n.Runners, port.runner)
	cmds.developers, cmds.developersReady = port.accounts, port.runner
	fromStart, err := decisionMailsFromStart(ctx, n.Keys, n.Events)
	if err != nil {
		return nil, err
	}
	if err := port.decisionMails.Begin(ctx, fromStart); err != nil {
		return nil, err
	}
	n.decisionMails = port.decisionRunner
	n.erasures = n.erasureFollower(cmds.users, keys.erasedFrom)
	n.Handler = n.router(n.buildRoutes(cfg, cmds, au, proj), cfg.Now)
	n.watchLag()
	st.phase("assemble")
	if err := n.loadSnapshot(ctx, st, proj.appsJournal, proj.operatorsJournal, cmds.analyzerJournal, port.journal); err != nil {
		return nil, err
	}
	if keys.files != nil {
		if err := keys.files.Ready(); err != nil {
			return nil, fmt.Errorf("personal-data keys: %w", err)
		}
		st.phase("keys_index")
	}
	runCtx := n.startProjections(st, cmds.analyzer, proj.readModels)
	n.startJobs(runCtx, cfg, cmds.users, proj.readModels)
	if err := n.startWebhooks(runCtx, cfg, proj.byReadModel[projections.ReadModelDeliveries]); err != nil {
		return nil, err
	}
	return n, nil
}

// prepare loads the zone, makes the data directory and reads (or makes up)
// the operator and internal tokens; madeUp says the operator token is new.
func (n *Node) prepare(cfg Config) (madeUp bool, err error) {
	if n.Location, err = time.LoadLocation(cfg.Timezone); err != nil {
		return false, fmt.Errorf("timezone %q: %w", cfg.Timezone, err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return false, fmt.Errorf("data directory: %w", err)
	}
	madeUp = tokenMadeUp(cfg)
	if n.AdminToken, err = tokenFile(cfg.AdminToken, filepath.Join(cfg.DataDir, "admin.token"), "adm_", n.log); err != nil {
		return false, err
	}
	if n.InternalToken, err = tokenFile(cfg.InternalToken, filepath.Join(cfg.DataDir, "internal.token"), "int_", n.log); err != nil {
		return false, err
	}
	return madeUp, nil
}

// own takes over what a builder opened, for Close to release last opened
// first, and records the adapter serving its port (if named).
func (n *Node) own(closers []func() error, port, adapter string) {
	n.closers = append(n.closers, closers...)
	if port != "" {
		n.Adapters[port] = adapter
	}
}

// logAdapters logs the adapter of each storage port and of the bus.
func (n *Node) logAdapters(cfg Config) {
	if len(cfg.KafkaBrokers) > 0 {
		n.Adapters["bus"] = "Kafka " + strings.Join(cfg.KafkaBrokers, ",") + " internal topic " + cfg.KafkaInternalTopic +
			", analytics topic " + cfg.KafkaTopic
	} else {
		n.Adapters["bus"] = "event store subscription"
	}
	for _, port := range []string{"event store", "personal-data keys", "read models", "leases", "bus"} {
		n.log.Info("adapter", "port", port, "adapter", n.Adapters[port])
	}
}

// logCaughtUp logs, once every read model has caught up with the log as it was
// at start, how long each took from the start of Open and how many events
// it replayed (the tail past the snapshot after a crash), so an operator
// sees what a start after a kill -9 spent beyond the restore.
func (n *Node) logCaughtUp(ctx context.Context, began time.Time, readModels []*subscribe.Runner) {
	attrs := []any{}
	for _, run := range readModels {
		if err := run.WaitReady(ctx); err != nil {
			return
		}
		attrs = append(attrs, run.Name(), fmt.Sprintf("%s/%d", time.Since(began).Round(time.Millisecond), run.Stats().Applied))
	}
	n.log.Info("read models caught up (since open / events replayed)", attrs...)
}

// WaitCaughtUp blocks until every projection has applied the log's current end.
func (n *Node) WaitCaughtUp(ctx context.Context) error {
	head, err := n.Events.Head(ctx)
	if err != nil {
		return err
	}
	for _, r := range n.Runners {
		if err := r.WaitFor(ctx, head); err != nil {
			return err
		}
	}
	return nil
}

// WaitDeliveriesCreated blocks until delivery creation has gone through
// the log up to its current end, its own deliveries' events included, and
// the projections have applied them: the deliveries read model then holds
// every delivery the log calls for. It needs delivery creation from the
// store (no Kafka) on a node that holds the webhook-creation lease or
// shares its checkpoint (Postgres).
func (n *Node) WaitDeliveriesCreated(ctx context.Context) error {
	if n.deliveriesCreated == nil {
		return errors.New("node: deliveries are created from Kafka, not followed here")
	}
	for {
		head, err := n.Events.Head(ctx)
		if err != nil {
			return err
		}
		created, err := n.deliveriesCreated.Load(ctx)
		if err != nil {
			return err
		}
		if !created.Less(head) {
			return n.WaitCaughtUp(ctx)
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("deliveries created up to %s, the log's head is %s: %w", created, head, ctx.Err())
		}
	}
}

// WaitDecisionMails blocks until the review decisions in the log up to its
// current end have had their mails queued (portal.DecisionMails).
func (n *Node) WaitDecisionMails(ctx context.Context) error {
	if n.decisionMails == nil {
		return nil
	}
	head, err := n.Events.Head(ctx)
	if err != nil {
		return err
	}
	return n.decisionMails.WaitFor(ctx, head)
}

// Drain makes the requests that wait for news (the event feed's wait)
// answer now and every later one answer without waiting, so a graceful
// HTTP shutdown (http.Server.RegisterOnShutdown) finishes promptly.
// Close drains too; calling it again does nothing.
func (n *Node) Drain() {
	n.drainOnce.Do(func() { close(n.stopping) })
}

// Close stops the projections and releases the stores.
func (n *Node) Close() error {
	n.Drain()
	if n.cancel != nil {
		n.cancel()
	}
	n.wg.Wait()
	var errs []error
	if n.snapshots != nil && n.cancel != nil {
		// The projections have stopped: a snapshot now lets the next start
		// replay nothing. A start that failed before its projections ran
		// holds less than the snapshot it would have restored: writing it
		// would make the corrected start replay the log.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := n.snapshots.Write(ctx); err != nil && !errors.Is(err, memory.ErrSnapshotHeld) {
			n.log.Error("read-model snapshot at stop not written", "err", err)
		}
		cancel()
	}
	for i := len(n.closers) - 1; i >= 0; i-- {
		errs = append(errs, n.closers[i]())
	}
	return errors.Join(errs...)
}
