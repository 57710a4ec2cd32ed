package node

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/webhooks"
)

// Config selects adapters and secrets; empty store URLs mean embedded
// adapters. A zero field takes its default (WithDefaults, defaults.go):
// cmd/platform fills this type straight from its settings table, and the
// end-to-end tests set only what they exercise.
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
	// WebhookTransport, when set, wraps the transport webhook POSTs go
	// through (tests: observing each attempt where its sender makes it).
	WebhookTransport func(http.RoundTripper) http.RoundTripper
	// WebhookReplayWindow and WebhookReplayRate bound a webhook replay's
	// deliveries waiting at once and queued per second (0: the defaults,
	// webhooks.DefaultReplayWindow and DefaultReplayRate).
	WebhookReplayWindow int
	WebhookReplayRate   float64
	// WebhookWorkers bounds concurrent webhook attempts on this node (default DefaultWebhookWorkers).
	WebhookWorkers int
	// BulkResendCap bounds the deliveries one bulk resend call examines
	// (0: commandapi.DefaultBulkResendCap), so tests can reach the cap.
	BulkResendCap int
	// WebhookPerEndpoint bounds concurrent POSTs to one app's endpoint
	// (default webhooks.DefaultPerEndpoint), so a slow endpoint cannot take every worker.
	WebhookPerEndpoint int
	// WebhookIdleConnections bounds the keep-alive connections kept open to
	// partner endpoints between deliveries, all hosts together (default
	// targets.DefaultIdleConnections); one endpoint keeps at most WebhookPerEndpoint.
	WebhookIdleConnections int
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

// PortalConfig is the developer portal's part of the configuration
// (README, "Developer portal").
type PortalConfig struct {
	// InsecureCookies drops the session cookie's Secure flag, for plain
	// http on localhost (PLATFORM_PORTAL_INSECURE_COOKIES; off by default).
	InsecureCookies bool
	// SessionIdle and SessionMax end sessions (zero: portal's
	// DefaultSessionIdle, DefaultSessionMax).
	SessionIdle time.Duration
	SessionMax  time.Duration
	// LockoutFailures failed sign-ins lock an account for LockoutPeriod;
	// AddressLimit is sign-in, sign-up and reset attempts per minute per
	// client address (zero: portal's DefaultLockoutFailures,
	// DefaultLockoutPeriod, DefaultAddressLimit).
	LockoutFailures int
	LockoutPeriod   time.Duration
	AddressLimit    int
	// BaseURL is the public origin for links in mail
	// (PLATFORM_PORTAL_BASE_URL); unset: DefaultPortalBaseURL. Links are
	// never built from a request's Host header.
	BaseURL string
	// SMTPURL is smtp://user:pass@host:port (PLATFORM_SMTP_URL); unset: mail
	// waits in the operator's outbox.
	SMTPURL string
	// MailFrom is the sender address (default DefaultMailFrom).
	MailFrom string
	// MailRetries replaces the waits between attempts of a failed mail (tests).
	MailRetries []time.Duration
	// MailPoll is how often the sender looks for mail (default 1 s).
	MailPoll time.Duration
	// Passwords are argon2id's costs (default commands.DefaultPasswordParams;
	// tests lower them).
	Passwords commands.PasswordParams
}
