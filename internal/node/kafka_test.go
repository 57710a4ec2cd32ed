package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/healthtech/partner-open-platform/internal/node"
)

// kafkaCluster starts an in-process Kafka protocol server on loopback.
func kafkaCluster(t testing.TB) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// TestProductionBusThroughKafka runs the node with Kafka as the bus: the
// relay publishes every event, the dispatcher consumes the topic, and a
// partner receives its webhooks exactly as in embedded mode.
func TestProductionBusThroughKafka(t *testing.T) {
	brokers := kafkaCluster(t)
	p := start(t, node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true, KafkaBrokers: brokers, KafkaTopic: "platform.events"})
	if p.node.Adapters["bus"] == "event store subscription" {
		t.Fatal("the bus is not Kafka")
	}
	a := p.createApp("partner")
	rcv := newReceiver(t)
	rcv.secret = a.WebhookSecret
	p.configureWebhook(a, rcv.srv.URL, "user.profile.updated")
	var reg registerData
	a.expect("POST", "/open/v1/channel/users", registerBody("u-1"), http.StatusCreated, "0").data(t, &reg)
	for i := range 3 {
		a.expect("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID), map[string]any{"nickname": fmt.Sprint("n", i)}, http.StatusOK, "0")
	}
	got := rcv.waitFor(3)
	for _, w := range got {
		if !w.Verified || w.Event != "user.profile.updated" {
			t.Fatalf("webhook %+v", w)
		}
	}
	rcv.quiet(3, 300*time.Millisecond)

	// Analytics read the same topic: every event of the user's stream, in order.
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: brokers, Topic: "platform.events", GroupID: "analytics-test", StartOffset: kafkago.FirstOffset, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream := fmt.Sprintf("user-%d", reg.OpenUserID)
	var revisions []int
	for len(revisions) < 7 { // registered, group, 2 members, 3 profile updates
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", revisions, err)
		}
		if string(m.Key) != stream {
			continue
		}
		var v struct {
			Revision int             `json:"revision"`
			Type     string          `json:"type"`
			Data     json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(m.Value, &v); err != nil {
			t.Fatal(err)
		}
		revisions = append(revisions, v.Revision)
	}
	for i, rev := range revisions {
		if rev != i {
			t.Fatalf("stream %s out of order on the topic: %v", stream, revisions)
		}
	}
}

// BenchmarkWebhooksKafka is BenchmarkWebhooksEmbedded with Kafka (kfake) as the bus.
func BenchmarkWebhooksKafka(b *testing.B) {
	b.Run("clients=8", func(b *testing.B) {
		benchWebhooks(b, node.Config{DataDir: b.TempDir(), KafkaBrokers: kafkaCluster(b)}, 8)
	})
	b.Run("clients=1", func(b *testing.B) {
		benchWebhooks(b, node.Config{DataDir: b.TempDir(), KafkaBrokers: kafkaCluster(b)}, 1)
	})
}
