package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/lease"
	leasepg "github.com/healthtech/partner-open-platform/internal/lease/postgres"
	"github.com/healthtech/partner-open-platform/internal/node"
	relaypg "github.com/healthtech/partner-open-platform/relay/postgres"
	"github.com/twmb/franz-go/pkg/kgo"
)

// leaseStore opens the cluster's lease table, to see who holds what and to
// play a node that took a lease and died.
func leaseStore(t *testing.T, db string) *leasepg.Store {
	t.Helper()
	s, err := leasepg.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// holderOf waits, within a bound, until name is held by one of want, and
// returns that holder.
func holderOf(t *testing.T, s lease.Store, name string, want ...string) string {
	t.Helper()
	var last lease.Lease
	for deadline := time.Now().Add(harness.WaitBound); time.Now().Before(deadline); {
		l, err := s.Get(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if l.Holder == w {
				return w
			}
		}
		last = l
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("lease %s is held by %q, want one of %v", name, last.Holder, want)
	return ""
}

// startNamed starts a node whose lease holder name is id (the config's
// NodeID, which PLATFORM_NODE_ID sets in production: no process-wide
// environment, so the test runs in parallel with others).
func startNamed(t *testing.T, id string, cfg node.Config) *harness.Platform {
	cfg.NodeID = id
	return harness.Start(t, cfg)
}

// TestWebhookCreationHasOneOwnerWithoutKafka: nodes on the Postgres event
// store alone create deliveries under the webhook-creation lease. A node
// that took the lease and died holds nobody up beyond the lease's time to
// live; when the owner stops, another node takes over, and every event
// still becomes exactly one delivery, delivered once.
func TestWebhookCreationHasOneOwnerWithoutKafka(t *testing.T) {
	t.Parallel()
	cfgs := harness.ClusterConfigs(t, 2)
	leases := leaseStore(t, cfgs[0].PostgresURL)
	// A node took the lease and died: nobody creates until it lapses.
	if _, err := leases.Acquire(context.Background(), "webhook-creation", "node-dead", 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ps := make([]*harness.Platform, 2)
	for i := range ps {
		cfgs[i].LeaseTTL = time.Second
		ps[i] = startNamed(t, fmt.Sprint("node-", i), cfgs[i])
	}
	a := ps[0].CreateApp("partner")
	rcv := harness.NewReceiver(t)
	rcv.Secret = a.WebhookSecret
	ps[0].ConfigureWebhook(a, rcv.Srv.URL+"/hooks", "user.family_member.created")
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("own-1"), http.StatusCreated, "0")
	rcv.WaitFor(2)
	owner := holderOf(t, leases, "webhook-creation", "node-0", "node-1")

	// The owner stops; the other node takes over and creates what follows.
	other := ps[1]
	if owner == "node-1" {
		other = ps[0]
		ps[1].Stop()
	} else {
		ps[0].Stop()
	}
	a.P = other
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("own-2"), http.StatusCreated, "0")
	holderOf(t, leases, "webhook-creation", map[string]string{"node-0": "node-1", "node-1": "node-0"}[owner])
	got := rcv.WaitFor(4)
	rcv.Quiet(4, 300*time.Millisecond) // a graceful stop finishes and records its attempts: nothing repeats
	seen := map[string]bool{}
	for _, w := range got {
		if seen[w.ID] || !w.Verified {
			t.Fatalf("webhook %s twice or unverified: %+v", w.ID, got)
		}
		seen[w.ID] = true
	}
}

// TestRelayRunsOnOneNodeAndMovesOnTakeover: with Kafka and Postgres every
// node competes for the relay lease unless it opted out; the relay waits
// out a dead holder's lease, runs on one node, keeps its checkpoint in
// Postgres, and when its node stops another takes over from that
// checkpoint: every event of the log reaches the internal topic, the
// checkpoint never goes backwards, and an opted-out node never relays.
func TestRelayRunsOnOneNodeAndMovesOnTakeover(t *testing.T) {
	t.Parallel()
	brokers := kafkaCluster(t)
	cfgs := harness.ClusterConfigs(t, 3)
	db := cfgs[0].PostgresURL
	leases := leaseStore(t, db)
	if _, err := leases.Acquire(context.Background(), "relay", "node-dead", 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	off := false
	ps := make([]*harness.Platform, 3)
	for i := range ps {
		cfgs[i].LeaseTTL, cfgs[i].KafkaBrokers = time.Second, brokers
		if i == 2 {
			cfgs[i].KafkaRelay = &off
		}
		ps[i] = startNamed(t, fmt.Sprint("node-", i), cfgs[i])
	}
	cp := checkpointReader(t, db)
	a := ps[0].CreateApp("partner")
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("relay-1"), http.StatusCreated, "0")
	owner := holderOf(t, leases, "relay", "node-0", "node-1")
	before := cp.waitFor(t, harness.Head(t, ps[0]))

	stopped, other := ps[0], ps[1]
	if owner == "node-1" {
		stopped, other = ps[1], ps[0]
	}
	stopped.Stop()
	a.P = other
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("relay-2"), http.StatusCreated, "0")
	holderOf(t, leases, "relay", map[string]string{"node-0": "node-1", "node-1": "node-0"}[owner])
	after := cp.waitFor(t, harness.Head(t, other))
	if after.Less(before) {
		t.Fatalf("the checkpoint went back from %s to %s", before, after)
	}
	if got, _ := leases.Get(context.Background(), "relay"); got.Holder == "node-2" {
		t.Fatal("the opted-out node holds the relay lease")
	}

	// Every event of the log is on the internal topic (repeats allowed).
	// Events appended after the checkpoint was read (the node's own) may
	// still be on their way, so the topic is read until it holds them all.
	recs, err := other.Node.StoredEvents.ReadAll(context.Background(), events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	missing := map[string]events.Recorded{}
	for _, r := range recs {
		missing[r.ID] = r
	}
	topicHolds(t, brokers, "platform.internal.events", missing)
	if len(missing) > 0 {
		last, _ := cp.load(context.Background())
		var lost []string
		for _, r := range missing {
			lost = append(lost, fmt.Sprintf("%s %s@%s", r.Type, r.Stream, r.Position))
		}
		t.Fatalf("%d of %d events never reached the internal topic (relay checkpoint %s): %v", len(missing), len(recs), last, lost)
	}
}

// topicHolds reads every partition of topic from its start, without a
// consumer group (whose joins and rebalances are no part of what the relay
// promises, and stalled on a loaded machine), deleting from missing each
// event it finds, until missing is empty or WaitBound ends.
func topicHolds(t *testing.T, brokers []string, topic string, missing map[string]events.Recorded) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), harness.WaitBound)
	defer cancel()
	for len(missing) > 0 && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 && ctx.Err() == nil {
			t.Logf("fetch %s/%d: %v", errs[0].Topic, errs[0].Partition, errs[0].Err)
			time.Sleep(100 * time.Millisecond) // bounded by ctx: the client retries
		}
		fs.EachRecord(func(r *kgo.Record) {
			var v struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Errorf("partition %d offset %d: %v", r.Partition, r.Offset, err)
				return
			}
			delete(missing, v.ID)
		})
	}
}

// relayCheckpoint reads the relay's shared checkpoint and remembers every
// position it saw, to catch one that went backwards.
type relayCheckpoint struct {
	load func(context.Context) (events.Position, error)
	seen []events.Position
}

func checkpointReader(t *testing.T, db string) *relayCheckpoint {
	t.Helper()
	cp := openRelayCheckpoint(t, db)
	return &relayCheckpoint{load: cp.Load}
}

// WaitFor polls, within a bound, until the checkpoint reaches pos, and
// fails if it ever moved backwards meanwhile.
func (c *relayCheckpoint) waitFor(t *testing.T, pos events.Position) events.Position {
	t.Helper()
	for range 400 {
		got, err := c.load(context.Background())
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		if n := len(c.seen); n > 0 && got.Less(c.seen[n-1]) {
			t.Fatalf("the relay checkpoint went back from %s to %s", c.seen[n-1], got)
		}
		c.seen = append(c.seen, got)
		if !got.Less(pos) {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the relay checkpoint stayed at %s, short of %s", c.seen[len(c.seen)-1], pos)
	return events.Position{}
}

func openRelayCheckpoint(t *testing.T, db string) *relaypg.Checkpoints {
	t.Helper()
	cp, err := relaypg.Open(context.Background(), db, "feed")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cp.Close() })
	return cp
}
