package node_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// BenchmarkBulkResend: an operator resends an app's backlog of 4,000
// deliveries (recorded straight in the embedded log, the app suspended so
// nothing is sent), following next_after to the end; one op is the whole
// backlog. It reports the milliseconds and the process CPU per delivery.
func BenchmarkBulkResend(b *testing.B) {
	const backlog = 4000
	p := start(b, node.Config{DataDir: b.TempDir(), PartnerRateLimit: -1})
	p.client = &http.Client{Timeout: 120 * time.Second}
	b.StopTimer()
	var cpu time.Duration
	var wall time.Duration
	for range b.N {
		a := p.createApp("bulk")
		if res := p.admin("POST", fmt.Sprintf("/admin/v1/apps/%d/suspend", a.ID), map[string]any{"reason": "backlog"}); res.Status != http.StatusOK {
			b.Fatalf("suspend: %d %s", res.Status, res.Raw)
		}
		appendBacklog(b, p, a.ID, backlog, 0)
		if err := p.node.WaitCaughtUp(b.Context()); err != nil {
			b.Fatal(err)
		}
		c0, t0 := cpuTime(b), time.Now()
		b.StartTimer()
		queued, _ := resendAll(b, p, a.ID)
		b.StopTimer()
		cpu, wall = cpu+cpuTime(b)-c0, wall+time.Since(t0)
		if queued != backlog {
			b.Fatalf("queued %d of %d", queued, backlog)
		}
	}
	b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "ms/backlog")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*backlog), "cpu-µs/delivery")
}

// backlogPrefix starts the ids appendBacklog gives its deliveries.
const backlogPrefix = "b0000000-"

// appendBacklog records n deliveries of app straight in the log (never
// sent: the app is suspended or has no URL), the first pending of them
// pending, the rest skipped, and returns their ids in order.
func appendBacklog(t testing.TB, p *platform, appID int64, n, pending int) []string {
	t.Helper()
	ids := make([]string, n)
	for start := 0; start < n; start += 500 {
		var parts []events.StreamAppend
		for i := start; i < min(n, start+500); i++ {
			// UUID-shaped like the dispatcher's ids (the document says
			// format: uuid and the lint validates every recorded answer).
			ids[i] = fmt.Sprintf("%s%04x-4000-8000-%06x%06x", backlogPrefix, appID&0xffff, appID&0xffffff, i)
			ev, err := p.node.Registry.Encode(catalog.DeliveryCreated{
				DeliveryID: ids[i], AppID: appID, Event: "user.profile.updated", SourceEventID: ids[i],
				SourceStream: "bulk-source", SourceRecordedAt: time.Now().UTC(),
				Body: fmt.Sprintf(`{"event":"user.profile.updated","delivery_id":%q}`, ids[i]), Deliver: i < pending,
			}, events.Metadata{AppID: appID, Actor: "dispatcher", OccurredAt: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, events.StreamAppend{Stream: domain.DeliveryStream(ids[i]), Expected: events.NoStream(), Events: []events.Proposed{ev}})
		}
		if _, err := events.AppendMulti(t.Context(), p.node.Events, parts...); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// resendAll calls the bulk resend of app, following next_after to the
// end, and returns the deliveries queued and the calls it took.
func resendAll(t testing.TB, p *platform, appID int64) (queued, calls int) {
	t.Helper()
	after := ""
	for calls = 1; calls <= 100; calls++ {
		path := fmt.Sprintf("/admin/v1/apps/%d/deliveries/resend", appID)
		if after != "" {
			path += "?after=" + after
		}
		res := p.admin("POST", path, nil)
		if res.Status != http.StatusAccepted {
			t.Fatalf("bulk resend: %d %s", res.Status, res.Raw)
		}
		var out struct {
			Queued    int    `json:"queued"`
			NextAfter string `json:"next_after"`
		}
		res.data(t, &out)
		queued += out.Queued
		if out.NextAfter == "" {
			return queued, calls
		}
		after = out.NextAfter
	}
	t.Fatal("bulk resend still had more after 100 calls")
	return 0, 0
}
