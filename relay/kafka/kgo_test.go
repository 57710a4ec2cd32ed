package kafka_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/healthtech/partner-open-platform/webhooks/kafka/sourcetest"

	"github.com/twmb/franz-go/pkg/kgo"

	relaykafka "github.com/healthtech/partner-open-platform/relay/kafka"
)

// TestAnotherClientReadsTheDocumentedFormat consumes with franz-go, not
// kafka-go, to prove the wire format does not depend on the library.
func TestAnotherClientReadsTheDocumentedFormat(t *testing.T) {
	sourcetest.OnEachCluster(t, func(t *testing.T, k *sourcetest.Cluster) {
		addrs, topic := k.Addrs, k.Topic("platform.events", 3)
		p := relaykafka.NewProducer(addrs, topic)
		defer p.Close()
		evs := sourcetest.MakeEvents("kgo", 60, 12, 1)
		produce(t, p, evs, 60)

		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx := sourcetest.Context(t)
		var records []*kgo.Record
		for len(records) < len(evs) {
			fetches := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("read %d of %d records: %v", len(records), len(evs), err)
			}
			for _, e := range fetches.Errors() {
				t.Fatalf("fetch %s/%d: %v", e.Topic, e.Partition, e.Err)
			}
			records = append(records, fetches.Records()...)
		}

		byID := map[string]int{}
		for i, ev := range evs {
			byID[ev.ID] = i
		}
		partitionOf := map[string]int32{}
		partitions := map[int32]bool{}
		for _, r := range records {
			var v struct {
				ID       string          `json:"id"`
				Stream   string          `json:"stream"`
				Revision uint64          `json:"revision"`
				Data     json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Fatalf("value %s: %v", r.Value, err)
			}
			ev := evs[byID[v.ID]]
			if string(r.Key) != ev.Stream || v.Stream != ev.Stream || v.Revision != ev.Revision || !bytes.Equal(v.Data, ev.Data) {
				t.Fatalf("record key %q value %s does not match event %+v", r.Key, r.Value, ev)
			}
			want := map[string]string{
				"event-id": ev.ID, "event-type": ev.Type, "stream": ev.Stream, "revision": fmt.Sprint(ev.Revision),
				"position": ev.Position.String(), "app-id": "7", "schema": "1",
			}
			if len(r.Headers) != len(want) {
				t.Fatalf("headers %v", r.Headers)
			}
			for _, h := range r.Headers {
				if want[h.Key] != string(h.Value) {
					t.Fatalf("header %s=%q, want %q", h.Key, h.Value, want[h.Key])
				}
			}
			if p, ok := partitionOf[ev.Stream]; ok && p != r.Partition {
				t.Fatalf("stream %s in partitions %d and %d", ev.Stream, p, r.Partition)
			}
			partitionOf[ev.Stream] = r.Partition
			partitions[r.Partition] = true
		}
		if len(partitions) < 2 {
			t.Fatalf("12 streams all hashed into partitions %v", partitions)
		}
	})
}
