package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// tenantUser is one user of the many-tenants population, with its app.
type tenantUser struct {
	app  int // index into the apps
	user int64
}

// Tenants is the many-tenants population: -tenant-apps apps, each with its
// default webhook endpoint on the loopback receiver (one path per app, so
// each delivery is checked with its own app's secret), and -tenant-users
// users spread evenly over them.
type Tenants struct {
	apps  []App
	users []tenantUser
	rcv   *Receiver
}

// TenantRun is one population's measurement: the same register,
// snapshot and webhook-producing PATCH calls as the one-app scenarios,
// each made on a random tenant.
type TenantRun struct {
	Apps, Users int
	SetupFor    time.Duration
	Register    Measured
	Snapshot    Measured
	Webhooks    Measured // the PATCHes
	Delivered   int      // deliveries received of the PATCHes
	Missing     int      // PATCHes not delivered after the drain
	Bad         int64
	RSS         int64 // the platform's resident memory after the run, bytes (0: unknown)
}

// ManyTenants measures two populations of the same size in turn: one app
// holding every user, then -tenant-apps apps sharing them, each app with
// its one webhook endpoint. The one-app population is the baseline: same
// users, same endpoint per event, only the number of tenants differs.
func (b *Bench) ManyTenants(ctx context.Context) (one, many TenantRun, err error) {
	if one, err = b.tenantRun(ctx, 1); err != nil {
		return one, many, fmt.Errorf("one app: %w", err)
	}
	if many, err = b.tenantRun(ctx, b.Opt.TenantApps); err != nil {
		return one, many, fmt.Errorf("%d apps: %w", b.Opt.TenantApps, err)
	}
	return one, many, nil
}

// tenantRun creates a population of apps apps and -tenant-users users
// through the admin and partner APIs, then measures it.
func (b *Bench) tenantRun(ctx context.Context, apps int) (TenantRun, error) {
	t0 := time.Now()
	tn, err := b.tenants(ctx, apps)
	if tn.rcv != nil {
		defer tn.rcv.Close()
	}
	if err != nil {
		return TenantRun{}, err
	}
	res := TenantRun{Apps: len(tn.apps), Users: len(tn.users), SetupFor: time.Since(t0)}
	_ = b.settle(ctx, b.Opt.Drain)
	c := b.Opt.Clients
	res.Register = closedLoop(ctx, b.phase(c), func(ctx context.Context, _, _ int) error {
		_, err := b.register(ctx, tn.apps[rand.IntN(len(tn.apps))], "tenant")
		return err
	})
	_ = b.settle(ctx, b.Opt.Drain)
	res.Snapshot = closedLoop(ctx, b.phase(c), func(ctx context.Context, _, _ int) error {
		u := tn.users[rand.IntN(len(tn.users))]
		return b.P.partnerM(ctx, tn.apps[u.app], http.MethodGet, "/open/v1/channel/users/"+strconv.FormatInt(u.user, 10), nil, http.StatusOK, nil)
	})
	_ = b.settle(ctx, b.Opt.Drain)
	b.tenantWebhooks(ctx, tn, &res)
	res.Bad = tn.rcv.bad.Load()
	res.RSS = b.platformRSS()
	return res, nil
}

// tenants creates the apps (each pointed at its own receiver path) and
// registers the users round-robin over them.
func (b *Bench) tenants(ctx context.Context, apps int) (Tenants, error) {
	var tn Tenants
	rcv, err := startReceiver("")
	if err != nil {
		return tn, err
	}
	tn.rcv = rcv
	rcv.secrets = map[string]string{}
	tn.apps = make([]App, apps)
	if err := forEach(ctx, b.Opt.Clients, len(tn.apps), func(ctx context.Context, i int) error {
		app, err := b.P.createApp(ctx, fmt.Sprintf("tenant%d-%s", i, b.run))
		if err != nil {
			return err
		}
		path := "/hook/" + strconv.FormatInt(app.ID, 10)
		rcv.mu.Lock()
		rcv.secrets[path] = app.WebhookSecret
		rcv.mu.Unlock()
		tn.apps[i] = app
		url := strings.TrimSuffix(rcv.URL, "/hook") + path
		return b.P.admin(ctx, http.MethodPatch, "/admin/v1/apps/"+strconv.FormatInt(app.ID, 10), map[string]any{"webhook_url": url}, http.StatusOK, nil)
	}); err != nil {
		return tn, fmt.Errorf("tenant apps: %w", err)
	}
	tn.users = make([]tenantUser, b.Opt.TenantUsers)
	if err := forEach(ctx, b.Opt.Clients, len(tn.users), func(ctx context.Context, i int) error {
		a := i % len(tn.apps)
		u, err := b.register(ctx, tn.apps[a], "tenant")
		tn.users[i] = tenantUser{app: a, user: u}
		return err
	}); err != nil {
		return tn, fmt.Errorf("tenant users: %w", err)
	}
	return tn, nil
}

// tenantWebhooks PATCHes random users of random tenants (worker w only the
// users whose index is w modulo the workers, so no user is written
// concurrently) and waits, bounded, for every PATCH's delivery.
func (b *Bench) tenantWebhooks(ctx context.Context, tn Tenants, res *TenantRun) {
	c := b.Opt.PatchClients
	acked := make([]map[int64]int, c)
	for w := range acked {
		acked[w] = map[int64]int{}
	}
	before := map[int64]int{}
	tn.rcv.mu.Lock()
	for u, l := range tn.rcv.byUser {
		before[u] = len(l)
	}
	tn.rcv.mu.Unlock()
	res.Webhooks = closedLoop(ctx, b.phase(c), func(ctx context.Context, w, _ int) error {
		n := (len(tn.users) - w + c - 1) / c
		u := tn.users[w+c*rand.IntN(max(1, n))]
		if err := b.patch(ctx, tn.apps[u.app], u.user); err != nil {
			return err
		}
		acked[w][u.user]++
		return nil
	})
	deadline := time.Now().Add(b.Opt.Drain)
	for ctx.Err() == nil {
		missing, delivered := 0, 0
		tn.rcv.mu.Lock()
		for _, a := range acked {
			for u, n := range a {
				got := len(tn.rcv.byUser[u]) - before[u]
				delivered += min(n, got)
				missing += max(0, n-got)
			}
		}
		tn.rcv.mu.Unlock()
		res.Missing, res.Delivered = missing, delivered
		if missing == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
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

// tenantRows are many-tenants' lines: the one-app population's three,
// then the many-app population's, each against the same call on one app
// (the goal: at least 0.9).
func tenantRows(one, many TenantRun, store string, o Options) []Row {
	rows := tenantRunRows(one, nil, store, o)
	return append(rows, tenantRunRows(many, rows, store, o)...)
}

// tenantRunRows are one population's rows, set against base's (nil: the
// rows are the baseline).
func tenantRunRows(res TenantRun, base []Row, store string, o Options) []Row {
	pop := fmt.Sprintf("%d app%s, %d users", res.Apps, plural(res.Apps), res.Users)
	calls := []struct {
		name    string
		clients int
		m       Measured
	}{{"register", o.Clients, res.Register}, {"snapshot", o.Clients, res.Snapshot}, {"PATCH with a webhook", o.PatchClients, res.Webhooks}}
	rows := make([]Row, len(calls))
	for i, c := range calls {
		rows[i] = rowOf(fmt.Sprintf("tenants (%s): %s", pop, c.name), store, c.clients, c.m, "", nil)
		if base != nil && base[i].Rate > 0 {
			rows[i].Baseline, rows[i].BaseRate, rows[i].Ratio = "the same on one app", base[i].Rate, rows[i].Rate/base[i].Rate
		}
	}
	mem := "resident memory not measured (no -platform-pid)"
	if res.RSS > 0 {
		mem = fmt.Sprintf("platform resident memory %.0f MB after it", float64(res.RSS)/(1<<20))
	}
	rows[0].Note = fmt.Sprintf("set-up (apps, endpoints, users through the API) took %s; %s", res.SetupFor.Round(time.Second), mem)
	rows[2].Errors += int64(res.Missing) + res.Bad
	rows[2].Note = fmt.Sprintf("%d deliveries received, each checked with its app's secret; errors include %d PATCHes undelivered after %s and %d bad signatures",
		res.Delivered, res.Missing, o.Drain, res.Bad)
	return rows
}
