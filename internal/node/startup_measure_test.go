package node_test

import (
	"context"

	"bufio"
	"fmt"
	"github.com/healthtech/partner-open-platform/internal/node"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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
	rss                   uint64
	write                 time.Duration
	rateAfter, rateDuring int
}

// measureStart execs the binary on dir and polls a data route until it
// answers 200 (bounded); with waitSnapshot it then reads as fast as one
// client can before and while the first snapshot is written, until the
// log says it was written. It stops the process with SIGTERM.
func measureStart(t *testing.T, bin, dir string, built bigLogApp, snapshots string, waitSnapshot bool) startFigures {
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
			if !once && strings.Contains(sc.Text(), "read-model snapshot written") {
				once = true
				close(written)
			}
		}
	}()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	p := &platform{t: t, srv: &httptest.Server{URL: "http://" + addr}, client: &http.Client{Timeout: 30 * time.Second}}
	a := &app{p: p, ID: built.ID, Key: built.Key, Secret: built.Secret}
	path := fmt.Sprintf("/open/v1/channel/users/%d", built.First)
	get := func() int {
		res, err := p.client.Do(a.request("GET", path, nil, time.Now()))
		if err != nil {
			return 0
		}
		res.Body.Close()
		return res.StatusCode
	}
	var f startFigures
	for deadline := time.Now().Add(10 * time.Minute); ; {
		if get() == http.StatusOK {
			f.ready = time.Since(began)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no 200 within 10 minutes")
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.rss = rssOf(t, cmd.Process.Pid)
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
	p := start(t, node.Config{DataDir: dir, PartnerRateLimit: -1})
	opened := time.Since(began)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := p.node.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("opened in %s (%s), caught up in %s", opened.Round(time.Millisecond), p.node.Adapters["read models"], time.Since(began).Round(time.Millisecond))
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
