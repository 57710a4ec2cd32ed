package node

import (
	"context"
	"errors"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/secrets"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/webhooks/targets"
)

// commandSet is the write side: a command handler per aggregate family over
// the node's log, and the analyzer that follows the log for plugin uploads.
type commandSet struct {
	sealer          *secrets.Sealer // of the master key: app secrets, idempotent answers
	ids             *commands.Allocator
	plugin          *commands.Plugin
	users           *commands.Users
	apps            *commands.Apps
	operators       *commands.Operators
	reports         *commands.Reports
	benefits        *commands.Benefits
	replays         *commands.Replays
	analyzerJournal *projections.Journal
	analyzer        *subscribe.Runner
	// developers (the portal's account commands) and developersReady (its
	// account directory) serve the admin API's developer review.
	developers      *commands.Developers
	developersReady *subscribe.Runner
}

// buildCommands makes the command handlers the HTTP edges and the portal share.
func (n *Node) buildCommands(cfg Config, sealer *secrets.Sealer, p projectionSet) commandSet {
	c := commandSet{sealer: sealer, ids: commands.NewAllocator(n.Events, n.Registry, cfg.IDBlockSize).Grow(16).ReserveAhead()}
	c.plugin = commands.NewPlugin(n.Events, n.Registry, c.ids, cfg.Now, phoneDirectory{n.ReadModel})
	c.analyzerJournal = projections.NewJournal(&commands.Analyzer{Plugin: c.plugin}, n.Events, n.Registry)
	c.analyzerJournal.CheckpointOnly = true
	c.analyzer = subscribe.NewRunner(n.Events, n.Registry, c.analyzerJournal, n.log, n.Metrics.Projected)
	n.eagerCheckpoints(c.analyzer)
	c.operators = commands.NewOperators(n.Events, n.Registry, c.ids, cfg.Now)
	c.reports = commands.NewReports(n.Events, n.Registry, c.ids, cfg.Now)
	var destroyer commands.KeyDestroyer = n.Keys
	if n.snapshots != nil {
		destroyer = erasingKeys{n.Keys, n.snapshots}
	}
	c.users = commands.NewUsers(n.Events, n.Registry, c.ids, n.Pseudonyms, cfg.Now, n.Location).WithKeys(destroyer).
		WithLegacyBindings(n.legacyBindings)
	if !cfg.PlaintextPersonalData {
		c.users.WithKeyWarmer(n.Keys)
		c.ids.OnReserve(commands.KindUser, n.prepareUserKeys)
	}
	c.apps = commands.NewApps(n.Events, n.Registry, c.ids, c.sealer, targets.Guard{AllowLoopback: cfg.WebhookAllowLoopback}.CheckURL)
	providers := providerDirectory{n.ReadModel, p.byReadModel[projections.ReadModelBenefits], n.head, n.shared != nil}
	c.replays = commands.NewReplays(n.Events, n.Registry, c.ids)
	c.replays.Now = cfg.Now
	c.benefits = commands.NewBenefits(n.Events, n.Registry, c.ids, cfg.Now, max(cfg.VerifyCooldown, 0), providers)
	return c
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
