package node

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
	ratelimitpg "github.com/healthtech/partner-open-platform/internal/ratelimit/postgres"
	"github.com/healthtech/partner-open-platform/internal/secrets"
	"github.com/healthtech/partner-open-platform/portal"
	"github.com/healthtech/partner-open-platform/portal/mail"
	"github.com/healthtech/partner-open-platform/portal/mail/smtp"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/directory"
)

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

// DefaultPortalBaseURL is the origin of mail links of a node given none:
// the platform's default listen address (cmd/platform passes the origin
// of the address it listens on, or requires PLATFORM_PORTAL_BASE_URL).
const DefaultPortalBaseURL = "http://127.0.0.1:8080"

// DefaultMailFrom is the sender of the portal's mail given no MailFrom.
const DefaultMailFrom = "portal@localhost"

// masterDerived derives a purpose-bound key from the master key, which
// every node sharing the stores has, so they all derive the same key.
func masterDerived(cfg Config, purpose string) ([]byte, error) {
	var master []byte
	var err error
	if cfg.MasterKey != "" {
		master, err = secrets.ParseKey(cfg.MasterKey)
	} else {
		master, _, err = secrets.LoadOrCreateKeyFile(filepath.Join(cfg.DataDir, "master.key"))
	}
	if err != nil {
		return nil, fmt.Errorf("%s from the master key: %w", purpose, err)
	}
	m := hmac.New(sha256.New, master)
	m.Write([]byte("partner-open-platform " + purpose))
	return m.Sum(nil), nil
}

// openPortal builds the developer accounts, the mail outbox and the
// portal's server; the directory's runner joins n.Runners.
func (n *Node) openPortal(ctx context.Context, cfg Config, ids *commands.Allocator, sealer *secrets.Sealer, admin auth.Admin,
	apps *commands.Apps, benefits *commands.Benefits, marks *projections.Watermarks) (*projections.Journal, error) {
	pc := cfg.Portal
	sessionKey, err := masterDerived(cfg, "portal session key v1")
	if err != nil {
		return nil, err
	}
	emailKey, err := masterDerived(cfg, "developer email claim v1")
	if err != nil {
		return nil, err
	}
	n.Developers = directory.NewDevelopers()
	journal := projections.NewJournal(n.Developers, n.Events, n.Registry)
	runner := subscribe.NewRunner(n.Events, n.Registry, journal, n.log, n.Metrics.Projected)
	n.Runners = append(n.Runners, runner)

	lockout := max(pc.LockoutPeriod, 0)
	if lockout == 0 {
		lockout = portal.DefaultLockoutPeriod
	}
	failures := pc.LockoutFailures
	if failures <= 0 {
		failures = portal.DefaultLockoutFailures
	}
	perAddress := pc.AddressLimit
	if perAddress <= 0 {
		perAddress = portal.DefaultAddressLimit
	}
	var limits portal.Limits
	if n.pool != nil {
		store := ratelimitpg.New(n.pool)
		limits = portal.Limits{
			Address: store.Bucket("portal_address", perAddress, time.Minute),
			Account: store.Bucket("portal_account", failures, lockout),
			Lock:    store.Bucket("portal_lock", 1, lockout),
		}
	} else {
		limits = portal.Limits{Address: ratelimit.New(perAddress, time.Minute), Account: ratelimit.New(failures, lockout), Lock: ratelimit.New(1, lockout)}
	}
	developers := commands.NewDevelopers(n.Events, n.Registry, ids, sealer, emailKey, pc.Passwords, cfg.Now)
	mailCmds := commands.NewMail(n.Events, n.Registry, ids)
	from := pc.MailFrom
	if from == "" {
		from = DefaultMailFrom
	}
	base := pc.BaseURL
	if base == "" {
		base = DefaultPortalBaseURL
	}
	srv, err := portal.New(portal.Config{
		SessionKey: sessionKey, InsecureCookies: pc.InsecureCookies, SessionIdle: pc.SessionIdle, SessionMax: pc.SessionMax,
		LockoutFailures: failures, LockoutPeriod: lockout, AddressLimit: perAddress, BaseURL: base, SMTP: pc.SMTPURL != "",
	}, portal.Deps{
		Developers: developers, Mail: mailCmds, Apps: apps, Benefits: benefits, AppDirectory: n.Apps,
		Directory: n.Developers, DirectoryReady: runner, Operators: n.Operators, Admin: admin,
		OperatorSessions: commands.NewOperatorSessions(n.Events, n.Registry),
		ReadModel:        n.ReadModel, Events: n.Events, Watermarks: marks, Dispatcher: n.Dispatcher,
		Limits: limits, Now: cfg.Now, Log: n.log.With("component", "portal"),
	})
	if err != nil {
		return nil, err
	}
	n.Portal = srv
	if r := n.runner("apps"); r != nil {
		srv.AppsReady = r
	}
	if r := n.ReadModelRunners[projections.ReadModelBenefits]; r != nil {
		srv.BenefitsReady = r
	}
	n.log.Info("portal mail links (password reset, sign-up) point at the configured origin, never at a request's Host", "base_url", base)
	if pc.InsecureCookies {
		n.log.Warn("PLATFORM_PORTAL_INSECURE_COOKIES is on: portal session cookies are sent over plain http; development only")
	}
	if pc.SMTPURL != "" {
		mailer, err := smtp.Parse(pc.SMTPURL)
		if err != nil {
			return nil, fmt.Errorf("PLATFORM_SMTP_URL: %w", err)
		}
		n.mailSender = &mail.Sender{Mailer: mailer, From: from, Outbox: n.Developers, Recorder: mailCmds,
			Retries: pc.MailRetries, Poll: pc.MailPoll, Now: cfg.Now, Log: n.log.With("component", "mail")}
		n.adapter("mail", "SMTP "+mailer.Addr)
	} else {
		n.adapter("mail", "outbox only (no PLATFORM_SMTP_URL): operators read it at /portal/ops/outbox")
	}
	return journal, nil
}

// runner is the node's runner of the named projection (nil if none).
func (n *Node) runner(name string) *subscribe.Runner {
	for _, r := range n.Runners {
		if r.Name() == name {
			return r
		}
	}
	return nil
}
