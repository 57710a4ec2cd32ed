package portal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
)

// An endpoint's health over the last 24 hours, drawn on its delivery log
// as a small inline SVG made on the server (no script, no external
// chart library; the CSP allows neither): per hour, the share of attempts
// that delivered (a bar) and their mean latency (a line).

// healthWindow is the span the chart covers; healthBuckets its bars.
const (
	healthWindow  = 24 * time.Hour
	healthBuckets = 24
	// healthDeliveries bounds the deliveries read for the chart: the most
	// recent ones created in the window.
	healthDeliveries = 200
)

// endpointHealth is what the chart shows, with its figures for people
// (and for tests) next to it.
type endpointHealth struct {
	Attempts  int
	Delivered int
	Rate      string // "97.5%", "" without attempts
	MeanMS    int64
	MaxMS     int64
	Truncated bool // more deliveries than healthDeliveries were created in the window
	Since     time.Time
	Chart     template.HTML
}

type healthBucket struct {
	attempts, delivered int
	latencyMS           int64
}

// health reads the attempts of one endpoint's deliveries created in the
// last 24 hours and draws them.
func (s *Server) health(ctx context.Context, appID, endpointID int64) (endpointHealth, error) {
	now := s.Now().UTC()
	since := now.Add(-healthWindow)
	list, err := s.ReadModel.Deliveries(ctx, domain.DeliveryFilter{AppID: appID, EndpointID: &endpointID, From: since,
		Newest: true, Limit: healthDeliveries, WithoutBodies: true})
	if err != nil {
		return endpointHealth{}, err
	}
	h := endpointHealth{Since: since, Truncated: len(list) == healthDeliveries}
	var buckets [healthBuckets]healthBucket
	var sum int64
	for _, d := range list {
		_, attempts, err := s.ReadModel.Delivery(ctx, appID, d.DeliveryID)
		if err != nil {
			return endpointHealth{}, err
		}
		for _, a := range attempts {
			if a.At.Before(since) || a.At.After(now) {
				continue
			}
			i := int(a.At.Sub(since) * healthBuckets / healthWindow)
			i = min(max(i, 0), healthBuckets-1)
			b := &buckets[i]
			b.attempts++
			b.latencyMS += a.LatencyMS
			h.Attempts++
			sum += a.LatencyMS
			h.MaxMS = max(h.MaxMS, a.LatencyMS)
			if a.Outcome == "delivered" {
				b.delivered++
				h.Delivered++
			}
		}
	}
	if h.Attempts > 0 {
		h.Rate = fmt.Sprintf("%.1f%%", 100*float64(h.Delivered)/float64(h.Attempts))
		h.MeanMS = sum / int64(h.Attempts)
	}
	h.Chart = drawHealth(buckets[:], h.MaxMS, s.when(since))
	return h, nil
}

// drawHealth draws the bars (success share per hour, green delivered and
// red failed) and the mean latency line, scaled to the window's maximum.
func drawHealth(buckets []healthBucket, maxMS int64, since string) template.HTML {
	const w, h, top, bottom, left = 480, 140, 10, 20, 4
	plot := float64(h - top - bottom)
	bar := float64(w-2*left) / float64(len(buckets))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" role="img" viewBox="0 0 %d %d" width="%d" height="%d" xmlns="http://www.w3.org/2000/svg">`, w, h, w, h)
	b.WriteString(`<title>Share of attempts delivered (bars) and mean latency (line) per hour, last 24 hours</title>`)
	var line []string
	for i, k := range buckets {
		x := left + float64(i)*bar
		if k.attempts == 0 {
			continue
		}
		ok := plot * float64(k.delivered) / float64(k.attempts)
		fmt.Fprintf(&b, `<rect class="bar-bad" x="%.1f" y="%d" width="%.1f" height="%.1f"><title>%d attempts, %d delivered</title></rect>`,
			x+1, top, bar-2, plot-ok, k.attempts, k.delivered)
		fmt.Fprintf(&b, `<rect class="bar-ok" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%d attempts, %d delivered</title></rect>`,
			x+1, float64(top)+plot-ok, bar-2, ok, k.attempts, k.delivered)
		if maxMS > 0 {
			mean := float64(k.latencyMS) / float64(k.attempts)
			line = append(line, fmt.Sprintf("%.1f,%.1f", x+bar/2, float64(top)+plot-plot*mean/float64(maxMS)))
		}
	}
	if len(line) > 1 {
		fmt.Fprintf(&b, `<polyline class="latency" points="%s"/>`, strings.Join(line, " "))
	} else if len(line) == 1 {
		x, y, _ := strings.Cut(line[0], ",")
		fmt.Fprintf(&b, `<circle class="latency" cx="%s" cy="%s" r="3"/>`, x, y)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`, left, h-5, template.HTMLEscapeString(since))
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">now</text>`, w-left, h-5)
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // built here from numbers and a formatted time only
}

// prettyPayload indents a delivery's JSON body for reading; a body that
// is not JSON is shown as it is.
func prettyPayload(body []byte) string {
	var out bytes.Buffer
	if err := json.Indent(&out, body, "", "  "); err != nil {
		return string(body)
	}
	return out.String()
}

func init() {
	funcs["payload"] = prettyPayload
}
