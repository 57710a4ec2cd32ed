package node

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
	"github.com/healthtech/partner-open-platform/events/esdb"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
	"github.com/healthtech/partner-open-platform/internal/metrics"
	"github.com/healthtech/partner-open-platform/internal/tracing"
)

// eventStore is the write side's log as the node uses it: the opened
// store behind the head tracker and the metrics, and how the node reports it.
type eventStore struct {
	head    *headStore
	adapter string
	// embedded is the log in the data directory (nil: a shared store).
	embedded *bolt.Store
	closers  []func() error
}

// buildEventStore opens the log chosen by the configuration (openEventStore).
func buildEventStore(ctx context.Context, cfg Config, m *metrics.Metrics) (eventStore, error) {
	store, name, err := openEventStore(ctx, cfg)
	if err != nil {
		return eventStore{adapter: name}, fmt.Errorf("event store: %w", err)
	}
	embedded, _ := store.(*bolt.Store)
	return eventStore{head: &headStore{Store: m.Store(store), system: storeSystem(cfg)}, adapter: name, embedded: embedded, closers: []func() error{store.Close}}, nil
}

// openEventStore opens the write side's log chosen by cfg.EventStoreURL, which
// carries PLATFORM_EVENTSTORE_URL (or the older PLATFORM_ESDB_URL): a
// postgres:// URL opens the Postgres event store, any other URL EventStoreDB
// (which must answer within its probe timeout, or the node does not start),
// and none the embedded log in the data directory. It returns the store and
// how the node reports it among its adapters.
func openEventStore(ctx context.Context, cfg Config) (events.Store, string, error) {
	switch {
	case isPostgresURL(cfg.EventStoreURL):
		s, err := pgevents.Open(ctx, cfg.EventStoreURL)
		if err != nil {
			return nil, "", err
		}
		return s, "Postgres", nil
	case cfg.EventStoreURL != "":
		s, err := esdb.Open(cfg.EventStoreURL, esdb.WithLogger(cfg.Logger))
		if err != nil {
			return nil, "", err
		}
		return s, "EventStoreDB", nil
	default:
		path := filepath.Join(cfg.DataDir, "events.db")
		s, err := bolt.Open(path)
		if err != nil {
			return nil, "", err
		}
		return s, "embedded log " + path, nil
	}
}

func isPostgresURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	scheme := strings.ToLower(u.Scheme)
	return scheme == "postgres" || scheme == "postgresql"
}

// sameDatabase reports whether the event store is the Postgres database of
// the read models (the same URL), so read-model queries can see its head.
func sameDatabase(eventStoreURL, readModelURL string) bool {
	return isPostgresURL(eventStoreURL) && eventStoreURL == readModelURL
}

// headStore remembers the position of the last append this node made, so a
// read that misses a fact written moments ago by another app can wait for it.
// It is also where every append of the node gets its span.
type headStore struct {
	events.Store
	system string // the adapter, as spans name it
	mu     sync.Mutex
	last   events.Position
}

// storeSystem names the event store's technology for spans (db.system.name).
func storeSystem(cfg Config) string {
	switch {
	case isPostgresURL(cfg.EventStoreURL):
		return "postgresql"
	case cfg.EventStoreURL != "":
		return "eventstoredb"
	}
	return "bbolt"
}

func (h *headStore) Append(ctx context.Context, stream string, expected events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	span := startAppend(ctx, h.system, stream, 1, len(evs))
	res, err := h.Store.Append(ctx, stream, expected, evs...)
	endAppend(span, res.Position, err)
	if err == nil {
		h.mu.Lock()
		if h.last.Less(res.Position) {
			h.last = res.Position
		}
		h.mu.Unlock()
	}
	return res, err
}

// AppendMulti is Append for an atomic multi-stream append.
func (h *headStore) AppendMulti(ctx context.Context, parts ...events.StreamAppend) ([]events.AppendResult, error) {
	var span trace.Span
	if tracing.On() {
		n := 0
		for _, p := range parts {
			n += len(p.Events)
		}
		stream := ""
		if len(parts) > 0 {
			stream = parts[0].Stream
		}
		span = startAppend(ctx, h.system, stream, len(parts), n)
	}
	res, err := events.AppendMulti(ctx, h.Store, parts...)
	if span != nil {
		var last events.Position
		if err == nil {
			last = events.Last(res)
		}
		endAppend(span, last, err)
	}
	if err == nil {
		last := events.Last(res)
		h.mu.Lock()
		if h.last.Less(last) {
			h.last = last
		}
		h.mu.Unlock()
	}
	return res, err
}

// SubscribeAllFor keeps the wrapped store's filtered subscription.
func (h *headStore) SubscribeAllFor(ctx context.Context, after events.Position, wants func(string) bool) (events.Subscription, error) {
	return events.SubscribeAllFor(ctx, h.Store, after, wants)
}

// ReadPositions keeps the wrapped store's reads of several positions in
// one pass.
func (h *headStore) ReadPositions(ctx context.Context, positions []events.Position) ([]events.Recorded, error) {
	return events.ReadPositions(ctx, h.Store, positions)
}

// Last is the position of this node's latest append.
func (h *headStore) Last() events.Position {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// startAppend begins the span of one append to the event store: the
// stream's category (never its name: it may name a person), how many
// streams and events. nil while tracing is off.
func startAppend(ctx context.Context, system, stream string, streams, evs int) trace.Span {
	if !tracing.On() {
		return nil
	}
	_, span := tracing.Start(ctx, trace.SpanKindClient, "events.append", trace.WithAttributes(
		attribute.String("db.system.name", system),
		attribute.String("db.operation.name", "append"),
		attribute.String("platform.stream.category", tracing.Category(stream)),
		attribute.Int("platform.append.streams", streams),
		attribute.Int("platform.append.events", evs),
	))
	return span
}

// endAppend records the append's outcome: its position, or a conflict
// (an expected revision that did not match: the command decides again),
// or a failure.
func endAppend(span trace.Span, pos events.Position, err error) {
	if span == nil {
		return
	}
	switch {
	case err == nil:
		span.SetAttributes(attribute.String("platform.position", pos.String()))
	case events.IsConflict(err):
		span.SetAttributes(attribute.Bool("platform.append.conflict", true))
	default:
		span.SetStatus(codes.Error, "append failed")
	}
	span.End()
}
