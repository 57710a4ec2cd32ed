// Package metrics holds the platform's Prometheus collectors, so that every
// package reports into one registry served at /metrics.
package metrics

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/healthtech/partner-open-platform/events"
)

// Metrics is the set of collectors of one node.
type Metrics struct {
	Registry         *prometheus.Registry
	HTTPDuration     *prometheus.HistogramVec
	AppendDuration   *prometheus.HistogramVec
	ProjectionEvents *prometheus.CounterVec
	ProjectionLag    *prometheus.GaugeVec
	WebhookAttempts  *prometheus.CounterVec
	WebhookFirst     prometheus.Histogram
	Deliveries       *prometheus.GaugeVec
	RelayEvents      prometheus.Counter
	RelayLag         prometheus.Gauge
	// ProjectionSkipped counts events a projection moved past because they
	// failed on their own: each one is a read-model row that needs a rebuild.
	ProjectionSkipped *prometheus.CounterVec
	// WebhookBreaker is 1 for each app endpoint's current breaker state
	// (closed, open, half_open) and 0 for the others, so an operator sees
	// which partner endpoints are paused.
	WebhookBreaker *prometheus.GaugeVec
	// WebhookBreakerTrips counts how often each endpoint's breaker opened.
	WebhookBreakerTrips *prometheus.CounterVec
	// LeaseHeld is 1 for each lease this node holds, 0 once it gave it up
	// or lost it; LeaseAcquisitions counts this node's acquisitions.
	LeaseHeld         *prometheus.GaugeVec
	LeaseAcquisitions *prometheus.CounterVec

	httpSeries    series[httpKey, prometheus.Observer]
	appendSeries  series[string, prometheus.Observer]
	projectSeries series[string, projectionSeries]
}

// httpKey names a series of HTTPDuration.
type httpKey struct {
	method, route string
	status        int
}

// projectionSeries are a projection's series of ProjectionEvents and
// ProjectionLag.
type projectionSeries struct {
	events prometheus.Counter
	lag    prometheus.Gauge
}

// New registers the collectors in a fresh registry (one per node, so tests
// can run many nodes in one process).
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "platform_http_request_duration_seconds", Help: "HTTP request latency by route and status.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"method", "route", "status"}),
		AppendDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "platform_event_store_append_seconds", Help: "Event-store append latency by outcome.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}, []string{"outcome"}),
		ProjectionEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "platform_projection_events_total", Help: "Events applied by each projection.",
		}, []string{"projection"}),
		ProjectionLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "platform_projection_lag_seconds", Help: "Age of the last event a projection applied when it applied it.",
		}, []string{"projection"}),
	}
	m.WebhookAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "platform_webhook_attempts_total", Help: "Webhook delivery attempts by event type and outcome.",
	}, []string{"event", "outcome"})
	m.WebhookFirst = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "platform_webhook_first_attempt_seconds", Help: "Time from a source event's append to its delivery's first attempt.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
	})
	m.Deliveries = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "platform_webhook_deliveries", Help: "Deliveries by status (pending, retrying, dead_letter, ...), refreshed within a few seconds of a change.",
	}, []string{"status"})
	m.RelayEvents = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "platform_relay_events_total", Help: "Events the relay published and the bus acknowledged.",
	})
	m.RelayLag = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "platform_relay_lag_seconds", Help: "Age of the last event the bus acknowledged when it was acknowledged.",
	})
	m.ProjectionSkipped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "platform_projection_skipped_events_total", Help: "Events a projection could not apply and skipped (see /readyz for their positions).",
	}, []string{"projection"})
	m.WebhookBreaker = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "platform_webhook_endpoint_breaker", Help: "1 for the current breaker state (closed, open, half_open) of each app's webhook endpoint on this node.",
	}, []string{"app_id", "state"})
	m.WebhookBreakerTrips = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "platform_webhook_endpoint_breaker_trips_total", Help: "Times each app's webhook endpoint breaker opened after failures or timeouts in a row.",
	}, []string{"app_id"})
	m.LeaseHeld = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "platform_lease_held", Help: "1 for each single-owner job's lease (projection families, webhook-creation, relay, mail, erasure-purge) this node holds.",
	}, []string{"lease"})
	m.LeaseAcquisitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "platform_lease_acquisitions_total", Help: "Leases this node acquired, by lease: a fast-growing sum over nodes is lease churn.",
	}, []string{"lease"})
	m.Registry.MustRegister(m.LeaseHeld, m.LeaseAcquisitions, m.WebhookBreaker, m.WebhookBreakerTrips, m.ProjectionSkipped, m.HTTPDuration, m.AppendDuration, m.ProjectionEvents, m.ProjectionLag,
		m.WebhookAttempts, m.WebhookFirst, m.Deliveries, m.RelayEvents, m.RelayLag,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveHTTP records a request's latency in HTTPDuration; method is
// already bounded (httpapi.MethodLabel).
func (m *Metrics) ObserveHTTP(method, route string, status int, d time.Duration) {
	m.httpSeries.get(httpKey{method, route, status}, func() prometheus.Observer {
		return m.HTTPDuration.WithLabelValues(method, route, strconv.Itoa(status))
	}).Observe(d.Seconds())
}

// Projected records a batch a projection applied.
func (m *Metrics) Projected(name string, n int, last events.Recorded) {
	s := m.projectSeries.get(name, func() projectionSeries {
		return projectionSeries{events: m.ProjectionEvents.WithLabelValues(name), lag: m.ProjectionLag.WithLabelValues(name)}
	})
	s.events.Add(float64(n))
	s.lag.Set(time.Since(last.Created).Seconds())
}

// Skipped records an event a projection skipped.
func (m *Metrics) Skipped(name string) { m.ProjectionSkipped.WithLabelValues(name).Inc() }

// Store decorates an event store with append latency.
func (m *Metrics) Store(s events.Store) events.Store { return &instrumented{Store: s, m: m} }

type instrumented struct {
	events.Store
	m *Metrics
}

func (s *instrumented) Append(ctx context.Context, stream string, expected events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	start := time.Now()
	res, err := s.Store.Append(ctx, stream, expected, evs...)
	outcome := "ok"
	switch {
	case events.IsConflict(err):
		outcome = "conflict"
	case err != nil:
		outcome = "error"
	}
	s.m.observeAppend(outcome, start)
	return res, err
}

// SubscribeAllFor keeps the wrapped store's filtered subscription.
func (s *instrumented) SubscribeAllFor(ctx context.Context, after events.Position, wants func(string) bool) (events.Subscription, error) {
	return events.SubscribeAllFor(ctx, s.Store, after, wants)
}

// ReadPositions keeps the wrapped store's reads of several positions in
// one pass.
func (s *instrumented) ReadPositions(ctx context.Context, positions []events.Position) ([]events.Recorded, error) {
	return events.ReadPositions(ctx, s.Store, positions)
}

// AppendMulti times an atomic multi-stream append like Append.
func (s *instrumented) AppendMulti(ctx context.Context, parts ...events.StreamAppend) ([]events.AppendResult, error) {
	start := time.Now()
	res, err := events.AppendMulti(ctx, s.Store, parts...)
	outcome := "ok"
	switch {
	case errors.Is(err, events.ErrMultiStreamUnsupported):
		return res, err // nothing was tried
	case events.IsConflict(err):
		outcome = "conflict"
	case err != nil:
		outcome = "error"
	}
	s.m.observeAppend(outcome, start)
	return res, err
}

// observeAppend records an append's latency under its outcome.
func (m *Metrics) observeAppend(outcome string, start time.Time) {
	m.appendSeries.get(outcome, func() prometheus.Observer {
		return m.AppendDuration.WithLabelValues(outcome)
	}).Observe(time.Since(start).Seconds())
}

// Attempted records a webhook attempt; firstDelay is set on a delivery's first attempt.
func (m *Metrics) Attempted(event, outcome string, firstDelay *time.Duration) {
	m.WebhookAttempts.WithLabelValues(event, outcome).Inc()
	if firstDelay != nil {
		m.WebhookFirst.Observe(firstDelay.Seconds())
	}
}

// Relayed records a batch the bus acknowledged.
func (m *Metrics) Relayed(n int, last events.Recorded) {
	m.RelayEvents.Add(float64(n))
	m.RelayLag.Set(time.Since(last.Created).Seconds())
}

// DeliveryCounts publishes the latest count of deliveries per status.
func (m *Metrics) DeliveryCounts(counts map[string]int) {
	for _, status := range []string{"pending", "retrying", "delivered", "abandoned", "dead_letter", "skipped"} {
		m.Deliveries.WithLabelValues(status).Set(float64(counts[status]))
	}
}

// Breaker records an app endpoint's breaker entering state.
func (m *Metrics) Breaker(appID int64, state string) {
	id := strconv.FormatInt(appID, 10)
	for _, st := range []string{"closed", "open", "half_open"} {
		v := 0.0
		if st == state {
			v = 1
		}
		m.WebhookBreaker.WithLabelValues(id, st).Set(v)
	}
	if state == "open" {
		m.WebhookBreakerTrips.WithLabelValues(id).Inc()
	}
}
