package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/privacy"
	"github.com/healthtech/partner-open-platform/projections"
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

// buildDispatcher makes the webhook dispatcher over the deliveries read
// model; startWebhooks gives it its claims and feeds it.
func (n *Node) buildDispatcher(cfg Config, p projectionSet) *webhooks.Dispatcher {
	guard := targets.Guard{AllowLoopback: cfg.WebhookAllowLoopback,
		Pool: targets.Pool{Idle: cfg.WebhookIdleConnections, IdlePerHost: cfg.WebhookPerEndpoint}}
	if cfg.WebhookAllowLoopback {
		n.log.Warn("PLATFORM_WEBHOOK_ALLOW_LOOPBACK is on: webhooks may target http and loopback addresses; never use this in production")
	}
	client := guard.Client(10 * time.Second)
	if cfg.WebhookTransport != nil {
		client.Transport = cfg.WebhookTransport(client.Transport)
	}
	return &webhooks.Dispatcher{
		Store: n.Events, Registry: n.Registry, Apps: p.apps, AppsReady: p.appsRunner,
		Deliveries: n.ReadModel, Projected: p.byReadModel[projections.ReadModelDeliveries], Reflected: p.reflected(), Client: client,
		Clock: cfg.WebhookClock, Schedule: cfg.WebhookSchedule, Location: n.Location, Log: n.log.With("component", "webhooks"),
		Workers: cfg.WebhookWorkers, OnAttempt: n.Metrics.Attempted,
		PerEndpoint: cfg.WebhookPerEndpoint, BreakerFailures: cfg.WebhookBreakerFailures, BreakerCooldown: cfg.WebhookBreakerCooldown,
		OnBreaker: n.Metrics.Breaker, CreateConcurrency: cfg.WebhookCreateConcurrency,
	}
}

// reflected are the read models the dispatcher waits for before it creates
// a webhook's deliveries, so that a partner who reads on receipt finds what
// the webhook announces: every read model but the deliveries one. That one
// holds nothing an event sent about changes but an erasure's blanked
// bodies, and a partner's read of it (the delivery log, the feed) waits for
// the log's head as the read begins (queryapi), which holds the event and
// its delivery. Waiting for it would tie each creation to that read model's
// applies, which nothing else on the path waits for.
func (p projectionSet) reflected() subscribe.RunnerSet {
	deliveries := p.byReadModel[projections.ReadModelDeliveries]
	out := make(subscribe.RunnerSet, 0, len(p.readModels))
	for _, run := range p.readModels {
		if run != deliveries {
			out = append(out, run)
		}
	}
	return out
}

// webhookCreationCheckpointFile keeps, in the data directory, the log
// position up to which an embedded node has created every delivery.
const webhookCreationCheckpointFile = "webhook-creation-checkpoint.json"

// startWebhooks starts the dispatcher (fed by Kafka or by the store), its
// sender, the relay when Kafka is configured, and the delivery gauges.
// Nodes sharing Postgres share the work: every node sends (claims keep one
// attempt of a delivery in flight), one node at a time relays (the relay
// lease), and one node at a time creates deliveries (the webhook-creation
// lease), from the store or from Kafka.
func (n *Node) startWebhooks(ctx context.Context, cfg Config, models *subscribe.Runner) error {
	if err := n.openClaims(ctx, cfg); err != nil {
		return err
	}
	creation, err := n.creationCheckpoints(ctx, cfg)
	if err != nil {
		return err
	}
	if len(cfg.KafkaBrokers) == 0 {
		n.deliveriesCreated = creation
		n.spawn(ctx, "webhook deliveries", n.createFromStore(cfg, creation, models).Run)
	} else if err := n.startKafka(ctx, cfg); err != nil {
		return err
	}
	n.spawn(ctx, "webhook sender", n.Dispatcher.RunSender)
	// One node at a time runs the replays; the lease moving resumes each
	// from its checkpoint on the next holder.
	n.spawnOwned(ctx, "webhook replays", n.Leases, "webhook-replays", cfg.LeaseTTL, n.Replayer.Run)
	n.spawn(ctx, "delivery gauges", n.deliveryGauges(models))
	return nil
}

// openClaims gives the dispatcher its claims, which spread sending over the
// nodes sharing the deliveries, one attempt of a delivery in flight at a time.
func (n *Node) openClaims(ctx context.Context, cfg Config) error {
	if cfg.PostgresURL != "" {
		claims, err := webhookspg.New(ctx, n.pool)
		if err != nil {
			return fmt.Errorf("webhook claims: %w", err)
		}
		n.Dispatcher.Claims = claims
		if open, ok := n.storedEventOpener(cfg); ok && sameDatabase(cfg.EventStoreURL, cfg.PostgresURL) {
			// A delivery's stream is read in the round trip that claims it.
			claims.ReadStreams(pgevents.StreamsQuery, pgevents.CollectStreams, open)
		}
		if sameDatabase(cfg.EventStoreURL, cfg.PostgresURL) {
			// The deliveries this node creates are claimed for its sender
			// in the append that creates them.
			claims.RideAppends(pgevents.WithRider)
		}
		// Closing ends the claims session: this node's claims free at once.
		n.closers = append(n.closers, claims.Close)
		n.Adapters["webhook claims"] = "Postgres"
	} else {
		n.Dispatcher.Claims = webhooksmem.NewClaims()
		// One process over its own log: the dispatcher writes every
		// delivery stream, so its sender attempts from what it wrote.
		n.Dispatcher.Sole = true
		n.Adapters["webhook claims"] = "in memory (one node)"
	}
	n.Dispatcher.ClaimTTL, n.Dispatcher.Node = cfg.WebhookClaimTTL, n.NodeID
	n.log.Info("adapter", "port", "webhook claims", "adapter", n.Adapters["webhook claims"])
	return nil
}

// creationCheckpoints keeps how far deliveries were created: deliveries are
// created in concurrent batches, so the highest one recorded does not say
// all before it are; a checkpoint does.
func (n *Node) creationCheckpoints(ctx context.Context, cfg Config) (subscribe.Checkpoints, error) {
	if cfg.PostgresURL == "" {
		return relay.NewFileCheckpointsNamed(cfg.DataDir, webhookCreationCheckpointFile), nil
	}
	shared, err := relaypg.New(ctx, n.pool, "webhook-creation")
	if err != nil {
		return nil, fmt.Errorf("webhook creation checkpoint: %w", err)
	}
	return shared, nil
}

// creation is the dispatcher's delivery creation as a pipelined client of
// the subscription runtime: the next batch waits for the read models (and,
// from Kafka, is fetched and decrypted) while the previous one's append
// commits; the checkpoint or the group's offsets cover committed batches.
func (n *Node) creation(source subscribe.Source) subscribe.Pipeline[webhooks.PreparedBatch] {
	return subscribe.Pipeline[webhooks.PreparedBatch]{Name: "webhook deliveries", Source: source, Log: n.log,
		Prepare: n.Dispatcher.PrepareBatch, Commit: n.Dispatcher.CommitBatches}
}

// createFromStore creates deliveries from the event store, on one node at
// a time (the webhook-creation lease). Creation is idempotent, so a paused
// old owner overlapping a new one writes nothing twice; the lease only
// saves the others the work.
func (n *Node) createFromStore(cfg Config, creation subscribe.Checkpoints, models *subscribe.Runner) subscribe.Pipeline[webhooks.PreparedBatch] {
	from := func(ctx context.Context) (events.Position, error) {
		if err := models.WaitReady(ctx); err != nil {
			return events.Position{}, err
		}
		return n.ReadModel.LastSource(ctx)
	}
	p := n.creation(subscribe.StoreSource{Store: n.Events, Checkpoints: creation, From: from})
	p.Leases, p.Lease, p.Holder, p.TTL = n.Leases, "webhook-creation", n.NodeID, cfg.LeaseTTL
	return p
}

// startKafka makes sure of the topics, creates deliveries from the internal
// topic (under the webhook-creation lease) and, unless this
// node opted out, competes for the relay that fills the topics.
func (n *Node) startKafka(ctx context.Context, cfg Config) error {
	for _, topic := range []string{cfg.KafkaInternalTopic, cfg.KafkaTopic} {
		ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := relaykafka.EnsureTopic(ectx, cfg.KafkaBrokers, topic, 6)
		cancel()
		if err != nil {
			return fmt.Errorf("kafka topic %s: %w", topic, err)
		}
	}
	// One node at a time reads every partition, under the webhook-creation
	// lease as without Kafka: a dead reader's successor starts within a
	// lease poll from the offsets kept beside the lease, where a consumer
	// group would wait out its session timeout and a rebalance.
	create := n.creation(webhookkafka.NewPartitionSource(cfg.KafkaBrokers, cfg.KafkaInternalTopic,
		webhookkafka.WebhookGroup(cfg.KafkaInternalTopic), n.partitionOffsets(cfg), n.log))
	create.Leases, create.Lease, create.Holder, create.TTL = n.Leases, "webhook-creation", n.NodeID, cfg.LeaseTTL
	if priv, ok := n.Events.(*privacy.Store); ok {
		create.Prepare = privacy.Decrypting(priv, create.Prepare) // the topic carries ciphertext
	}
	n.spawn(ctx, "webhook deliveries", create.Run)
	if cfg.KafkaRelay != nil && !*cfg.KafkaRelay {
		n.log.Info("relay opted out on this node (PLATFORM_KAFKA_RELAY=off): other nodes relay")
		return nil
	}
	return n.startRelay(ctx, cfg)
}

// partitionOffsets keeps, per partition of the internal topic, the next
// offset to create deliveries from: in Postgres (fenced by the
// webhook-creation lease) when the nodes share it, else in the data
// directory.
func (n *Node) partitionOffsets(cfg Config) func(context.Context, int) (subscribe.Checkpoints, error) {
	var mu sync.Mutex
	made := map[int]subscribe.Checkpoints{}
	return func(ctx context.Context, partition int) (subscribe.Checkpoints, error) {
		mu.Lock()
		defer mu.Unlock()
		if cp, ok := made[partition]; ok {
			return cp, nil
		}
		name := webhookkafka.OffsetCheckpoint(cfg.KafkaInternalTopic, partition)
		var cp subscribe.Checkpoints = relay.NewFileCheckpointsNamed(cfg.DataDir, name+".json")
		if cfg.PostgresURL != "" {
			shared, err := relaypg.New(ctx, n.pool, name)
			if err != nil {
				return nil, fmt.Errorf("webhook creation offsets: %w", err)
			}
			cp = shared
		}
		made[partition] = cp
		return cp, nil
	}
}

// startRelay competes for the relay lease; its holder copies the stored
// log (ciphertext) to the internal topic and the analytics feed.
func (n *Node) startRelay(ctx context.Context, cfg Config) error {
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
	n.spawnOwned(ctx, "relay", n.Leases, "relay", cfg.LeaseTTL, func(ctx context.Context) error {
		return relay.Run(ctx, n.StoredEvents, producer, checkpoints, n.log.With("component", "relay"), relay.Options{OnRelayed: n.Metrics.Relayed})
	})
	return nil
}

// deliveryGaugesEvery is the most often the deliveries-by-status gauges
// are refreshed.
const deliveryGaugesEvery = 5 * time.Second

// deliveryGauges refreshes the deliveries-by-status gauges from the
// deliveries read model (models), at most every deliveryGaugesEvery and
// only after it has moved: the count scans the whole table, and an idle
// node's counts do not change.
func (n *Node) deliveryGauges(models *subscribe.Runner) func(context.Context) error {
	var changed func() <-chan struct{}
	if models != nil {
		changed = models.Changed
	}
	return func(ctx context.Context) error {
		refreshOnChange(ctx, deliveryGaugesEvery, changed, func(ctx context.Context) error {
			counts, err := n.ReadModel.CountByStatus(ctx)
			if err == nil {
				n.Metrics.DeliveryCounts(counts)
			}
			return err
		})
		return nil
	}
}

// refreshOnChange runs refresh now, then again each time changed (nil:
// always) has closed since the last run, at most once per every; a failed
// refresh is retried after every whatever changed. It returns when ctx
// ends.
func refreshOnChange(ctx context.Context, every time.Duration, changed func() <-chan struct{}, refresh func(context.Context) error) {
	for {
		var moved <-chan struct{}
		if changed != nil {
			moved = changed() // taken before the refresh reads, so no move is missed
		}
		if err := refresh(ctx); err != nil {
			moved = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		if moved != nil {
			select {
			case <-ctx.Done():
				return
			case <-moved:
			}
		}
	}
}

// storedEventOpener is what makes an event read from the store's table
// what n.Events reads: its personal fields decrypted (privacy.Store.Open),
// or nothing when personal data is stored in clear. ok is false when
// n.Events is neither, and stored events must be read through it.
func (n *Node) storedEventOpener(cfg Config) (func(context.Context, events.Recorded) (events.Recorded, error), bool) {
	if ps, ok := n.Events.(*privacy.Store); ok {
		return ps.Open, true
	}
	if cfg.PlaintextPersonalData {
		return func(_ context.Context, rec events.Recorded) (events.Recorded, error) { return rec, nil }, true
	}
	return nil, false
}
