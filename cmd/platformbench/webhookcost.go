package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// SystemCost is what the whole system (the platform and its Postgres
// server) spent in a span: CPU of each, and the Postgres transactions of
// the platform's database (xact_commit + xact_rollback).
type SystemCost struct {
	Platform, Postgres time.Duration
	Xacts              int64
	Span               time.Duration
}

// systemSample is the cumulative counters SystemCost is the difference of.
type systemSample struct {
	at                 time.Time
	platform, postgres time.Duration
	xacts              int64
}

func (s systemSample) since(from systemSample) SystemCost {
	return SystemCost{Platform: s.platform - from.platform, Postgres: s.postgres - from.postgres,
		Xacts: s.xacts - from.xacts, Span: s.at.Sub(from.at)}
}

// sampleSystem reads the platform's CPU (-platform-pid), the Postgres
// server's (-postgres-pid: the postmaster, its live children and the
// children it reaped) and the platform database's transactions
// (-pg-stats-url, -pg-stats-db). A counter that cannot be read stays 0.
func (b *Bench) sampleSystem(ctx context.Context) systemSample {
	s := systemSample{at: time.Now()}
	if b.Opt.PlatformPID > 0 {
		s.platform = threadsCPU(b.Opt.PlatformPID)
	}
	if b.Opt.PostgresPID > 0 {
		s.postgres = processTreeCPU(b.Opt.PostgresPID)
	}
	if b.Opt.PGStatsURL != "" && b.Opt.PGStatsDB != "" {
		s.xacts, _ = b.stats.xacts(ctx, b.Opt.PGStatsURL, b.Opt.PGStatsDB)
	}
	return s
}

// statsConn is the connection sampleSystem reads the transaction counts
// over, kept open between samples: a connection per sample cost the
// Postgres server a backend's start and exit (about 6 ms of CPU) inside
// the span being measured, 0.6 ms/s of an 11 s idle row.
type statsConn struct {
	mu   sync.Mutex
	conn *pgx.Conn
}

// xacts is databaseXacts over the kept connection (made, or made again
// after a failure, on first use).
func (s *statsConn) xacts(ctx context.Context, url, db string) (int64, error) {
	var n int64
	err := s.do(ctx, url, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, xactsSQL, db).Scan(&n)
	})
	return n, err
}

// do runs f on the kept connection to url.
func (s *statsConn) do(ctx context.Context, url string, f func(c *pgx.Conn) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil || s.conn.IsClosed() {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		s.conn = c
	}
	err := f(s.conn)
	if err != nil {
		s.conn.Close(ctx)
		s.conn = nil
	}
	return err
}

const xactsSQL = `SELECT coalesce(sum(xact_commit + xact_rollback), 0)::bigint FROM pg_stat_database WHERE datname = $1`

// processTreeCPU is the CPU time of pid, of its live children and of the
// children it has reaped (a Postgres backend's time moves to the
// postmaster's cutime/cstime when it exits). Live processes are read from
// schedstat (nanoseconds): utime and stime are whole clock ticks (10 ms),
// truncated per process, which left an 11 s idle row of a dozen processes
// a resolution of several ms/s.
func processTreeCPU(pid int) time.Duration {
	var total time.Duration
	for _, p := range processTree(pid) {
		total += p.cpu
	}
	return total
}

// treeProcess is one process of processTree: its pid (0 for the reaped
// children's total), its command line (a Postgres process's title, e.g.
// "postgres: autovacuum worker db") and its CPU so far.
type treeProcess struct {
	pid int
	cmd string
	cpu time.Duration
}

// processTree is pid, its live children and the children it has reaped
// (one entry, pid 0), each with its CPU time so far.
func processTree(pid int) []treeProcess {
	dir := "/proc/" + strconv.Itoa(pid)
	out := []treeProcess{{pid: pid, cmd: cmdline(dir), cpu: runtimeOf(dir)}}
	if raw, err := os.ReadFile(dir + "/stat"); err == nil {
		out = append(out, treeProcess{cmd: "(reaped children)", cpu: statTicks(string(raw), 13, 15)}) // cutime cstime
	}
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		stat := string(raw)
		i := strings.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(stat[i+1:])
		if len(f) < 13 || f[1] != strconv.Itoa(pid) { // f[1] is field 4, the parent
			continue
		}
		child, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		out = append(out, treeProcess{pid: child, cmd: cmdline(filepath.Dir(p)), cpu: runtimeOf(filepath.Dir(p))})
	}
	return out
}

// cmdline is the command line of the process at dir, its arguments joined
// by spaces.
func cmdline(dir string) string {
	raw, _ := os.ReadFile(dir + "/cmdline")
	return strings.TrimSpace(strings.ReplaceAll(string(raw), "\x00", " "))
}

// treeSpend is each process's CPU between two processTree readings, the
// largest first; a process absent from the first reading started in
// between and is charged all of its time.
func treeSpend(from, to []treeProcess) []treeProcess {
	before := make(map[int]time.Duration, len(from))
	for _, p := range from {
		before[p.pid] = p.cpu
	}
	out := make([]treeProcess, 0, len(to))
	for _, p := range to {
		p.cpu -= before[p.pid]
		out = append(out, p)
	}
	slices.SortStableFunc(out, func(a, b treeProcess) int { return int(b.cpu - a.cpu) })
	return out
}

// printTreeSpend writes spend per process, in ms/s of span, to w: where
// a row's Postgres CPU went (checkpointer, autovacuum, which database's
// backends).
func printTreeSpend(w io.Writer, what string, spend []treeProcess, span time.Duration) {
	for _, p := range spend {
		if p.cpu > 0 {
			fmt.Fprintf(w, "platformbench %s: Postgres pid %d %.3f ms/s %s\n", what, p.pid, float64(p.cpu)/float64(time.Millisecond)/span.Seconds(), p.cmd)
		}
	}
}

// runtimeOf is the time on CPU of the task at dir (/proc/PID or
// /proc/PID/task/TID), from its schedstat.
func runtimeOf(dir string) time.Duration {
	raw, err := os.ReadFile(dir + "/schedstat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.ParseInt(f[0], 10, 64)
	return time.Duration(n)
}

// threadsCPU is the time on CPU of every thread of pid, from their
// schedstat (a thread that exited is not counted: the Go runtime keeps
// its threads).
func threadsCPU(pid int) time.Duration {
	paths, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/[0-9]*")
	var total time.Duration
	for _, p := range paths {
		total += runtimeOf(p)
	}
	return total
}

// statTicks sums the /proc/PID/stat fields [from, to) counted after the
// command name (0 is field 3), in clock ticks, as a duration.
func statTicks(stat string, from, to int) time.Duration {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < to {
		return 0
	}
	var ticks int64
	for _, s := range f[from:to] {
		n, _ := strconv.ParseInt(s, 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * clockTick
}

// databaseXacts is the database's committed and rolled-back transactions
// so far, read over a connection to another database (url), so the read
// itself is not counted. Postgres publishes a busy backend's counts about
// once a second and an idle one's within about ten, hence the settling
// waits of WebhookCost.
func databaseXacts(ctx context.Context, url, db string) (int64, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, xactsSQL, db).Scan(&n)
	return n, err
}

// statsSettle is how long counts are left to reach pg_stat_database
// before they are read (an idle backend publishes within ten seconds).
const statsSettle = 11 * time.Second

// CostResult is one fixed-rate run of WebhookCost.
type CostResult struct {
	Rate      float64
	Offered   int // PATCHes acknowledged
	Delivered int // of them, delivered before the drain deadline
	Ack       *Latencies
	Cost      SystemCost // from the first PATCH to the last delivery
	Xacts     int64      // the database's transactions of the run, the idle rate's share of the settling wait taken off
}

// IdleCost is the platform and its Postgres doing nothing.
type IdleCost struct{ Cost SystemCost }

// WebhookCost measures what a delivered webhook costs the whole system at
// fixed offered rates: an app whose webhook URL is this process's
// receiver; each rate PATCHes users at that rate (one user.profile.updated
// delivery each) for the window, waits until every acknowledged PATCH was
// delivered, and divides the platform's and Postgres's CPU and the
// database's transactions by the deliveries. Before the rates, the node
// idles for Opt.IdleWindow (at least statsSettle) and that is reported
// too.
func (b *Bench) WebhookCost(ctx context.Context, rates []float64) (IdleCost, []CostResult, error) {
	app, err := b.P.createApp(ctx, "cost-"+b.run)
	if err != nil {
		return IdleCost{}, nil, err
	}
	rcv, err := startReceiver(app.WebhookSecret)
	if err != nil {
		return IdleCost{}, nil, err
	}
	defer rcv.Close()
	if err := b.P.admin(ctx, http.MethodPatch, "/admin/v1/apps/"+strconv.FormatInt(app.ID, 10), map[string]any{"webhook_url": rcv.URL}, http.StatusOK, nil); err != nil {
		return IdleCost{}, nil, fmt.Errorf("set webhook URL (is PLATFORM_WEBHOOK_ALLOW_LOOPBACK on?): %w", err)
	}
	c := b.Opt.PatchClients
	own := make([]int64, c)
	if err := forEach(ctx, c, c, func(ctx context.Context, i int) (err error) {
		own[i], err = b.register(ctx, app, "cost")
		return err
	}); err != nil {
		return IdleCost{}, nil, err
	}
	b.settle(ctx, b.Opt.Drain)
	sleepCtx(ctx, statsSettle) // what came before reaches the counters
	b.quietPostgres(ctx)
	b.settleIdle(ctx)
	var t0 []treeProcess
	if b.Opt.PostgresPID > 0 {
		t0 = processTree(b.Opt.PostgresPID)
	}
	i0 := b.sampleSystem(ctx)
	sleepCtx(ctx, max(b.Opt.IdleWindow, statsSettle))
	i1 := b.sampleSystem(ctx)
	idle := IdleCost{Cost: i1.since(i0)}
	if b.Opt.PostgresPID > 0 {
		fmt.Fprintf(os.Stderr, "platformbench idle row: %s to %s UTC: platform %.3f ms/s\n", i0.at.UTC().Format(time.TimeOnly), i1.at.UTC().Format(time.TimeOnly),
			float64(idle.Cost.Platform)/float64(time.Millisecond)/idle.Cost.Span.Seconds())
		printTreeSpend(os.Stderr, "idle row", treeSpend(t0, processTree(b.Opt.PostgresPID)), idle.Cost.Span)
	}
	idleXactRate := float64(idle.Cost.Xacts) / idle.Cost.Span.Seconds()
	var out []CostResult
	for _, rate := range rates {
		before := rcv.count()
		acks := make([][]time.Time, c)
		s0 := b.sampleSystem(ctx)
		closedLoop(ctx, Phase{Clients: c, Window: b.Opt.Window, Rate: rate}, func(ctx context.Context, w, _ int) error {
			if err := b.patch(ctx, app, own[w]); err != nil {
				return err
			}
			acks[w] = append(acks[w], time.Now())
			return nil
		})
		offered := 0
		for _, a := range acks {
			offered += len(a)
		}
		deadline := time.Now().Add(b.Opt.Drain)
		for rcv.count()-before < offered && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		s1 := b.sampleSystem(ctx)
		sleepCtx(ctx, statsSettle)
		s2 := b.sampleSystem(ctx)
		r := CostResult{Rate: rate, Offered: offered, Delivered: min(rcv.count()-before, offered), Ack: &Latencies{}, Cost: s1.since(s0)}
		r.Xacts = s2.xacts - s0.xacts - int64(idleXactRate*s2.at.Sub(s1.at).Seconds())
		rcv.mu.Lock()
		for w, user := range own {
			got := rcv.byUser[user]
			got = got[max(0, len(got)-len(acks[w])):]
			var lat []time.Duration
			for k, at := range acks[w] {
				if k < len(got) {
					lat = append(lat, got[k].at.Sub(at))
				}
			}
			r.Ack.Add(lat)
		}
		rcv.mu.Unlock()
		out = append(out, r)
	}
	return idle, out, nil
}

// settleIdle samples the system's CPU over steps of idleStep, for at most
// idleSettleMax, until the last rates agree within idleSettleNear.
const (
	idleStep       = 3 * time.Second
	idleSettleMax  = 90 * time.Second
	idleSettleNear = 1.25
)

// settleIdle waits until the node's CPU has settled after its start and
// the users it just registered (the Go runtime's first collections, the
// read models' catch-up, Postgres's autovacuum of the new tables): a row
// measured right after start read several times the settled rate.
func (b *Bench) settleIdle(ctx context.Context) {
	var rates []float64
	prev := b.sampleSystem(ctx)
	for start := time.Now(); time.Since(start) < idleSettleMax && ctx.Err() == nil; {
		sleepCtx(ctx, idleStep)
		cur := b.sampleSystem(ctx)
		c := cur.since(prev)
		rates = append(rates, float64(c.Platform+c.Postgres)/c.Span.Seconds())
		prev = cur
		if idleSettled(rates) {
			return
		}
	}
}

// idleSettled says whether the last three CPU rates of an idle system
// (CPU per second) lie within idleSettleNear of the lowest of them: the
// start-up work, which shows as a falling rate, has run out.
func idleSettled(rates []float64) bool {
	if len(rates) < 3 {
		return false
	}
	last := rates[len(rates)-3:]
	return slices.Max(last) <= slices.Min(last)*idleSettleNear
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// costRows are WebhookCost's lines: the idle node (CPU in µs per second,
// transactions per second), then one per offered rate (deliveries/s,
// ack→receipt p50/p99, CPU and transactions per delivery).
func costRows(idle IdleCost, res []CostResult, store string, o Options) []Row {
	sec := idle.Cost.Span.Seconds()
	idleRow := Row{Scenario: "webhook cost: idle node (per second)", Store: store,
		SystemCPUus: perUnit(idle.Cost.Platform+idle.Cost.Postgres, sec), PlatformCPUus: perUnit(idle.Cost.Platform, sec),
		PostgresCPUus: perUnit(idle.Cost.Postgres, sec), PGXacts: float64(idle.Cost.Xacts) / sec}
	idleRow.Note = fmt.Sprintf("idle %s: system (platform + Postgres) CPU %.2f ms/s (platform %.2f, Postgres %.2f), %.2f Postgres transactions/s",
		idle.Cost.Span.Round(time.Second), idleRow.SystemCPUus/1000, idleRow.PlatformCPUus/1000, idleRow.PostgresCPUus/1000, idleRow.PGXacts)
	rows := []Row{idleRow}
	for _, r := range res {
		n := float64(r.Delivered)
		row := Row{Scenario: fmt.Sprintf("webhook cost: %g/s offered (ack→receipt)", r.Rate), Store: store, Clients: o.PatchClients,
			Rate: n / r.Cost.Span.Seconds(), P50ms: ms(r.Ack.Quantile(0.5)), P99ms: ms(r.Ack.Quantile(0.99)),
			Errors: int64(r.Offered - r.Delivered)}
		if n > 0 {
			row.SystemCPUus = perUnit(r.Cost.Platform+r.Cost.Postgres, n)
			row.PlatformCPUus = perUnit(r.Cost.Platform, n)
			row.PostgresCPUus = perUnit(r.Cost.Postgres, n)
			row.PGXacts = float64(r.Xacts) / n
		}
		row.Note = fmt.Sprintf("%d PATCHes over %s, each one user.profile.updated delivery: system CPU %.0f µs/delivery (platform %.0f, Postgres %.0f), %.2f Postgres transactions/delivery; errors = undelivered after %s",
			r.Offered, o.Window, row.SystemCPUus, row.PlatformCPUus, row.PostgresCPUus, row.PGXacts, o.Drain)
		rows = append(rows, row)
	}
	return rows
}

func perUnit(d time.Duration, n float64) float64 {
	if n <= 0 {
		return 0
	}
	return float64(d.Microseconds()) / n
}

// parseRates reads "100,200,500".
func parseRates(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("webhook-cost rate %q: want a positive number", f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no webhook-cost rates")
	}
	return out, nil
}

// quietMax bounds how long quietPostgres waits for the autovacuum workers.
const quietMax = 120 * time.Second

// quietPostgres finishes the Postgres server's work left by what ran
// before the idle row, so the row measures an idle node: the baselines'
// and the set-up's writes (tens of thousands of raw appends on the raw
// baseline's database, the users on the platform's) leave a timed
// checkpoint spread over minutes and autovacuum workers vacuuming and
// analysing the new rows, 4-40 ms/s of the server's CPU in an 11 s row
// and one worker on the raw baseline's database 0.4 s, none of it caused
// by the idle node. A VACUUM (ANALYZE) of every database of the server
// leaves autovacuum no table over its thresholds (the launcher visits
// each database once a minute and would otherwise start a worker inside
// the row), a CHECKPOINT writes the dirty buffers at once, then it waits
// (at most quietMax) until no autovacuum worker has run for two polls in
// a row. It runs on the throwaway server only (-postgres-pid), never on
// a shared one; without a stats connection (-pg-stats-url) or the right
// to vacuum or checkpoint, it does what it can.
func (b *Bench) quietPostgres(ctx context.Context) {
	if b.Opt.PGStatsURL == "" || b.Opt.PostgresPID <= 0 {
		return
	}
	var dbs []string
	_ = b.stats.do(ctx, b.Opt.PGStatsURL, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT datname FROM pg_database WHERE datallowconn ORDER BY datname`)
		if err != nil {
			return err
		}
		dbs, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	vacuumDatabases(ctx, b.Opt.PGStatsURL, dbs)
	_ = b.stats.do(ctx, b.Opt.PGStatsURL, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, "CHECKPOINT")
		return err
	})
	quiet := 0
	for start := time.Now(); quiet < 2 && time.Since(start) < quietMax && ctx.Err() == nil; {
		var n int
		err := b.stats.do(ctx, b.Opt.PGStatsURL, func(c *pgx.Conn) error {
			return c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'`).Scan(&n)
		})
		if err != nil {
			return
		}
		if n == 0 {
			quiet++
		} else {
			quiet = 0
		}
		sleepCtx(ctx, time.Second)
	}
}

// vacuumDatabases runs VACUUM (ANALYZE) in each of dbs on the server of
// url (an admin URL), over a connection of its own to each; a database it
// cannot reach or vacuum is left as it is.
func vacuumDatabases(ctx context.Context, url string, dbs []string) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return
	}
	for _, db := range dbs {
		cfg := cfg.Copy()
		cfg.Database = db
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			continue
		}
		_, _ = c.Exec(ctx, "VACUUM (ANALYZE)")
		c.Close(ctx)
	}
}
