package node

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
	"github.com/healthtech/partner-open-platform/events/esdb"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
	"github.com/healthtech/partner-open-platform/internal/metrics"
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
	return eventStore{head: &headStore{Store: m.Store(store)}, adapter: name, embedded: embedded, closers: []func() error{store.Close}}, nil
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
type headStore struct {
	events.Store
	mu   sync.Mutex
	last events.Position
}

func (h *headStore) Append(ctx context.Context, stream string, expected events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	res, err := h.Store.Append(ctx, stream, expected, evs...)
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
	res, err := events.AppendMulti(ctx, h.Store, parts...)
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

// Last is the position of this node's latest append.
func (h *headStore) Last() events.Position {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}
