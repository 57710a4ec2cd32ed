package node

import (
	"context"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
	"github.com/healthtech/partner-open-platform/events/esdb"
	pgevents "github.com/healthtech/partner-open-platform/events/postgres"
)

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
