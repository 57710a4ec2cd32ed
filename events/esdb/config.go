package esdb

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
)

// discoverAttempts caps one discovery of the official client unless the
// connection string sets maxDiscoverAttempts: while it discovers, the client
// queues every call behind it, so one discovery must stay short; the
// adapter's own prober retries for as long as the server is away.
const discoverAttempts = 3

// ParseConnectionString checks an esdb:// or esdb+discover:// connection
// string the way Open does, so configuration can be refused before start:
// it must parse, and it may not prefer a node other than the leader (the
// adapter reads aggregates and its own writes back; a follower or replica
// can serve them stale).
func ParseConnectionString(connString string) (*esdb.Configuration, error) {
	cfg, err := esdb.ParseConnectionString(connString)
	if err != nil {
		return nil, fmt.Errorf("events/esdb: parse connection string: %w", err)
	}
	if cfg.NodePreference != esdb.NodePreferenceLeader {
		return nil, fmt.Errorf("events/esdb: nodePreference=%s is not supported: commands read aggregates and their own writes back, "+
			"which only the leader serves up to date; remove nodePreference (the default is leader) or set nodePreference=leader", cfg.NodePreference)
	}
	if _, set := queryKey(connString, "maxdiscoverattempts"); !set {
		cfg.MaxDiscoverAttempts = discoverAttempts
	}
	if cfg.MaxDiscoverAttempts < 1 {
		return nil, errors.New("events/esdb: maxDiscoverAttempts must be at least 1")
	}
	return cfg, nil
}

// queryKey finds a connection-string setting by its case-insensitive name.
// The host part of a gossip-seed list (h1:2113,h2:2113) is no URL host, so
// only the query after the first '?' is parsed.
func queryKey(connString, key string) (string, bool) {
	_, query, ok := strings.Cut(connString, "?")
	if !ok {
		return "", false
	}
	values, err := url.ParseQuery(query)
	if err != nil {
		return "", false
	}
	for k, v := range values {
		if strings.EqualFold(k, key) && len(v) > 0 {
			return v[0], true
		}
	}
	return "", false
}
