package node

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	evmemory "github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory"
	"github.com/healthtech/partner-open-platform/projections/memory/snapfile"
)

// TestDeliveriesReplayDirectDecodeEqualsRegistry: the deliveries read model
// replayed through the catalog's registry (whose direct decoders read the
// delivery records, as a node's start replays its tail) holds exactly the
// rows it holds when replayed through a registry of the same types that
// decodes with encoding/json only, over a recorded random history of
// delivery records (bodies and excerpts with escapes, NULs and non-ASCII,
// retries, resends, erasures) and events of other read models in between.
func TestDeliveriesReplayDirectDecodeEqualsRegistry(t *testing.T) {
	ctx := context.Background()
	reg := catalog.Registry()
	reflective := events.NewRegistry()
	reflective.MustRegister(1, catalog.Payloads()...)
	log := deliveryHistory(t, reg, 600)
	head, err := log.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	replay := func(direct bool) snapfile.Image {
		t.Helper()
		store := memory.New()
		decoder := reflective
		if direct {
			decoder = reg
		}
		run := subscribe.NewRunner(log, decoder, projections.DeliveriesProjector(store), slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = run.Run(runCtx) }()
		defer func() { cancel(); <-done }()
		waitCtx, stop := context.WithTimeout(ctx, 30*time.Second)
		defer stop()
		if err := run.WaitFor(waitCtx, head); err != nil {
			t.Fatal(err)
		}
		im, err := store.Image(ctx, projections.ReadModelDeliveries)
		if err != nil {
			t.Fatal(err)
		}
		return im
	}
	byRegistry, direct := replay(false), replay(true)
	if len(byRegistry.Deliveries) == 0 || len(byRegistry.Attempts) == 0 {
		t.Fatalf("the history projected nothing: %d deliveries, %d attempts", len(byRegistry.Deliveries), len(byRegistry.Attempts))
	}
	if !reflect.DeepEqual(byRegistry, direct) {
		t.Fatalf("direct decode replays differently:\nregistry %+v\ndirect   %+v", byRegistry, direct)
	}
}

// deliveryHistory records n random events, most of them delivery records
// (what a start's tail is), into a fresh in-memory log.
func deliveryHistory(t testing.TB, reg *events.Registry, n int) *evmemory.Store {
	t.Helper()
	ctx := context.Background()
	log := evmemory.New()
	rng := rand.New(rand.NewPCG(11, 8))
	at := time.Date(2026, 11, 24, 1, 2, 3, 456789000, time.UTC)
	texts := []string{"ok", `{"a":"b\"c"}`, "echo: Li Lei\x00", "李雷 \u2028 tab\t", "", "\\u0041"}
	var ids []string
	appendEv := func(stream string, p events.Payload) {
		t.Helper()
		ev, err := reg.Encode(p, events.Metadata{AppID: 1 + rng.Int64N(3), Actor: "dispatcher", OccurredAt: at})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := log.Append(ctx, stream, events.Any(), ev); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		at = at.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)
		switch k := rng.IntN(10); {
		case k < 4 || len(ids) == 0:
			id := fmt.Sprintf("d-%d", i)
			ids = append(ids, id)
			user := 1 + rng.Int64N(20)
			appendEv("delivery-"+id, &catalog.DeliveryCreated{DeliveryID: id, AppID: 1 + rng.Int64N(3), Event: "user.profile.updated",
				SourceEventID: fmt.Sprintf("src-%d", i), SourceStream: fmt.Sprintf("user-%d", user),
				SourcePosition: events.Position{Commit: uint64(i), Prepare: uint64(i)}, SourceRecordedAt: at,
				Body:       fmt.Sprintf(`{"event":"user.profile.updated","open_user_id":%d,"name":%q}`, user, texts[rng.IntN(len(texts))]),
				EndpointID: rng.Int64N(3), Deliver: rng.IntN(4) > 0})
		case k < 8:
			id := ids[rng.IntN(len(ids))]
			a := &catalog.DeliveryAttempted{DeliveryID: id, Attempt: 1 + rng.IntN(4), At: at, URL: "https://example.test/hook",
				LatencyMS: rng.Int64N(900), ResponseExcerpt: texts[rng.IntN(len(texts))], Outcome: domain.OutcomeDelivered}
			if rng.IntN(2) == 0 {
				next := at.Add(time.Minute)
				a.Outcome, a.Error, a.NextAttemptAt, a.StatusCode = domain.OutcomeRetry, texts[rng.IntN(len(texts))], &next, 503
			} else {
				a.StatusCode = 200
			}
			appendEv("delivery-"+id, a)
		case k < 9:
			id := ids[rng.IntN(len(ids))]
			appendEv("delivery-"+id, &catalog.DeliveryResendRequested{DeliveryID: id, RequestedBy: "op", At: at})
		default:
			if rng.IntN(2) == 0 {
				appendEv(fmt.Sprintf("user-%d", 1+rng.Int64N(20)), &catalog.UserErased{OpenUserID: 1 + rng.Int64N(20)})
			} else {
				appendEv(fmt.Sprintf("uploader-%d", i), &catalog.UploaderRegistered{Name: "other family"})
			}
		}
	}
	return log
}

// BenchmarkCatchUpDeliveries replays a recorded tail of delivery records
// into a fresh deliveries read model through its runner and the catalog's
// registry, as a start does; compare µs/event with main's run of the same
// benchmark (its "direct" sub-benchmark was the webhooks package's own
// reader, which this one replaced).
func BenchmarkCatchUpDeliveries(b *testing.B) {
	ctx := context.Background()
	reg := catalog.Registry()
	const tail = 20000
	log := deliveryHistory(b, reg, tail)
	head, err := log.Head(ctx)
	if err != nil {
		b.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	b.Run("registry", func(b *testing.B) {
		for b.Loop() {
			store := memory.New()
			run := subscribe.NewRunner(log, reg, projections.DeliveriesProjector(store), quiet, nil)
			runCtx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); _ = run.Run(runCtx) }()
			err := run.WaitFor(ctx, head)
			cancel()
			<-done
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*tail), "µs/event")
	})
}
