package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// snapshot-cost: the Postgres snapshot read against pgbench -S, each
// charged with the CPU of the processes that take part in it rather than
// the whole machine's, so that the ratio holds on a machine other work
// shares. Rounds alternate a pgbench -S window (the pgbench client and the
// Postgres server) with a snapshot window (the platform, this load process
// and the Postgres server), so drift in the machine's speed falls on both
// alike; the last row is the rounds' medians. Each read row gives two
// ratios: with the clients (this load process's Go HTTP client, pgbench's
// C client), and of the serving processes alone (platform and Postgres
// against Postgres), which is what a deployment pays for. Postgres transactions per operation
// (pg_stat_database) say how many commits a read costs.

// pgbenchAt is where the read baseline runs: the pgbench binary and the
// database pgbench -i initialised.
type pgbenchAt struct{ pgbench, url string }

// snapshotCostRounds is how many pgbench -S / snapshot pairs one run makes.
const snapshotCostRounds = 3

// costWindow is what one window of snapshot-cost spent, per operation.
type costWindow struct {
	rate                               float64
	platform, load, postgres, pgClient float64 // µs of CPU per operation
	xacts                              float64 // Postgres transactions per operation
	p50, p99                           float64 // ms
	errors                             int64
	firstErr                           error
}

func (w costWindow) system() float64 { return w.platform + w.load + w.postgres + w.pgClient }

// serving is the CPU of the processes that serve the operation, its
// client left out: the platform and Postgres for a read, Postgres alone
// for a pgbench -S transaction.
func (w costWindow) serving() float64 { return w.platform + w.postgres }

// SnapshotCost runs the rounds and returns one row per window and the
// medians' row.
func (b *Bench) SnapshotCost(ctx context.Context, store string) ([]Row, error) {
	if b.readBase == nil || b.Opt.PostgresPID <= 0 || b.Opt.PlatformPID <= 0 {
		return nil, fmt.Errorf("snapshot-cost needs -pgbench, -pgbench-url, -postgres-pid and -platform-pid")
	}
	c := b.Opt.Clients
	var rows []Row
	var reads, bases []costWindow
	for round := 1; round <= snapshotCostRounds; round++ {
		base, err := b.pgbenchCost(ctx, c)
		if err != nil {
			return nil, err
		}
		read, err := b.snapshotWindowCost(ctx, c)
		if err != nil {
			return nil, err
		}
		bases, reads = append(bases, base), append(reads, read)
		rows = append(rows, costRow(fmt.Sprintf("snapshot cost, round %d: pgbench -S", round), store, c, base, nil),
			costRow(fmt.Sprintf("snapshot cost, round %d: snapshot", round), store, c, read, &base))
	}
	med := func(ws []costWindow, f func(costWindow) float64) float64 {
		v := make([]float64, len(ws))
		for i, w := range ws {
			v[i] = f(w)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	medOf := func(ws []costWindow) costWindow {
		return costWindow{rate: med(ws, func(w costWindow) float64 { return w.rate }),
			platform: med(ws, func(w costWindow) float64 { return w.platform }), load: med(ws, func(w costWindow) float64 { return w.load }),
			postgres: med(ws, func(w costWindow) float64 { return w.postgres }), pgClient: med(ws, func(w costWindow) float64 { return w.pgClient }),
			xacts: med(ws, func(w costWindow) float64 { return w.xacts }), errors: int64(med(ws, func(w costWindow) float64 { return float64(w.errors) })), p50: med(ws, func(w costWindow) float64 { return w.p50 }),
			p99: med(ws, func(w costWindow) float64 { return w.p99 })}
	}
	mb := medOf(bases)
	r := costRow(fmt.Sprintf("snapshot cost, median of %d", snapshotCostRounds), store, c, medOf(reads), &mb)
	ratios, serving := make([]float64, len(reads)), make([]float64, len(reads))
	for i := range reads {
		ratios[i] = reads[i].system() / bases[i].system()
		serving[i] = reads[i].serving() / bases[i].serving()
	}
	slices.Sort(ratios)
	slices.Sort(serving)
	r.Note += fmt.Sprintf("; per round: %.2f×–%.2f× (serving %.2f×–%.2f×)", ratios[0], ratios[len(ratios)-1], serving[0], serving[len(serving)-1])
	return append(rows, r), nil
}

// costRow is a window's row: its CPU per operation in SystemCPUus (the
// processes that served it) and PostgresCPUus, against base's when given.
func costRow(name, store string, clients int, w costWindow, base *costWindow) Row {
	r := Row{Scenario: name, Store: store, Clients: clients, Rate: w.rate, P50ms: w.p50, P99ms: w.p99,
		SystemCPUus: w.system(), PostgresCPUus: w.postgres, PlatformCPUus: w.platform, LoadCPUus: w.load, PGXacts: w.xacts, Errors: w.errors}
	if base == nil {
		r.Note = fmt.Sprintf("process CPU %.0f µs/transaction: pgbench client %.0f, Postgres %.0f; %.2f Postgres transactions each",
			w.system(), w.pgClient, w.postgres, w.xacts)
		return r
	}
	r.Baseline, r.BaseRate = "pgbench -S (same round)", base.rate
	if base.rate > 0 {
		r.Ratio = w.rate / base.rate
	}
	r.Note = fmt.Sprintf("process CPU %.0f µs/read (platform %.0f, load process %.0f, Postgres %.0f), %.2f× pgbench -S's %.0f; serving processes (platform and Postgres) %.0f µs, %.2f× pgbench -S's Postgres %.0f; %.2f Postgres transactions per read",
		w.system(), w.platform, w.load, w.postgres, w.system()/base.system(), base.system(), w.serving(), w.serving()/base.serving(), base.serving(), w.xacts)
	if w.firstErr != nil {
		r.Note += "; first error: " + truncate(w.firstErr.Error(), 160)
	}
	return r
}

// snapshotWindowCost warms the snapshot read up, then measures one window
// of it with the platform's, this process's and Postgres' CPU around it.
func (b *Bench) snapshotWindowCost(ctx context.Context, clients int) (costWindow, error) {
	if _, err := b.snapshotLoop(ctx, Phase{Clients: clients, Window: b.Opt.Warmup}); err != nil {
		return costWindow{}, err
	}
	from, self0 := b.sampleSystem(ctx), selfCPU()
	m, err := b.snapshotLoop(ctx, Phase{Clients: clients, Window: b.Opt.Window})
	if err != nil {
		return costWindow{}, err
	}
	self1 := selfCPU()
	time.Sleep(500 * time.Millisecond) // backends publish their transaction counts
	cost := b.sampleSystem(ctx).since(from)
	w := costWindow{rate: m.Rate(), platform: m.perOp(cost.Platform), load: m.perOp(self1 - self0), postgres: m.perOp(cost.Postgres),
		xacts: float64(cost.Xacts) / float64(max(1, m.OK+m.Errors)), errors: m.Errors, firstErr: m.FirstErr}
	if m.Lat != nil {
		w.p50, w.p99 = ms(m.Lat.Quantile(0.5)), ms(m.Lat.Quantile(0.99))
	}
	return w, nil
}

// snapshotLoop is the snapshot scenario's closed loop for one phase.
func (b *Bench) snapshotLoop(ctx context.Context, p Phase) (Measured, error) {
	saved := b.Opt
	b.Opt.Warmup, b.Opt.Window = 0, p.Window
	defer func() { b.Opt = saved }()
	b.Opt.Clients = p.Clients
	return b.Snapshot(ctx)
}

// pgbenchCost runs pgbench -S for one window and charges it with the
// pgbench client's CPU and the Postgres server's.
func (b *Bench) pgbenchCost(ctx context.Context, clients int) (costWindow, error) {
	dir, err := os.MkdirTemp("", "pgbench-cost-")
	if err != nil {
		return costWindow{}, err
	}
	defer os.RemoveAll(dir)
	secs := max(1, int(b.Opt.Window.Round(time.Second)/time.Second))
	cmd := exec.CommandContext(ctx, b.readBase.pgbench, "-S", "-n", "-c", strconv.Itoa(clients), "-j", "2",
		"-T", strconv.Itoa(secs), "-l", "--log-prefix", filepath.Join(dir, "tx"), b.readBase.url)
	cmd.Dir = dir
	from := processTreeCPU(b.Opt.PostgresPID)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return costWindow{}, fmt.Errorf("pgbench -S: %w: %s", err, out)
	}
	time.Sleep(500 * time.Millisecond) // its backends exit and are reaped
	postgres := processTreeCPU(b.Opt.PostgresPID) - from
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		return costWindow{}, fmt.Errorf("pgbench -S: no tps line in: %s", out)
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	n := tps * float64(secs)
	if n <= 0 {
		return costWindow{}, fmt.Errorf("pgbench -S: no transactions")
	}
	client := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	w := costWindow{rate: tps, pgClient: float64(client.Microseconds()) / n, postgres: float64(postgres.Microseconds()) / n, xacts: 1}
	if lat, _, err := readPgbenchLogs(dir); err == nil && lat != nil {
		w.p50, w.p99 = ms(lat.Quantile(0.5)), ms(lat.Quantile(0.99))
	}
	return w, nil
}

// selfCPU is this process's CPU so far (utime + stime).
func selfCPU() time.Duration {
	raw, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	d, _ := parseStatCPU(string(raw))
	return d
}
