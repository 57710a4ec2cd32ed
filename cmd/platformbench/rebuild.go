package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// rebuildFlags are rebuild's settings.
type rebuildFlags struct {
	platform, dataDir, eventStoreURL, postgresURL, summary, store, out, logFile, profileDir string
	timeout                                                                                 time.Duration
	// postgresPID is the Postgres postmaster serving the stores (0: none
	// given), whose CPU during the rebuild is reported beside the platform's.
	postgresPID int
}

// rebuildCmd measures a seeded data directory with the real binary: it
// starts the platform on it, rebuilds every read model from the log
// (POST /admin/v1/projections/read_models/rebuild, progress printed as it
// goes) and reports the log's events per second of wall time, then kills
// the process with SIGKILL, starts it again and times /readyz; the
// resident memory (VmRSS) after each step is reported per user and per
// delivery of the seed.
func rebuildCmd(ctx context.Context, args []string, log io.Writer) error {
	f, err := parseRebuildFlags(args)
	if err != nil {
		return err
	}
	sum, err := readSeedSummary(f.summary)
	if err != nil {
		return err
	}
	say := func(format string, a ...any) {
		fmt.Fprintf(log, "platformbench rebuild [%s] "+format+"\n", append([]any{f.store}, a...)...)
	}
	pl, err := startPlatform(ctx, f)
	if err != nil {
		return err
	}
	defer pl.stop()
	say("started on a log of %d events (%d users, %d apps, %d deliveries): ready in %s, %s (%s anonymous)",
		sum.Events, sum.Users, sum.Apps, sum.Deliveries, pl.ready.Round(time.Millisecond), mib(pl.rss()), mib(pl.anon()))
	rows := []Row{memoryRow("resident after start", f.store, pl, sum)}

	before, _ := processCPU(pl.cmd.Process.Pid)
	var pgBefore time.Duration
	if f.postgresPID > 0 {
		pgBefore = processTreeCPU(f.postgresPID)
	}
	heapBefore, heapOK := (&Bench{P: pl.api}).heapNow()
	began := time.Now()
	applied, err := rebuildAll(ctx, pl.api, f.timeout, say)
	if err != nil {
		return err
	}
	secs := time.Since(began).Seconds()
	after, _ := processCPU(pl.cmd.Process.Pid)
	rate := float64(sum.Events) / secs
	r := Row{Scenario: "rebuild read_models", Store: f.store, Clients: 1, Rate: rate,
		Note: fmt.Sprintf("%d events in %.1f s (%d applied over every read model)", sum.Events, secs, applied)}
	if cpu := after - before; cpu > 0 {
		r.PlatformCPUus = float64(cpu.Microseconds()) / float64(sum.Events)
	}
	say("rebuilt every read model: %d events in %.1f s, %.0f events/s, %.1f µs of platform CPU per event", sum.Events, secs, rate, r.PlatformCPUus)
	if f.postgresPID > 0 && sum.Events > 0 {
		pg := float64((processTreeCPU(f.postgresPID) - pgBefore).Microseconds()) / float64(sum.Events)
		say("Postgres CPU per event: %.1f µs (platform and Postgres: %.1f µs)", pg, pg+r.PlatformCPUus)
		r.Note += fmt.Sprintf("; Postgres %.1f µs of CPU per event", pg)
	}
	// What the rebuild allocated per event of the log (the process's
	// counters, so with whatever else ran meanwhile): the garbage the
	// collector's share of a rebuild follows.
	if heapAfter, ok := (&Bench{P: pl.api}).heapNow(); ok && heapOK && sum.Events > 0 {
		objs := (heapAfter.objects - heapBefore.objects) / float64(sum.Events)
		kb := (heapAfter.bytes - heapBefore.bytes) / float64(sum.Events) / 1024
		say("allocated per event: %.1f objects, %.2f KB", objs, kb)
		r.Note += fmt.Sprintf("; %.1f allocations, %.2f KB allocated per event", objs, kb)
	}
	rows = append(rows, r, memoryRow("resident after rebuild", f.store, pl, sum))
	// The rebuild shredded the embedded snapshot and the node writes one as
	// it ends: the kill -9 comes once it is on disk (a node that does not
	// report its snapshot is killed at once).
	if waited, ok, err := waitSnapshot(ctx, pl.api, f.timeout); err != nil {
		return err
	} else if ok {
		say("snapshot on disk %.1f s after the rebuild ended", waited.Seconds())
	}

	// A kill -9 and a start on the same data: what an operator waits for.
	if err := pl.kill(); err != nil {
		return err
	}
	var profile []string
	if f.profileDir != "" {
		if err := os.MkdirAll(f.profileDir, 0o755); err != nil {
			return err
		}
		profile = []string{"PLATFORM_CPUPROFILE=" + filepath.Join(f.profileDir, f.store+"-rebuild.pprof"),
			"PLATFORM_HEAPPROFILE=" + filepath.Join(f.profileDir, f.store+"-heap.pprof")}
	}
	if pl, err = startPlatform(ctx, f, profile...); err != nil {
		return fmt.Errorf("restart after kill -9: %w", err)
	}
	defer pl.stop()
	say("kill -9 and start: /readyz after %s, %s (%s anonymous)", pl.ready.Round(time.Millisecond), mib(pl.rss()), mib(pl.anon()))
	rows = append(rows, Row{Scenario: "restart after kill -9", Store: f.store, Clients: 1,
		Note: fmt.Sprintf("/readyz in %.2f s", pl.ready.Seconds())}, memoryRow("resident after kill -9 start", f.store, pl, sum))
	// What the restarted node keeps while it idles: the runtime returns the
	// pages of the start's garbage over the next seconds, if at all.
	settleResident(ctx, pl, 10*time.Second)
	say("kill -9 start, settled: %s (%s anonymous)", mib(pl.rss()), mib(pl.anon()))
	rows = append(rows, memoryRow("resident after kill -9 start, settled", f.store, pl, sum))
	if f.profileDir != "" {
		if _, err := rebuildAll(ctx, pl.api, f.timeout, say); err != nil {
			return err
		}
		pl.stop()
		say("profiles of the start and a second rebuild written to %s", f.profileDir)
	}
	if err := writeTable(log, rows); err != nil {
		return err
	}
	return writeRowsJSON(f.out, rows)
}

func parseRebuildFlags(args []string) (rebuildFlags, error) {
	fs := flag.NewFlagSet("rebuild", flag.ContinueOnError)
	var f rebuildFlags
	fs.StringVar(&f.platform, "platform", "", "the platform binary (go build ./cmd/platform)")
	fs.StringVar(&f.dataDir, "data", "", "the data directory platformbench seed wrote")
	fs.StringVar(&f.eventStoreURL, "eventstore-url", "", "Postgres event store seed wrote to (empty: the embedded log)")
	fs.StringVar(&f.postgresURL, "postgres-url", "", "Postgres read models (empty: embedded)")
	fs.StringVar(&f.summary, "summary", "", "seed's summary (default: <data>.seed.json)")
	fs.StringVar(&f.store, "store", "embedded", "label of the stores in the rows")
	fs.StringVar(&f.out, "out", "", "write the rows as JSON to this file")
	fs.StringVar(&f.logFile, "log", "", "the platform's log (default: <data>.platform.log)")
	fs.StringVar(&f.profileDir, "profile-dir", "", "after the kill -9 start, rebuild once more and stop gracefully, writing the platform's CPU profile (restart and second rebuild) and heap profile there")
	fs.DurationVar(&f.timeout, "timeout", time.Hour, "give up the rebuild after this long")
	fs.IntVar(&f.postgresPID, "postgres-pid", 0, "the stores' Postgres postmaster, whose CPU during the rebuild is reported per event (0: not measured)")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if f.platform == "" || f.dataDir == "" {
		return f, errors.New("rebuild: -platform and -data are required")
	}
	if f.summary == "" {
		f.summary = filepath.Clean(f.dataDir) + ".seed.json"
	}
	if f.logFile == "" {
		f.logFile = filepath.Clean(f.dataDir) + ".platform.log"
	}
	return f, nil
}

// runningPlatform is a platform process this command started.
type runningPlatform struct {
	cmd   *exec.Cmd
	api   *Platform
	ready time.Duration // from the start of the process to its first 200 on /readyz
	done  chan struct{}
}

// startPlatform starts the binary on the data directory at a free port
// and waits for /readyz.
func startPlatform(ctx context.Context, f rebuildFlags, env ...string) (*runningPlatform, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	token, err := os.ReadFile(filepath.Join(f.dataDir, "admin.token"))
	if err != nil {
		return nil, fmt.Errorf("operator token of the seeded directory: %w", err)
	}
	logf, err := os.OpenFile(f.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(f.platform)
	cmd.Env = append(os.Environ(), "PLATFORM_ADDR=127.0.0.1:"+strconv.Itoa(port), "PLATFORM_DATA_DIR="+f.dataDir,
		"PLATFORM_EVENTSTORE_URL="+f.eventStoreURL, "PLATFORM_POSTGRES_URL="+f.postgresURL, "PLATFORM_LOG_FORMAT=json")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", f.platform, err)
	}
	p := &runningPlatform{cmd: cmd, api: newPlatform("http://127.0.0.1:"+strconv.Itoa(port), strings.TrimSpace(string(token)), 2), done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	for {
		err := p.api.plain(ctx, "/readyz", http.StatusOK)
		if err == nil {
			p.ready = time.Since(began)
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("the platform exited before it was ready (see %s)", f.logFile)
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// rss is the process's resident memory in bytes (0 where /proc does not tell).
func (p *runningPlatform) rss() int64 { return p.status("VmRSS:") }

// anon is the part of rss that is the process's own memory (heap, stacks),
// not pages of mapped files (the bbolt log is mapped, and the pages a
// replay read stay resident until the kernel needs them back).
func (p *runningPlatform) anon() int64 { return p.status("RssAnon:") }

// status reads one "kB" line of /proc/PID/status, in bytes.
func (p *runningPlatform) status(key string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), key); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *runningPlatform) kill() error {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.done
	return nil
}

// stop ends the process with SIGTERM (its orderly stop); twice is harmless.
func (p *runningPlatform) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// projectionProgress is one projection as GET /admin/v1/projections shows it.
type projectionProgress struct {
	Name    string  `json:"name"`
	Applied uint64  `json:"events_applied"`
	Rate    float64 `json:"events_per_second"`
	Ready   bool    `json:"ready"`
	Percent float64 `json:"percent"`
}

// rebuildPoll is how often rebuildAll asks whether the rebuild is done: the
// rate is the events over the time until it sees so, and a 300,000-event
// rebuild of about 1.3 s read in 200 ms steps could only come out as 183k,
// 208k or 242k events/s.
const rebuildPoll = 10 * time.Millisecond

// rebuildAll starts the rebuild of every read model and waits until each
// is ready, printing their progress every few seconds; it returns the
// events they applied together.
func rebuildAll(ctx context.Context, api *Platform, timeout time.Duration, say func(string, ...any)) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var started struct {
		Projections []projectionProgress `json:"projections"`
	}
	if err := api.admin(ctx, http.MethodPost, "/admin/v1/projections/read_models/rebuild", nil, http.StatusAccepted, &started); err != nil {
		return 0, fmt.Errorf("start the rebuild: %w", err)
	}
	watched := map[string]bool{}
	for _, s := range started.Projections {
		watched[s.Name] = true
	}
	lastSaid := time.Now()
	for {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(rebuildPoll):
		}
		var list struct {
			Projections []projectionProgress `json:"projections"`
		}
		if err := api.admin(ctx, http.MethodGet, "/admin/v1/projections", nil, http.StatusOK, &list); err != nil {
			return 0, err
		}
		ready, applied, slowest := 0, uint64(0), projectionProgress{Percent: 101}
		for _, s := range list.Projections {
			if !watched[s.Name] {
				continue
			}
			applied += s.Applied
			if s.Ready {
				ready++
			} else if s.Percent < slowest.Percent {
				slowest = s
			}
		}
		if ready == len(watched) {
			return applied, nil
		}
		if time.Since(lastSaid) >= 5*time.Second {
			say("%d of %d read models ready; slowest %s at %.1f%% (%.0f events/s)", ready, len(watched), slowest.Name, slowest.Percent, slowest.Rate)
			lastSaid = time.Now()
		}
	}
}

// memoryRow reports resident bytes per user of the seed: the whole
// resident set and its anonymous part (what the process holds itself).
func memoryRow(what, store string, p *runningPlatform, s SeedSummary) Row {
	rss, anon := p.rss(), p.anon()
	note := fmt.Sprintf("%s (%s anonymous)", mib(rss), mib(anon))
	if s.Users > 0 {
		note += fmt.Sprintf(", %.2f KB per user (%.2f KB anonymous), %d users, %d deliveries",
			float64(rss)/float64(s.Users)/1e3, float64(anon)/float64(s.Users)/1e3, s.Users, s.Deliveries)
	}
	return Row{Scenario: what, Store: store, Note: note}
}

// settleResident waits until the process's resident set changed by less
// than 1% over a second, or at most limit.
func settleResident(ctx context.Context, p *runningPlatform, limit time.Duration) {
	end := time.Now().Add(limit)
	last := p.rss()
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		now := p.rss()
		if d := now - last; d < last/100 && -d < last/100 {
			return
		}
		last = now
	}
}

func mib(b int64) string { return fmt.Sprintf("%.0f MB", float64(b)/1e6) }

// processCPU is a process's user and system time so far.
func processCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(raw))
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitSnapshot waits until GET /admin/v1/projections shows a snapshot on
// disk holding every read model at or past the head its last rebuild
// replayed to; ok is false when the node does not report its snapshot
// (Postgres read models, or an older binary).
func waitSnapshot(ctx context.Context, api *Platform, timeout time.Duration) (waited time.Duration, ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type pos struct {
		Commit  uint64 `json:"commit"`
		Prepare uint64 `json:"prepare"`
	}
	less := func(a, b pos) bool { return a.Commit < b.Commit || a.Commit == b.Commit && a.Prepare < b.Prepare }
	began := time.Now()
	for {
		var list struct {
			Projections []struct {
				Target pos `json:"target"`
			} `json:"projections"`
			Snapshot *struct {
				OnDisk   bool `json:"on_disk"`
				Position *pos `json:"position"`
			} `json:"snapshot"`
		}
		if err := api.admin(ctx, http.MethodGet, "/admin/v1/projections", nil, http.StatusOK, &list); err != nil {
			return 0, false, err
		}
		if list.Snapshot == nil {
			return 0, false, nil
		}
		var target pos
		for _, p := range list.Projections {
			if less(target, p.Target) {
				target = p.Target
			}
		}
		if sn := list.Snapshot; sn.OnDisk && sn.Position != nil && !less(*sn.Position, target) {
			return time.Since(began), true, nil
		}
		select {
		case <-ctx.Done():
			return 0, false, fmt.Errorf("no snapshot after the rebuild: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
