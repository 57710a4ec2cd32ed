package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/healthtech/partner-open-platform/events"
)

// LagCap bounds how many unapplied events a scrape counts per follower, so a
// far-behind follower costs one bounded read; the gauge then reads LagCap.
const LagCap = 10000

// Follower is something that follows the log from a position: a projection
// or the relay.
type Follower struct {
	Kind     string // "projection", "webhooks" or "relay"
	Name     string
	Position func(ctx context.Context) (events.Position, error)
}

// lagCollector measures, when scraped, how far each follower is behind the
// head of the log in events and in the age of its oldest unapplied event:
// unlike the age of the last applied event, both keep growing while a
// follower is stuck.
type lagCollector struct {
	store     events.Store
	followers func() []Follower
	behind    *prometheus.Desc
	oldest    *prometheus.Desc
}

// WatchLag registers the lag of the followers (read at every scrape) in the
// node's registry.
func (m *Metrics) WatchLag(store events.Store, followers func() []Follower) {
	m.Registry.MustRegister(&lagCollector{
		store: store, followers: followers,
		behind: prometheus.NewDesc("platform_follower_events_behind",
			"Events in the log after the follower's position (counted up to 10000): projections, delivery creation and the relay.", []string{"kind", "name"}, nil),
		oldest: prometheus.NewDesc("platform_follower_oldest_unapplied_seconds",
			"Age of the oldest event the follower has not applied yet; 0 when caught up.", []string{"kind", "name"}, nil),
	})
}

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.behind; ch <- c.oldest }

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	for _, f := range c.followers() {
		behind, oldest, ok := Lag(context.Background(), c.store, f)
		if !ok {
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.behind, prometheus.GaugeValue, float64(behind), f.Kind, f.Name)
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, oldest.Seconds(), f.Kind, f.Name)
	}
}

// Lag counts the events after the follower's position (at most LagCap) and
// the age of the first of them; ok is false when the position or the log
// could not be read within a second.
func Lag(ctx context.Context, store events.Store, f Follower) (behind int, oldest time.Duration, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	pos, err := f.Position(ctx)
	if err != nil {
		return 0, 0, false
	}
	recs, err := store.ReadAll(ctx, pos, LagCap)
	if err != nil {
		return 0, 0, false
	}
	if len(recs) == 0 {
		return 0, 0, true
	}
	return len(recs), max(0, time.Since(recs[0].Created)), true
}
