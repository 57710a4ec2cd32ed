package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// DrainResult is the webhook-drain scenario's outcome: how fast the
// platform sends a backlog it already holds, with the receiver in this
// process, so the receiver's CPU is not the platform's.
type DrainResult struct {
	Queued    int           // deliveries the bulk resend put back in the queue
	Received  int           // of them, received before the drain deadline
	Took      time.Duration // resume → the last of them received
	Latency   *Latencies    // resume → each of them received
	ResendFor time.Duration // how long the bulk resend call took (the backlog's appends)
	CPU       time.Duration // the platform's CPU (user+system) from resume to the last receipt; 0 when unknown
	Mallocs   float64       // the platform's heap allocations over the same span (its /metrics); -1 when unknown
	Bad       int64         // deliveries with a bad signature
}

// WebhookDrain measures the sender's drain capacity, writes first: an app
// whose webhook URL is this process's receiver gets -drain-backlog profile
// updates (each delivered as it happens), is suspended (its webhooks wait,
// partner calls are refused), has every delivery resent by the bulk resend
// (the backlog),
// and is resumed; the rate is the backlog over the time
// from the resume to its last delivery received. The resent deliveries are
// the same deliveries again (same delivery_id, a longer stream: created,
// delivered, resend requested), so an attempt of them costs what a first
// attempt costs plus the two earlier events' decode.
func (b *Bench) WebhookDrain(ctx context.Context) (DrainResult, error) {
	app, err := b.P.createApp(ctx, "drain-"+b.run)
	if err != nil {
		return DrainResult{}, err
	}
	rcv, err := startReceiver(app.WebhookSecret)
	if err != nil {
		return DrainResult{}, err
	}
	defer rcv.Close()
	appPath := "/admin/v1/apps/" + strconv.FormatInt(app.ID, 10)
	if err := b.P.admin(ctx, http.MethodPatch, appPath, map[string]any{"webhook_url": rcv.URL}, http.StatusOK, nil); err != nil {
		return DrainResult{}, fmt.Errorf("set webhook URL (is PLATFORM_WEBHOOK_ALLOW_LOOPBACK on?): %w", err)
	}
	written, err := b.patchEach(ctx, app, "drain", b.Opt.DrainBacklog)
	if err != nil {
		return DrainResult{}, fmt.Errorf("backlog writes: %w", err)
	}
	// Every write delivered once, and nothing else arriving, before the
	// backlog is made: the drain must time the backlog alone.
	deadline := time.Now().Add(b.Opt.Drain)
	last, still := rcv.total(), time.Now()
	for ctx.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if n := rcv.total(); n != last {
			last, still = n, time.Now()
		} else if rcv.count() >= written && time.Since(still) >= 500*time.Millisecond {
			break
		}
	}
	if got := rcv.count(); got < written {
		return DrainResult{}, fmt.Errorf("backlog writes: %d of %d delivered after %s", got, written, b.Opt.Drain)
	}
	if err := b.P.admin(ctx, http.MethodPost, appPath+"/suspend", map[string]any{"reason": "webhook drain benchmark"}, http.StatusOK, nil); err != nil {
		return DrainResult{}, fmt.Errorf("suspend: %w", err)
	}
	// The backlog is made as an operator makes it after an outage: the
	// app's bulk resend, which queues its deliveries again in the delivery
	// log's order, a page per grouped append.
	t := time.Now()
	queued, err := b.P.resendBacklog(ctx, app.ID, rcv.count())
	if err != nil {
		return DrainResult{}, err
	}
	res := DrainResult{Queued: queued, ResendFor: time.Since(t), Latency: &Latencies{}}
	base := rcv.total()
	m0, mErr := b.P.mallocs(ctx)
	cpu0, cpuErr := b.platformCPU()
	resumed := time.Now()
	if err := b.P.admin(ctx, http.MethodPost, appPath+"/resume", nil, http.StatusOK, nil); err != nil {
		return DrainResult{}, fmt.Errorf("resume: %w", err)
	}
	deadline = time.Now().Add(b.Opt.Drain)
	for rcv.total() < base+res.Queued && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	cpu1, cpuErr1 := b.platformCPU()
	if cpuErr == nil && cpuErr1 == nil {
		res.CPU = cpu1 - cpu0
	}
	res.Mallocs = -1
	if m1, err := b.P.mallocs(ctx); mErr == nil && err == nil {
		res.Mallocs = m1 - m0
	}
	rcv.mu.Lock()
	got := rcv.all[min(base, len(rcv.all)):]
	got = got[:min(len(got), res.Queued)]
	lat := make([]time.Duration, len(got))
	for i, at := range got {
		lat[i] = at.Sub(resumed)
	}
	rcv.mu.Unlock()
	res.Received, res.Bad = len(got), rcv.bad.Load()
	res.Latency.Add(lat)
	if len(got) > 0 {
		res.Took = got[len(got)-1].Sub(resumed)
	}
	return res, nil
}

// mallocs is the platform's count of heap allocations so far
// (go_memstats_mallocs_total on /metrics): unlike its CPU, a count the
// machine's load does not move, so drains on a busy machine compare.
func (p *Platform) mallocs(ctx context.Context) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.Base+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	res, err := p.HTTP.Do(req)
	if err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("metrics: status %d", res.StatusCode)
	}
	return parseMallocs(res.Body)
}

// parseMallocs reads go_memstats_mallocs_total from Prometheus text.
func parseMallocs(r io.Reader) (float64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_mallocs_total "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	return 0, errors.New("metrics: no go_memstats_mallocs_total")
}

// clockTick is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// platformCPU is the platform process's CPU time so far (user + system),
// read from /proc when -platform-pid names it.
func (b *Bench) platformCPU() (time.Duration, error) {
	if b.Opt.PlatformPID <= 0 {
		return 0, fmt.Errorf("no -platform-pid")
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(b.Opt.PlatformPID) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("platform CPU: %w", err)
	}
	return parseStatCPU(string(raw))
}

// parseStatCPU reads utime + stime (fields 14 and 15) of a /proc/PID/stat
// line; the command name (field 2) may hold spaces, so fields count from
// its closing parenthesis.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("platform CPU: no command name in %q", stat)
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, fmt.Errorf("platform CPU: %d fields after the command name", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("platform CPU: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// drainRow is webhook-drain's line: deliveries/s of the backlog, p50/p99
// from the resume to each receipt, against the raw append of as many
// clients as wrote the backlog.
func drainRow(res DrainResult, store string, o Options, raw Measured) Row {
	r := Row{Scenario: "webhook drain (backlog, resume→receipt)", Store: store, Clients: o.PatchClients,
		P50ms: ms(res.Latency.Quantile(0.5)), P99ms: ms(res.Latency.Quantile(0.99)),
		Errors: int64(res.Queued-res.Received) + res.Bad, Baseline: "raw append", BaseRate: raw.Rate()}
	if res.Took > 0 {
		r.Rate = float64(res.Received) / res.Took.Seconds()
	}
	if r.BaseRate > 0 {
		r.Ratio = r.Rate / r.BaseRate
	}
	cpu := "platform CPU not measured (no -platform-pid)"
	if res.CPU > 0 && res.Received > 0 {
		cpu = fmt.Sprintf("platform CPU %.0f µs/delivery", float64(res.CPU.Microseconds())/float64(res.Received))
	}
	if res.Mallocs >= 0 && res.Received > 0 {
		cpu += fmt.Sprintf(", %.0f allocations/delivery", res.Mallocs/float64(res.Received))
	}
	r.Note = fmt.Sprintf("backlog of %d resent deliveries (resends took %s) sent after the app's resume, receiver in the load process; %s; errors = %d not received after %s + %d bad signatures",
		res.Queued, res.ResendFor.Round(time.Millisecond), cpu, res.Queued-res.Received, o.Drain, res.Bad)
	return r
}

// patchEach registers one user per PATCH client of app and PATCHes each
// user's profile until about total writes were made, one webhook-causing
// event each; it returns how many.
func (b *Bench) patchEach(ctx context.Context, app App, label string, total int) (int, error) {
	c := b.Opt.PatchClients
	per := max(1, total/c)
	err := forEach(ctx, c, c, func(ctx context.Context, _ int) error {
		user, err := b.register(ctx, app, label)
		if err != nil {
			return err
		}
		for range per {
			if err := b.patch(ctx, app, user); err != nil {
				return err
			}
		}
		return nil
	})
	return c * per, err
}

// resendBacklog calls the bulk resend of app's user.profile.updated
// deliveries (the drains' backlog), following next_after to the end, and
// returns how many it queued, which must be the want the receivers had.
func (p *Platform) resendBacklog(ctx context.Context, appID int64, want int) (int, error) {
	path := "/admin/v1/apps/" + strconv.FormatInt(appID, 10) + "/deliveries/resend?event=user.profile.updated"
	queued, after := 0, ""
	for calls := 0; calls < 1000; calls++ {
		q := path
		if after != "" {
			q += "&after=" + url.QueryEscape(after)
		}
		var out struct {
			Queued    int    `json:"queued"`
			NextAfter string `json:"next_after"`
		}
		if err := p.admin(ctx, http.MethodPost, q, nil, http.StatusAccepted, &out); err != nil {
			return queued, fmt.Errorf("bulk resend: %w", err)
		}
		queued += out.Queued
		if out.NextAfter == "" {
			if queued != want {
				return queued, fmt.Errorf("the bulk resend queued %d deliveries, the receivers had %d", queued, want)
			}
			return queued, nil
		}
		after = out.NextAfter
	}
	return queued, fmt.Errorf("bulk resend: still more after 1000 calls")
}
