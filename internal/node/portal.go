package node

import (
	"fmt"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/ratelimit"
	ratelimitpg "github.com/healthtech/partner-open-platform/internal/ratelimit/postgres"
	"github.com/healthtech/partner-open-platform/portal"
	"github.com/healthtech/partner-open-platform/portal/mail"
	"github.com/healthtech/partner-open-platform/portal/mail/smtp"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/directory"
	"github.com/healthtech/partner-open-platform/relay"
)

// portalSet is the developer portal: its server, the directory of
// developer accounts (and the mail outbox) with its journal and runner, and
// the mail sender when SMTP is configured.
type portalSet struct {
	server     *portal.Server
	developers *directory.Developers
	journal    *projections.Journal
	runner     *subscribe.Runner
	mailSender *mail.Sender // nil: mail waits in the operators' outbox
	// accounts are the developer-account commands the portal and the
	// admin API's review route share.
	accounts *commands.Developers
	// decisionMails mails every review decision from its event, whichever
	// edge took it; decisionRunner follows the log for it.
	decisionMails  *portal.DecisionMails
	decisionRunner *subscribe.Runner
}

// decisionMailsCheckpointFile keeps, in the data directory, the log
// position up to which an embedded node has mailed every review decision.
const decisionMailsCheckpointFile = "decision-mails-checkpoint.json"

// buildPortal builds the developer accounts, the mail outbox and the
// portal's server.
func (n *Node) buildPortal(cfg Config, c commandSet, admin auth.Admin, p projectionSet) (portalSet, error) {
	pc := cfg.Portal
	sessionKey, err := masterDerived(cfg, "portal session key v1")
	if err != nil {
		return portalSet{}, err
	}
	emailKey, err := masterDerived(cfg, "developer email claim v1")
	if err != nil {
		return portalSet{}, err
	}
	ps := portalSet{developers: directory.NewDevelopers()}
	ps.journal = projections.NewJournal(ps.developers, n.Events, n.Registry)
	ps.runner = subscribe.NewRunner(n.Events, n.Registry, ps.journal, n.log, n.Metrics.Projected)
	n.eagerCheckpoints(ps.runner)
	mailCmds := commands.NewMail(n.Events, n.Registry, c.ids)
	ps.accounts = commands.NewDevelopers(n.Events, n.Registry, c.ids, c.sealer, emailKey, pc.Passwords, cfg.Now)
	ps.server, err = portal.New(portal.Config{
		SessionKey: sessionKey, InsecureCookies: pc.InsecureCookies, SessionIdle: pc.SessionIdle, SessionMax: pc.SessionMax,
		LockoutFailures: pc.LockoutFailures, LockoutPeriod: pc.LockoutPeriod, AddressLimit: pc.AddressLimit, BaseURL: pc.BaseURL, SMTP: pc.SMTPURL != "",
		Location: n.Location,
	}, portal.Deps{
		Developers: ps.accounts,
		Mail:       mailCmds, Apps: c.apps, Benefits: c.benefits, AppDirectory: p.apps,
		Directory: ps.developers, DirectoryReady: ps.runner, Operators: p.operators, Admin: admin,
		OperatorSessions: commands.NewOperatorSessions(n.Events, n.Registry),
		ReadModel:        n.ReadModel, Events: n.Events, Watermarks: n.Watermarks, Dispatcher: n.Dispatcher, Replays: c.replays,
		Limits: n.portalLimits(pc), Now: cfg.Now, Log: n.log.With("component", "portal"),
	})
	if err != nil {
		return portalSet{}, err
	}
	ps.server.AppsReady = p.appsRunner
	ps.decisionMails = ps.server.DecisionMails(n.Registry)
	if cfg.EventStoreURL == "" && cfg.DataDir != "" {
		// The embedded log has no index by type: without a saved
		// checkpoint every start read the whole log for the few decisions.
		ps.decisionMails.Saved = relay.NewFileCheckpointsNamed(cfg.DataDir, decisionMailsCheckpointFile)
	}
	ps.decisionRunner = subscribe.NewRunner(n.Events, n.Registry, ps.decisionMails, n.log, n.Metrics.Projected)
	if r := p.byReadModel[projections.ReadModelBenefits]; r != nil {
		ps.server.BenefitsReady = r
	}
	n.log.Info("portal mail links (password reset, sign-up) point at the configured origin, never at a request's Host", "base_url", pc.BaseURL)
	if pc.InsecureCookies {
		n.log.Warn("PLATFORM_PORTAL_INSECURE_COOKIES is on: portal session cookies are sent over plain http; development only")
	}
	ps.mailSender, err = n.portalMail(cfg, ps.developers, mailCmds)
	return ps, err
}

// portalLimits are the portal's sign-in limits: Postgres buckets shared by
// every node when Postgres is configured, in process otherwise.
func (n *Node) portalLimits(pc PortalConfig) portal.Limits {
	if n.pool == nil {
		return portal.Limits{Address: ratelimit.New(pc.AddressLimit, time.Minute), Account: ratelimit.New(pc.LockoutFailures, pc.LockoutPeriod), Lock: ratelimit.New(1, pc.LockoutPeriod)}
	}
	store := ratelimitpg.New(n.pool)
	return portal.Limits{
		Address: store.Bucket("portal_address", pc.AddressLimit, time.Minute),
		Account: store.Bucket("portal_account", pc.LockoutFailures, pc.LockoutPeriod),
		Lock:    store.Bucket("portal_lock", 1, pc.LockoutPeriod),
	}
}

// portalMail is the sender of the portal's mail over SMTP (nil without
// PLATFORM_SMTP_URL: mail waits in the operators' outbox).
func (n *Node) portalMail(cfg Config, outbox *directory.Developers, recorder *commands.Mail) (*mail.Sender, error) {
	pc := cfg.Portal
	if pc.SMTPURL == "" {
		n.adapter("mail", "outbox only (no PLATFORM_SMTP_URL): operators read it at /portal/ops/outbox")
		return nil, nil
	}
	mailer, err := smtp.Parse(pc.SMTPURL)
	if err != nil {
		return nil, fmt.Errorf("PLATFORM_SMTP_URL: %w", err)
	}
	n.adapter("mail", "SMTP "+mailer.Addr)
	return &mail.Sender{Mailer: mailer, From: pc.MailFrom, Outbox: outbox, Recorder: recorder,
		Retries: pc.MailRetries, Poll: pc.MailPoll, Now: cfg.Now, Log: n.log.With("component", "mail")}, nil
}
