package node

import (
	"log/slog"
	"time"

	eventskafka "github.com/healthtech/partner-open-platform/events/kafka"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
	"github.com/healthtech/partner-open-platform/internal/lease"
	"github.com/healthtech/partner-open-platform/portal"
	relaykafka "github.com/healthtech/partner-open-platform/relay/kafka"
	"github.com/healthtech/partner-open-platform/webhooks"
	"github.com/healthtech/partner-open-platform/webhooks/targets"
)

// The defaults a zero Config field takes (WithDefaults). cmd/platform's
// settings table shows these same values (the -help text and
// docs/configuration.md are generated from it), so each is written here
// only. Defaults owned by a port live beside it (lease.DefaultTTL,
// webhooks.DefaultPerEndpoint, portal.DefaultSessionIdle,
// relaykafka.DefaultTopic, ...).
const (
	DefaultListenAddr       = "127.0.0.1:8080" // cmd/platform's listen address
	DefaultDataDir          = "./data"
	DefaultTimezone         = "Asia/Shanghai"  // zone of Y-m-d H:i:s times
	DefaultWebhookWorkers   = 64               // webhook attempts in flight at once per node
	DefaultReportPullLimit  = 60               // report pulls per minute per app (the spec's)
	DefaultPartnerRateLimit = 6000             // scheme M requests per minute per app
	DefaultVerifyCooldown   = 10 * time.Second // DUPLICATE_FULFILLMENT window
	DefaultIDBlockSize      = 50               // ids a node reserves per allocation

	// DefaultPortalBaseURL is the origin of mail links of a node given
	// none: the default listen address (cmd/platform passes the origin of
	// the address it listens on, or requires PLATFORM_PORTAL_BASE_URL).
	DefaultPortalBaseURL = "http://" + DefaultListenAddr
	// DefaultMailFrom is the sender of the portal's mail given no MailFrom.
	DefaultMailFrom = "portal@localhost"
)

// DefaultSnapshotInterval is how often embedded read models are snapshotted
// when Config.SnapshotInterval is zero: a crash then replays at most this
// much of the log, and a write costs a few seconds of one core per million
// users, well under 1% of the machine at this pace.
const DefaultSnapshotInterval = 5 * time.Minute

// DefaultSnapshotEvents is how many events the read models read before a
// snapshot is written even though the interval has not passed: a start
// after a kill -9 replays the tail since the last snapshot (about 37 µs an
// event at 1M events), so at 10,000 the tail adds well under a second to
// the restore's 2.5 s. Writes for this mark are spaced by
// memory.AfterEventsGap times the last write's CPU, which caps their CPU
// at a fifth of a core when the log grows fast (the tail is then what the
// log gains in one write and its gap).
const DefaultSnapshotEvents = 10_000

// DefaultErasurePurgeInterval is how often, by default, the Postgres read
// models are purged of erased rows (Config.ErasurePurgeInterval): with the
// time the purge takes, the longest an erased person's plaintext stays in
// the read-model tables' files (docs/privacy.md).
const DefaultErasurePurgeInterval = time.Hour

// WithDefaults gives every zero field its default, as Open does; a negative
// interval or limit keeps its meaning ("off", "none") for the builder that
// reads it.
func (c Config) WithDefaults() Config {
	setZero(&c.DataDir, DefaultDataDir)
	setZero(&c.Timezone, DefaultTimezone)
	setZero(&c.IDBlockSize, DefaultIDBlockSize)
	setZero(&c.KafkaTopic, relaykafka.DefaultTopic)
	setZero(&c.KafkaInternalTopic, eventskafka.DefaultInternalTopic)
	setZero(&c.WebhookWorkers, DefaultWebhookWorkers)
	setZero(&c.WebhookIdleConnections, targets.DefaultIdleConnections)
	setZero(&c.ReportPullLimit, DefaultReportPullLimit)
	setZero(&c.PartnerRateLimit, DefaultPartnerRateLimit)
	setZero(&c.VerifyCooldown, DefaultVerifyCooldown)
	setZero(&c.SnapshotInterval, DefaultSnapshotInterval)
	setZero(&c.SnapshotEvents, DefaultSnapshotEvents)
	setZero(&c.ErasurePurgeInterval, DefaultErasurePurgeInterval)
	setZero(&c.CacheSweepInterval, datakeys.CacheTTL)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.AccessLog == nil {
		c.AccessLog = c.Logger
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.WebhookSchedule == nil {
		c.WebhookSchedule = webhooks.DefaultSchedule
	}
	if c.WebhookClock == nil {
		c.WebhookClock = webhooks.SystemClock{}
	}
	if c.NodeID == "" {
		c.NodeID = lease.NodeID()
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = lease.DefaultTTL
	}
	c.Portal = c.Portal.withDefaults()
	return c
}

// withDefaults gives the portal's zero (or negative) bounds and its unset
// origin and sender their defaults; the session lengths default in portal.
func (p PortalConfig) withDefaults() PortalConfig {
	if p.LockoutPeriod <= 0 {
		p.LockoutPeriod = portal.DefaultLockoutPeriod
	}
	if p.LockoutFailures <= 0 {
		p.LockoutFailures = portal.DefaultLockoutFailures
	}
	if p.AddressLimit <= 0 {
		p.AddressLimit = portal.DefaultAddressLimit
	}
	setZero(&p.MailFrom, DefaultMailFrom)
	setZero(&p.BaseURL, DefaultPortalBaseURL)
	return p
}

// setZero sets *field to def when it holds its type's zero value.
func setZero[T comparable](field *T, def T) {
	var zero T
	if *field == zero {
		*field = def
	}
}
