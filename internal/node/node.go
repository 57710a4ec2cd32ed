// Package node assembles one platform process: it picks an adapter for each
// port from the configuration, starts the projections, and builds the HTTP
// handler. cmd/platform and the end-to-end tests both run exactly this.
package node

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // the platform zone must load on machines without tzdata

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/healthtech/partner-open-platform/commandapi"
	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
	"github.com/healthtech/partner-open-platform/events/catalog"
	eventskafka "github.com/healthtech/partner-open-platform/events/kafka"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
	keyfiles "github.com/healthtech/partner-open-platform/internal/datakeys/files"
	keyspg "github.com/healthtech/partner-open-platform/internal/datakeys/postgres"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/idempotency"
	"github.com/healthtech/partner-open-platform/internal/lease"
	leasemem "github.com/healthtech/partner-open-platform/internal/lease/memory"
	leasepg "github.com/healthtech/partner-open-platform/internal/lease/postgres"
	"github.com/healthtech/partner-open-platform/internal/metrics"
	"github.com/healthtech/partner-open-platform/internal/nonces"
	"github.com/healthtech/partner-open-platform/internal/openapi"
	"github.com/healthtech/partner-open-platform/internal/secrets"
	"github.com/healthtech/partner-open-platform/portal"
	"github.com/healthtech/partner-open-platform/portal/mail"
	"github.com/healthtech/partner-open-platform/privacy"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/directory"
	"github.com/healthtech/partner-open-platform/projections/memory"
	"github.com/healthtech/partner-open-platform/projections/postgres"
	"github.com/healthtech/partner-open-platform/queryapi"
	"github.com/healthtech/partner-open-platform/relay"
	"github.com/healthtech/partner-open-platform/relay/feed"
	relaykafka "github.com/healthtech/partner-open-platform/relay/kafka"
	relaypg "github.com/healthtech/partner-open-platform/relay/postgres"
	"github.com/healthtech/partner-open-platform/webhooks"
	webhookkafka "github.com/healthtech/partner-open-platform/webhooks/kafka"
	webhooksmem "github.com/healthtech/partner-open-platform/webhooks/memory"
	webhookspg "github.com/healthtech/partner-open-platform/webhooks/postgres"
	"github.com/healthtech/partner-open-platform/webhooks/targets"
)

// Config selects adapters and secrets; empty store URLs mean embedded adapters.
type Config struct {
	DataDir string
	// EventStoreURL selects the shared event store (PLATFORM_EVENTSTORE_URL):
	// esdb:// or esdb+discover:// for EventStoreDB, postgres:// for Postgres;
	// empty keeps the embedded log in DataDir.
	EventStoreURL string
	PostgresURL   string
	AdminToken    string
	MasterKey     string
	// MasterKeyPrevious are older master keys, comma-separated, kept for
	// opening only after a rotation (unset: <data dir>/master.key.previous,
	// one key a line, if it exists).
	MasterKeyPrevious string
	Timezone          string // IANA name of the zone of Y-m-d dates and Y-m-d H:i:s times
	Logger            *slog.Logger
	Now               func() time.Time
	IDBlockSize       int64

	// AccessLog receives the access lines (one per request) so that they
	// may be buffered apart from the rest of the log; nil: Logger.
	AccessLog *slog.Logger

	// KafkaBrokers switches the dispatcher's feed to Kafka and starts the relay.
	KafkaBrokers []string
	KafkaTopic   string // published analytics feed, default platform.events
	// KafkaInternalTopic carries every event byte-exact to the dispatchers
	// (default platform.internal.events); not a published interface.
	KafkaInternalTopic string
	// FeedPseudonymKey (32 bytes, hex or base64) keys the analytics feed's
	// pseudonyms; unset: derived from the master key.
	FeedPseudonymKey string
	// KafkaRelay lets this node compete for the relay lease (default on
	// when brokers are set; off is an explicit opt-out).
	KafkaRelay *bool
	// WebhookAllowLoopback allows http and loopback webhook targets, for development only.
	WebhookAllowLoopback bool
	// WebhookSchedule replaces the spec's retry schedule (tests).
	WebhookSchedule []time.Duration
	// WebhookClock replaces the dispatcher's clock (tests).
	WebhookClock webhooks.Clock
	// WebhookWorkers bounds concurrent webhook attempts on this node (default DefaultWebhookWorkers).
	WebhookWorkers int
	// BulkResendCap bounds the deliveries one bulk resend call examines
	// (0: commandapi.DefaultBulkResendCap), so tests can reach the cap.
	BulkResendCap int
	// WebhookPerEndpoint bounds concurrent POSTs to one app's endpoint
	// (default webhooks.DefaultPerEndpoint), so a slow endpoint cannot take every worker.
	WebhookPerEndpoint int
	// WebhookBreakerFailures failures or timeouts in a row open an
	// endpoint's breaker for WebhookBreakerCooldown before one probe
	// (defaults webhooks.DefaultBreakerFailures, DefaultBreakerCooldown).
	WebhookBreakerFailures int
	WebhookBreakerCooldown time.Duration
	// WebhookCreateConcurrency bounds how many subjects' deliveries are
	// appended at once while creating deliveries (default webhooks.DefaultCreateConcurrency).
	WebhookCreateConcurrency int
	// WebhookClaimTTL is how long a node's claim on a delivery lasts if it
	// never releases it (default webhooks.DefaultClaimTTL; tests shorten it).
	WebhookClaimTTL time.Duration
	// ReportPullLimit is the report pull's requests per minute per app (default DefaultReportPullLimit).
	ReportPullLimit int
	// InternalToken authenticates the internal shipped callback; unset: a
	// token file in the data directory.
	InternalToken string
	// VerifyCooldown is the DUPLICATE_FULFILLMENT window (default DefaultVerifyCooldown; negative: none).
	VerifyCooldown time.Duration
	// PartnerRateLimit is each app's requests per minute on scheme M routes
	// (default DefaultPartnerRateLimit, a burst of as many; negative: no limit).
	PartnerRateLimit int
	// DirectoryStaleness bounds, on a shared event store, how old the state
	// may be on which a found app, token or operator is accepted: 0 (the
	// default) reads the store's head after each lookup arrives (coalesced),
	// so a change acknowledged by any node applies on every node at once; a
	// positive bound saves those reads, and changes then take up to that
	// long on the other nodes.
	DirectoryStaleness time.Duration
	// PlaintextPersonalData turns per-person encryption of personal fields
	// off; only benchmarks set it, to measure what encryption costs.
	PlaintextPersonalData bool
	// NodeID names this node as a lease holder (PLATFORM_NODE_ID; unset:
	// hostname-pid-random).
	NodeID string
	// SnapshotInterval is how often embedded read models are snapshotted to
	// the data directory (PLATFORM_SNAPSHOT_INTERVAL, default 5 min; also
	// once caught up after a start that found none, and at a graceful
	// stop), so a start restores them and replays only the log's tail;
	// negative: no snapshots, every start replays the whole log.
	SnapshotInterval time.Duration
	// SnapshotEvents also snapshots embedded read models once their
	// read models have read this many events since the last snapshot
	// (PLATFORM_SNAPSHOT_EVENTS; zero: DefaultSnapshotEvents; negative:
	// the interval only), so the tail a start after a kill -9 replays is
	// bounded by the log's growth, not only by time.
	SnapshotEvents int
	// CacheSweepInterval is how often the caches holding decrypted personal
	// data are checked against the key store (default datakeys.CacheTTL; tests
	// shorten it): it bounds how long a key destroyed by a node that died
	// before appending user.erased leaves plaintext here (README, Erasure).
	CacheSweepInterval time.Duration
	// ErasurePurgeInterval is how often, with Postgres read models, the
	// tables holding personal fields are rewritten after an erasure
	// (postgres.Store.PurgeErased), so the erased rows' plaintext leaves
	// their files (PLATFORM_ERASURE_PURGE_INTERVAL, default
	// DefaultErasurePurgeInterval; negative: never). One node purges at a
	// time (lease "erasure-purge").
	ErasurePurgeInterval time.Duration
	// Portal configures the developer portal at /portal/.
	Portal PortalConfig
	// LeaseTTL is how long a lease outlives its holder's last renewal
	// (PLATFORM_LEASE_TTL, default 10 s): a dead owner's read models, relay
	// and webhook creation are taken over within it.
	LeaseTTL time.Duration
}

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
	ReadModel   ReadModels
	// ReadModelRunners are the runners projecting each read model.
	ReadModelRunners map[projections.ReadModel]*subscribe.Runner
	Dispatcher       *webhooks.Dispatcher
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
	// relayCheckpoints is where this node's relay keeps its position (nil: no relay here).
	relayCheckpoints relay.Checkpoints
	// backup copies an embedded node's data directory (nil on shared stores).
	backup  *dataBackup
	admin   auth.Admin
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closers []func() error
}

// Open builds a node and starts its projections; Close stops it.
func Open(ctx context.Context, cfg Config) (n *Node, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.AccessLog == nil {
		cfg.AccessLog = cfg.Logger
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.DataDir == "" {
		cfg.DataDir = "data"
	}
	if cfg.Timezone == "" {
		cfg.Timezone = DefaultTimezone
	}
	if cfg.IDBlockSize == 0 {
		cfg.IDBlockSize = 50
	}
	if cfg.KafkaTopic == "" {
		cfg.KafkaTopic = relaykafka.DefaultTopic
	}
	if cfg.KafkaInternalTopic == "" {
		cfg.KafkaInternalTopic = eventskafka.DefaultInternalTopic
	}
	if cfg.WebhookSchedule == nil {
		cfg.WebhookSchedule = webhooks.DefaultSchedule
	}
	if cfg.WebhookClock == nil {
		cfg.WebhookClock = webhooks.SystemClock{}
	}
	if cfg.WebhookWorkers == 0 {
		cfg.WebhookWorkers = DefaultWebhookWorkers
	}
	if cfg.ReportPullLimit == 0 {
		cfg.ReportPullLimit = DefaultReportPullLimit
	}
	if cfg.PartnerRateLimit == 0 {
		cfg.PartnerRateLimit = DefaultPartnerRateLimit
	}
	if cfg.VerifyCooldown == 0 {
		cfg.VerifyCooldown = DefaultVerifyCooldown
	}
	if cfg.NodeID == "" {
		cfg.NodeID = lease.NodeID()
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = lease.DefaultTTL
	}
	n = &Node{log: cfg.Logger, accessLog: cfg.AccessLog, Registry: catalog.Registry(), Metrics: metrics.New(), Adapters: map[string]string{}, NodeID: cfg.NodeID}
	built := n
	defer func() {
		if err != nil {
			built.Close() // every error returns nil, err: n is nil here
		}
	}()
	if n.Location, err = time.LoadLocation(cfg.Timezone); err != nil {
		return nil, fmt.Errorf("timezone %q: %w", cfg.Timezone, err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory: %w", err)
	}

	madeUp := tokenMadeUp(cfg)
	if n.AdminToken, err = tokenFile(cfg.AdminToken, filepath.Join(cfg.DataDir, "admin.token"), "adm_", n.log); err != nil {
		return nil, err
	}
	if n.InternalToken, err = tokenFile(cfg.InternalToken, filepath.Join(cfg.DataDir, "internal.token"), "int_", n.log); err != nil {
		return nil, err
	}

	// The phases of a start are logged with their durations (see "node
	// opened"): what an operator waits for after a restart.
	// The start-up GC target holds until every read model has caught up (see
	// logCaughtUp): the tail replay allocates as fast as the restore.
	restoreGC := startupGC(cfg)
	opened := false
	defer func() {
		if !opened {
			restoreGC()
		}
	}()
	began := time.Now()
	phases := []any{}
	phase := func(name string, since time.Time) time.Time {
		phases = append(phases, name, time.Since(since).Round(time.Millisecond))
		return time.Now()
	}
	store, storeName, err := openEventStore(ctx, cfg)
	mark := phase("event_store", began)
	n.Adapters["event store"] = storeName
	if err != nil {
		return nil, fmt.Errorf("event store: %w", err)
	}
	n.closers = append(n.closers, store.Close)
	n.head = &headStore{Store: n.Metrics.Store(store)}
	n.Events, n.StoredEvents = n.head, n.head
	sealer, err := openSealer(ctx, cfg, n.Events, n.Registry, n.log)
	if err != nil {
		return nil, err
	}
	var keyBackend datakeys.Backend
	if cfg.PostgresURL != "" {
		keyBackend, err = keyspg.Open(ctx, cfg.PostgresURL)
		n.Adapters["personal-data keys"] = "Postgres"
	} else {
		dir := filepath.Join(cfg.DataDir, "keys")
		keyBackend, err = keyfiles.Open(dir)
		n.Adapters["personal-data keys"] = "files in " + dir
	}
	if err != nil {
		return nil, fmt.Errorf("personal-data keys: %w", err)
	}
	n.closers = append(n.closers, keyBackend.Close)
	if log, ok := store.(*bolt.Store); ok {
		files, _ := keyBackend.(*keyfiles.Store)
		n.backup = &dataBackup{dir: cfg.DataDir, log: log, keys: files}
	}
	mark = phase("keys", mark)
	n.Keys = datakeys.New(keyBackend, sealer, sealer.Previous()...)
	n.Keys.SetClock(cfg.Now)
	if n.legacyBindings, err = legacyBindings(ctx, n.Keys, n.StoredEvents); err != nil {
		return nil, err
	}
	if n.Pseudonyms, err = OpenPseudonyms(ctx, n.Keys); err != nil {
		return nil, err
	}
	erasures := &privacy.ErasureFollower{Store: n.StoredEvents, Keys: n.Keys, Forgot: n.forgotKey, Log: n.log}
	if erasures.From, err = n.StoredEvents.Head(ctx); err != nil { // before this node opens any key
		return nil, fmt.Errorf("event store: head of the log: %w", err)
	}
	if cfg.PlaintextPersonalData {
		n.Adapters["personal-data keys"] += " (encryption OFF: PlaintextPersonalData)"
	} else {
		n.Events = privacy.New(n.head, n.Keys)
	}

	// shared is nil in embedded mode: one process per data directory.
	var shared subscribe.Shared
	if cfg.PostgresURL != "" {
		pg, err := postgres.Open(ctx, cfg.PostgresURL)
		if err != nil {
			return nil, fmt.Errorf("read models: %w", err)
		}
		pg.SetLeaseTTL(cfg.LeaseTTL)
		if sameDatabase(cfg.EventStoreURL, cfg.PostgresURL) {
			// A snapshot read learns the head in its own round trip.
			pg.SeeHead(pgevents.HeadQuery, pgevents.PositionAt)
		}
		n.ReadModel, shared = pg, pg
		n.pool = pg.Pool()
		n.Leases = n.Metrics.Leases(leasepg.New(n.pool))
		n.Adapters["read models"] = "Postgres"
		n.Adapters["leases"] = fmt.Sprintf("Postgres, node %s, TTL %s", cfg.NodeID, cfg.LeaseTTL)
	} else {
		mem := memory.New()
		n.ReadModel = mem
		n.Leases = n.Metrics.Leases(leasemem.New())
		n.Adapters["read models"] = "in memory, rebuilt from the log at start"
		if cfg.SnapshotInterval >= 0 {
			n.openSnapshots(cfg, mem)
		}
		n.Adapters["leases"] = "in memory (single node)"
	}
	n.closers = append(n.closers, n.ReadModel.Close)
	if err := n.checkOperatorToken(ctx, cfg, madeUp); err != nil {
		return nil, err
	}
	if len(cfg.KafkaBrokers) > 0 {
		n.Adapters["bus"] = "Kafka " + strings.Join(cfg.KafkaBrokers, ",") + " internal topic " + cfg.KafkaInternalTopic +
			", analytics topic " + cfg.KafkaTopic
	} else {
		n.Adapters["bus"] = "event store subscription"
	}
	for _, port := range []string{"event store", "personal-data keys", "read models", "leases", "bus"} {
		n.log.Info("adapter", "port", port, "adapter", n.Adapters[port])
	}

	n.Apps = directory.NewApps(sealer)
	// The directories journal the positions of their events, so a
	// snapshot restores them by reading those back, not the whole log.
	appsJournal := projections.NewJournal(n.Apps, n.Events, n.Registry)
	appsRunner := subscribe.NewRunner(n.Events, n.Registry, appsJournal, n.log, n.Metrics.Projected)
	n.Operators = directory.NewOperators()
	operatorsJournal := projections.NewJournal(n.Operators, n.Events, n.Registry)
	operatorsRunner := subscribe.NewRunner(n.Events, n.Registry, operatorsJournal, n.log, n.Metrics.Projected)
	n.Runners = []*subscribe.Runner{appsRunner, operatorsRunner}
	n.ReadModelRunners = map[projections.ReadModel]*subscribe.Runner{}
	var readModels subscribe.RunnerSet
	for _, f := range projections.ReadModels {
		run := subscribe.NewRunner(n.Events, n.Registry, readModelProjector(f, n.ReadModel, n.Location), n.log, n.Metrics.Projected)
		run.SkipPoison(n.Metrics.Skipped)
		// One writer per read model across the nodes sharing the read models.
		run.Own(subscribe.Ownership{Leases: n.Leases, Holder: cfg.NodeID, TTL: cfg.LeaseTTL, Shared: shared})
		n.ReadModelRunners[f] = run
		n.Runners = append(n.Runners, run)
		readModels = append(readModels, run)
	}
	deliveriesRunner := n.ReadModelRunners[projections.ReadModelDeliveries]
	ids := commands.NewAllocator(n.Events, n.Registry, cfg.IDBlockSize).Grow(16).ReserveAhead()
	pluginCmds := commands.NewPlugin(n.Events, n.Registry, ids, cfg.Now, phoneDirectory{n.ReadModel})
	analyzerJournal := projections.NewJournal(&commands.Analyzer{Plugin: pluginCmds}, n.Events, n.Registry)
	analyzerJournal.CheckpointOnly = true
	analyzerRunner := subscribe.NewRunner(n.Events, n.Registry, analyzerJournal, n.log, n.Metrics.Projected)

	guard := targets.Guard{AllowLoopback: cfg.WebhookAllowLoopback}
	if cfg.WebhookAllowLoopback {
		n.log.Warn("PLATFORM_WEBHOOK_ALLOW_LOOPBACK is on: webhooks may target http and loopback addresses; never use this in production")
	}
	n.Dispatcher = &webhooks.Dispatcher{
		Store: n.Events, Registry: n.Registry, Apps: n.Apps, AppsReady: appsRunner,
		Deliveries: n.ReadModel, Projected: deliveriesRunner, Reflected: readModels, Client: guard.Client(10 * time.Second),
		Clock: cfg.WebhookClock, Schedule: cfg.WebhookSchedule, Location: n.Location, Log: n.log.With("component", "webhooks"),
		Workers: cfg.WebhookWorkers, OnAttempt: n.Metrics.Attempted,
		PerEndpoint: cfg.WebhookPerEndpoint, BreakerFailures: cfg.WebhookBreakerFailures, BreakerCooldown: cfg.WebhookBreakerCooldown,
		OnBreaker: n.Metrics.Breaker, CreateConcurrency: cfg.WebhookCreateConcurrency,
	}

	directory := appDirectory{n.Apps, n.follower(cfg, appsRunner)}
	nonces, err := n.openNonces(cfg)
	if err != nil {
		return nil, err
	}
	partnerLimit, pullLimit, err := n.openRateLimits(ctx, cfg)
	if err != nil {
		return nil, err
	}
	schemeM := auth.SchemeM{Apps: directory, Now: cfg.Now, Bindings: nonces, Limiter: partnerLimit}
	admin := auth.Admin{Token: n.AdminToken, Operators: operatorDirectory{n.Operators, n.follower(cfg, operatorsRunner)}}
	n.admin = admin
	operators := commands.NewOperators(n.Events, n.Registry, ids, cfg.Now)
	schemeH := auth.SchemeH{Apps: directory, Nonces: nonces, Now: cfg.Now}
	reports := commands.NewReports(n.Events, n.Registry, ids, cfg.Now)
	marks := projections.NewWatermarks()
	n.Watermarks = marks
	startHead, err := n.Events.Head(ctx)
	if err != nil {
		return nil, fmt.Errorf("event store: head of the log: %w", err)
	}
	marks.Floor(startHead)
	if shared != nil {
		// Several nodes may share these read models: a partner's write
		// may have gone through another node, so reads wait for the head.
		marks.FollowHead(n.Events.Head)
	}
	var destroyer commands.KeyDestroyer = n.Keys
	if n.snapshots != nil {
		destroyer = erasingKeys{n.Keys, n.snapshots}
	}
	users := commands.NewUsers(n.Events, n.Registry, ids, n.Pseudonyms, cfg.Now, n.Location).WithKeys(destroyer).
		WithLegacyBindings(n.legacyBindings)
	if !cfg.PlaintextPersonalData {
		users.WithKeyWarmer(n.Keys)
		ids.OnReserve(commands.KindUser, n.prepareUserKeys)
	}
	// Another node's erasure also empties this node's loaded aggregate.
	erasures.Forgot = func(subject string, at events.Position) {
		if id, err := strconv.ParseInt(strings.TrimPrefix(subject, "user-"), 10, 64); err == nil {
			users.Forget(id)
		}
		if n.snapshots != nil {
			n.snapshots.Erased(context.Background(), subject, at)
		}
		n.forgotKey(subject, at)
	}
	cmdAPI := &commandapi.API{
		Users:   users,
		Apps:    commands.NewApps(n.Events, n.Registry, ids, sealer, guard.CheckURL),
		SchemeM: schemeM, Admin: admin, Watermarks: marks, AppsReady: appsRunner,
		Resender: n.Dispatcher, Location: n.Location, Keys: n.Keys,
		Deliveries: n.ReadModel, DeliveryErasures: commands.NewDeliveryErasures(n.Events, n.Registry),
		BulkResendCap: cfg.BulkResendCap,
		SchemeH:       schemeH, Reports: reports, Plugin: pluginCmds,
		Credentials: commands.NewCredentialIssuer(n.Events, n.Registry, ids, cfg.Now), UploaderDirectory: directory,
		Orders:        commands.NewOrders(n.Events, n.Registry, ids, cfg.Now),
		Benefits:      commands.NewBenefits(n.Events, n.Registry, ids, cfg.Now, max(cfg.VerifyCooldown, 0), providerDirectory{n.ReadModel, n.ReadModelRunners[projections.ReadModelBenefits], n.head, shared != nil}),
		InternalToken: n.InternalToken,
		Projections:   subscribe.RunnerSet(n.Runners),
		Idempotency: &idempotency.Keeper{
			Store: n.Events, Registry: n.Registry, Sealer: sealer, Keys: n.Keys, Now: cfg.Now, Replayed: marks.Wrote,
		},
		SignedWrites: nonces,
		Operators:    operators, OperatorsReady: operatorsRunner,
	}
	qAPI := &queryapi.API{
		Store: n.ReadModel, Apps: n.Apps, Events: n.Events, Runners: n.Runners, ReadModelRunners: n.ReadModelRunners, Pseudonyms: n.Pseudonyms,
		SchemeM: schemeM, SchemeH: schemeH, Admin: admin, Watermarks: marks, Location: n.Location, Deliveries: n.ReadModel,
		Orders: n.ReadModel, Benefits: n.ReadModel,
		Operators: n.Operators, Audit: n.ReadModel, Auditor: operators,
	}
	reportAPI := &queryapi.ReportAPI{
		Reports: n.ReadModel, Users: n.ReadModel, Events: n.Events, Runner: n.ReadModelRunners[projections.ReadModelReports], SchemeH: schemeH,
		Limiter: pullLimit, Tokens: directory, Apps: directory,
		Location: n.Location, Now: cfg.Now, Watermarks: marks, Views: reports, Auditor: operators,
	}
	portalJournal, err := n.openPortal(ctx, cfg, ids, sealer, admin, cmdAPI.Apps, cmdAPI.Benefits, marks)
	if err != nil {
		return nil, fmt.Errorf("developer portal: %w", err)
	}
	qAPI.Outbox = n.Developers // the portal opened after the read API
	routes := append(cmdAPI.Routes(), qAPI.Routes()...)
	n.Handler = n.router(append(routes, reportAPI.Routes()...), cfg.Now)

	n.Metrics.WatchLag(n.Events, func() []metrics.Follower {
		fs := make([]metrics.Follower, 0, len(n.Runners)+1)
		for _, run := range n.Runners {
			fs = append(fs, metrics.Follower{Kind: "projection", Name: run.Name(), Position: func(context.Context) (events.Position, error) { return run.Position(), nil }})
		}
		if n.relayCheckpoints != nil {
			fs = append(fs, metrics.Follower{Kind: "relay", Name: "kafka", Position: n.relayCheckpoints.Load})
		}
		return fs
	})
	mark = phase("assemble", mark)
	if n.snapshots != nil {
		if err := n.loadSnapshot(ctx, appsJournal, operatorsJournal, analyzerJournal, portalJournal); err != nil {
			return nil, err
		}
		phase("snapshot", mark)
	}
	n.log.Info("node opened; projections start", append(phases, "took", time.Since(began).Round(time.Millisecond))...)
	if n.restored {
		// Only a restored heap is large enough for the raised target to
		// let a tail's garbage grow it far; a node without a snapshot
		// (every node of a short log, most tests' nodes) sets no limit: a
		// process-wide limit of twice one small node's heap would keep the
		// collector running once other nodes in the process outgrow it.
		capStartupHeap()
	}
	runCtx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	for _, r := range append(n.Runners, analyzerRunner) {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			_ = r.Run(runCtx)
		}()
	}
	n.wg.Add(1)
	// A read model that never catches up must not keep the start's GC target.
	gcHold := time.AfterFunc(startupGCHold, restoreGC)
	go func() {
		defer n.wg.Done()
		defer gcHold.Stop()
		defer restoreGC()
		n.logCaughtUp(runCtx, began, readModels)
	}()
	n.spawn(runCtx, "erasure follower", erasures.Run)
	if pg, ok := n.ReadModel.(*postgres.Store); ok && cfg.ErasurePurgeInterval >= 0 {
		n.spawnOwned(runCtx, "erasure purge", n.Leases, "erasure-purge", cfg.LeaseTTL,
			n.purgeErased(pg, cmp.Or(cfg.ErasurePurgeInterval, DefaultErasurePurgeInterval)))
	}
	n.spawn(runCtx, "cache sweep", n.sweepCaches(users, cmp.Or(cfg.CacheSweepInterval, datakeys.CacheTTL)))
	if n.Portal != nil {
		n.spawn(runCtx, "portal mail work", n.Portal.RunMailWork)
	}
	if n.mailSender != nil {
		n.spawnOwned(runCtx, "mail sender", n.Leases, "mail", cfg.LeaseTTL, n.mailSender.Run)
	}
	if n.snapshots != nil {
		if cfg.SnapshotEvents >= 0 {
			n.snapshots.AfterEvents = uint64(cmp.Or(cfg.SnapshotEvents, DefaultSnapshotEvents))
			// Every read model reads every event; the first one's count is the log's growth.
			n.snapshots.Progress = func() uint64 { return readModels[0].Stats().Applied }
		}
		n.spawn(runCtx, "read-model snapshots", func(ctx context.Context) error {
			return n.snapshots.Run(ctx, cmp.Or(cfg.SnapshotInterval, DefaultSnapshotInterval), n.restored, func(ctx context.Context) error {
				for _, run := range readModels {
					if err := run.WaitReady(ctx); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
	if err := n.startWebhooks(runCtx, cfg, deliveriesRunner); err != nil {
		return nil, err
	}
	opened = true
	return n, nil
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

// webhookCreationCheckpointFile keeps, in the data directory, the log
// position up to which an embedded node has created every delivery.
const webhookCreationCheckpointFile = "webhook-creation-checkpoint.json"

// startWebhooks starts the dispatcher (fed by Kafka or by the store), its
// sender, the relay when Kafka is configured, and the delivery gauges.
// Nodes sharing Postgres share the work: every node sends (claims keep one
// attempt of a delivery in flight), one node at a time relays (the relay
// lease), and without Kafka one node at a time creates deliveries from the
// store (the webhook-creation lease); with Kafka the consumer group spreads
// creation over the nodes.
func (n *Node) startWebhooks(ctx context.Context, cfg Config, models *subscribe.Runner) error {
	leases, ttl := n.Leases, cfg.LeaseTTL
	// Claims spread sending over the nodes sharing the deliveries, one
	// attempt of a delivery in flight at a time.
	if cfg.PostgresURL != "" {
		claims, err := webhookspg.New(ctx, n.pool)
		if err != nil {
			return fmt.Errorf("webhook claims: %w", err)
		}
		n.Dispatcher.Claims = claims
		n.Adapters["webhook claims"] = "Postgres"
	} else {
		n.Dispatcher.Claims = webhooksmem.NewClaims()
		n.Adapters["webhook claims"] = "in memory (one node)"
	}
	n.Dispatcher.ClaimTTL, n.Dispatcher.Node = cfg.WebhookClaimTTL, n.NodeID
	n.log.Info("adapter", "port", "webhook claims", "adapter", n.Adapters["webhook claims"])

	// Deliveries are created in concurrent batches, so the highest one
	// recorded does not say all before it are: a checkpoint does.
	var creation webhooks.Checkpoints = relay.NewFileCheckpointsNamed(cfg.DataDir, webhookCreationCheckpointFile)
	if cfg.PostgresURL != "" {
		shared, err := relaypg.New(ctx, n.pool, "webhook-creation")
		if err != nil {
			return fmt.Errorf("webhook creation checkpoint: %w", err)
		}
		creation = shared
	}
	// Pipelined: the next batch waits for the read models while the
	// previous one's append commits; the checkpoint covers committed batches.
	create := func(ctx context.Context) error {
		return webhooks.RunPipelined(ctx, webhooks.StoreSource{Store: n.Events, Checkpoints: creation, From: func(ctx context.Context) (events.Position, error) {
			if err := models.WaitReady(ctx); err != nil {
				return events.Position{}, err
			}
			return n.ReadModel.LastSource(ctx)
		}}, n.Dispatcher.PrepareBatch, n.Dispatcher.CommitBatches)
	}
	if len(cfg.KafkaBrokers) == 0 {
		// Create is idempotent, so a paused old owner overlapping a new one
		// writes nothing twice; the lease only saves the others the work.
		n.spawnOwned(ctx, "webhook deliveries", leases, "webhook-creation", ttl, create)
	} else {
		for _, topic := range []string{cfg.KafkaInternalTopic, cfg.KafkaTopic} {
			ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err := relaykafka.EnsureTopic(ectx, cfg.KafkaBrokers, topic, 6)
			cancel()
			if err != nil {
				return fmt.Errorf("kafka topic %s: %w", topic, err)
			}
		}
		// Pipelined like the store-fed creation: the next batch is fetched,
		// decrypted and prepared while the previous ones commit; offsets
		// cover committed batches only.
		source := webhookkafka.NewSource(cfg.KafkaBrokers, cfg.KafkaInternalTopic, webhookkafka.WebhookGroup(cfg.KafkaInternalTopic), n.log)
		prepare := n.Dispatcher.PrepareBatch
		if priv, ok := n.Events.(*privacy.Store); ok {
			prepare = privacy.Decrypting(priv, prepare) // the topic carries ciphertext
		}
		n.spawn(ctx, "webhook deliveries", func(ctx context.Context) error {
			return webhookkafka.RunPipelined(ctx, source, prepare, n.Dispatcher.CommitBatches)
		})
		if cfg.KafkaRelay == nil || *cfg.KafkaRelay {
			key, err := feedPseudonymKey(cfg)
			if err != nil {
				return err
			}
			transformer, err := feed.New(key, n.Registry)
			if err != nil {
				return err
			}
			producer := relaykafka.NewFeedProducer(cfg.KafkaBrokers, cfg.KafkaInternalTopic, cfg.KafkaTopic, transformer, n.log.With("component", "relay")).
				WithStreamNames(n.Pseudonyms.Stream)
			n.closers = append(n.closers, producer.Close)
			var checkpoints relay.Checkpoints = relay.NewFileCheckpointsNamed(cfg.DataDir, relay.FeedCheckpointFile)
			if cfg.PostgresURL != "" {
				shared, err := relaypg.New(ctx, n.pool, "feed")
				if err != nil {
					return err
				}
				checkpoints = relay.Upgraded{Primary: shared, Legacy: checkpoints}
			}
			n.relayCheckpoints = checkpoints
			n.log.Info("analytics feed", "topic", cfg.KafkaTopic, "pseudonym_key_id", transformer.KeyID())
			n.spawnOwned(ctx, "relay", leases, "relay", ttl, func(ctx context.Context) error {
				return relay.Run(ctx, n.StoredEvents, producer, checkpoints, n.log.With("component", "relay"), relay.Options{OnRelayed: n.Metrics.Relayed})
			})
		} else {
			n.log.Info("relay opted out on this node (PLATFORM_KAFKA_RELAY=off): other nodes relay")
		}
	}
	n.spawn(ctx, "webhook sender", n.Dispatcher.RunSender)
	n.spawn(ctx, "delivery gauges", func(ctx context.Context) error {
		for {
			if counts, err := n.ReadModel.CountByStatus(ctx); err == nil {
				n.Metrics.DeliveryCounts(counts)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(5 * time.Second):
			}
		}
	})
	return nil
}

// PseudonymSecret is the key-store subject of the platform secret that
// binding stream names (and the Kafka keys made from them) are hashed
// under: not a person, never destroyed by an erasure.
const PseudonymSecret = "platform.pseudonyms"

// LegacyBindingsFlag is the key-store subject whose presence says that the
// log may hold channel-user bindings named after the channel_user_id (it
// had users when the first node of a release with hashed names opened it),
// which registers must then keep reading. It is a record like any other
// (its random bytes unused) so that it lives where the pseudonym secret
// does and the event log is left as it is.
const LegacyBindingsFlag = "platform.legacy-bindings"

// legacyBindings decides, once per log, whether registers must read the
// legacy binding names: on the first start of this release (no pseudonym
// secret yet, created right after), legacy bindings may exist if the log
// had allocated user ids (every binding names one), and the flag is
// recorded before the secret; later starts read the flag. Two first starts
// at once agree (both read the same log: nothing registers before a node
// has created the secret); a log begun with hashed names never reads a
// legacy name.
func legacyBindings(ctx context.Context, ks *datakeys.Keys, store events.Store) (bool, error) {
	_, err := ks.Backend().Get(ctx, PseudonymSecret)
	if err == nil {
		_, err := ks.Backend().Get(ctx, LegacyBindingsFlag)
		if errors.Is(err, datakeys.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("legacy bindings flag: %w", err)
		}
		return true, nil
	}
	if !errors.Is(err, datakeys.ErrNotFound) {
		return false, fmt.Errorf("channel user pseudonym key: %w", err)
	}
	recs, err := store.ReadStream(ctx, domain.IDStream(commands.KindUser), 0, 1)
	if err != nil {
		return false, fmt.Errorf("legacy bindings: %w", err)
	}
	if len(recs) == 0 {
		return false, nil
	}
	if _, err := ks.PlatformSecret(ctx, LegacyBindingsFlag); err != nil {
		return false, fmt.Errorf("legacy bindings flag: %w", err)
	}
	return true, nil
}

// OpenPseudonyms builds the hasher of channel user ids. Its key lives in the
// key store rather than being derived from the master key: the key store is
// what every node shares (Postgres) or the data directory keeps (files), it
// survives restarts, and a master-key rotation re-seals the secret without
// changing it, whereas a key derived from the master key would rename every
// binding stream at rotation and so break register's uniqueness. The key
// is derived from the secret with a fixed label, so the secret serves no
// other purpose directly.
func OpenPseudonyms(ctx context.Context, ks *datakeys.Keys) (*domain.Pseudonyms, error) {
	secret, err := ks.PlatformSecret(ctx, PseudonymSecret)
	if err != nil {
		return nil, fmt.Errorf("channel user pseudonym key: %w", err)
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("partner-open-platform channel_user_id binding stream v1"))
	return domain.NewPseudonyms(m.Sum(nil))
}

// feedPseudonymKey is the configured feed key, or one derived from the
// master key (which every node sharing the log has), so relays on any node
// make the same pseudonyms. openSealer has already checked the master key.
func feedPseudonymKey(cfg Config) ([]byte, error) {
	if cfg.FeedPseudonymKey != "" {
		key, err := secrets.ParseKey(cfg.FeedPseudonymKey)
		if err != nil {
			return nil, fmt.Errorf("PLATFORM_FEED_PSEUDONYM_KEY: %w", err)
		}
		return key, nil
	}
	var master []byte
	var err error
	if cfg.MasterKey != "" {
		master, err = secrets.ParseKey(cfg.MasterKey)
	} else {
		master, _, err = secrets.LoadOrCreateKeyFile(filepath.Join(cfg.DataDir, "master.key"))
	}
	if err != nil {
		return nil, fmt.Errorf("analytics feed pseudonym key from the master key: %w", err)
	}
	return feed.DeriveKey(master), nil
}

// spawn runs a background loop until ctx ends, restarting it with backoff when it fails.
func (n *Node) spawn(ctx context.Context, name string, run func(context.Context) error) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		backoff := 100 * time.Millisecond
		for ctx.Err() == nil {
			err := run(ctx)
			if ctx.Err() != nil {
				return
			}
			n.log.Error("background loop stopped; restarting", "loop", name, "err", err, "backoff", backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			backoff = min(backoff*2, 10*time.Second)
		}
	}()
}

// router serves every route behind the edge: request lines beyond
// httpapi.MaxRequestLine are refused before routing or logging, methods
// are bounded metric labels, and one failed-authentication limiter is
// shared by every API of the node.
func (n *Node) router(routes []commandapi.Route, now func() time.Time) http.Handler {
	rt := httprouter.New()
	rt.RedirectTrailingSlash, rt.RedirectFixedPath = false, false
	observe := func(method, route string, status int, d time.Duration) {
		n.Metrics.HTTPDuration.WithLabelValues(method, route, httpapi.StatusLabel(status)).Observe(d.Seconds())
	}
	wrap := func(route string, h http.Handler) http.Handler {
		return httpapi.InstrumentTo(n.log, n.accessLog, route, observe, h)
	}
	for _, r := range routes {
		h := r.Handle
		rt.Handler(r.Method, r.Path, wrap(r.Path, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			h(w, req, httprouter.ParamsFromContext(req.Context()))
		})))
	}
	rt.Handler("GET", "/healthz", wrap("/healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		httpapi.OK(w, http.StatusOK, map[string]any{"status": "ok"})
	})))
	rt.Handler("GET", "/readyz", wrap("/readyz", http.HandlerFunc(n.readyz)))
	rt.Handler("GET", "/metrics", promhttp.HandlerFor(n.Metrics.Registry, promhttp.HandlerOpts{}))
	rt.Handler("POST", "/admin/v1/backup", wrap("/admin/v1/backup", http.HandlerFunc(n.serveBackup)))
	rt.Handler("GET", "/openapi.yaml", wrap("/openapi.yaml", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(openapi.Spec)
	})))
	if n.Portal != nil {
		for _, m := range []string{"GET", "HEAD", "POST"} {
			rt.Handler(m, "/portal", wrap("/portal/", n.Portal))
			rt.Handler(m, "/portal/*path", wrap("/portal/", n.Portal))
		}
	}
	rt.NotFound = wrap("unmatched", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { httpapi.Error(w, r, httpapi.ErrNotFound) }))
	rt.MethodNotAllowed = wrap("unmatched", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { httpapi.Error(w, r, httpapi.ErrMethod) }))
	refuse := wrap("refused", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { httpapi.Error(w, r, httpapi.ErrURITooLong) }))
	failures := auth.NewFailures()
	failures.Now = now // the node's clock, as every other budget and window uses
	return httpapi.LimitRequestLine(failures.Install(rt), refuse)
}

// readyz answers 200 once every projection has applied the log as far as it
// reached when the node started, and stays 200 while an operator rebuilds a
// read model; its body lists each projection's progress and any event it had to
// skip.
func (n *Node) readyz(w http.ResponseWriter, r *http.Request) {
	status := map[string]any{}
	ready := true
	for _, run := range n.Runners {
		s := run.Stats()
		// A read model being rebuilt on an operator's request does not make the
		// node unready: every other read model still serves, and reads of the
		// rebuilt one wait for it (bounded) rather than answer without it.
		if s.LastError != "" || (!s.Ready && !s.Rebuilding) {
			ready = false
		}
		status[s.Name] = s
	}
	if !ready {
		httpapi.WriteJSON(w, http.StatusServiceUnavailable, httpapi.Envelope{Code: "HTTP_503", Message: "projections are catching up", Data: status, Timestamp: time.Now().Format(time.RFC3339)})
		return
	}
	httpapi.OK(w, http.StatusOK, status)
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

// Close stops the projections and releases the stores.
func (n *Node) Close() error {
	if n.cancel != nil {
		n.cancel()
	}
	n.wg.Wait()
	var errs []error
	if n.snapshots != nil {
		// The projections have stopped: a snapshot now lets the next start
		// replay nothing.
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

// openSealer returns the sealer of the master key: PLATFORM_MASTER_KEY, or
// the key file in the data directory, created only while the event log is
// empty. A log that already holds events was sealed with some key, and a new
// one could never open it, so a missing key is refused; so is a key that
// cannot open the first sealed secret in the log.
func openSealer(ctx context.Context, cfg Config, store events.Store, reg *events.Registry, log *slog.Logger) (*secrets.Sealer, error) {
	var key []byte
	path := filepath.Join(cfg.DataDir, "master.key")
	source := "PLATFORM_MASTER_KEY"
	if cfg.MasterKey != "" {
		var err error
		if key, err = secrets.ParseKey(cfg.MasterKey); err != nil {
			return nil, fmt.Errorf("PLATFORM_MASTER_KEY: %w", err)
		}
	} else {
		source = path
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			recs, err := store.ReadAll(ctx, events.Position{}, 1)
			if err != nil {
				return nil, fmt.Errorf("master key: read the event log: %w", err)
			}
			if len(recs) > 0 {
				return nil, fmt.Errorf("master key: PLATFORM_MASTER_KEY is unset and %s does not exist, but the event log already holds events, "+
					"and the secrets in them were sealed with a master key; set PLATFORM_MASTER_KEY (or restore %s) to the key this log was written with. "+
					"Refusing to create a new key, which could not open them", path, path)
			}
		}
		k, created, err := secrets.LoadOrCreateKeyFile(path)
		if err != nil {
			return nil, err
		}
		key = k
		if created {
			log.Info("created master key for sealing secrets", "path", path)
		}
		if cfg.EventStoreURL != "" {
			log.Warn("PLATFORM_MASTER_KEY is unset: secrets are sealed with a key kept in the data directory; every node sharing the event store needs the same key", "path", path)
		}
	}
	sealer, err := secrets.New(key)
	if err != nil {
		return nil, err
	}
	var previous [][]byte
	prevPath := filepath.Join(cfg.DataDir, "master.key.previous")
	if cfg.MasterKeyPrevious != "" {
		if previous, err = secrets.ParseKeyList(cfg.MasterKeyPrevious); err != nil {
			return nil, fmt.Errorf("PLATFORM_MASTER_KEY_PREVIOUS: %w", err)
		}
	} else if previous, err = secrets.LoadKeyListFile(prevPath); err != nil {
		return nil, err
	}
	var older []*secrets.Sealer
	for _, k := range previous {
		s, err := secrets.New(k)
		if err != nil {
			return nil, err
		}
		older = append(older, s)
	}
	sealer = secrets.WithPrevious(sealer, older...)
	if len(older) > 0 {
		log.Info("master key: sealing with the current key, also opening with previous keys",
			"current", sealer.KeyID(), "previous", strings.Join(sealer.PreviousKeyIDs(), ","))
	}
	if err := checkSealer(ctx, sealer, store, reg); err != nil {
		fix := "set PLATFORM_MASTER_KEY to the key this log was written with (after a rotation, keep the old key in PLATFORM_MASTER_KEY_PREVIOUS)"
		if cfg.MasterKey == "" {
			fix = "set PLATFORM_MASTER_KEY, or put in " + path + ", the key this log was written with (after a rotation, keep the old key in PLATFORM_MASTER_KEY_PREVIOUS or " + prevPath + ")"
		}
		return nil, fmt.Errorf("master key from %s: %w; %s", source, err, fix)
	}
	return sealer, nil
}

// checkSealer opens the first sealed secret in the log, looking no further
// than its first 10,000 events (no partner can write before an app exists,
// so the first app comes early), so that a wrong key fails here rather than
// in the apps projection, forever.
func checkSealer(ctx context.Context, sealer *secrets.Sealer, store events.Store, reg *events.Registry) error {
	created, rotated := catalog.AppCreated{}.EventType(), catalog.AppSecretRotated{}.EventType()
	var pos events.Position
	for scanned := 0; scanned < 10000; {
		recs, err := store.ReadAll(ctx, pos, 500)
		if err != nil {
			return fmt.Errorf("read the event log: %w", err)
		}
		for _, rec := range recs {
			if rec.Type != created && rec.Type != rotated {
				continue
			}
			env, err := reg.Decode(rec)
			if err != nil {
				return fmt.Errorf("decode %s at %s: %w", rec.Type, rec.Position, err)
			}
			var appID int64
			var sealed string
			switch p := env.Payload.(type) {
			case *catalog.AppCreated:
				appID, sealed = p.AppID, p.SealedAppSecret
			case *catalog.AppSecretRotated:
				appID, sealed = p.AppID, p.SealedAppSecret
			default:
				continue
			}
			if _, err := sealer.Open(sealed); err != nil {
				return fmt.Errorf("it cannot open the secret of app %d sealed in the event log at %s: %w", appID, rec.Position, err)
			}
			return nil
		}
		if len(recs) < 500 {
			return nil
		}
		scanned += len(recs)
		pos = recs[len(recs)-1].Position
	}
	return nil
}

// tokenFile returns the configured token, or the one kept in path (created
// with mode 0600 on first start).
func tokenFile(configured, path, prefix string, log *slog.Logger) (string, error) {
	if configured != "" {
		return configured, nil
	}
	if b, err := os.ReadFile(path); err == nil {
		if tok := strings.TrimSpace(string(b)); tok != "" {
			log.Info("token read from file", "path", path)
			return tok, nil
		}
	}
	tok := secrets.Random(prefix, 24)
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write token %s: %w", path, err)
	}
	log.Info("token created", "path", path)
	return tok, nil
}

// phoneDirectory binds plugin measurements to users through the read model.
type phoneDirectory struct{ store projections.UserStore }

func (d phoneDirectory) UserIDByPhone(ctx context.Context, appID int64, phone string) (int64, bool, error) {
	u, err := d.store.UserByPhone(ctx, appID, phone)
	if errors.Is(err, projections.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return u.OpenUserID, true, nil
}

// headStore remembers the position of the last append this node made, so a
// read that misses a fact written moments ago by another app can wait for it.
type headStore struct {
	events.Store
	mu   sync.Mutex
	last events.Position
}

func (h *headStore) Append(ctx context.Context, stream string, expected events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	res, err := h.Store.Append(ctx, stream, expected, evs...)
	if err == nil {
		h.mu.Lock()
		if h.last.Less(res.Position) {
			h.last = res.Position
		}
		h.mu.Unlock()
	}
	return res, err
}

// AppendMulti is Append for an atomic multi-stream append.
func (h *headStore) AppendMulti(ctx context.Context, parts ...events.StreamAppend) ([]events.AppendResult, error) {
	res, err := events.AppendMulti(ctx, h.Store, parts...)
	if err == nil {
		last := events.Last(res)
		h.mu.Lock()
		if h.last.Less(last) {
			h.last = last
		}
		h.mu.Unlock()
	}
	return res, err
}

// Last is the position of this node's latest append.
func (h *headStore) Last() events.Position {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// providerDirectory finds an app's providers and a record's issuer in the
// read model; on a miss it waits (bounded) for the read model to reach this
// node's latest write (with several nodes: the log's head) and looks again,
// so a verification right after a registration, or a rating right after a
// verification, finds its facts whichever node took them.
type providerDirectory struct {
	store  projections.BenefitStore
	runner *subscribe.Runner
	head   *headStore
	// cluster: other nodes may have written the facts, so wait for the
	// log's head rather than this node's last append.
	cluster bool
}

func (d providerDirectory) catchUp(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	floor := d.head.Last()
	if d.cluster {
		h, err := d.head.Head(ctx)
		if err != nil {
			return // the lookup answers from what the read model has
		}
		floor = h
	}
	_ = d.runner.WaitFor(ctx, floor)
}

func (d providerDirectory) ProviderIDs(ctx context.Context, appID int64) ([]int64, error) {
	list, err := d.store.Providers(ctx, appID)
	if err == nil && len(list) == 0 {
		d.catchUp(ctx)
		list, err = d.store.Providers(ctx, appID)
	}
	if err != nil {
		return nil, err
	}
	ids := make([]int64, 0, len(list))
	for _, p := range list {
		ids = append(ids, p.ProviderID)
	}
	return ids, nil
}

func (d providerDirectory) FulfillmentIssuer(ctx context.Context, recordID int64) (int64, bool, error) {
	find := func() (int64, bool, error) {
		list, err := d.store.Fulfillments(ctx, projections.FulfillmentFilter{After: recordID - 1, Limit: 1})
		if err != nil || len(list) == 0 || list[0].RecordID != recordID {
			return 0, false, err
		}
		return list[0].IssuerAppID, true, nil
	}
	issuer, ok, err := find()
	if err == nil && !ok {
		d.catchUp(ctx)
		issuer, ok, err = find()
	}
	return issuer, ok, err
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
