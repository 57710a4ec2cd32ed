package cluster_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/kafkatest"
	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/relay/feed"
	kafkago "github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
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
// relay publishes every event to the internal topic, the dispatcher consumes
// it there, and a partner receives its webhooks exactly as in embedded mode;
// the analytics topic carries the user's business events, pseudonymised.
func TestProductionBusThroughKafka(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		real bool // the broker scripts/test.sh starts, else kfake
	}{{"kfake", false}, {"broker", true}} {
		t.Run(tc.name, func(t *testing.T) { productionBusThroughKafka(t, tc.real) })
	}
}

func productionBusThroughKafka(t *testing.T, real bool) {
	t.Parallel()
	brokers, name := []string(nil), func(base string) string { return base }
	if real {
		// The shared broker: topics and test groups of this run only. The
		// node creates the topics itself, as in production.
		brokers, name = kafkatest.Brokers(t), func(base string) string { return kafkatest.Name(t, base) }
	} else {
		brokers = kafkaCluster(t)
	}
	internalTopic, analyticsTopic := name("internal.events"), name("analytics.events")
	feedKey := strings.Repeat("ab", 32)
	p := harness.Start(t, node.Config{DataDir: t.TempDir(), WebhookAllowLoopback: true, KafkaBrokers: brokers,
		KafkaTopic: analyticsTopic, KafkaInternalTopic: internalTopic, FeedPseudonymKey: feedKey})
	if p.Node.Adapters["bus"] == "event store subscription" {
		t.Fatal("the bus is not Kafka")
	}
	a := p.CreateApp("partner")
	rcv := harness.NewReceiver(t)
	rcv.Secret = a.WebhookSecret
	p.ConfigureWebhook(a, rcv.Srv.URL, "user.profile.updated")
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
	for i := range 3 {
		a.Expect("PATCH", fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID), map[string]any{"nickname": fmt.Sprint("n", i)}, http.StatusOK, "0")
	}
	got := rcv.WaitFor(3)
	for _, w := range got {
		if !w.Verified || w.Event != "user.profile.updated" {
			t.Fatalf("webhook %+v", w)
		}
	}
	rcv.Quiet(3, 300*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), harness.WaitBound)
	defer cancel()
	// The internal topic: every event of the user's stream, in order, as logged.
	stream := fmt.Sprintf("user-%d", reg.OpenUserID)
	internal := kafkago.NewReader(kafkago.ReaderConfig{Brokers: brokers, Topic: internalTopic, GroupID: name("internal-test"), StartOffset: kafkago.FirstOffset, MaxWait: 100 * time.Millisecond})
	defer internal.Close()
	var revisions []int
	for len(revisions) < 7 { // registered, group, 2 members, 3 profile updates
		m, err := internal.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", revisions, err)
		}
		if string(m.Key) != stream {
			continue
		}
		var v struct {
			Revision int `json:"revision"`
		}
		if err := json.Unmarshal(m.Value, &v); err != nil {
			t.Fatal(err)
		}
		revisions = append(revisions, v.Revision)
	}
	for i, rev := range revisions {
		if rev != i {
			t.Fatalf("stream %s out of order on the internal topic: %v", stream, revisions)
		}
	}

	// The analytics topic: the same seven business events under the user's
	// pseudonym, in order; no personal value, no plumbing.
	key, _ := hex.DecodeString(feedKey)
	tr, err := feed.New(key, catalog.Registry())
	if err != nil {
		t.Fatal(err)
	}
	pseudonymous := "user-" + tr.Pseudonym(feed.NSUser, fmt.Sprint(reg.OpenUserID))
	analytics := kafkago.NewReader(kafkago.ReaderConfig{Brokers: brokers, Topic: analyticsTopic, GroupID: name("analytics-test"), StartOffset: kafkago.FirstOffset, MaxWait: 100 * time.Millisecond})
	defer analytics.Close()
	var types []string
	for len(types) < 7 {
		m, err := analytics.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", types, err)
		}
		for _, personal := range []string{"李雷", "韩梅梅", "13812345678", "1990-05-01", "li@example.cn", "110101199005010000", `"u-1"`, stream + `"`} {
			if strings.Contains(string(m.Key)+string(m.Value), personal) {
				t.Fatalf("analytics message carries %q: %s", personal, m.Value)
			}
		}
		var v struct {
			Type   string `json:"type"`
			Schema string `json:"schema"`
		}
		if err := json.Unmarshal(m.Value, &v); err != nil {
			t.Fatal(err)
		}
		if !feed.Published(v.Type) || v.Schema != v.Type+"/v1" {
			t.Fatalf("analytics message of type %q schema %q", v.Type, v.Schema)
		}
		if string(m.Key) == pseudonymous {
			types = append(types, v.Type)
		}
	}
	want := []string{"user.registered", "user.family_group.created", "user.family_member.created", "user.family_member.created",
		"user.profile.updated", "user.profile.updated", "user.profile.updated"}
	if strings.Join(types, ",") != strings.Join(want, ",") {
		t.Fatalf("analytics events of the user %v, want %v", types, want)
	}
}

// BenchmarkWebhooksKafka is BenchmarkWebhooksEmbedded with Kafka (kfake) as the bus.
func BenchmarkWebhooksKafka(b *testing.B) {
	b.Run("clients=8", func(b *testing.B) {
		harness.BenchWebhooks(b, node.Config{DataDir: b.TempDir(), KafkaBrokers: kafkaCluster(b)}, 8)
	})
	b.Run("clients=1", func(b *testing.B) {
		harness.BenchWebhooks(b, node.Config{DataDir: b.TempDir(), KafkaBrokers: kafkaCluster(b)}, 1)
	})
}
