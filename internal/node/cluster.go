package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/nonces"
	noncebolt "github.com/healthtech/partner-open-platform/internal/nonces/bolt"
	noncefile "github.com/healthtech/partner-open-platform/internal/nonces/filelog"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
	ratelimitpg "github.com/healthtech/partner-open-platform/internal/ratelimit/postgres"
	"github.com/healthtech/partner-open-platform/queryapi"
)

// What several nodes sharing one event store and one Postgres must share
// beyond the log: the replay guard, the rate limits and fresh directories.
// An embedded node keeps the first two to itself (nonces in a file in its
// data directory, so they survive a restart) and needs no freshness checks.

// sharedEventStore tells whether other nodes may append to this node's
// event store (Postgres or EventStoreDB rather than the embedded log).
func sharedEventStore(cfg Config) bool { return cfg.EventStoreURL != "" }

// follower builds the freshness rule of one directory (see follower): on a
// shared event store every lookup decides on a state no older than
// cfg.DirectoryStaleness; on the embedded log only misses wait.
func (n *Node) follower(cfg Config, run *subscribe.Runner) *follower {
	maxAge := time.Duration(-1)
	if sharedEventStore(cfg) {
		maxAge = max(cfg.DirectoryStaleness, 0)
	}
	return &follower{store: n.head, runner: run, maxAge: maxAge, log: n.log}
}

// authSet is how requests are authenticated: the app directory as of the
// log's head, the replay guard, the rate limits and the three schemes.
type authSet struct {
	apps      appDirectory
	nonces    nonces.Store
	pullLimit queryapi.RateLimiter
	schemeM   auth.SchemeM
	schemeH   auth.SchemeH
	admin     auth.Admin
	closers   []func() error
}

// buildAuth opens the replay guard and the rate limits (shared through
// Postgres when configured) and makes the authentication schemes.
func (n *Node) buildAuth(ctx context.Context, cfg Config, p projectionSet) (authSet, error) {
	a := authSet{apps: appDirectory{p.apps, n.follower(cfg, p.appsRunner)}}
	var err error
	if a.nonces, a.closers, err = n.openNonces(cfg); err != nil {
		return a, err
	}
	partnerLimit, pullLimit, err := n.openRateLimits(ctx, cfg)
	if err != nil {
		return a, err
	}
	a.pullLimit = pullLimit
	a.schemeM = auth.SchemeM{Apps: a.apps, Now: cfg.Now, Bindings: a.nonces, Limiter: partnerLimit}
	a.schemeH = auth.SchemeH{Apps: a.apps, Nonces: a.nonces, Now: cfg.Now}
	a.admin = auth.Admin{Token: n.AdminToken, Operators: operatorDirectory{p.operators, n.follower(cfg, p.operatorsRunner)}}
	return a, nil
}

// openNonces picks the replay guard: the Postgres read-model store (shared
// by every node) or, embedded, an append-only file in the data directory
// (entries of the bbolt file of earlier releases are carried over once).
func (n *Node) openNonces(cfg Config) (nonces.Store, []func() error, error) {
	if cfg.PostgresURL != "" {
		n.adapter("replay guard", "Postgres (shared by every node)")
		return n.ReadModel, nil, nil
	}
	path := filepath.Join(cfg.DataDir, "nonces.log")
	s, err := noncefile.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("replay guard: %w", err)
	}
	if err := importBoltNonces(filepath.Join(cfg.DataDir, "nonces.db"), s); err != nil {
		s.Close()
		return nil, nil, fmt.Errorf("replay guard: %w", err)
	}
	n.adapter("replay guard", "file "+path)
	if sharedEventStore(cfg) {
		n.log.Warn("nonces and rate limits are kept per node: set PLATFORM_POSTGRES_URL so that every node sharing the event store shares them")
	}
	return s, []func() error{s.Close}, nil
}

// importBoltNonces moves the entries of an earlier release's bbolt nonce
// file into s, then removes that file, so an upgrade inside the timestamp
// window refuses what the old file refused. A crash before the removal
// imports again at the next start (Restore keeps what is held).
func importBoltNonces(old string, s *noncefile.Nonces) error {
	if _, err := os.Stat(old); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	b, err := noncebolt.Open(old)
	if err != nil {
		return fmt.Errorf("import %s: %w", old, err)
	}
	err = b.Each(s.Restore)
	if err = errors.Join(err, b.Close()); err != nil {
		return fmt.Errorf("import %s: %w", old, err)
	}
	if err := s.Sync(); err != nil {
		return fmt.Errorf("import %s: %w", old, err)
	}
	return os.Remove(old)
}

// adapter records and logs the adapter serving a port.
func (n *Node) adapter(port, what string) {
	n.Adapters[port] = what
	n.log.Info("adapter", "port", port, "adapter", what)
}

// limitLease is how many seconds' worth of a limit's rate one lease
// holds: at the scheme M default of 6000 per minute, 10 tokens (one round
// trip per 10 requests at full rate).
const limitLease = 0.1

// limitLeaseTTL is how long a node may hand out a lease's tokens: the
// limit's period. The bound on what a key gets in a window does not depend
// on it (every token is taken from the shared bucket first); a TTL shorter
// than the time between an app's calls would make each of its calls renew
// the lease, a round trip per call for the many apps that call every few
// seconds.
const limitLeaseTTL = time.Minute

// leaseBatch is how many tokens a lease of a limit per minute takes. Below
// two (limits under 1,200 per minute, such as the report pull's default
// 60) a lease is one token: every decision is exact, one take per request,
// carried in the request's own statement.
func leaseBatch(perMinute int) int {
	if b := int(float64(perMinute) / 60 * limitLease); b >= 2 {
		return b
	}
	return 1
}

// openRateLimits picks the scheme M limiter (nil: no limit) and the report
// pull's: on Postgres, leases of buckets there shared by every node (a
// snapshot's or a pull's renewal rides its own statement); in process
// otherwise.
func (n *Node) openRateLimits(ctx context.Context, cfg Config) (auth.Limiter, queryapi.RateLimiter, error) {
	if cfg.PostgresURL == "" {
		n.adapter("rate limits", "in process")
		var partner auth.Limiter
		if cfg.PartnerRateLimit > 0 {
			partner = ratelimit.New(cfg.PartnerRateLimit, time.Minute)
		}
		return partner, ratelimit.New(cfg.ReportPullLimit, time.Minute), nil
	}
	store := ratelimitpg.New(n.pool)
	what := "Postgres (shared by every node)"
	leased := func(name, label string, perMinute int) *ratelimit.Leased {
		batch := leaseBatch(perMinute)
		if batch > 1 {
			what += ", " + label + " in leases of " + strconv.Itoa(batch) + " tokens"
		}
		return ratelimit.NewLeased(store.Bucket(name, perMinute, time.Minute), perMinute, time.Minute, batch, limitLeaseTTL)
	}
	pull := leased("report_pull", "report pulls", cfg.ReportPullLimit)
	if cfg.PartnerRateLimit <= 0 {
		n.adapter("rate limits", what)
		return nil, pull, nil
	}
	partner := leased("scheme_m", "scheme M", cfg.PartnerRateLimit)
	n.adapter("rate limits", what)
	return partner, pull, nil
}

// checkOperatorToken makes the nodes sharing a Postgres agree on the
// operator token: the first node records its token's SHA-256; a node whose
// token differs and was made up at this start (PLATFORM_ADMIN_TOKEN unset,
// no admin.token in its data directory) refuses to start, since nobody
// else could know that token and admin calls would fail on this node only.
// A differing token that was given on purpose (PLATFORM_ADMIN_TOKEN or an
// existing file) is taken as a rotation: it is recorded and the other
// nodes' tokens are reported stale in the log until they restart with it.
func (n *Node) checkOperatorToken(ctx context.Context, cfg Config, madeUp bool) error {
	if cfg.PostgresURL == "" {
		if sharedEventStore(cfg) && cfg.AdminToken == "" {
			n.log.Warn("PLATFORM_ADMIN_TOKEN is unset: this node's operator token is in its data directory; every node sharing the event store needs the same token")
		}
		return nil
	}
	conn, err := pgx.Connect(ctx, cfg.PostgresURL)
	if err != nil {
		return fmt.Errorf("operator token check: %w", err)
	}
	defer conn.Close(context.Background())
	mine := domain.HashToken(n.AdminToken)
	var recorded string
	err = conn.QueryRow(ctx, `
INSERT INTO cluster_settings (name, value) VALUES ('operator_token', $1)
ON CONFLICT (name) DO UPDATE SET value = cluster_settings.value
RETURNING value`, mine).Scan(&recorded)
	if err != nil {
		return fmt.Errorf("operator token check: %w", err)
	}
	if recorded == mine {
		return nil
	}
	if madeUp {
		// The file is this start's own: removed, so the next start makes
		// no new token up again, nor mistakes this one for a rotation.
		_ = os.Remove(filepath.Join(cfg.DataDir, "admin.token"))
		return fmt.Errorf("operator token: PLATFORM_ADMIN_TOKEN is unset and this node made up a new token in %s, "+
			"but the other nodes sharing this database use another one; set PLATFORM_ADMIN_TOKEN to the operator token of the other nodes "+
			"(or copy their admin.token into this node's data directory)", filepath.Join(cfg.DataDir, "admin.token"))
	}
	if _, err := conn.Exec(ctx, `UPDATE cluster_settings SET value = $1, recorded_at = now() WHERE name = 'operator_token'`, mine); err != nil {
		return fmt.Errorf("operator token check: %w", err)
	}
	n.log.Warn("operator token differs from the one the other nodes sharing this database recorded; taken as a rotation: "+
		"restart every other node with this token, until then admin calls with the old token work on them and not here", "source", tokenSource(cfg))
	return nil
}

func tokenSource(cfg Config) string {
	if cfg.AdminToken != "" {
		return "PLATFORM_ADMIN_TOKEN"
	}
	return filepath.Join(cfg.DataDir, "admin.token")
}

// tokenMadeUp tells whether this start will make up a new operator token.
func tokenMadeUp(cfg Config) bool {
	if cfg.AdminToken != "" {
		return false
	}
	b, err := os.ReadFile(filepath.Join(cfg.DataDir, "admin.token"))
	return err != nil || strings.TrimSpace(string(b)) == ""
}
