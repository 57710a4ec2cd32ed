package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// tenantUser is one user of the many-tenants population, with its app.
type tenantUser struct {
	app  int // index into the apps
	user int64
}

// Tenants is a many-tenants population: -tenant-apps apps (or one), each
// with its default webhook endpoint on the loopback receiver (one path per
// app, so each delivery is checked with its own app's secret), and
// -tenant-users users spread evenly over them.
type Tenants struct {
	apps  []App
	users []tenantUser
	rcv   *Receiver
	setup time.Duration
	// The platform's resident memory before the population was made,
	// once its apps and endpoints were, and once its users were (0:
	// unknown).
	rssBefore, rssApps, rssUsers int64
}

// TenantRound is one population's three windows in one turn of the
// alternation. Each window's CPU is what it caused (see chargedWindow):
// from a quiet platform to the moment every delivery its calls made has
// arrived and every follower has caught up, shared over its calls.
type TenantRound struct {
	Register, Snapshot, Webhooks Measured
	// RegisterBehind is how many users registered in the phase no delivery
	// had named yet when the calls ended (a register's delivery is
	// user.family_group.created); RegisterMissing how many still had none
	// after the drain (errors).
	RegisterBehind, RegisterMissing int
	// Delivered and Missing are the PATCHes' deliveries received and still
	// missing after the drain (errors).
	Delivered, Missing int
	// RegisterDrain and WebhookDrain are how long the write windows'
	// deliveries took to arrive after their calls ended.
	RegisterDrain, WebhookDrain time.Duration
	// Unquiet counts the windows that began before the previous work was
	// done (the quiet wait ran into -drain): their CPU may hold some of it.
	Unquiet int
	Load    string // the machine's load average as the round began
	// Alloc is what the platform allocated per call of each window
	// (register, snapshot, PATCH), drains included.
	Alloc [3]heapSample
	// Xacts is the platform database's transactions per call of each
	// window (0: not counted; -pg-stats-url and -pg-stats-db count them).
	Xacts [3]float64
}

// TenantRun is one population's rounds.
type TenantRun struct {
	Apps, Users int
	SetupFor    time.Duration
	Rounds      []TenantRound
	Bad         int64 // deliveries with a bad signature
	// RSS is the platform's resident memory after the last round;
	// RSSBefore, RSSApps and RSSUsers as the population was made (0:
	// unknown).
	RSS, RSSBefore, RSSApps, RSSUsers int64
}

// ManyTenants makes two populations of the same size on one node (one app
// holding every user, and -tenant-apps apps sharing as many) and measures
// them in turns, one app first and last: one, many, one, …, one, with
// -tenant-repeats many-app rounds. Each many-app round is compared with
// the one-app rounds on either side of it, so drift over the run (the log
// and read models grow, the shared machine's load moves) weighs on both
// sides of every ratio, and the rounds' ratios give a median and a spread
// instead of one number.
func (b *Bench) ManyTenants(ctx context.Context) (one, many TenantRun, err error) {
	led := &tenantLedger{}
	oneTn, err := b.tenants(ctx, 1)
	if oneTn.rcv != nil {
		defer oneTn.rcv.Close()
	}
	if err != nil {
		return one, many, fmt.Errorf("one app: %w", err)
	}
	manyTn, err := b.tenants(ctx, b.Opt.TenantApps)
	if manyTn.rcv != nil {
		defer manyTn.rcv.Close()
	}
	if err != nil {
		return one, many, fmt.Errorf("%d apps: %w", b.Opt.TenantApps, err)
	}
	one, many = tenantRunOf(oneTn), tenantRunOf(manyTn)
	repeats := max(1, b.Opt.TenantRepeats)
	for i := 0; i <= repeats && ctx.Err() == nil; i++ {
		b.progress("round %d of %d: 1 app", i+1, repeats+1)
		one.Rounds = append(one.Rounds, b.measureTenants(ctx, oneTn, led))
		if i < repeats {
			b.progress("round %d of %d: %d apps", i+1, repeats, len(manyTn.apps))
			many.Rounds = append(many.Rounds, b.measureTenants(ctx, manyTn, led))
		}
	}
	one.Bad, many.Bad = oneTn.rcv.bad.Load(), manyTn.rcv.bad.Load()
	one.RSS = b.platformRSS()
	many.RSS = one.RSS
	return one, many, ctx.Err()
}

func tenantRunOf(tn Tenants) TenantRun {
	return TenantRun{Apps: len(tn.apps), Users: len(tn.users), SetupFor: tn.setup,
		RSSBefore: tn.rssBefore, RSSApps: tn.rssApps, RSSUsers: tn.rssUsers}
}

// progress says where a long run is, on stderr.
func (b *Bench) progress(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "platformbench many-tenants: "+format+" (load %s)\n", append(a, loadAverage())...)
}

// tenantLedger is every delivery the windows' calls made and the
// receivers have not had yet, over both populations: a window begins only
// once it is empty, so no window is charged another's deliveries.
type tenantLedger struct {
	mu      sync.Mutex
	pending []pendingDelivery
}

// pendingDelivery is a delivery still to arrive at rcv: any delivery naming
// user (profile == 0: a register's), or its profile-th
// user.profile.updated delivery since the receiver started.
type pendingDelivery struct {
	rcv     *Receiver
	user    int64
	profile int
}

func (l *tenantLedger) add(p ...pendingDelivery) {
	l.mu.Lock()
	l.pending = append(l.pending, p...)
	l.mu.Unlock()
}

// outstanding drops what has arrived and says how many of the
// ledger's deliveries are still to arrive.
func (l *tenantLedger) outstanding() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = slices.DeleteFunc(l.pending, func(p pendingDelivery) bool {
		p.rcv.mu.Lock()
		defer p.rcv.mu.Unlock()
		if p.profile == 0 {
			return p.rcv.named[p.user]
		}
		return len(p.rcv.byUser[p.user]) >= p.profile
	})
	return len(l.pending)
}

// forget drops what is still outstanding (counted as errors of the window
// that made it), so later windows do not wait for it again.
func (l *tenantLedger) forget() {
	l.mu.Lock()
	l.pending = nil
	l.mu.Unlock()
}

// windowHooks are what chargedWindow needs of the platform: whether it is
// quiet (everything earlier calls caused is done) and its CPU counters.
type windowHooks struct {
	quiet func(ctx context.Context) bool
	probe func() cpuSample // nil: CPU not measured
	// heap, when set, reads the platform's allocation counters (bytes,
	// objects since it started): unlike CPU, what a call allocates does not
	// depend on the machine's load or on when a garbage collection falls.
	heap func() (heapSample, bool)
	// xacts, when set, reads the platform database's transactions so far
	// (pg_stat_database): a round trip more per call shows there exactly.
	xacts func() (int64, bool)
	bound time.Duration // the longest wait for quiet, before and after
	poll  time.Duration
	// atClose, when set, runs as the loop's calls end, before the drain.
	atClose func()
}

// chargedWindow is one measured window charged with what it caused and
// nothing else. It waits until the platform is quiet, so work left over
// from the previous window (deliveries still going out, followers catching
// up) is neither charged to this one nor competing with it; samples the
// CPU; runs the closed loop (its rate is the measured window's, as
// everywhere); waits until quiet again, so the work this window's calls
// left behind (their deliveries, their projection) is charged to it; and
// samples again. That CPU belongs to every call the loop made, warm-up
// and the calls in flight at the close included, so the window's share is
// its calls' part of them. quietBefore and quietAfter say whether each
// wait ended quiet rather than at its bound.
func chargedWindow(ctx context.Context, h windowHooks, p Phase, op Op) (w chargedRun) {
	w.quietBefore = waitQuietFor(ctx, h)
	var from cpuSample
	if h.probe != nil {
		from = h.probe()
	}
	var heapFrom heapSample
	heapOK := false
	if h.heap != nil {
		heapFrom, heapOK = h.heap()
	}
	var xactFrom int64
	xactOK := false
	if h.xacts != nil {
		xactFrom, xactOK = h.xacts()
	}
	var calls atomic.Int64
	p.CPU = nil
	w.Measured = closedLoop(ctx, p, func(ctx context.Context, wk, i int) error {
		err := op(ctx, wk, i)
		calls.Add(1)
		return err
	})
	closed := time.Now()
	if h.atClose != nil {
		h.atClose()
	}
	w.quietAfter = waitQuietFor(ctx, h)
	w.drain = time.Since(closed)
	mine, all := w.OK+w.Errors, calls.Load()
	if h.probe != nil {
		w.CPU = shareCPU(h.probe().since(from), mine, all)
	}
	if heapOK {
		if to, ok := h.heap(); ok && all > 0 {
			w.alloc = heapSample{bytes: (to.bytes - heapFrom.bytes) / float64(all), objects: (to.objects - heapFrom.objects) / float64(all)}
		}
	}
	if xactOK {
		if to, ok := h.xacts(); ok && all > 0 {
			w.xacts = float64(to-xactFrom) / float64(all)
		}
	}
	return w
}

// chargedRun is a window's measurement with what else chargedWindow
// learnt: how long its drain took, whether each wait for quiet ended quiet
// rather than at its bound, and the platform's allocation per call.
type chargedRun struct {
	Measured
	drain                   time.Duration
	quietBefore, quietAfter bool
	alloc                   heapSample
	xacts                   float64 // the platform database's transactions per call (0: not counted)
}

// heapSample is the platform's allocation counters (or, per call, their
// differences shared over the calls).
type heapSample struct{ bytes, objects float64 }

// heapCounters reads go_memstats_alloc_bytes_total and
// go_memstats_mallocs_total from a /metrics text.
func heapCounters(metrics io.Reader) (heapSample, bool) {
	var h heapSample
	found := 0
	sc := bufio.NewScanner(metrics)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		var dst *float64
		switch f[0] {
		case "go_memstats_alloc_bytes_total":
			dst = &h.bytes
		case "go_memstats_mallocs_total":
			dst = &h.objects
		default:
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return h, false
		}
		*dst = v
		found++
	}
	return h, found == 2
}

// waitQuietFor polls h.quiet until it holds or h.bound has passed.
func waitQuietFor(ctx context.Context, h windowHooks) bool {
	deadline := time.Now().Add(h.bound)
	for {
		if h.quiet(ctx) {
			return true
		}
		if ctx.Err() != nil || !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(h.poll)
	}
}

// shareCPU is the part of u that n of all calls account for.
func shareCPU(u CPUUse, n, all int64) CPUUse {
	if all <= 0 || n >= all {
		return u
	}
	f := func(d time.Duration) time.Duration { return time.Duration(float64(d) * float64(n) / float64(all)) }
	return CPUUse{Machine: f(u.Machine), Idle: f(u.Idle), Steal: f(u.Steal), Platform: f(u.Platform), Load: f(u.Load), Cores: u.Cores}
}

// hooks are chargedWindow's view of this platform: quiet once the ledger
// is empty and no follower of the log is behind.
func (b *Bench) hooks(led *tenantLedger) windowHooks {
	var xacts func() (int64, bool)
	if b.Opt.PGStatsURL != "" && b.Opt.PGStatsDB != "" {
		// Postgres publishes a backend's counts within a second of its
		// transactions; the wait for quiet after a window is longer.
		xacts = func() (int64, bool) {
			n, err := databaseXacts(context.Background(), b.Opt.PGStatsURL, b.Opt.PGStatsDB)
			return n, err == nil
		}
	}
	return windowHooks{probe: b.cpuProbe(), heap: b.heapNow, xacts: xacts, bound: b.Opt.Drain, poll: 20 * time.Millisecond,
		quiet: func(ctx context.Context) bool {
			if led.outstanding() > 0 {
				return false
			}
			behind, ok := b.eventsBehindNow(ctx)
			return ok && behind == 0
		}}
}

// eventsBehindNow is the followers' lag summed, read once from /metrics.
func (b *Bench) eventsBehindNow(ctx context.Context) (float64, bool) {
	var behind float64
	var ok bool
	b.readMetrics(ctx, func(r io.Reader) { behind, ok = eventsBehind(r) })
	return behind, ok
}

// heapNow is the platform's allocation counters, from /metrics.
func (b *Bench) heapNow() (heapSample, bool) {
	var h heapSample
	var ok bool
	b.readMetrics(context.Background(), func(r io.Reader) { h, ok = heapCounters(r) })
	return h, ok
}

// readMetrics hands the platform's /metrics text to read.
func (b *Bench) readMetrics(ctx context.Context, read func(io.Reader)) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.P.Base+"/metrics", nil)
	if err != nil {
		return
	}
	res, err := b.P.HTTP.Do(req)
	if err != nil {
		return
	}
	defer res.Body.Close()
	read(res.Body)
}

// measureTenants is one round of a population: a register, a snapshot and
// a webhook-producing PATCH window, each call on a random tenant.
func (b *Bench) measureTenants(ctx context.Context, tn Tenants, led *tenantLedger) TenantRound {
	res := TenantRound{Load: loadAverage()}
	h := b.hooks(led)
	unquiet := func(w chargedRun) {
		if !w.quietBefore {
			res.Unquiet++
		}
		if !w.quietAfter {
			led.forget()
		}
	}
	c := b.Opt.Clients

	registered := make([][]int64, c)
	hr := h
	hr.atClose = func() { res.RegisterBehind = tn.rcv.notNamed(registered) }
	reg := chargedWindow(ctx, hr, b.phase(c), func(ctx context.Context, w, _ int) error {
		u, err := b.register(ctx, tn.apps[rand.IntN(len(tn.apps))], "tenant")
		if err == nil {
			registered[w] = append(registered[w], u)
			led.add(pendingDelivery{rcv: tn.rcv, user: u})
		}
		return err
	})
	res.Register, res.RegisterDrain, res.Alloc[0], res.Xacts[0] = reg.Measured, reg.drain, reg.alloc, reg.xacts
	if !reg.quietAfter {
		res.RegisterMissing = led.outstanding()
	}
	unquiet(reg)

	snap := chargedWindow(ctx, h, b.phase(c), func(ctx context.Context, _, _ int) error {
		u := tn.users[rand.IntN(len(tn.users))]
		return b.P.partnerM(ctx, tn.apps[u.app], http.MethodGet, "/open/v1/channel/users/"+strconv.FormatInt(u.user, 10), nil, http.StatusOK, nil)
	})
	res.Snapshot, res.Alloc[1], res.Xacts[1] = snap.Measured, snap.alloc, snap.xacts
	unquiet(snap)

	// Worker w PATCHes only the users whose index is w modulo the
	// workers, so no user is written concurrently and each user's
	// deliveries are counted in order.
	pc := b.Opt.PatchClients
	expect := make([]map[int64]int, pc)
	for w := range expect {
		expect[w] = map[int64]int{}
	}
	var acked atomic.Int64
	hook := chargedWindow(ctx, h, b.phase(pc), func(ctx context.Context, w, _ int) error {
		n := (len(tn.users) - w + pc - 1) / pc
		u := tn.users[w+pc*rand.IntN(max(1, n))]
		k, seen := expect[w][u.user]
		if !seen {
			k = tn.rcv.profileCount(u.user)
		}
		if err := b.patch(ctx, tn.apps[u.app], u.user); err != nil {
			expect[w][u.user] = k
			return err
		}
		expect[w][u.user] = k + 1
		acked.Add(1)
		led.add(pendingDelivery{rcv: tn.rcv, user: u.user, profile: k + 1})
		return nil
	})
	res.Webhooks, res.WebhookDrain, res.Alloc[2], res.Xacts[2] = hook.Measured, hook.drain, hook.alloc, hook.xacts
	if !hook.quietAfter {
		res.Missing = led.outstanding()
	}
	res.Delivered = int(acked.Load()) - res.Missing
	unquiet(hook)
	return res
}

// notNamed is how many of users no delivery has named yet.
func (r *Receiver) notNamed(users [][]int64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, us := range users {
		for _, u := range us {
			if !r.named[u] {
				n++
			}
		}
	}
	return n
}

// profileCount is how many user.profile.updated deliveries of user the
// receiver has had.
func (r *Receiver) profileCount(user int64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byUser[user])
}

// tenants creates the apps, registers the users round-robin over them
// and then points each app at its own receiver path. The users are made
// before the endpoints so the set-up sends no deliveries (it is the
// population, not what is measured); every call goes through the API.
func (b *Bench) tenants(ctx context.Context, apps int) (Tenants, error) {
	began := time.Now()
	tn := Tenants{rssBefore: b.platformRSS()}
	rcv, err := startReceiver("")
	if err != nil {
		return tn, err
	}
	tn.rcv = rcv
	rcv.secrets = map[string]string{}
	rcv.named = map[int64]bool{}
	tn.apps = make([]App, apps)
	if err := forEach(ctx, b.Opt.Clients, len(tn.apps), func(ctx context.Context, i int) error {
		app, err := b.P.createApp(ctx, fmt.Sprintf("tenant%d-%s", i, b.run))
		tn.apps[i] = app
		return err
	}); err != nil {
		return tn, fmt.Errorf("tenant apps: %w", err)
	}
	tn.rssApps = b.platformRSS()
	b.progress("%d apps made in %s", apps, time.Since(began).Round(time.Second))
	tn.users = make([]tenantUser, b.Opt.TenantUsers)
	var done atomic.Int64
	stop := b.every(10*time.Second, func() { b.progress("%d of %d users registered", done.Load(), len(tn.users)) })
	err = forEach(ctx, b.Opt.Clients, len(tn.users), func(ctx context.Context, i int) error {
		a := i % len(tn.apps)
		u, err := b.register(ctx, tn.apps[a], "tenant")
		tn.users[i] = tenantUser{app: a, user: u}
		done.Add(1)
		return err
	})
	stop()
	if err != nil {
		return tn, fmt.Errorf("tenant users: %w", err)
	}
	tn.rssUsers = b.platformRSS()
	if err := forEach(ctx, b.Opt.Clients, len(tn.apps), func(ctx context.Context, i int) error {
		app := tn.apps[i]
		path := "/hook/" + strconv.FormatInt(app.ID, 10)
		rcv.mu.Lock()
		rcv.secrets[path] = app.WebhookSecret
		rcv.mu.Unlock()
		url := strings.TrimSuffix(rcv.URL, "/hook") + path
		return b.P.admin(ctx, http.MethodPatch, "/admin/v1/apps/"+strconv.FormatInt(app.ID, 10), map[string]any{"webhook_url": url}, http.StatusOK, nil)
	}); err != nil {
		return tn, fmt.Errorf("tenant endpoints: %w", err)
	}
	tn.setup = time.Since(began)
	b.progress("%d apps and %d users ready in %s", apps, len(tn.users), tn.setup.Round(time.Second))
	return tn, nil
}

// every runs f every d until the returned stop is called.
func (b *Bench) every(d time.Duration, f func()) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				f()
			}
		}
	}()
	return func() { close(done) }
}

// platformRSS is the platform process's resident memory in bytes, from
// /proc/PID/status; 0 when unknown.
func (b *Bench) platformRSS() int64 {
	if b.Opt.PlatformPID <= 0 {
		return 0
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(b.Opt.PlatformPID) + "/status")
	if err != nil {
		return 0
	}
	return parseVmRSS(string(raw))
}

// parseVmRSS reads the "VmRSS: N kB" line of /proc/PID/status, in bytes.
func parseVmRSS(status string) int64 {
	for _, line := range strings.Split(status, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}

// tenantCall is one of the three calls measured in every round.
type tenantCall struct {
	idx     int // into TenantRound.Alloc
	name    string
	clients func(o Options) int
	of      func(r TenantRound) Measured
}

var tenantCalls = []tenantCall{
	{0, "register", func(o Options) int { return o.Clients }, func(r TenantRound) Measured { return r.Register }},
	{1, "snapshot", func(o Options) int { return o.Clients }, func(r TenantRound) Measured { return r.Snapshot }},
	{2, "PATCH with a webhook", func(o Options) int { return o.PatchClients }, func(r TenantRound) Measured { return r.Webhooks }},
}

// tenantRows are many-tenants' lines: the one-app population's three,
// then the many-app population's. A row's rate and CPU per operation are
// the medians of its rounds (their range in the note); a many-app row's
// ratio is the median of its rounds' ratios, each round set against the
// mean of the one-app rounds before and after it (the goal: at least 0.9).
func tenantRows(one, many TenantRun, store string, o Options) []Row {
	var rows []Row
	for i, run := range []TenantRun{one, many} {
		for _, c := range tenantCalls {
			rows = append(rows, tenantRow(run, c, store, o, one, i == 1))
		}
	}
	return rows
}

// tenantRow is one call of one population.
func tenantRow(run TenantRun, c tenantCall, store string, o Options, one TenantRun, vsOne bool) Row {
	pop := fmt.Sprintf("%d app%s, %d users", run.Apps, plural(run.Apps), run.Users)
	var all Measured
	var rates, cpus, machine, load []float64
	for i, r := range run.Rounds {
		m := c.of(r)
		if i == 0 {
			all = m
		} else {
			all = straddle(all, m)
		}
		rates = append(rates, m.Rate())
		cpus = append(cpus, m.perOp(m.CPU.Platform))
		machine = append(machine, m.perOp(m.CPU.Machine))
		load = append(load, m.perOp(m.CPU.Load))
	}
	row := rowOf(fmt.Sprintf("tenants (%s): %s", pop, c.name), store, c.clients(o), all, "", nil)
	if len(run.Rounds) == 0 {
		return row
	}
	rate, rlo, rhi := spread(rates)
	cpu, clo, chi := spread(cpus)
	row.Rate = rate
	row.PlatformCPUus = cpu
	row.CPUus, _, _ = spread(machine)
	row.LoadCPUus, _, _ = spread(load)
	notes := []string{fmt.Sprintf("%d rounds: %.0f–%.0f/s, platform CPU %.0f–%.0f µs per call (each window charged from a quiet platform to its own deliveries and projection done)",
		len(run.Rounds), rlo, rhi, clo, chi)}
	var kb, objs []float64
	for _, r := range run.Rounds {
		if a := r.Alloc[c.idx]; a.bytes > 0 {
			kb, objs = append(kb, a.bytes/1024), append(objs, a.objects)
		}
	}
	if len(kb) > 0 {
		k, klo, khi := spread(kb)
		o, _, _ := spread(objs)
		notes = append(notes, fmt.Sprintf("the platform allocated %.1f KB (%.1f–%.1f) and %.0f objects per call", k, klo, khi, o))
	}
	var xs []float64
	for _, r := range run.Rounds {
		if x := r.Xacts[c.idx]; x > 0 {
			xs = append(xs, x)
		}
	}
	if len(xs) > 0 {
		x, xlo, xhi := spread(xs)
		notes = append(notes, fmt.Sprintf("%.2f Postgres transactions per call (%.2f–%.2f)", x, xlo, xhi))
	}
	if vsOne {
		if ar := tenantAllocRatios(one.Rounds, run.Rounds, c.idx); len(ar) > 0 {
			m, lo, hi := spread(ar)
			notes = append(notes, fmt.Sprintf("allocation per call ÷ one app's %.2f× (%.2f–%.2f×)", m, lo, hi))
		}
		rr, cr := tenantRatios(one.Rounds, run.Rounds, c.of)
		med, lo, hi := spread(rr)
		row.Baseline, row.Ratio = "the same on one app", med
		row.BaseRate, _, _ = spread(tenantRates(one.Rounds, c.of))
		cm, cl, ch := spread(cr)
		notes = append(notes, fmt.Sprintf("ratio per round %.2f× (%.2f–%.2f×); platform CPU per call ÷ one app's %.2f× (%.2f–%.2f×)", med, lo, hi, cm, cl, ch))
	}
	var unquiet int
	var loads []string
	for _, r := range run.Rounds {
		unquiet += r.Unquiet
		loads = append(loads, r.Load)
	}
	switch c.name {
	case "register":
		behind, missing, d, dhi := drainSummary(run.Rounds, func(r TenantRound) (int, int, time.Duration) {
			return r.RegisterBehind, r.RegisterMissing, r.RegisterDrain
		})
		row.Errors += int64(missing)
		notes = append(notes, fmt.Sprintf("%d registered users' deliveries still to make as the calls ended (drained in %.1f s, at most %.1f s); %d undelivered after %s count as errors",
			behind, d, dhi, missing, o.Drain))
		notes = append(notes, "set-up (apps, users, endpoints through the API) took "+run.SetupFor.Round(time.Second).String())
		notes = append(notes, tenantMemory(run))
		notes = append(notes, "load average as each round began: "+strings.Join(loads, "; "))
	case "PATCH with a webhook":
		delivered, missing, d, dhi := drainSummary(run.Rounds, func(r TenantRound) (int, int, time.Duration) {
			return r.Delivered, r.Missing, r.WebhookDrain
		})
		row.Errors += int64(missing) + run.Bad
		notes = append(notes, fmt.Sprintf("%d deliveries received, each checked with its app's secret, the last %.1f s (at most %.1f s) after the calls ended; errors include %d PATCHes undelivered after %s and %d bad signatures",
			delivered, d, dhi, missing, o.Drain, run.Bad))
	}
	if unquiet > 0 {
		notes = append(notes, fmt.Sprintf("%d windows began before the previous one's work was done (waited %s)", unquiet, o.Drain))
	}
	if row.Note != "" {
		notes = append(notes, row.Note)
	}
	row.Note = strings.Join(notes, "; ")
	return row
}

// tenantRates are the rounds' rates of one call.
func tenantRates(rounds []TenantRound, of func(TenantRound) Measured) []float64 {
	out := make([]float64, len(rounds))
	for i, r := range rounds {
		out[i] = of(r).Rate()
	}
	return out
}

// tenantRatios sets many-app round i against the mean of one-app rounds i
// and i+1 (the rounds alternate one, many, one, …): its rate ratio and its
// platform CPU per call ratio (left out where unmeasured).
func tenantRatios(one, many []TenantRound, of func(TenantRound) Measured) (rates, cpus []float64) {
	for i, r := range many {
		if i >= len(one) {
			break
		}
		sides := one[i:min(i+2, len(one))]
		var rate, cpu float64
		for _, s := range sides {
			m := of(s)
			rate += m.Rate() / float64(len(sides))
			cpu += m.perOp(m.CPU.Platform) / float64(len(sides))
		}
		m := of(r)
		if rate > 0 {
			rates = append(rates, m.Rate()/rate)
		}
		if c := m.perOp(m.CPU.Platform); cpu > 0 && c > 0 {
			cpus = append(cpus, c/cpu)
		}
	}
	return rates, cpus
}

// tenantAllocRatios sets many-app round i's bytes allocated per call
// against the mean of one-app rounds i and i+1, as tenantRatios does.
func tenantAllocRatios(one, many []TenantRound, idx int) []float64 {
	var out []float64
	for i, r := range many {
		if i >= len(one) {
			break
		}
		sides := one[i:min(i+2, len(one))]
		var base float64
		for _, s := range sides {
			base += s.Alloc[idx].bytes / float64(len(sides))
		}
		if base > 0 && r.Alloc[idx].bytes > 0 {
			out = append(out, r.Alloc[idx].bytes/base)
		}
	}
	return out
}

// tenantMemory says what the population's apps and users added to the
// platform's resident memory as they were made.
func tenantMemory(run TenantRun) string {
	if run.RSSBefore <= 0 || run.RSSApps <= 0 || run.RSSUsers <= 0 {
		return "resident memory not measured (no -platform-pid)"
	}
	apps, users := run.RSSApps-run.RSSBefore, run.RSSUsers-run.RSSApps
	return fmt.Sprintf("resident memory %.0f MB before the population, +%.1f MB for its %d apps (%.1f KB each), +%.1f MB for its %d users (%.1f KB each), %.0f MB after the last round",
		mb(run.RSSBefore), mb(apps), run.Apps, float64(apps)/1024/float64(run.Apps), mb(users), run.Users, float64(users)/1024/float64(max(1, run.Users)), mb(run.RSS))
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// straddle is two windows of the same call as one measurement: their
// operations, time, latencies and CPU added up.
func straddle(a, b Measured) Measured {
	out := Measured{OK: a.OK + b.OK, Errors: a.Errors + b.Errors, Elapsed: a.Elapsed + b.Elapsed, Lat: &Latencies{}, FirstErr: a.FirstErr}
	if out.FirstErr == nil {
		out.FirstErr = b.FirstErr
	}
	for _, l := range []*Latencies{a.Lat, b.Lat} {
		if l != nil {
			l.mu.Lock()
			s := slices.Clone(l.samples)
			l.mu.Unlock()
			out.Lat.Add(s)
		}
	}
	out.CPU = addCPU(a.CPU, b.CPU)
	return out
}

// addCPU is the CPU of two windows together.
func addCPU(a, b CPUUse) CPUUse {
	return CPUUse{Machine: a.Machine + b.Machine, Idle: a.Idle + b.Idle, Steal: a.Steal + b.Steal,
		Platform: a.Platform + b.Platform, Load: a.Load + b.Load, Cores: max(a.Cores, b.Cores)}
}

// drainSummary adds up one write window's deliveries over the rounds (of:
// a count, those missing after the drain, and how long the drain took) and
// gives the drain's median and longest, in seconds.
func drainSummary(rounds []TenantRound, of func(TenantRound) (n, missing int, drain time.Duration)) (n, missing int, med, longest float64) {
	drains := make([]float64, 0, len(rounds))
	for _, r := range rounds {
		rn, rm, rd := of(r)
		n, missing = n+rn, missing+rm
		drains = append(drains, rd.Seconds())
	}
	med, _, longest = spread(drains)
	return n, missing, med, longest
}
