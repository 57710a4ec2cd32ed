// Command platformbench is the load process of scripts/bench.sh: it sets up
// a running platform through its admin and partner APIs, drives it with
// correctly signed requests from closed-loop clients, measures the
// baselines of the same run (raw appends to the same kind of event store,
// pgbench -S or /healthz), and writes rows of rate, p50, p99 and the ratio
// to the baseline, as JSON for `platformbench table` to print as one table.
//
//	platformbench run -url http://127.0.0.1:8080 -admin-token-file data/admin.token -store embedded -out embedded.json
//	platformbench table [-json] embedded.json postgres.json
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"
)

// Options are the run's flags.
type Options struct {
	Clients      int
	PatchClients int
	History      int
	Users        int
	Cards        int
	Warmup       time.Duration
	Window       time.Duration
	Drain        time.Duration
	// IdleWindow is how long webhook-cost's idle row lasts: the longest
	// period of an idle node's own work it holds whole, the Go runtime's
	// collection forced every 2 minutes in a process that allocates little
	// (15-40 ms after a load), with autovacuum's visits to each database
	// (one a minute); a row of 11 s holds each or not and reads 0.9-5.7
	// ms/s for the same idle node.
	IdleWindow time.Duration
	// WebhookRate, when positive, paces the webhook scenario's writes to
	// this many per second instead of a closed loop.
	WebhookRate float64
	// FanoutRate is webhook-fanout's offered PATCHes per second.
	FanoutRate float64
	// FanoutEvents and FanoutRepeats are webhook-fanout-drain's events per
	// drain and its alternated runs of 1 and 10 endpoints.
	FanoutEvents, FanoutRepeats int
	// TenantApps and TenantUsers are many-tenants' population.
	TenantApps, TenantUsers int
	// TenantRepeats is many-tenants' many-app rounds, each between two
	// one-app rounds.
	TenantRepeats int
	// DrainBacklog is how many deliveries webhook-drain queues at once.
	DrainBacklog int
	// PacedRate, when positive, is the offered rate of register-paced and
	// member-upsert-paced; 0 offers PacedShare of the rate their closed-loop
	// scenario measured earlier in the same run.
	PacedRate  float64
	PacedShare float64
	// PlatformPID, when positive, is the platform's process, whose CPU
	// webhook-drain reads from /proc to report CPU per delivery.
	PlatformPID int
	// CostRates are webhook-cost's offered rates (PATCHes per second).
	CostRates string
	// PostgresPID, when positive, is the postmaster of the platform's
	// Postgres server, whose CPU (children included) webhook-cost counts.
	PostgresPID int
	// PGStatsURL and PGStatsDB, when set, are a connection to another
	// database of the platform's server and the platform's database, whose
	// transactions webhook-cost counts (pg_stat_database).
	PGStatsURL, PGStatsDB string
	// TimelineDir, when set, receives each paced row's calls (offset into
	// the window, latency, wall time) as <store>-<scenario>-paced.csv.
	TimelineDir string
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: platformbench run|table|seed|rebuild [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	switch os.Args[1] {
	case "run":
		err = runCmd(ctx, os.Args[2:], os.Stderr)
	case "table":
		err = tableCmd(os.Args[2:], os.Stdout)
	case "seed":
		err = seedCmd(ctx, os.Args[2:], os.Stderr)
	case "rebuild":
		err = rebuildCmd(ctx, os.Args[2:], os.Stderr)
	default:
		err = fmt.Errorf("unknown subcommand %q (run, table, seed, rebuild)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "platformbench:", err)
		os.Exit(1)
	}
}

// allScenarios is the order scenarios run in: webhooks first, while the
// dispatcher has no backlog of earlier scenarios' deliveries.
var allScenarios = []string{"webhooks", "webhook-drain", "webhook-fanout", "register", "patch-fresh", "patch-long", "member-upsert", "register-paced", "member-upsert-paced", "snapshot", "report-pull", "verify-hot", "verify-many"}

// runFlags are run's settings besides the scenario Options.
type runFlags struct {
	url, tokenFile, store, rawURL, rawDir, pgbench, pgbenchURL, scenarios, out string
	// pullFloor measures report-pull's second baseline (PullFloor).
	pullFloor bool
}

func runCmd(ctx context.Context, args []string, log io.Writer) error {
	f, o, err := parseRunFlags(args)
	if err != nil {
		return err
	}
	token, err := adminToken(f.tokenFile)
	if err != nil {
		return err
	}
	b := &Bench{P: newPlatform(f.url, token, max(o.Clients, o.PatchClients)), Opt: o, run: strconv.FormatInt(time.Now().UnixNano(), 36)}
	say := func(format string, a ...any) {
		fmt.Fprintf(log, "platformbench [%s] "+format+"\n", append([]any{f.store}, a...)...)
	}
	if f.pullFloor && f.pgbench != "" {
		b.floor = &pullFloor{pgbench: f.pgbench, url: f.pgbenchURL}
	}
	if f.pgbench != "" {
		b.readBase = &pgbenchAt{pgbench: f.pgbench, url: f.pgbenchURL}
	}
	say("set-up: app and %d users", o.Users)
	if err := b.setup(ctx); err != nil {
		return fmt.Errorf("set-up: %w", err)
	}
	// Baselines first, so every row below can refer to them.
	bl, rows, err := b.baselines(ctx, f, say)
	if err != nil {
		return err
	}
	for _, s := range strings.Split(f.scenarios, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		say("scenario %s (%s)", s, b.settle(ctx, o.Drain))
		got, err := b.scenario(ctx, s, f.store, bl)
		if err != nil {
			return err
		}
		rows = append(rows, got...)
	}
	if err := writeTable(log, rows); err != nil {
		return err
	}
	return writeRowsJSON(f.out, rows)
}

// parseRunFlags reads run's command line; -quick shortens every phase.
func parseRunFlags(args []string) (runFlags, Options, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var f runFlags
	var o Options
	fs.StringVar(&f.url, "url", "http://127.0.0.1:8080", "platform base URL")
	fs.StringVar(&f.tokenFile, "admin-token-file", "", "file holding the operator token (else PLATFORM_ADMIN_TOKEN)")
	fs.StringVar(&f.store, "store", "embedded", "label of the platform's stores: embedded or postgres")
	fs.StringVar(&f.rawURL, "raw-store-url", "", "Postgres event store URL for the raw-append baseline (empty: a bbolt log in -raw-dir)")
	fs.StringVar(&f.rawDir, "raw-dir", os.TempDir(), "directory of the raw-append baseline's bbolt log (same disk as the platform's)")
	fs.StringVar(&f.pgbench, "pgbench", "", "pgbench binary for the read baseline (empty: /healthz is the read baseline)")
	fs.StringVar(&f.pgbenchURL, "pgbench-url", "", "database initialised with pgbench -i")
	fs.StringVar(&f.scenarios, "scenarios", strings.Join(allScenarios, ","), "comma-separated scenarios")
	fs.StringVar(&f.out, "out", "", "write the rows as JSON to this file")
	fs.BoolVar(&f.pullFloor, "pull-floor", false, "with -pgbench: report-pull is also compared with the pull floor (a pgbench script of one pull's writes and reads in one transaction, set up in the -pgbench-url database)")
	quick := fs.Bool("quick", false, "a smoke run: 1s warm-up, 3s window, short histories, few users and cards")
	fs.IntVar(&o.Clients, "clients", 32, "closed-loop clients per scenario")
	fs.IntVar(&o.PatchClients, "patch-clients", 8, "clients (each on its own user) of PATCH and webhooks")
	fs.IntVar(&o.History, "history", 1000, "prior events of each user in patch-long")
	fs.IntVar(&o.Users, "users", 2000, "users read by snapshot and report-pull")
	fs.IntVar(&o.Cards, "cards", 1000, "cards of verify-many")
	fs.DurationVar(&o.Warmup, "warmup", 3*time.Second, "unmeasured warm-up of each scenario")
	fs.DurationVar(&o.Window, "window", 10*time.Second, "measured window of each scenario")
	fs.DurationVar(&o.Drain, "drain", 60*time.Second, "how long webhooks wait for outstanding deliveries")
	fs.DurationVar(&o.IdleWindow, "idle-window", 2*time.Minute, "how long webhook-cost's idle row lasts")
	fs.Float64Var(&o.WebhookRate, "webhook-rate", 0, "offered PATCHes per second of the webhook scenario (0: closed loop, as fast as answered)")
	fs.Float64Var(&o.FanoutRate, "fanout-rate", 100, "offered PATCHes per second of webhook-fanout (each app in turn: 0, 1 and 10 endpoints)")
	fs.IntVar(&o.FanoutEvents, "fanout-events", 2000, "profile updates per drain of webhook-fanout-drain (each delivered to 1 or 10 endpoints; a drain shorter than about 2,000 leaves the 1-endpoint CPU a few /proc ticks)")
	fs.IntVar(&o.FanoutRepeats, "fanout-repeats", 3, "alternated drains of 1 and 10 endpoints in webhook-fanout-drain")
	fs.IntVar(&o.TenantApps, "tenant-apps", 1000, "apps of many-tenants, one webhook endpoint each")
	fs.IntVar(&o.TenantUsers, "tenant-users", 20000, "users of each many-tenants population (one app, then -tenant-apps apps)")
	fs.IntVar(&o.TenantRepeats, "tenant-repeats", 3, "many-app rounds of many-tenants, alternated with one-app rounds (one app first and last)")
	fs.IntVar(&o.DrainBacklog, "drain-backlog", 4000, "deliveries webhook-drain queues at once (its backlog)")
	fs.Float64Var(&o.PacedRate, "paced-rate", 0, "offered calls per second of register-paced and member-upsert-paced (0: -paced-share of their closed-loop rate in this run)")
	fs.Float64Var(&o.PacedShare, "paced-share", 0.5, "share of the measured closed-loop capacity the paced scenarios offer when -paced-rate is 0")
	fs.IntVar(&o.PlatformPID, "platform-pid", 0, "the platform's process id, for webhook-drain's CPU per delivery (0: not reported)")
	fs.StringVar(&o.CostRates, "webhook-cost-rates", "100,200,500", "offered PATCHes per second of webhook-cost, one run each")
	fs.IntVar(&o.PostgresPID, "postgres-pid", 0, "the platform's Postgres postmaster, for webhook-cost's system CPU (0: platform only)")
	fs.StringVar(&o.PGStatsURL, "pg-stats-url", "", "a connection to another database of the platform's Postgres, for webhook-cost's transaction counts")
	fs.StringVar(&o.PGStatsDB, "pg-stats-db", "", "the platform's database, whose transactions webhook-cost counts")
	fs.StringVar(&o.TimelineDir, "timeline-dir", "", "write each paced row's calls (offset into the window, latency, wall time) to <store>-<scenario>-paced.csv in this directory")
	if err := fs.Parse(args); err != nil {
		return f, o, err
	}
	if *quick {
		o.Warmup, o.Window, o.Drain = time.Second, 3*time.Second, 20*time.Second
		o.IdleWindow = statsSettle
		o.History, o.Users, o.Cards = 50, 200, 100
		o.DrainBacklog = 800
		o.FanoutEvents, o.FanoutRepeats = 80, 1
		o.TenantApps, o.TenantUsers = 100, 2000
		o.TenantRepeats = 1
	}
	// Made now, so a run cannot fail at its first paced row, minutes in.
	if o.TimelineDir != "" {
		if err := os.MkdirAll(o.TimelineDir, 0o755); err != nil {
			return f, o, fmt.Errorf("-timeline-dir: %w", err)
		}
	}
	return f, o, nil
}

// adminToken reads the operator token from file, else from
// PLATFORM_ADMIN_TOKEN; having none is an error.
func adminToken(file string) (string, error) {
	token := os.Getenv("PLATFORM_ADMIN_TOKEN")
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("admin token: %w", err)
		}
		token = strings.TrimSpace(string(b))
	}
	if token == "" {
		return "", errors.New("no operator token: -admin-token-file or PLATFORM_ADMIN_TOKEN")
	}
	return token, nil
}

// measuredBaselines are what scenario rows are compared with: a raw
// append per client count for writes, and one read baseline.
type measuredBaselines struct {
	raw      map[int]Measured
	read     Measured
	readName string
}

// baselines measures the raw append (at every client count a scenario
// uses) and the read baseline (pgbench -S, else GET /healthz), and
// returns them with their rows.
func (b *Bench) baselines(ctx context.Context, f runFlags, say func(string, ...any)) (measuredBaselines, []Row, error) {
	o := b.Opt
	bl := measuredBaselines{raw: map[int]Measured{}, readName: "/healthz"}
	var rows []Row
	for _, c := range uniqInts(o.Clients, o.PatchClients) {
		say("baseline: raw append, %d clients", c)
		m, err := RawAppend(ctx, f.rawURL, f.rawDir, b.phase(c))
		if err != nil {
			return bl, nil, err
		}
		bl.raw[c] = m
		rows = append(rows, rowOf("baseline: raw append", f.store, c, m, "", nil))
	}
	if f.pgbench != "" {
		bl.readName = "pgbench -S"
		say("baseline: pgbench -S, %d clients", o.Clients)
		m, err := PgbenchS(ctx, f.pgbench, f.pgbenchURL, b.phase(o.Clients))
		if err != nil {
			return bl, nil, err
		}
		bl.read = m
	} else {
		say("baseline: GET /healthz, %d clients", o.Clients)
		bl.read, _ = b.Healthz(ctx)
	}
	rows = append(rows, rowOf("baseline: "+bl.readName, f.store, o.Clients, bl.read, "", nil))
	return bl, rows, nil
}

// scenario runs one named scenario and returns its rows: writes are
// compared with the raw append, reads with the read baseline.
func (b *Bench) scenario(ctx context.Context, s, store string, bl measuredBaselines) ([]Row, error) {
	o := b.Opt
	var m Measured
	var err error
	clients := o.Clients
	base, baseName := bl.read, bl.readName
	writeBase := func() { base, baseName = bl.raw[clients], "raw append" }
	switch s {
	case "webhooks":
		res, err := b.Webhooks(ctx)
		if err != nil {
			return nil, fmt.Errorf("webhooks: %w", err)
		}
		return webhookRows(res, store, o, bl.raw[o.PatchClients]), nil
	case "webhook-cost":
		rates, err := parseRates(o.CostRates)
		if err != nil {
			return nil, err
		}
		idle, res, err := b.WebhookCost(ctx, rates)
		if err != nil {
			return nil, fmt.Errorf("webhook-cost: %w", err)
		}
		return costRows(idle, res, store, o), nil
	case "webhook-drain":
		res, err := b.WebhookDrain(ctx)
		if err != nil {
			return nil, fmt.Errorf("webhook-drain: %w", err)
		}
		return []Row{drainRow(res, store, o, bl.raw[o.PatchClients])}, nil
	case "webhook-fanout":
		res, err := b.WebhookFanout(ctx, o.FanoutRate)
		if err != nil {
			return nil, fmt.Errorf("webhook-fanout: %w", err)
		}
		return fanoutRows(res, store, o, o.FanoutRate), nil
	case "webhook-fanout-drain":
		runs, err := b.WebhookFanoutDrain(ctx, o.FanoutRepeats)
		if err != nil {
			return nil, fmt.Errorf("webhook-fanout-drain: %w", err)
		}
		return fanoutDrainRows(runs, store, o), nil
	case "many-tenants":
		one, many, err := b.ManyTenants(ctx)
		if err != nil {
			return nil, fmt.Errorf("many-tenants: %w", err)
		}
		return tenantRows(one, many, store, o), nil
	case "register":
		writeBase()
		m, err = b.Register(ctx)
	case "patch-fresh":
		clients = o.PatchClients
		writeBase()
		m, err = b.Patch(ctx, 0)
	case "patch-long":
		clients = o.PatchClients
		writeBase()
		s = fmt.Sprintf("patch-long (%d prior events)", o.History)
		m, err = b.Patch(ctx, o.History)
	case "member-upsert":
		writeBase()
		m, err = b.MemberUpsert(ctx)
	case "register-paced", "member-upsert-paced":
		writeBase()
		of := strings.TrimSuffix(s, "-paced")
		var rate float64
		if rate, err = b.pacedRate(of); err == nil {
			s = fmt.Sprintf("%s, %.0f/s offered", of, rate)
			m, err = b.Paced(ctx, of, store, rate)
		}
	case "snapshot":
		m, err = b.Snapshot(ctx)
	case "report-pull":
		return b.reportPullRows(ctx, store, base, baseName)
	case "snapshot-cost":
		return b.SnapshotCost(ctx, store)
	case "verify-hot":
		s = "verify-use hot card"
		m, err = b.Verify(ctx, 1)
	case "verify-many":
		s = fmt.Sprintf("verify-use %d cards", o.Cards)
		m, err = b.Verify(ctx, o.Cards)
	default:
		return nil, fmt.Errorf("unknown scenario %q (known: %s,webhook-cost,webhook-fanout-drain,many-tenants)", s, strings.Join(allScenarios, ","))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s, err)
	}
	if b.capacity == nil {
		b.capacity = map[string]float64{}
	}
	b.capacity[s] = m.Rate()
	return []Row{rowOf(s, store, clients, m, baseName, &base)}, nil
}

// webhookRows are the webhook scenario's three rows: the PATCH writes
// against the raw append, the deliveries against those writes, and the
// event-time-to-receipt latency.
func webhookRows(res WebhookResult, store string, o Options, raw Measured) []Row {
	c := o.PatchClients
	name := "webhook writes (PATCH)"
	if o.WebhookRate > 0 {
		name = fmt.Sprintf("webhook writes (PATCH, %g/s offered)", o.WebhookRate)
	}
	w := rowOf(name, store, c, res.Writes, "raw append", ptr(raw))
	d := Row{Scenario: "webhook deliveries (ack→receipt)", Store: store, Clients: c,
		Rate: float64(res.Delivered) / o.Window.Seconds(), P50ms: ms(res.AckToReceipt.Quantile(0.5)), P99ms: ms(res.AckToReceipt.Quantile(0.99)),
		Errors: int64(res.Missing) + res.BadSignature, Baseline: "webhook writes", BaseRate: w.Rate}
	if w.Rate > 0 {
		d.Ratio = d.Rate / w.Rate
	}
	d.Note = fmt.Sprintf("rate = deliveries received in the window; errors = %d window writes undelivered after %s drain + %d bad signatures",
		res.Missing, o.Drain, res.BadSignature)
	e := Row{Scenario: "webhook event time→receipt", Store: store, Clients: c, Rate: d.Rate,
		P50ms: ms(res.EventToRecpt.Quantile(0.5)), P99ms: ms(res.EventToRecpt.Quantile(0.99)),
		Note: "occurred_at has whole seconds: ±1000 ms resolution"}
	return []Row{w, d, e}
}

// writeRowsJSON writes rows as indented JSON to path; an empty path
// writes nothing.
func writeRowsJSON(path string, rows []Row) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return fmt.Errorf("encode rows: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

func uniqInts(a, b int) []int {
	if a == b {
		return []int{a}
	}
	return []int{a, b}
}

// tableCmd prints the rows of one or more run files as one table (or, with
// -json, as one JSON array).
func tableCmd(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON instead of the table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var rows []Row
	for _, f := range fs.Args() {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("read rows: %w", err)
		}
		var rs []Row
		if err := json.Unmarshal(b, &rs); err != nil {
			return fmt.Errorf("decode %s: %w", f, err)
		}
		rows = append(rows, rs...)
	}
	if *asJSON {
		b, err := json.MarshalIndent(rows, "", "  ")
		if err != nil {
			return fmt.Errorf("encode rows: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	return writeTable(w, rows)
}
