package kafkafailover

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/internal/proc"
)

// TestKafkaWebhookCreationFailover: three platform processes on one
// Postgres with the real Kafka broker as the bus. Webhook creation reads
// the internal topic under the webhook-creation lease; each round SIGKILLs
// the lease's holder and registers users through the survivors, one every
// 50 ms, and measures from the kill to the first webhook that reaches the
// partner for a registration acknowledged after the kill. At the end every
// acknowledged registration has its webhooks, each created once (one
// delivery id per event and endpoint), all correctly signed.
//
//	PLATFORM_TEST_POSTGRES_URL=... PLATFORM_TEST_KAFKA_BROKERS=... PLATFORM_TEST_KAFKA_FAILOVER_KILLS=5 \
//	  go test -count=1 -run 'TestKafkaWebhookCreationFailover$' -v ./e2e/kafkafailover
func TestKafkaWebhookCreationFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("Kafka failover: starts three platform processes for half a minute")
	}
	kills := proc.EnvInt(t, "PLATFORM_TEST_KAFKA_FAILOVER_KILLS", 3)
	c := proc.Start(t, proc.Options{Nodes: 3, Kafka: true})
	rcv := proc.NewHookReceiver(t, 0, 0, 0)
	p := c.CreatePartner("failover partner")
	rcv.SetSecret(p.WebhookSecret)
	c.Admin("PATCH", fmt.Sprintf("/admin/v1/apps/%d", p.AppID), map[string]any{"webhook_url": rcv.URL() + "/hooks"}, http.StatusOK, nil)
	var warm struct {
		OpenUserID int64 `json:"open_user_id"`
	}
	c.PartnerCall(p.Creds, "POST", "/open/v1/channel/users", withGroup("warm-0"), http.StatusCreated, &warm)
	c.AwaitEverywhere(p.Creds, fmt.Sprintf("/open/v1/channel/users/%d", warm.OpenUserID), 30*time.Second)

	acked := []string{"warm-0"} // channel_user_id of every acknowledged registration
	register := func(id string, avoid int) (time.Time, bool) {
		r := c.Client.Send("register", c.Client.Other(avoid), avoid, proc.SignedM(p.Creds, "POST", "/open/v1/channel/users",
			proc.MustJSON(withGroup(id))))
		if r.Status != http.StatusCreated {
			t.Logf("register %s: %s", id, r)
			return time.Time{}, false
		}
		acked = append(acked, id)
		return time.Now(), true
	}
	// firstHook is when the first webhook naming one of ids arrived.
	firstHook := func(ids map[string]bool) (time.Time, bool) {
		attempts, _, _, _ := rcv.Snapshot()
		var first time.Time
		for _, as := range attempts {
			for _, a := range as {
				for id := range ids {
					if strings.Contains(string(a.Body), `"`+id+`"`) && (first.IsZero() || a.Start.Before(first)) {
						first = a.Start
					}
				}
			}
		}
		return first, !first.IsZero()
	}
	// Webhooks flow before the first kill.
	if _, ok := waitFor(30*time.Second, func() (time.Time, bool) { return firstHook(map[string]bool{"warm-0": true}) }); !ok {
		_, total, _, _ := rcv.Snapshot()
		t.Fatalf("no webhook before any kill (%d received); node 0's log:\n%s", total, c.Nodes[0].LogTail(6000))
	}

	var windows []time.Duration
	for k := range kills {
		holder := c.LeaseHolder(t, "webhook-creation")
		victim := c.NodeOf(holder)
		if victim < 0 {
			t.Fatalf("webhook-creation is held by %q, none of the nodes", holder)
		}
		killed := time.Now()
		c.Nodes[victim].Kill()
		after := map[string]bool{}
		var got time.Time
		for seq := 0; ; seq++ {
			id := fmt.Sprintf("fo-%d-%d", k, seq)
			if _, ok := register(id, victim); ok {
				after[id] = true
			}
			if at, ok := firstHook(after); ok {
				got = at
				break
			}
			if time.Since(killed) > 90*time.Second {
				t.Fatalf("kill %d: no webhook of a registration acknowledged after it within 90 s", k)
			}
			time.Sleep(50 * time.Millisecond)
		}
		window := got.Sub(killed)
		windows = append(windows, window)
		t.Logf("kill %d of node %d (held webhook-creation): first webhook for a write acknowledged after it %v after the kill; new holder %s",
			k, victim, window.Round(time.Millisecond), c.LeaseHolder(t, "webhook-creation"))
		if err := c.Nodes[victim].Start(); err != nil {
			t.Fatal(err)
		}
		if err := c.Nodes[victim].WaitReady(60 * time.Second); err != nil {
			t.Fatalf("%v; log:\n%s", err, c.Nodes[victim].LogTail(8000))
		}
		time.Sleep(2 * time.Second) // the restarted node settles (it takes no lease from a live holder)
	}

	// Nothing lost, nothing created twice: every acknowledged registration
	// has its webhook, and each of its events one delivery id.
	deadline := time.Now().Add(60 * time.Second)
	for {
		attempts, _, _, _ := rcv.Snapshot()
		created := map[string]map[string]bool{} // channel user and event -> delivery ids
		for id, as := range attempts {
			for _, a := range as {
				if !a.Verified || a.BodyID != id {
					t.Fatalf("webhook %s: verified %v, delivery_id in the body %s", id, a.Verified, a.BodyID)
				}
			}
			var body struct {
				ChannelUserID string `json:"channel_user_id"`
			}
			_ = json.Unmarshal(as[0].Body, &body)
			key := body.ChannelUserID + " " + as[0].Event
			if created[key] == nil {
				created[key] = map[string]bool{}
			}
			created[key][id] = true
		}
		for key, ids := range created {
			if len(ids) > 1 {
				t.Fatalf("%s was created %d times: %v", key, len(ids), ids)
			}
		}
		missing := 0
		for _, u := range acked {
			if len(created[u+" user.family_group.created"]) == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acknowledged registrations have no webhook", missing, len(acked))
		}
		time.Sleep(500 * time.Millisecond)
	}
	sorted := append([]time.Duration(nil), windows...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	t.Logf("webhook creation after a kill -9 of its holder, %d kills: median %v, max %v (all: %v); %d registrations acknowledged",
		len(sorted), sorted[len(sorted)/2].Round(time.Millisecond), sorted[len(sorted)-1].Round(time.Millisecond), windows, len(acked))
	// The goal is 1 s; a consumer group's session timeout and rebalance
	// took 10-35 s after every kill. A takeover that waits like that shows
	// in the median; the bound on each kill leaves room for one stalled by
	// a loaded 2-core machine (a CI run's start compiles and lints beside
	// it), and still fails a kill whose lease never moved.
	if median := sorted[len(sorted)/2]; median > 5*time.Second {
		t.Errorf("kills stalled webhook creation for a median %v", median)
	}
	if max := sorted[len(sorted)-1]; max > 15*time.Second {
		t.Errorf("a kill stalled webhook creation for %v", max)
	}
}

// withGroup is a registration with a family group, which partners get a
// webhook of.
func withGroup(channelUserID string) map[string]any {
	return map[string]any{"channel_user_id": channelUserID, "user": map[string]any{"name": "Ann", "phone": "13800138000"},
		"family_groups": []any{map[string]any{"app_group_id": 10, "name": "Home"}}}
}

// waitFor polls f until it reports true or timeout passes.
func waitFor(timeout time.Duration, f func() (time.Time, bool)) (time.Time, bool) {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if at, ok := f(); ok {
			return at, true
		}
	}
	return time.Time{}, false
}
