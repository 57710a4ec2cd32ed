package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/mail"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/healthtech/partner-open-platform/events/esdb"
	eventskafka "github.com/healthtech/partner-open-platform/events/kafka"
	"github.com/healthtech/partner-open-platform/internal/lease"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/secrets"
	"github.com/healthtech/partner-open-platform/portal"
	"github.com/healthtech/partner-open-platform/portal/mail/smtp"
	relaykafka "github.com/healthtech/partner-open-platform/relay/kafka"
	"github.com/healthtech/partner-open-platform/webhooks"
	"github.com/healthtech/partner-open-platform/webhooks/targets"
)

// config is the platform's start-up configuration after every variable and
// flag has been checked; loadConfig builds it or says what is wrong. The
// settings fill the node's Config directly (main hands it to node.Open);
// the other fields are the process's own.
type config struct {
	node.Config
	Addr           string
	LogFormat      string
	AccessLogFlush time.Duration // access lines buffered up to this long; 0: each written at once
	DebugAddr      string        // the runtime profiles' listener (debug.go); "": none
	// Tracing is the standard OTEL_* variables the settings table checks;
	// tracing.FromEnv reads them (and the exporters' own) from the
	// environment at start.
	Tracing map[string]string
	// esdbURL is PLATFORM_ESDB_URL, the older name of the event store's
	// URL; once both names are read it becomes Config.EventStoreURL.
	esdbURL string
	// portalBaseURLDefault: Portal.BaseURL was not set and is the embedded
	// development default (the listen address).
	portalBaseURLDefault bool

	settings []*setting
}

// setting is one configurable value: its variable, its flag (if any), its
// default, what it accepts, and how it is parsed into the config.
type setting struct {
	env     string
	flag    string // "" when the value is set by the environment only
	def     string // parsed like any value; "" leaves the zero value
	usage   string
	accepts string // the accepted values, for error messages
	secret  bool   // never echoed, never logged
	isBool  bool
	parse   func(string) error
	show    func() string // the effective value, for the start-up log line
}

// nodeIDPattern is what PLATFORM_NODE_ID accepts: a name that reads well
// in logs, /readyz and the leases table.
var nodeIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// errHelp is returned when -h or -help asked for the usage text.
var errHelp = flag.ErrHelp

// loadConfig reads the PLATFORM_* variables (through getenv) and then the
// flags in args, which win. The first invalid value is an error naming the
// variable or flag and the accepted values; a secret's value is never echoed.
func loadConfig(args []string, getenv func(string) string, usageOut io.Writer) (*config, error) {
	c := &config{}
	c.settings = c.table()
	c.applyDefaults()
	if err := c.readEnv(getenv); err != nil {
		return nil, err
	}
	if err := c.readFlags(args, usageOut); err != nil {
		return nil, err
	}
	for _, check := range []func() error{c.checkEventStore, c.checkPortalBaseURL} {
		if err := check(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// table is every setting, one group after the other; the order is that of
// the start-up log line and of docs/configuration.md.
func (c *config) table() []*setting {
	var all []*setting
	for _, group := range []func() []*setting{
		c.listenSettings, c.storeSettings, c.kafkaSettings, c.webhookSettings, c.limitSettings,
		c.clusterSettings, c.snapshotSettings, c.portalSettings, c.operationSettings, c.tracingSettings, c.secretSettings,
	} {
		all = append(all, group()...)
	}
	return all
}

// listenSettings are the listen address and the data directory.
func (c *config) listenSettings() []*setting {
	return []*setting{
		{env: "PLATFORM_ADDR", flag: "addr", def: node.DefaultListenAddr, usage: "listen address",
			accepts: "host:port, such as 127.0.0.1:8080, 0.0.0.0:8080 or :8080",
			parse: func(s string) error {
				if err := checkHostPort(s, true); err != nil {
					return err
				}
				c.Addr = s
				return nil
			},
			show: func() string { return c.Addr }},
		{env: "PLATFORM_DATA_DIR", flag: "data-dir", def: node.DefaultDataDir, usage: "data directory",
			accepts: "a directory path",
			parse:   func(s string) error { c.DataDir = s; return nil },
			show:    func() string { return c.DataDir }},
	}
}

// storeSettings are the event store, the read models' store and the zone of times.
func (c *config) storeSettings() []*setting {
	return []*setting{
		{env: "PLATFORM_ESDB_URL", flag: "esdb-url", usage: "deprecated name of -eventstore-url, EventStoreDB only; empty = embedded log",
			accepts: "an EventStoreDB connection string such as esdb://127.0.0.1:2113?tls=false (or esdb+discover://...), or empty for the embedded log",
			parse: func(s string) error {
				if s == "" {
					c.esdbURL = ""
					return nil
				}
				if err := checkESDBURL(s); err != nil {
					return err
				}
				c.esdbURL = s
				return nil
			},
			show: func() string {
				if c.esdbURL != "" {
					return redactURL(c.esdbURL) + " (deprecated: set PLATFORM_EVENTSTORE_URL instead)"
				}
				if c.EventStoreURL != "" {
					return "unset"
				}
				return "embedded log"
			}},
		{env: "PLATFORM_EVENTSTORE_URL", flag: "eventstore-url", usage: "shared event store: EventStoreDB or Postgres; empty = embedded log (or PLATFORM_ESDB_URL)",
			accepts: "an EventStoreDB connection string such as esdb://127.0.0.1:2113?tls=false (or esdb+discover://...), a PostgreSQL URL such as postgres://user:password@host:5432/db?sslmode=disable, or empty for the embedded log",
			parse: func(s string) error {
				c.EventStoreURL = ""
				if s == "" {
					return nil
				}
				if err := checkEventStoreURL(s); err != nil {
					return err
				}
				c.EventStoreURL = s
				return nil
			},
			show: func() string {
				if c.esdbURL != "" {
					return "unset: PLATFORM_ESDB_URL" // both set is refused
				}
				return orText(redactURL(c.EventStoreURL), "embedded log")
			}},
		{env: "PLATFORM_POSTGRES_URL", flag: "postgres-url", usage: "Postgres URL for read models; empty = in memory",
			accepts: "a PostgreSQL URL such as postgres://user:password@host:5432/db?sslmode=disable or a key=value connection string, or empty for in-memory read models",
			parse: func(s string) error {
				if s == "" {
					c.PostgresURL = ""
					return nil
				}
				if err := checkPostgresURL(s); err != nil {
					return err
				}
				c.PostgresURL = s
				return nil
			},
			show: func() string { return orText(redactURL(c.PostgresURL), "in memory") }},
		{env: "PLATFORM_TIMEZONE", flag: "timezone", def: node.DefaultTimezone, usage: "zone of Y-m-d H:i:s times",
			accepts: "an IANA time zone name such as Asia/Shanghai or UTC",
			parse: func(s string) error {
				if _, err := time.LoadLocation(s); err != nil {
					return errors.New("unknown time zone")
				}
				c.Timezone = s
				return nil
			},
			show: func() string { return c.Timezone }},
	}
}

// kafkaSettings are the Kafka relay: brokers, topics and the relay lease.
func (c *config) kafkaSettings() []*setting {
	return []*setting{
		{env: "PLATFORM_KAFKA_BROKERS", flag: "kafka-brokers", usage: "comma-separated Kafka brokers; empty = the dispatcher reads the event store",
			accepts: "a comma-separated list of host:port brokers such as kafka-1:9092,kafka-2:9092, or empty",
			parse: func(s string) error {
				list, err := parseList(s)
				if err != nil {
					return err
				}
				for _, b := range list {
					if err := checkHostPort(b, false); err != nil {
						return fmt.Errorf("broker %q: %v", b, err)
					}
				}
				c.KafkaBrokers = list
				return nil
			},
			show: func() string {
				return orText(strings.Join(c.KafkaBrokers, ","), "none (the dispatcher follows the event store)")
			}},
		{env: "PLATFORM_KAFKA_TOPIC", flag: "kafka-topic", def: relaykafka.DefaultTopic, usage: "Kafka topic of the published analytics feed",
			accepts: "a Kafka topic name: 1 to 249 of a-z A-Z 0-9 . _ -",
			parse: func(s string) error {
				if err := checkKafkaTopic(s); err != nil {
					return err
				}
				c.KafkaTopic = s
				return nil
			},
			show: func() string { return c.KafkaTopic }},
		{env: "PLATFORM_KAFKA_INTERNAL_TOPIC", flag: "kafka-internal-topic", def: eventskafka.DefaultInternalTopic,
			usage:   "internal Kafka topic carrying every event to the webhook dispatchers (not for analytics)",
			accepts: "a Kafka topic name: 1 to 249 of a-z A-Z 0-9 . _ -",
			parse: func(s string) error {
				if err := checkKafkaTopic(s); err != nil {
					return err
				}
				c.KafkaInternalTopic = s
				return nil
			},
			show: func() string { return c.KafkaInternalTopic }},
		{env: "PLATFORM_KAFKA_RELAY", flag: "kafka-relay", def: "on", usage: "let this node compete for the relay lease (one node relays at a time); off opts it out",
			accepts: boolAccepts, isBool: true,
			parse: func(s string) error {
				on, err := parseBool(s)
				if err == nil {
					c.KafkaRelay = &on
				}
				return err
			},
			show: func() string { return onOff(c.KafkaRelay == nil || *c.KafkaRelay) }},
	}
}

// webhookSettings are the webhook sender: targets, retries, concurrency and breakers.
func (c *config) webhookSettings() []*setting {
	return []*setting{
		{env: "PLATFORM_WEBHOOK_ALLOW_LOOPBACK", flag: "webhook-allow-loopback", def: "off", usage: "allow http and loopback webhook targets, for local development",
			accepts: boolAccepts, isBool: true,
			parse: func(s string) (err error) { c.WebhookAllowLoopback, err = parseBool(s); return err },
			show:  func() string { return onOff(c.WebhookAllowLoopback) }},
		{env: "PLATFORM_WEBHOOK_RETRY_SCHEDULE", flag: "webhook-retry-schedule", usage: "comma-separated retry delays; empty = the spec's 1m,5m,30m,2h,6h",
			accepts: "a comma-separated list of positive Go durations such as 1m,5m,30m,2h,6h, or empty for the spec's schedule",
			parse:   func(s string) (err error) { c.WebhookSchedule, err = parseSchedule(s); return err },
			show: func() string {
				if c.WebhookSchedule == nil {
					return joinDurations(webhooks.DefaultSchedule) + " (the spec's)"
				}
				return joinDurations(c.WebhookSchedule)
			}},
		intSetting("PLATFORM_WEBHOOK_WORKERS", "webhook-workers", strconv.Itoa(node.DefaultWebhookWorkers), "webhook attempts in flight at once on this node", 1, 4096, &c.WebhookWorkers),
		intSetting("PLATFORM_WEBHOOK_PER_ENDPOINT", "webhook-per-endpoint", strconv.Itoa(webhooks.DefaultPerEndpoint), "webhook POSTs in flight at once to one app's endpoint", 1, 1024, &c.WebhookPerEndpoint),
		intSetting("PLATFORM_WEBHOOK_IDLE_CONNECTIONS", "webhook-idle-connections", strconv.Itoa(targets.DefaultIdleConnections), "keep-alive connections kept open to partner endpoints between deliveries, all hosts together (about 50 KB each)", 1, 1000000, &c.WebhookIdleConnections),
		intSetting("PLATFORM_WEBHOOK_BREAKER_FAILURES", "webhook-breaker-failures", strconv.Itoa(webhooks.DefaultBreakerFailures), "failed or timed-out POSTs in a row that open an endpoint's breaker", 1, 1000, &c.WebhookBreakerFailures),
		intSetting("PLATFORM_WEBHOOK_CREATE_CONCURRENCY", "webhook-create-concurrency", strconv.Itoa(webhooks.DefaultCreateConcurrency), "subjects whose deliveries are appended at once while creating deliveries", 1, 4096, &c.WebhookCreateConcurrency),
		{env: "PLATFORM_WEBHOOK_BREAKER_COOLDOWN", flag: "webhook-breaker-cooldown", def: webhooks.DefaultBreakerCooldown.String(), usage: "how long an open endpoint breaker waits before one probe (doubles per failed probe, up to 10x)",
			accepts: "a Go duration from 1s to 1h, such as 30s or 2m",
			parse: func(s string) error {
				d, err := time.ParseDuration(s)
				if err != nil || d < time.Second || d > time.Hour {
					return errors.New("not a duration from 1s to 1h")
				}
				c.WebhookBreakerCooldown = d
				return nil
			},
			show: func() string { return c.WebhookBreakerCooldown.String() }},
	}
}

// limitSettings are the partner-facing rate limits and the verify-use window.
func (c *config) limitSettings() []*setting {
	return []*setting{
		{env: "PLATFORM_RATE_LIMIT", flag: "rate-limit", def: strconv.Itoa(node.DefaultPartnerRateLimit), usage: "requests per minute per app on scheme M routes; negative = none",
			accepts: "a positive whole number of requests per minute per app, or a negative one to turn the limit off",
			parse: func(s string) error {
				n, err := strconv.Atoi(s)
				if err != nil || n == 0 {
					return errors.New("not a non-zero whole number")
				}
				c.PartnerRateLimit = n
				return nil
			},
			show: func() string {
				if c.PartnerRateLimit < 0 {
					return "off"
				}
				return strconv.Itoa(c.PartnerRateLimit) + "/min per app"
			}},
		{env: "PLATFORM_REPORT_PULL_LIMIT", flag: "report-pull-limit", def: strconv.Itoa(node.DefaultReportPullLimit), usage: "report pulls per minute per app (the spec's 60); raised for load tests",
			accepts: "a positive whole number of requests per minute per app",
			parse: func(s string) error {
				n, err := strconv.Atoi(s)
				if err != nil || n <= 0 {
					return errors.New("not a positive whole number")
				}
				c.ReportPullLimit = n
				return nil
			},
			show: func() string { return strconv.Itoa(c.ReportPullLimit) + "/min per app" }},
		{env: "PLATFORM_VERIFY_COOLDOWN", flag: "verify-cooldown", def: node.DefaultVerifyCooldown.String(), usage: "DUPLICATE_FULFILLMENT window of verify-use; 0 = none (load tests)",
			accepts: "a Go duration of 0 or more, such as 10s or 0s",
			parse: func(s string) error {
				d, err := time.ParseDuration(s)
				if err != nil || d < 0 {
					return errors.New("not a duration of 0 or more")
				}
				// The node reads 0 as its default: "none" is its negative.
				c.VerifyCooldown = cmp.Or(d, -1)
				return nil
			},
			show: func() string {
				if c.VerifyCooldown < 0 {
					return "off"
				}
				return c.VerifyCooldown.String()
			}},
	}
}

// clusterSettings are this node's name and lease among the nodes sharing a store.
func (c *config) clusterSettings() []*setting {
	return []*setting{
		{env: "PLATFORM_NODE_ID", flag: "node-id", usage: "this node's name among the nodes sharing a store; empty = hostname-pid-random",
			accepts: "1 to 128 letters, digits, dots, dashes, underscores or colons, unique per running node, or empty for hostname-pid-random",
			parse: func(s string) error {
				if s != "" && !nodeIDPattern.MatchString(s) {
					return errors.New("not a node name")
				}
				c.NodeID = s
				return nil
			},
			show: func() string { return orText(c.NodeID, "hostname-pid-random") }},
		{env: "PLATFORM_LEASE_TTL", flag: "lease-ttl", def: lease.DefaultTTL.String(), usage: "how long a family's owner may go silent before another node takes its work over",
			accepts: "a Go duration from 1s to 10m, such as 10s or 30s",
			parse: func(s string) error {
				d, err := time.ParseDuration(s)
				if err != nil || d < time.Second || d > 10*time.Minute {
					return errors.New("not a duration from 1s to 10m")
				}
				c.LeaseTTL = d
				return nil
			},
			show: func() string { return c.LeaseTTL.String() }},
	}
}

// snapshotSettings are the read models' snapshots and the erasure purge.
func (c *config) snapshotSettings() []*setting {
	return []*setting{
		intSetting("PLATFORM_SNAPSHOT_EVENTS", "snapshot-events", strconv.Itoa(node.DefaultSnapshotEvents), "embedded read models are also snapshotted once this many events were read since the last snapshot, which bounds the log's tail a start after a crash replays", 1000, 100_000_000, &c.SnapshotEvents),
		{env: "PLATFORM_ERASURE_PURGE_INTERVAL", flag: "erasure-purge-interval", def: shortDuration(node.DefaultErasurePurgeInterval),
			usage:   "with Postgres read models, how often the tables holding personal fields are rewritten (VACUUM FULL) after an erasure, so its plaintext leaves their files; it bounds how long erased plaintext stays on disk there; off = never (docs/privacy.md)",
			accepts: "a Go duration from 1m to 24h, such as 1h, or off",
			parse: func(s string) error {
				if s == "off" {
					c.ErasurePurgeInterval = -1
					return nil
				}
				d, err := time.ParseDuration(s)
				if err != nil || d < time.Minute || d > 24*time.Hour {
					return errors.New("not a duration from 1m to 24h, nor off")
				}
				c.ErasurePurgeInterval = d
				return nil
			},
			show: func() string {
				if c.ErasurePurgeInterval < 0 {
					return "off"
				}
				return c.ErasurePurgeInterval.String()
			}},
		{env: "PLATFORM_SNAPSHOT_INTERVAL", flag: "snapshot-interval", def: shortDuration(node.DefaultSnapshotInterval),
			usage:   "how often embedded read models are snapshotted to the data directory, so a start restores them and replays only the log's tail; off = every start replays the whole log",
			accepts: "a Go duration from 10s to 24h, such as 5m, or off",
			parse: func(s string) error {
				if s == "off" {
					c.SnapshotInterval = -1
					return nil
				}
				d, err := time.ParseDuration(s)
				if err != nil || d < 10*time.Second || d > 24*time.Hour {
					return errors.New("not a duration from 10s to 24h, nor off")
				}
				c.SnapshotInterval = d
				return nil
			},
			show: func() string {
				if c.SnapshotInterval < 0 {
					return "off"
				}
				return c.SnapshotInterval.String()
			}},
	}
}

// portalSettings are the developer portal: cookies, sessions, sign-in limits and mail.
func (c *config) portalSettings() []*setting {
	return []*setting{
		{env: "PLATFORM_PORTAL_INSECURE_COOKIES", flag: "portal-insecure-cookies", def: "off",
			usage:   "send the developer portal's session cookie without the Secure flag, for plain-http development on localhost only",
			accepts: boolAccepts, isBool: true,
			parse: func(s string) (err error) { c.Portal.InsecureCookies, err = parseBool(s); return err },
			show:  func() string { return onOff(c.Portal.InsecureCookies) }},
		durationSetting("PLATFORM_PORTAL_SESSION_IDLE", "portal-session-idle", shortDuration(portal.DefaultSessionIdle), "a developer portal session unused this long ends", time.Minute, 24*time.Hour, &c.Portal.SessionIdle),
		durationSetting("PLATFORM_PORTAL_SESSION_MAX", "portal-session-max", shortDuration(portal.DefaultSessionMax), "a developer portal session ends this long after sign-in", 10*time.Minute, 720*time.Hour, &c.Portal.SessionMax),
		intSetting("PLATFORM_PORTAL_LOCKOUT_FAILURES", "portal-lockout-failures", strconv.Itoa(portal.DefaultLockoutFailures), "failed portal sign-ins of one account that lock it", 1, 100, &c.Portal.LockoutFailures),
		durationSetting("PLATFORM_PORTAL_LOCKOUT_PERIOD", "portal-lockout-period", shortDuration(portal.DefaultLockoutPeriod), "how long a locked portal account stays locked (and the window its failures are counted in)", time.Minute, 24*time.Hour, &c.Portal.LockoutPeriod),
		intSetting("PLATFORM_PORTAL_ADDRESS_LIMIT", "portal-address-limit", strconv.Itoa(portal.DefaultAddressLimit), "portal sign-in, sign-up and reset attempts per minute from one client address", 1, 10000, &c.Portal.AddressLimit),
		{env: "PLATFORM_PORTAL_BASE_URL", flag: "portal-base-url", usage: "public origin of the platform for links in the portal's mail, e.g. https://open.example.com; required with PLATFORM_POSTGRES_URL or a shared event store (unset in embedded development: http:// and the listen address)",
			accepts: "an http or https URL without path, query or fragment",
			parse: func(s string) error {
				u, err := url.Parse(s)
				if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
					return errors.New("not an http(s) origin")
				}
				c.Portal.BaseURL = strings.TrimSuffix(s, "/")
				return nil
			},
			show: func() string {
				if c.portalBaseURLDefault {
					return c.Portal.BaseURL + " (unset: embedded development default, the listen address; never a request's Host)"
				}
				return c.Portal.BaseURL
			}},
		{env: "PLATFORM_SMTP_URL", secret: true, usage: "SMTP server for the portal's mail (STARTTLS when offered); unset: mail waits in the operator outbox",
			accepts: "smtp://[user:password@]host[:port], optionally ?tls=required",
			parse: func(s string) error {
				if _, err := smtp.Parse(s); err != nil {
					return err
				}
				c.Portal.SMTPURL = s
				return nil
			},
			show: func() string { return orText(redactURL(c.Portal.SMTPURL), "unset: outbox only (/portal/ops/outbox)") }},
		{env: "PLATFORM_MAIL_FROM", flag: "mail-from", def: node.DefaultMailFrom, usage: "sender address of the portal's mail",
			accepts: "an email address",
			parse: func(s string) error {
				a, err := mail.ParseAddress(s)
				if err != nil || a.Name != "" || a.Address != s {
					return errors.New("not a plain email address")
				}
				c.Portal.MailFrom = s
				return nil
			},
			show: func() string { return c.Portal.MailFrom }},
	}
}

// operationSettings are the directory's staleness and the logs.
func (c *config) operationSettings() []*setting {
	return []*setting{
		{env: "PLATFORM_DIRECTORY_STALENESS", flag: "directory-staleness", def: "0s",
			usage:   "on a shared event store, how old the state may be on which an app, token or operator found in this node's directory is accepted; 0 = changes made on any node apply at once",
			accepts: "a non-negative Go duration such as 0s, 250ms or 1s",
			parse: func(s string) error {
				d, err := time.ParseDuration(s)
				if err != nil || d < 0 {
					return errors.New("not a non-negative duration")
				}
				c.DirectoryStaleness = d
				return nil
			},
			show: func() string {
				if c.DirectoryStaleness == 0 {
					return "0s (changes made on any node apply at once)"
				}
				return c.DirectoryStaleness.String()
			}},
		{env: "PLATFORM_LOG_FORMAT", flag: "log-format", def: "text", usage: "log format",
			accepts: "text or json",
			parse: func(s string) error {
				switch f := strings.ToLower(s); f {
				case "text", "json":
					c.LogFormat = f
					return nil
				}
				return errors.New("unknown log format")
			},
			show: func() string { return c.LogFormat }},
		{env: "PLATFORM_ACCESS_LOG_FLUSH", flag: "access-log-flush", def: "100ms",
			usage:   "how long access lines (one per request) may wait in a buffer before they are written; a kill -9 loses at most this much of them (other log lines are written at once); 0 = each line written at once",
			accepts: "a non-negative Go duration such as 0s, 100ms or 1s",
			parse: func(s string) error {
				d, err := time.ParseDuration(s)
				if err != nil || d < 0 {
					return errors.New("not a non-negative duration")
				}
				c.AccessLogFlush = d
				return nil
			},
			show: func() string {
				if c.AccessLogFlush == 0 {
					return "0s (each access line written at once)"
				}
				return c.AccessLogFlush.String()
			}},
		{env: "PLATFORM_DEBUG_ADDR", flag: "debug-addr", def: "",
			usage:   "loopback address of a second listener serving Go's runtime profiles (/debug/pprof/: CPU, heap, goroutines, blocking, locks, execution trace), for an operator on the machine or through kubectl port-forward; unset = no such listener",
			accepts: "a loopback host:port such as 127.0.0.1:6060, [::1]:6060 or localhost:6060, or unset",
			parse: func(s string) error {
				if s == "" {
					c.DebugAddr = ""
					return nil
				}
				if err := checkHostPort(s, false); err != nil {
					return err
				}
				if !isLoopbackHost(s) {
					return errors.New("not a loopback address: the profiles are served without authentication")
				}
				c.DebugAddr = s
				return nil
			},
			show: func() string { return orText(c.DebugAddr, "unset (no profile listener)") }},
	}
}

// isLoopbackHost says whether host:port names this machine's loopback
// interface only.
func isLoopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// secretSettings are the tokens and keys, set by the environment only and never shown.
func (c *config) secretSettings() []*setting {
	return []*setting{
		{env: "PLATFORM_ADMIN_TOKEN", secret: true,
			accepts: "any non-empty token, or unset to keep one in <data dir>/admin.token",
			parse:   func(s string) error { c.AdminToken = s; return nil },
			show:    func() string { return secretShown(c.AdminToken, c.DataDir, "admin.token") }},
		{env: "PLATFORM_MASTER_KEY", secret: true,
			accepts: "32 bytes as 64 hex characters or base64 (e.g. from openssl rand -hex 32), or unset to keep one in <data dir>/master.key",
			parse: func(s string) error {
				if _, err := secrets.ParseKey(s); err != nil && s != "" {
					return errors.New("not a 32-byte key")
				}
				c.MasterKey = s
				return nil
			},
			show: func() string { return secretShown(c.MasterKey, c.DataDir, "master.key") }},
		{env: "PLATFORM_MASTER_KEY_PREVIOUS", secret: true,
			accepts: "comma-separated older master keys (each 32 bytes as hex or base64), kept for opening after a rotation, or unset to read <data dir>/master.key.previous if it exists",
			parse: func(s string) error {
				keys, err := secrets.ParseKeyList(s)
				if err != nil {
					return errors.New("not a comma-separated list of 32-byte keys")
				}
				if len(keys) == 0 {
					s = ""
				}
				c.MasterKeyPrevious = s
				return nil
			},
			show: func() string {
				if c.MasterKeyPrevious != "" {
					return "set (redacted)"
				}
				return "unset: " + strings.TrimSuffix(c.DataDir, "/") + "/master.key.previous if it exists"
			}},
		{env: "PLATFORM_FEED_PSEUDONYM_KEY", secret: true,
			accepts: "32 bytes as 64 hex characters or base64 (e.g. from openssl rand -hex 32), or unset to derive it from the master key",
			parse: func(s string) error {
				if _, err := secrets.ParseKey(s); err != nil && s != "" {
					return errors.New("not a 32-byte key")
				}
				c.FeedPseudonymKey = s
				return nil
			},
			show: func() string {
				if c.FeedPseudonymKey != "" {
					return "set (redacted)"
				}
				return "unset: derived from the master key"
			}},
		{env: "PLATFORM_INTERNAL_TOKEN", secret: true,
			accepts: "any non-empty token, or unset to keep one in <data dir>/internal.token",
			parse:   func(s string) error { c.InternalToken = s; return nil },
			show:    func() string { return secretShown(c.InternalToken, c.DataDir, "internal.token") }},
	}
}

// applyDefaults parses every default like a value, so a default that its
// own setting refuses is a programming error found at start-up.
func (c *config) applyDefaults() {
	for _, s := range c.settings {
		if s.def != "" {
			if err := s.parse(s.def); err != nil {
				panic(fmt.Sprintf("default of %s: %v", s.env, err))
			}
		}
	}
}

// readEnv parses the variables that are set; an empty variable counts as
// unset, as it always has.
func (c *config) readEnv(getenv func(string) string) error {
	for _, s := range c.settings {
		v := getenv(s.env)
		if v == "" {
			continue
		}
		if err := s.parse(v); err != nil {
			return fmt.Errorf("%s=%s is invalid (%v); accepted: %s", s.env, s.quoted(v), err, s.accepts)
		}
	}
	return nil
}

// readFlags parses args, each flag through its setting's parser; -help
// prints the usage text to usageOut and returns errHelp.
func (c *config) readFlags(args []string, usageOut io.Writer) error {
	fs := flag.NewFlagSet("platform", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned, not printed with the usage
	var flagErr error
	for _, s := range c.settings {
		if s.flag == "" {
			continue
		}
		fs.Var(flagValue{s: s, err: &flagErr}, s.flag, fmt.Sprintf("%s (%s; %s)", s.usage, s.env, s.accepts))
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(usageOut)
			fmt.Fprintln(usageOut, "Usage of platform (each flag overrides its PLATFORM_* variable):")
			fs.PrintDefaults()
			return errHelp
		}
		if flagErr != nil {
			return flagErr
		}
		return fmt.Errorf("%v (see -help)", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: the platform takes only flags (see -help)", fs.Arg(0))
	}
	return nil
}

// checkEventStore refuses both names of the shared event store at once,
// and gives the node the one that is set.
func (c *config) checkEventStore() error {
	if c.EventStoreURL != "" && c.esdbURL != "" {
		return errors.New("PLATFORM_EVENTSTORE_URL (-eventstore-url) and PLATFORM_ESDB_URL (-esdb-url) are both set: " +
			"set only PLATFORM_EVENTSTORE_URL (PLATFORM_ESDB_URL is its older, EventStoreDB-only name)")
	}
	c.EventStoreURL = cmp.Or(c.EventStoreURL, c.esdbURL)
	return nil
}

// checkPortalBaseURL requires the portal's public origin of nodes sharing
// stores and gives embedded development the listen address.
func (c *config) checkPortalBaseURL() error {
	if c.Portal.BaseURL != "" {
		return nil
	}
	// Mail links (password reset, sign-up) are built from this origin
	// only, never from a request's Host header. Nodes sharing stores
	// serve the public: they must say where they are; embedded
	// development links to the address it listens on.
	if c.PostgresURL != "" || c.EventStoreURL != "" {
		return errors.New("PLATFORM_PORTAL_BASE_URL (-portal-base-url) is required when PLATFORM_POSTGRES_URL or a shared event store is set: " +
			"it is the public origin of links in the developer portal's mail, e.g. https://open.example.com")
	}
	c.Portal.BaseURL, c.portalBaseURLDefault = devBaseURL(c.Addr), true
	return nil
}

// checkEventStoreURL accepts an EventStoreDB or a Postgres URL.
func checkEventStoreURL(s string) error {
	scheme, _, _ := strings.Cut(s, "://")
	switch strings.ToLower(scheme) {
	case "esdb", "esdb+discover":
		return checkESDBURL(s)
	case "postgres", "postgresql":
		return checkPostgresURL(s)
	}
	return errors.New("neither an esdb:// nor a postgres:// URL")
}

// checkESDBURL accepts an EventStoreDB connection string; its parser's
// error is returned without the string's password.
func checkESDBURL(s string) error {
	if _, err := esdb.ParseConnectionString(s); err != nil {
		return errors.New(scrubURL(err.Error(), s))
	}
	return nil
}

// checkPostgresURL accepts a PostgreSQL URL or key=value string; its
// parser's error is returned without the string's password.
func checkPostgresURL(s string) error {
	if _, err := pgxpool.ParseConfig(s); err != nil {
		return errors.New(scrubURL(err.Error(), s))
	}
	return nil
}

// devBaseURL is the origin of mail links of an embedded development
// platform listening on addr: http://127.0.0.1:port when it listens on a
// loopback or every address, else http://host:port.
func devBaseURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return node.DefaultPortalBaseURL
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && (ip.IsUnspecified() || ip.IsLoopback())) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// flagValue feeds a flag through its setting's parser, so that a flag is
// exactly as strict as its variable.
type flagValue struct {
	s   *setting
	err *error
}

func (v flagValue) String() string {
	if v.s == nil {
		return ""
	}
	return v.s.def
}

func (v flagValue) Set(x string) error {
	if x == "" && v.s.def != "" {
		x = v.s.def // an empty value means the default, as for a variable
	}
	if err := v.s.parse(x); err != nil {
		*v.err = fmt.Errorf("-%s %s is invalid (%v); accepted: %s", v.s.flag, v.s.quoted(x), err, v.s.accepts)
		return errors.New(v.s.accepts)
	}
	return nil
}

// IsBoolFlag lets a boolean flag stand alone (-kafka-relay means on).
func (v flagValue) IsBoolFlag() bool { return v.s != nil && v.s.isBool }

// quoted renders a rejected value for an error message: a secret never,
// a URL without its password.
func (s *setting) quoted(v string) string {
	if s.secret {
		return "(value not shown)"
	}
	return strconv.Quote(redactURL(v))
}

// log writes the effective configuration as one line; secrets appear only
// as set or unset, and passwords in URLs are redacted.
func (c *config) log(log *slog.Logger) {
	attrs := make([]any, 0, 2*len(c.settings))
	for _, s := range c.settings {
		attrs = append(attrs, slog.String(s.env, s.show()))
	}
	log.Info("effective configuration", attrs...)
}

const boolAccepts = "1/0, true/false, yes/no, on/off (any case)"

// parseBool accepts the usual spellings of a boolean.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off":
		return false, nil
	}
	return false, errors.New("not a boolean")
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// parseList splits a comma-separated list; surrounding spaces are trimmed,
// an empty item (a,,b or a trailing comma) is refused.
func parseList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("item %d is empty", i+1)
		}
		out = append(out, part)
	}
	return out, nil
}

// parseSchedule reads retry delays; empty keeps the spec's schedule.
func parseSchedule(s string) ([]time.Duration, error) {
	list, err := parseList(s)
	if err != nil {
		return nil, err
	}
	var out []time.Duration
	for _, part := range list {
		d, err := time.ParseDuration(part)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("retry delay %q is not a positive duration", part)
		}
		out = append(out, d)
	}
	return out, nil
}

func joinDurations(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return strings.Join(parts, ",")
}

var kafkaTopic = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// checkKafkaTopic accepts a name Kafka accepts for a topic.
func checkKafkaTopic(s string) error {
	if !kafkaTopic.MatchString(s) || s == "." || s == ".." {
		return errors.New("not a Kafka topic name")
	}
	return nil
}

// checkHostPort accepts host:port; the host may be empty only for a listen
// address (":8080" listens on every interface).
func checkHostPort(s string, allowEmptyHost bool) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("not host:port")
	}
	if host == "" && !allowEmptyHost {
		return errors.New("no host")
	}
	if strings.ContainsAny(host, "/ ") {
		return errors.New("not a host name or address")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return errors.New("port is not a number from 0 to 65535")
	}
	return nil
}

func orText(s, empty string) string {
	if s == "" {
		return empty
	}
	return s
}

func secretShown(v, dataDir, file string) string {
	if v != "" {
		return "set (redacted)"
	}
	return "unset: " + strings.TrimSuffix(dataDir, "/") + "/" + file
}

const redacted = "REDACTED"

var kvPassword = regexp.MustCompile(`(?i)((?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s]*)`)

// redactURL hides passwords in a connection string: the userinfo password
// of a URL, password and sslpassword query values, and password=... pairs
// of a key=value string.
func redactURL(s string) string {
	if s == "" {
		return s
	}
	if u, err := url.Parse(s); err == nil && u.Scheme != "" && u.Host != "" {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), redacted)
		}
		q := u.Query()
		changed := false
		for k := range q {
			if lk := strings.ToLower(k); lk == "password" || lk == "sslpassword" {
				q.Set(k, redacted)
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
		return u.String()
	}
	// Not a URL that parses: mask anything between "://user:" and "@", and
	// key=value passwords.
	if i := strings.Index(s, "://"); i >= 0 {
		rest := s[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if colon := strings.Index(rest[:at], ":"); colon >= 0 {
				s = s[:i+3] + rest[:colon+1] + redacted + rest[at:]
			}
		}
	}
	return kvPassword.ReplaceAllString(s, "${1}"+redacted)
}

// scrubURL removes a connection string, and any password in it, from a
// parser's error message, which often quotes the string it could not parse.
func scrubURL(msg, raw string) string {
	msg = strings.ReplaceAll(msg, raw, redactURL(raw))
	for _, pw := range passwords(raw) {
		msg = strings.ReplaceAll(msg, pw, redacted)
	}
	return msg
}

// passwords lists the password substrings of a connection string, raw and
// decoded, so that no spelling of one survives scrubURL.
func passwords(raw string) []string {
	var out []string
	add := func(p string) {
		if p != "" && p != redacted {
			out = append(out, p)
			if d, err := url.QueryUnescape(p); err == nil && d != p {
				out = append(out, d)
			}
		}
	}
	if i := strings.Index(raw, "://"); i >= 0 {
		rest := raw[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if colon := strings.Index(rest[:at], ":"); colon >= 0 {
				add(rest[colon+1 : at])
			}
		}
		if u, err := url.Parse(raw); err == nil {
			for k, vs := range u.Query() {
				if lk := strings.ToLower(k); lk == "password" || lk == "sslpassword" {
					for _, v := range vs {
						add(v)
					}
				}
			}
		}
	}
	for _, m := range kvPassword.FindAllStringSubmatch(raw, -1) {
		add(strings.Trim(m[2], "'"))
	}
	return out
}

// shortDuration writes d as an operator would: 5m, 1h, 12h rather than
// time.Duration's 5m0s, 1h0m0s, 12h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// durationSetting is a Go duration setting from lo to hi into dst.
func durationSetting(env, flagName, def, usage string, lo, hi time.Duration, dst *time.Duration) *setting {
	return &setting{env: env, flag: flagName, def: def, usage: usage,
		accepts: fmt.Sprintf("a Go duration from %s to %s", lo, hi),
		parse: func(s string) error {
			d, err := time.ParseDuration(s)
			if err != nil || d < lo || d > hi {
				return fmt.Errorf("not a duration from %s to %s", lo, hi)
			}
			*dst = d
			return nil
		},
		show: func() string { return dst.String() }}
}

// intSetting is a whole-number setting from lo to hi into dst.
func intSetting(env, flagName, def, usage string, lo, hi int, dst *int) *setting {
	return &setting{env: env, flag: flagName, def: def, usage: usage,
		accepts: fmt.Sprintf("a whole number from %d to %d", lo, hi),
		parse: func(s string) error {
			n, err := strconv.Atoi(s)
			if err != nil || n < lo || n > hi {
				return fmt.Errorf("not a whole number from %d to %d", lo, hi)
			}
			*dst = n
			return nil
		},
		show: func() string { return strconv.Itoa(*dst) }}
}
