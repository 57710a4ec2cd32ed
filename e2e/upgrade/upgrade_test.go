package upgrade

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/internal/proc"
	"github.com/healthtech/partner-open-platform/e2e/internal/workload"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// envPreviousRelease overrides the commit scripts/previous-release pins.
const envPreviousRelease = "PLATFORM_TEST_PREVIOUS_RELEASE"

// TestRollingUpgrade runs a node of the previous release (built from git at
// the commit scripts/previous-release pins) and a node of this code on one
// Postgres database, as a rolling upgrade does: the old node serves alone
// and holds data; the new node starts on the same database (applying this
// release's expand-only migrations under the running old node); both serve
// signed reads and writes and deliver webhooks under a steady load; the old
// node is drained (out of the client's rotation, as a load balancer does on
// termination) and stopped with SIGTERM while the load goes on. Then no
// request failed, every acknowledged write reads back, every webhook
// arrived signed, checkpoints never moved back, no node exited on its own,
// and the read models equal a fresh rebuild by the new node.
//
// About 45 s once both binaries are in Go's build cache (the previous
// release's binary is kept in the user cache directory by commit); the
// first run builds the previous release, about a minute more.
func TestRollingUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("rolling upgrade: builds the previous release and runs two platform processes for about 45 s")
	}
	began := time.Now()
	db := pgtest.New(t)
	prev, commit := previousReleaseBinary(t)
	cur := proc.Program(t)
	built := time.Since(began)

	c := &proc.Cluster{T: t, DB: db, AdminToken: "adm_upgrade_" + proc.RandomHex(t, 12)}
	env := proc.NodeEnv(db, proc.RandomHex(t, 32), c.AdminToken, "int_upgrade_"+proc.RandomHex(t, 12),
		"PLATFORM_WEBHOOK_ALLOW_LOOPBACK=1", "PLATFORM_WEBHOOK_RETRY_SCHEDULE=1s,1s,2s,3s,5s")
	logs := t.TempDir()
	old, next := proc.NewNode(t, 0, []string{prev}, env, logs), proc.NewNode(t, 1, cur, env, logs)
	t.Cleanup(func() { old.Kill(); next.Kill() })
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	if err := old.WaitReady(60 * time.Second); err != nil {
		t.Fatalf("previous release %s: %v; log:\n%s", commit, err, old.LogTail(8000))
	}
	c.Nodes = []*proc.Node{old}
	c.Client = proc.NewClient(c.Nodes)

	// 1. The previous release alone: apps, cards, providers, webhooks, then
	// one steady load through the three steps below. The new node is in the
	// client's rotation from the start, drained until it is ready.
	rcv := proc.NewHookReceiver(t, 5, 8, 200*time.Millisecond)
	w := workload.Setup(t, c, rcv)
	sampler := workload.NewCheckpointSampler(db)
	samplerCtx, stopSampler := context.WithCancel(context.Background())
	samplerDone := make(chan struct{})
	go func() { defer close(samplerDone); sampler.Run(samplerCtx) }()
	defer stopSampler()
	next.Drained.Store(true)
	c.Nodes = []*proc.Node{old, next}
	c.Client.Nodes = c.Nodes
	loadCtx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	loadDone := make(chan struct{})
	loadBegan := time.Now()
	go func() { defer close(loadDone); w.Load(loadCtx, 20) }()
	time.Sleep(4 * time.Second)
	oldAlone := w.SnapshotCounts()

	// 2. This release starts on the same database while the old one
	// serves, joins the rotation once ready, and both serve.
	if err := next.Start(); err != nil {
		t.Fatal(err)
	}
	if err := next.WaitReady(60 * time.Second); err != nil {
		t.Fatalf("this release beside %s: %v; log:\n%s", commit, err, next.LogTail(8000))
	}
	next.Drained.Store(false)
	// A signed write recorded by either release replays through the other.
	replayAcross(t, w.Partner().Creds, old, next, "upgrade-replay-old-"+w.Run())
	replayAcross(t, w.Partner().Creds, next, old, "upgrade-replay-new-"+w.Run())
	time.Sleep(12 * time.Second)
	both := w.SnapshotCounts()

	// 3. The old node leaves the rotation and stops while the load goes on.
	old.Drained.Store(true)
	time.Sleep(500 * time.Millisecond) // the requests it took finish
	stopGracefully(t, old)
	time.Sleep(4 * time.Second)
	stopLoad()
	<-loadDone
	loadEnd := time.Now()

	w.Settle(60 * time.Second)
	stopSampler()
	<-samplerDone
	w.Summary(loadEnd.Sub(loadBegan), loadEnd, &workload.Killer{}, sampler)
	// The checks below go to the node left (they address nodes by index).
	c.Nodes = []*proc.Node{next}
	c.Client.Nodes = c.Nodes
	w.CheckAcknowledgedWrites()
	w.CheckCards()
	w.CheckOrders()
	w.CheckWebhooks()
	w.CheckRebuild()

	// No request failed: every answer was 2xx or a refusal the partner's
	// own request earned (4xx), never a 5xx, a broken connection or no node
	// at all. A read after a write (a report pull too) must go to another
	// node than the writer: while one node is in rotation there is none.
	for kind, outs := range w.SnapshotCounts() {
		for out, n := range outs {
			bad := strings.HasPrefix(out, "maybe") || strings.HasPrefix(out, "refused 5")
			if out == "unavailable" && !strings.HasPrefix(kind, "read after") && kind != "report-pull" {
				bad = true
			}
			if bad {
				w.Fail("request failed during the upgrade", fmt.Sprintf("%s: %s × %d", kind, out, n))
			}
		}
	}
	for _, n := range []*proc.Node{old, next} {
		for _, d := range n.Exits() {
			w.Fail("node exited without being stopped", fmt.Sprintf("node %d at %s; log:\n%s", n.Idx, d, n.LogTail(4000)))
		}
		for _, line := range logErrors(n.LogPath) {
			w.Fail("node logged an error", fmt.Sprintf("node %d: %s", n.Idx, line))
		}
	}
	for _, r := range sampler.Regressions {
		w.Fail("checkpoint went backwards", r)
	}
	// The run must have exercised what it checks: writes on both nodes
	// while both ran, and webhooks delivered.
	for _, kind := range []string{"register", "member", "order", "verify"} {
		if both[kind]["acked"] <= oldAlone[kind]["acked"] {
			t.Errorf("no %s acknowledged while both releases ran", kind)
		}
	}
	if rcv.Delivered() == 0 {
		t.Error("no webhook delivered")
	}
	t.Logf("rolling upgrade from %s: binaries ready in %v, whole test %v", commit[:12], built.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	w.Report()
}

// stopGracefully sends SIGTERM and waits for the process to exit (the
// platform drains its HTTP server and stops its followers), killing it
// after 30 s.
func stopGracefully(t *testing.T, n *proc.Node) {
	t.Helper()
	if !n.Stop(30 * time.Second) {
		t.Errorf("node %d did not stop within 30 s of SIGTERM", n.Idx)
	}
}

// logErrors returns the ERROR lines of a node's log (text format).
func logErrors(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return []string{err.Error()}
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "level=ERROR") {
			out = append(out, sc.Text())
		}
	}
	return out
}

// previousRelease returns the commit the previous release was cut from:
// envPreviousRelease, else the one line of scripts/previous-release that is
// not a comment.
func previousRelease(t *testing.T, root string) string {
	t.Helper()
	if c := os.Getenv(envPreviousRelease); c != "" {
		return c
	}
	raw, err := os.ReadFile(filepath.Join(root, "scripts", "previous-release"))
	if err != nil {
		t.Fatal(err)
	}
	var commits []string
	for _, line := range strings.Split(string(raw), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			commits = append(commits, line)
		}
	}
	if len(commits) != 1 {
		t.Fatalf("scripts/previous-release: want one commit, have %q", commits)
	}
	return commits[0]
}

// previousReleaseBinary builds cmd/platform of the previous release from
// git (git archive of the commit, go build there) and returns the binary
// and the commit. The binary is kept in the user cache directory by
// commit, so later runs reuse it; without git or the commit (a shallow
// clone) the test is skipped, saying how to fetch it.
func previousReleaseBinary(t *testing.T) (string, string) {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("rolling upgrade: no git checkout here (%v)", err)
	}
	root := strings.TrimSpace(string(out))
	ref := previousRelease(t, root)
	out, err = exec.Command("git", "-C", root, "rev-parse", "--verify", ref+"^{commit}").Output()
	if err != nil {
		t.Skipf("rolling upgrade: previous release %s is not in this clone (git fetch --unshallow): %v", ref, err)
	}
	commit := strings.TrimSpace(string(out))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	bin := filepath.Join(cache, "partner-open-platform", "previous-release", commit, "platform")
	if _, err := os.Stat(bin); err == nil {
		return bin, commit
	}
	src := t.TempDir()
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", commit)
	var tarball, stderr bytes.Buffer
	archive.Stdout, archive.Stderr = &tarball, &stderr
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, stderr.String())
	}
	untar := exec.Command("tar", "-x", "-C", src)
	untar.Stdin = &tarball
	if out, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("untar %s: %v\n%s", commit, err, out)
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := bin + ".tmp" + proc.RandomHex(t, 4)
	build := exec.Command("go", "build", "-o", tmp, "./cmd/platform")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of the previous release %s: %v\n%s", commit, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	return bin, commit
}
