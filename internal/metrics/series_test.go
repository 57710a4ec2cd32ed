package metrics_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/internal/metrics"
)

// Requests, appends and projection batches are counted in the series their
// labels name, each observation once, whichever series a hot path found
// before (the series are kept per key, not looked up per observation).
func TestObservationsLandInTheirLabelsSeries(t *testing.T) {
	m := metrics.New()
	for _, o := range []struct {
		method, route string
		status        int
	}{{"POST", "/a", 201}, {"POST", "/a", 201}, {"POST", "/a", 409}, {"GET", "/a", 201}, {"POST", "/b", 201}} {
		m.ObserveHTTP(o.method, o.route, o.status, time.Millisecond)
	}
	store := m.Store(memory.New())
	for i := range 3 {
		if _, err := store.Append(context.Background(), "s", events.NoStream(), events.Proposed{ID: string(rune('a' + i)), Type: "t", Data: []byte(`{}`)}); err != nil && !events.IsConflict(err) {
			t.Fatal(err)
		}
	}
	m.Projected("users", 3, events.Recorded{Created: time.Now()})
	m.Projected("users", 4, events.Recorded{Created: time.Now()})
	m.Projected("apps", 1, events.Recorded{Created: time.Now()})
	want := `
platform_http_request_duration_seconds_count{method="GET",route="/a",status="201"} 1
platform_http_request_duration_seconds_count{method="POST",route="/a",status="201"} 2
platform_http_request_duration_seconds_count{method="POST",route="/a",status="409"} 1
platform_http_request_duration_seconds_count{method="POST",route="/b",status="201"} 1
platform_event_store_append_seconds_count{outcome="conflict"} 2
platform_event_store_append_seconds_count{outcome="ok"} 1
platform_projection_events_total{projection="apps"} 1
platform_projection_events_total{projection="users"} 7
`
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	// Each series as the text format's count line names it.
	var b strings.Builder
	for _, f := range families {
		for _, s := range f.GetMetric() {
			name, value := f.GetName(), s.GetCounter().GetValue()
			if h := s.GetHistogram(); h != nil {
				name, value = name+"_count", float64(h.GetSampleCount())
			}
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			fmt.Fprintf(&b, "%s{%s} %g\n", name, strings.Join(labels, ","), value)
		}
	}
	text := b.String()
	for _, line := range strings.Split(strings.TrimSpace(want), "\n") {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("missing %s in\n%s", line, text)
		}
	}
}
