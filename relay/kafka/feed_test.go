package kafka_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/webhooks/kafka/sourcetest"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	eventskafka "github.com/healthtech/partner-open-platform/events/kafka"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/relay"
	"github.com/healthtech/partner-open-platform/relay/feed"
	"github.com/healthtech/partner-open-platform/relay/feed/feedtest"
	relaykafka "github.com/healthtech/partner-open-platform/relay/kafka"
)

// TestRelaySplitsInternalAndAnalyticsTopics runs one relay over a log of
// every catalog type: the dispatcher's group reads every event byte-exact
// from the internal topic; an analytics consumer reads only the published
// types, transformed, keyed by their (pseudonymised) stream, nothing personal.
func TestRelaySplitsInternalAndAnalyticsTopics(t *testing.T) {
	sourcetest.OnEachCluster(t, func(t *testing.T, k *sourcetest.Cluster) {
		addrs := k.Addrs
		internal, analytics := k.Topic(eventskafka.DefaultInternalTopic, 3), k.Topic(relaykafka.DefaultTopic, 3)

		store := memory.New()
		defer store.Close()
		appendToStore(t, store, feedtest.Events(1))
		logged, err := store.ReadAll(sourcetest.Context(t), events.Position{}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := feed.New(bytes.Repeat([]byte{7}, 32), catalog.Registry())
		if err != nil {
			t.Fatal(err)
		}
		p := relaykafka.NewFeedProducer(addrs, internal, analytics, tr, sourcetest.QuietLog())
		defer p.Close()
		cp := relay.NewFileCheckpoints(t.TempDir())
		stop := runRelay(t, store, p, cp, relay.Options{BatchSize: 7, MinBackoff: time.Millisecond})
		waitForCheckpoint(t, cp, logged[len(logged)-1].Position)
		stop()

		// The dispatcher: every event, metadata and data byte for byte.
		col := sourcetest.NewCollector(len(logged))
		sourcetest.Consume(t, addrs, internal, k.Group("platform-webhooks"), col)
		sourcetest.CheckPerStreamOrder(t, col.Events(), logged)
		byID := map[string]events.Recorded{}
		for _, ev := range logged {
			byID[ev.ID] = ev
		}
		for _, ev := range col.Events() {
			want := byID[ev.ID]
			if ev.Type != want.Type || ev.Stream != want.Stream || !bytes.Equal(ev.Data, want.Data) || !bytes.Equal(ev.Meta, want.Meta) {
				t.Fatalf("internal topic changed %s:\n got %+v\nwant %+v", ev.ID, ev, want)
			}
		}

		// Analytics: exactly the published events, as the transformer renders them.
		wantMsgs := map[string]feed.Message{}
		for _, ev := range logged {
			if m, ok, err := tr.Transform(ev); err != nil {
				t.Fatal(err)
			} else if ok {
				wantMsgs[ev.ID] = m
			}
		}
		if len(wantMsgs) < len(feed.PublishedTypes()) || len(wantMsgs) == len(logged) {
			t.Fatalf("%d of %d sample events are published", len(wantMsgs), len(logged))
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(analytics),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx := sourcetest.Context(t)
		var records []*kgo.Record
		for len(records) < len(wantMsgs) {
			fetches := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("read %d of %d analytics records", len(records), len(wantMsgs))
			}
			records = append(records, fetches.Records()...)
		}
		partitionOf := map[string]int32{}
		seen := map[string]bool{}
		for _, r := range records {
			headers := map[string]string{}
			for _, h := range r.Headers {
				headers[h.Key] = string(h.Value)
			}
			id := headers[eventskafka.HeaderEventID]
			want, ok := wantMsgs[id]
			if !ok || seen[id] {
				t.Fatalf("unexpected or repeated analytics record %s %s", id, r.Value)
			}
			seen[id] = true
			if !bytes.Equal(r.Value, want.Value) || !bytes.Equal(r.Key, want.Key) || headers[eventskafka.HeaderSchema] != want.Schema ||
				headers[eventskafka.HeaderEventType] != want.Type || len(headers) != 3 {
				t.Fatalf("record key %q headers %v value %s, want key %q value %s", r.Key, headers, r.Value, want.Key, want.Value)
			}
			for _, pii := range append([]string{feedtest.CardNumber, "user-4242"}, feedtest.Personal...) {
				if strings.Contains(string(r.Key)+string(r.Value), pii) {
					t.Fatalf("analytics record carries %q: %s", pii, r.Value)
				}
			}
			if p, ok := partitionOf[string(r.Key)]; ok && p != r.Partition {
				t.Fatalf("aggregate %s in partitions %d and %d", r.Key, p, r.Partition)
			}
			partitionOf[string(r.Key)] = r.Partition
			var env struct{ Type string }
			if err := json.Unmarshal(r.Value, &env); err != nil || !feed.Published(env.Type) {
				t.Fatalf("record of type %q (%v)", env.Type, err)
			}
		}
		// Nothing more than the published events arrives.
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		if extra := cl.PollFetches(short).Records(); len(extra) > 0 {
			t.Fatalf("%d records beyond the published events, first %s", len(extra), extra[0].Value)
		}
	})
}
