package storage_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// TestMeasureStartup measures an embedded start against a big log (see
// TestBuildBigLog): the time from exec of the platform binary to the first
// 200 on a data route (a user's snapshot, which waits for the read models
// to reach the log's head as it was at start), and the process's RSS then.
// It is a measurement, not a test of timing: it runs only when
// PLATFORM_BIGLOG_DIR and PLATFORM_BIN are set and asserts nothing about
// durations. It reports, in the same run: a start with snapshots off (the
// full replay), a start that writes the first snapshot, and a start that
// restores it; each figure is also given as a ratio to the replay.
func TestMeasureStartup(t *testing.T) {
	dir, bin := os.Getenv("PLATFORM_BIGLOG_DIR"), os.Getenv("PLATFORM_BIN")
	if dir == "" || bin == "" {
		t.Skip("PLATFORM_BIGLOG_DIR and PLATFORM_BIN are unset: nothing to measure")
	}
	built := buildBigLog(t, dir, 0)
	snap := filepath.Join(dir, "readmodels.snapshot")
	os.Remove(snap)

	var base startFigures
	if old := os.Getenv("PLATFORM_BIN_BASE"); old != "" {
		// The binary before this change (it knows no snapshot setting).
		base = measureStart(t, old, dir, built, "", false)
		t.Logf("baseline binary %s: first 200 after %s, RSS %d MB", old, base.ready.Round(time.Millisecond), base.rss>>20)
	}
	replay := measureStart(t, bin, dir, built, "off", false)
	t.Logf("replay (snapshots off): first 200 after %s, RSS %d MB", replay.ready.Round(time.Millisecond), replay.rss>>20)

	first := measureStart(t, bin, dir, built, "", true)
	fi, err := os.Stat(snap)
	if err != nil {
		t.Fatalf("no snapshot after the first start with snapshots on: %v", err)
	}
	t.Logf("first start with snapshots (replay, then write): first 200 after %s, RSS %d MB; snapshot written in %s while serving: %d reads/s during the write vs %d after it (%.2fx); file %d MB",
		first.ready.Round(time.Millisecond), first.rss>>20, first.write.Round(time.Millisecond), first.rateDuring, first.rateAfter,
		ratio(float64(first.rateDuring), float64(first.rateAfter)), fi.Size()>>20)

	restored := measureStart(t, bin, dir, built, "", false)
	t.Logf("start from the snapshot: first 200 after %s (%.3fx of replay), RSS %d MB (%.2fx of replay)",
		restored.ready.Round(time.Millisecond), ratio(float64(restored.ready), float64(replay.ready)),
		restored.rss>>20, ratio(float64(restored.rss), float64(replay.rss)))
	if base.ready > 0 {
		t.Logf("start from the snapshot vs the baseline binary: %.3fx the time, %.2fx the RSS",
			ratio(float64(restored.ready), float64(base.ready)), ratio(float64(restored.rss), float64(base.rss)))
	}
	t.Logf("RSS per million users: replay %d MB, restored %d MB (%d users, %d events)",
		replay.rss*1000000/uint64(built.Users)>>20, restored.rss*1000000/uint64(built.Users)>>20, built.Users, built.Events)
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

type startFigures struct {
	ready                 time.Duration
	readyz                time.Duration
	live                  time.Duration // first 200 on /healthz: the process answers
	cpu                   time.Duration // user+system CPU of the process at the first 200s
	rss                   uint64
	write                 time.Duration
	rateAfter, rateDuring int
}

// measureStart execs the binary on dir and polls a data route until it
// answers 200 (bounded); with waitSnapshot it then reads as fast as one
// client can before and while the first snapshot is written, until the
// log says it was written. It stops the process with SIGTERM.
func measureStart(t *testing.T, bin, dir string, built bigLogApp, snapshots string, waitSnapshot bool) startFigures {
	return measureStartStop(t, bin, dir, built, snapshots, waitSnapshot, syscall.SIGTERM, 0)
}

// measureStartStop is measureStart ending the process with stop
// (SIGKILL for a throwaway copy of a directory: no snapshot at the stop),
// after serving for linger past the measurement.
func measureStartStop(t *testing.T, bin, dir string, built bigLogApp, snapshots string, waitSnapshot bool, stop syscall.Signal, linger time.Duration) startFigures {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PLATFORM_DATA_DIR="+dir, "PLATFORM_ADDR="+addr, "PLATFORM_RATE_LIMIT=-1")
	if snapshots != "" {
		cmd.Env = append(cmd.Env, "PLATFORM_SNAPSHOT_INTERVAL="+snapshots)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	written := make(chan struct{})
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		once := false
		for sc.Scan() {
			// The start's own account of its phases, for the reader.
			// While it serves before a kill -9 (linger), each snapshot
			// written and its cost: the last one before the kill sets the tail.
			if line := sc.Text(); strings.Contains(line, "node opened") || strings.Contains(line, "restored from snapshot") ||
				strings.Contains(line, "caught up") || (linger > 0 && (strings.Contains(line, "snapshot written") || strings.Contains(line, "write cost"))) {
				t.Logf("%s: %s", filepath.Base(bin), line)
			}
			if !once && strings.Contains(sc.Text(), "read-model snapshot written") {
				once = true
				close(written)
			}
		}
	}()
	defer func() {
		_ = cmd.Process.Signal(stop)
		_ = cmd.Wait()
	}()
	p := &harness.Platform{T: t, Srv: &httptest.Server{URL: "http://" + addr}, Client: &http.Client{Timeout: 30 * time.Second}}
	a := &harness.App{P: p, ID: built.ID, Key: built.Key, Secret: built.Secret}
	path := fmt.Sprintf("/open/v1/channel/users/%d", built.First)
	get := func() int {
		res, err := p.Client.Do(a.Request("GET", path, nil, time.Now()))
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}
	var f startFigures
	// Both routes are polled in turn, each timed at its first 200.
	// /healthz is polled on its own: a data request may be held (up to
	// 5 s) by a process that listens before its node has opened.
	live := make(chan time.Duration, 1)
	go func() {
		for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if res, err := p.Client.Get(p.Srv.URL + "/healthz"); err == nil {
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					live <- time.Since(began)
					return
				}
			}
		}
		live <- 0
	}()
	for deadline := time.Now().Add(10 * time.Minute); f.ready == 0 || f.readyz == 0; {
		if f.readyz == 0 {
			if res, err := p.Client.Get(p.Srv.URL + "/readyz"); err == nil {
				res.Body.Close()
				if res.StatusCode == http.StatusOK {
					f.readyz = time.Since(began)
				}
			}
		}
		if f.ready == 0 && get() == http.StatusOK {
			f.ready = time.Since(began)
		}
		if time.Now().After(deadline) {
			t.Fatal("no 200 within 10 minutes")
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.rss = rssOf(t, cmd.Process.Pid)
	f.cpu = cpuOf(t, cmd.Process.Pid)
	f.live = <-live // answered by now: the process served the 200s above
	if linger > 0 {
		// The CPU of the serve (webhook traffic and snapshots), to set the
		// snapshots' share (their "write cost" lines) against.
		cpu := cpuOf(t, cmd.Process.Pid)
		time.Sleep(linger)
		t.Logf("%s served %s before the kill: CPU %s", filepath.Base(bin), linger, cpuOf(t, cmd.Process.Pid)-cpu)
	}
	if waitSnapshot {
		// Reads are counted from the first 200 until the write is done, then for 3 s after.
		from, n := time.Now(), 0
		for {
			select {
			case <-written:
				f.write = time.Since(from)
				f.rateDuring = int(float64(n) / f.write.Seconds())
				goto measured
			default:
			}
			if get() == http.StatusOK {
				n++
			}
			if time.Since(from) > 10*time.Minute {
				t.Fatal("no snapshot within 10 minutes")
			}
		}
	measured:
		from, n = time.Now(), 0
		for time.Since(from) < 3*time.Second {
			if get() == http.StatusOK {
				n++
			}
		}
		f.rateAfter = int(float64(n) / time.Since(from).Seconds())
	}
	return f
}

// cpuOf reads a process's user+system CPU time from /proc (clock ticks
// of 10 ms): on a shared machine the CPU a start needs is steadier than
// its wall time, which depends on what else runs.
func cpuOf(t *testing.T, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// rssOf reads a process's resident set size from /proc.
func rssOf(t *testing.T, pid int) uint64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, _ := strconv.ParseUint(strings.Fields(line)[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestOpenBigLog opens a node in process on PLATFORM_BIGLOG_DIR and waits
// until its projections have caught up, for profiling a start
// (go test -run TestOpenBigLog -cpuprofile); skipped without the variable.
func TestOpenBigLog(t *testing.T) {
	dir := os.Getenv("PLATFORM_BIGLOG_DIR")
	if dir == "" {
		t.Skip("PLATFORM_BIGLOG_DIR is unset")
	}
	began := time.Now()
	p := harness.Start(t, node.Config{DataDir: dir, PartnerRateLimit: -1})
	opened := time.Since(began)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := p.Node.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("opened in %s (%s), caught up in %s", opened.Round(time.Millisecond), p.Node.Adapters["read models"], time.Since(began).Round(time.Millisecond))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("heap in use after catch-up and GC: %d MB", ms.HeapInuse>>20)
	if path := os.Getenv("PLATFORM_HEAP_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.WriteHeapProfile(f); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMeasureRestart measures starts that restore the read-model snapshot
// of a big log (see TestBuildBigLog): PLATFORM_STARTUP_RUNS starts
// (default 3) of PLATFORM_BIN, each timed from exec to the first 200 on
// /readyz and on a user's snapshot, with the RSS then; with
// PLATFORM_BIN_BASE set, the same number of starts of that binary are
// interleaved with them, so both meet the same load on a shared machine,
// and the medians are given as a ratio. The first start writes a snapshot
// if the directory has none. Like TestMeasureStartup it asserts nothing
// about durations and runs only when PLATFORM_BIGLOG_DIR and PLATFORM_BIN
// are set.
func TestMeasureRestart(t *testing.T) {
	dir, bin := os.Getenv("PLATFORM_BIGLOG_DIR"), os.Getenv("PLATFORM_BIN")
	if dir == "" || bin == "" {
		t.Skip("PLATFORM_BIGLOG_DIR and PLATFORM_BIN are unset: nothing to measure")
	}
	built := buildBigLog(t, dir, 0)
	runs := 3
	if v := os.Getenv("PLATFORM_STARTUP_RUNS"); v != "" {
		if _, err := fmt.Sscan(v, &runs); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "readmodels.snapshot")); err != nil {
		first := measureStart(t, bin, dir, built, "", true)
		t.Logf("no snapshot yet: replayed and wrote one (first 200 after %s)", first.ready.Round(time.Millisecond))
	}
	bins := []string{bin}
	if old := os.Getenv("PLATFORM_BIN_BASE"); old != "" {
		bins = append(bins, old)
	}
	// With PLATFORM_BIGLOG_GOLDEN_<n> (n = 0 for PLATFORM_BIN, 1 for the
	// base), each start runs on a fresh copy of that directory (a snapshot
	// each binary wrote in its own format) and is killed after measuring,
	// so every start meets the same log, snapshot and tail.
	golden := map[string]string{}
	for i, b := range bins {
		golden[b] = os.Getenv(fmt.Sprintf("PLATFORM_BIGLOG_GOLDEN_%d", i))
	}
	// With PLATFORM_STARTUP_KILL9 (a duration, goldens required), each
	// measured start follows a crash: the binary first starts on the
	// fresh copy, serves for that long after its first 200 (the webhook
	// dispatcher appends meanwhile, so the log has a tail past the
	// snapshot and no freelist), and is killed with SIGKILL.
	var crashAfter time.Duration
	if v := os.Getenv("PLATFORM_STARTUP_KILL9"); v != "" {
		var err error
		if crashAfter, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string][]startFigures{}
	for i := 0; i < runs; i++ {
		for _, b := range bins {
			runDir := dir
			if g := golden[b]; g != "" {
				runDir = filepath.Join(t.TempDir(), "data")
				copyDir(t, g, runDir)
				if crashAfter > 0 {
					measureStartStop(t, b, runDir, built, "", false, syscall.SIGKILL, crashAfter)
				}
			}
			stop := syscall.SIGTERM
			if runDir != dir {
				stop = syscall.SIGKILL
			}
			f := measureStartStop(t, b, runDir, built, "", false, stop, 0)
			got[b] = append(got[b], f)
			t.Logf("%s run %d: /healthz 200 after %s, /readyz 200 after %s, user snapshot 200 after %s, CPU %s, RSS %d MB",
				b, i+1, f.live.Round(time.Millisecond), f.readyz.Round(time.Millisecond), f.ready.Round(time.Millisecond), f.cpu, f.rss>>20)
		}
	}
	median := func(fs []startFigures, pick func(startFigures) float64) float64 {
		v := make([]float64, len(fs))
		for i, f := range fs {
			v[i] = pick(f)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	for _, b := range bins {
		fs := got[b]
		t.Logf("%s median of %d: /healthz %.2f s, /readyz %.2f s, user snapshot %.2f s, CPU %.2f s, RSS %.0f MB (%.0f MB per million users; %d users, %d events)",
			b, len(fs), median(fs, func(f startFigures) float64 { return f.live.Seconds() }),
			median(fs, func(f startFigures) float64 { return f.readyz.Seconds() }),
			median(fs, func(f startFigures) float64 { return f.ready.Seconds() }),
			median(fs, func(f startFigures) float64 { return f.cpu.Seconds() }),
			median(fs, func(f startFigures) float64 { return float64(f.rss >> 20) }),
			median(fs, func(f startFigures) float64 { return float64(f.rss>>20) * 1e6 / float64(built.Users) }), built.Users, built.Events)
	}
	if len(bins) == 2 {
		pick := func(f startFigures) float64 { return f.ready.Seconds() }
		cpu := func(f startFigures) float64 { return f.cpu.Seconds() }
		t.Logf("medians, new / base: first 200 on a user snapshot %.3fx, CPU to it %.3fx", ratio(median(got[bins[0]], pick), median(got[bins[1]], pick)),
			ratio(median(got[bins[0]], cpu), median(got[bins[1]], cpu)))
	}
}

// copyDir copies the regular files of a data directory (one level of
// subdirectories, as keys/ is) to to.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		// On disk before the start: otherwise the start's own fsync of the
		// log would write the whole copy back and be timed with it.
		if err := out.Sync(); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}
