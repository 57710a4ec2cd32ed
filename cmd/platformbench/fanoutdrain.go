package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// fanoutDrainEndpoints are the endpoint counts webhook-fanout-drain
// compares: one delivery per event, and an app's most.
var fanoutDrainEndpoints = []int{1, 10}

// FanoutDrainRun is one drain of webhook-fanout-drain: Events profile
// updates, each delivered to Endpoints endpoints, resent as a backlog and
// sent after the app's resume.
type FanoutDrainRun struct {
	Endpoints  int
	Events     int           // profile updates written (each one event)
	Queued     int           // deliveries resent: Events × Endpoints
	Received   int           // of them, received before the drain deadline
	Took       time.Duration // resume → the last of them received
	CPU        time.Duration // platform CPU from the resume to the last receipt
	Bad        int64         // deliveries with a bad signature
	LoadBefore string        // the machine's load average when the drain began
}

// CPUPerEvent is the platform CPU the drain spent per event (all of its
// endpoints' deliveries), 0 when not measured.
func (r FanoutDrainRun) CPUPerEvent() float64 {
	if r.Events <= 0 || r.CPU <= 0 {
		return 0
	}
	return float64(r.CPU.Microseconds()) / float64(r.Events)
}

// WebhookFanoutDrain measures what delivering one event to 1 and to 10
// endpoints costs the platform, with webhook-drain's method so that
// nothing else runs in the measured window: per endpoint count, an app
// with that many loopback endpoints (each its own secret) gets -fanout-events
// profile updates, all delivered as they happen (not measured); then the
// app is suspended, every one of those deliveries resent (the backlog), and
// the platform's CPU from the resume to the last receipt is divided by the
// events. The counts alternate, repeats times, so a loaded machine's drift
// touches both alike; the ratio is taken per pair.
func (b *Bench) WebhookFanoutDrain(ctx context.Context, repeats int) ([]FanoutDrainRun, error) {
	var out []FanoutDrainRun
	for i := range max(repeats, 1) {
		for _, n := range fanoutDrainEndpoints {
			r, err := b.fanoutDrainRun(ctx, n, i)
			if err != nil {
				return nil, fmt.Errorf("%d endpoints, repeat %d: %w", n, i+1, err)
			}
			out = append(out, r)
		}
	}
	return out, nil
}

func (b *Bench) fanoutDrainRun(ctx context.Context, endpoints, repeat int) (FanoutDrainRun, error) {
	app, err := b.P.createApp(ctx, fmt.Sprintf("fandrain%d-%d-%s", endpoints, repeat, b.run))
	if err != nil {
		return FanoutDrainRun{}, err
	}
	rcvs, err := b.fanoutEndpoints(ctx, app, endpoints)
	defer func() {
		for _, r := range rcvs {
			r.Close()
		}
	}()
	if err != nil {
		return FanoutDrainRun{}, err
	}
	written, err := b.patchEach(ctx, app, "fandrain", b.Opt.FanoutEvents)
	if err != nil {
		return FanoutDrainRun{}, fmt.Errorf("writes: %w", err)
	}
	res := FanoutDrainRun{Endpoints: endpoints, Events: written}
	// Every endpoint received every write, and nothing else arrives,
	// before the backlog is made.
	if err := waitQuiet(ctx, rcvs, res.Events, b.Opt.Drain); err != nil {
		return res, err
	}
	appPath := "/admin/v1/apps/" + strconv.FormatInt(app.ID, 10)
	if err := b.P.admin(ctx, http.MethodPost, appPath+"/suspend", map[string]any{"reason": "webhook fan-out drain benchmark"}, http.StatusOK, nil); err != nil {
		return res, fmt.Errorf("suspend: %w", err)
	}
	seen := 0
	for _, r := range rcvs {
		seen += r.count()
	}
	queued, err := b.P.resendBacklog(ctx, app.ID, seen)
	if err != nil {
		return res, err
	}
	res.Queued = queued
	_ = b.settle(ctx, b.Opt.Drain) // the resends are projected before the window opens
	base := 0
	for _, r := range rcvs {
		base += r.total()
	}
	res.LoadBefore = loadAverage()
	cpu0, cpuErr := b.platformCPU()
	resumed := time.Now()
	if err := b.P.admin(ctx, http.MethodPost, appPath+"/resume", nil, http.StatusOK, nil); err != nil {
		return res, fmt.Errorf("resume: %w", err)
	}
	deadline := time.Now().Add(b.Opt.Drain)
	got := 0
	for ctx.Err() == nil {
		got = 0
		for _, r := range rcvs {
			got += r.total()
		}
		if got-base >= res.Queued || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	res.Took = time.Since(resumed)
	cpu1, cpuErr1 := b.platformCPU()
	if cpuErr == nil && cpuErr1 == nil {
		res.CPU = cpu1 - cpu0
	}
	res.Received = min(got-base, res.Queued)
	for _, r := range rcvs {
		res.Bad += r.bad.Load()
	}
	return res, nil
}

// waitQuiet waits, at most bound, until each receiver has every one of
// the events and no delivery arrived for half a second.
func waitQuiet(ctx context.Context, rcvs []*Receiver, events int, bound time.Duration) error {
	total := func() (all, least int) {
		least = -1
		for _, r := range rcvs {
			all += r.total()
			if n := r.count(); least < 0 || n < least {
				least = n
			}
		}
		return all, least
	}
	deadline := time.Now().Add(bound)
	last, _ := total()
	still := time.Now()
	for ctx.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		all, least := total()
		if all != last {
			last, still = all, time.Now()
		} else if least >= events && time.Since(still) >= 500*time.Millisecond {
			return nil
		}
	}
	_, least := total()
	return fmt.Errorf("writes: an endpoint had %d of %d deliveries after %s", least, events, bound)
}

// loadAverage is /proc/loadavg's first three fields ("" where unknown).
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// fanoutDrainRows are webhook-fanout-drain's lines: per endpoint count, the
// median platform CPU per event over the repeats (with their range), and
// on the last, the fan-out ratio (CPU per event with 10 endpoints ÷ with
// 1), the median of the repeats' ratios with their range.
func fanoutDrainRows(runs []FanoutDrainRun, store string, o Options) []Row {
	per := map[int][]float64{}
	loads := map[int][]string{}
	var rows []Row
	for _, r := range runs {
		per[r.Endpoints] = append(per[r.Endpoints], r.CPUPerEvent())
		loads[r.Endpoints] = append(loads[r.Endpoints], r.LoadBefore)
	}
	ratios := fanoutRatios(runs)
	for _, n := range fanoutDrainEndpoints {
		var rr []FanoutDrainRun
		for _, r := range runs {
			if r.Endpoints == n {
				rr = append(rr, r)
			}
		}
		if len(rr) == 0 {
			continue
		}
		row := Row{Scenario: fmt.Sprintf("webhook fan-out drain: %d endpoint%s", n, plural(n)), Store: store, Clients: o.PatchClients}
		var queued, received int
		var took time.Duration
		for _, r := range rr {
			queued, received, took = queued+r.Queued, received+r.Received, took+r.Took
			row.Errors += int64(r.Queued-r.Received) + r.Bad
		}
		if took > 0 {
			row.Rate = float64(received) / took.Seconds()
		}
		med, lo, hi := spread(per[n])
		row.PlatformCPUus = med
		row.Note = fmt.Sprintf("%d runs of %d events × %d endpoint%s resent as a backlog and sent after the app's resume: platform CPU %.0f µs per event (runs %.0f–%.0f), %.0f µs per delivery; rate = deliveries/s of the drains",
			len(rr), rr[0].Events, n, plural(n), med, lo, hi, med/float64(n))
		if n == fanoutDrainEndpoints[len(fanoutDrainEndpoints)-1] && len(ratios) > 0 {
			m, l, h := spread(ratios)
			row.Ratio = m
			row.Baseline = "1 endpoint"
			row.Note += fmt.Sprintf("; fan-out ratio (CPU per event, %d endpoints ÷ 1) %.2f× (runs %.2f–%.2f×, goal ≤ 3×)", n, m, l, h)
		}
		row.Note += fmt.Sprintf("; load average before each drain: %s", strings.Join(loads[n], "; "))
		rows = append(rows, row)
	}
	return rows
}

// fanoutRatios pairs each run with the most endpoints with the one-endpoint
// run before it (the counts alternate) and returns their CPU-per-event ratios.
func fanoutRatios(runs []FanoutDrainRun) []float64 {
	var out []float64
	one := 0.0
	for _, r := range runs {
		switch r.Endpoints {
		case 1:
			one = r.CPUPerEvent()
		case fanoutDrainEndpoints[len(fanoutDrainEndpoints)-1]:
			if one > 0 && r.CPUPerEvent() > 0 {
				out = append(out, r.CPUPerEvent()/one)
			}
			one = 0
		}
	}
	return out
}

// spread is the median, least and most of xs (zeros when empty).
func spread(xs []float64) (med, lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	med = s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return med, s[0], s[len(s)-1]
}
