package node

import (
	"context"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/commandapi"
	"github.com/healthtech/partner-open-platform/events/subscribe"
)

// rebuildGCPercent is the garbage collector's target while an embedded
// node rebuilds read models. A rebuild allocates per event (the decoded
// payloads, the opened plaintext, the new rows) while the heap fills with
// the rebuilt read models, and at the default target the collector marked
// that growing heap over and over: a fifth of a rebuild's CPU (background
// mark workers and span scans in its profile). At 400 it runs about half
// as often: 0.78× the CPU per event in alternated runs at 300,000 events,
// for a resident set about 1.5× as large while the rebuild lasts. An
// operator's GOGC or GOMEMLIMIT still rules (the limit bounds the heap
// whatever the target).
const rebuildGCPercent = 400

// rebuildHeapShare is the share of the machine's memory (its cgroup's
// limit when lower) the raised target may grow the process to: at 400 the
// heap grows to five times the live heap between collections, and at
// 10,000,000 events (about 980,000 users) that is past the machine's
// memory (an embedded node's anonymous memory reached 16.3 GB of 23 GB at
// half the rebuild, its live heap about 3 GB). The soft limit makes the
// collector run as often as it must to stay below it, and no more often
// than the default target would for the rebuilt read models'
// size (the limit is never below three times the heap in use when the
// rebuild begins, which holds the read models as they were).
const rebuildHeapShare = 0.5

// rebuildGCHold bounds how long the raised target outlives a rebuild's
// request when a rebuilt read model does not catch up.
const rebuildGCHold = 30 * time.Minute

// rebuilder is the admin rebuild route's: the runners themselves, and on
// an embedded node the raised collector target while their rebuild lasts
// (the read models are in the heap; on Postgres they are not).
func (n *Node) rebuilder(cfg Config, runs []*subscribe.Runner) commandapi.Rebuilder {
	set := subscribe.RunnerSet(runs)
	if cfg.PostgresURL != "" {
		return set
	}
	ready := func(ctx context.Context) error {
		for _, run := range runs {
			if err := run.WaitReady(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	return newGCRebuilder(set, ready, n.stopping)
}

// rebuilder is what the admin rebuild route calls (subscribe.RunnerSet).
type rebuilder interface {
	Rebuild(ctx context.Context, name string) (progress any, found bool, err error)
}

// gcRebuilder raises the collector's target from a rebuild's start until
// every runner is ready again (ready waits for that), then puts it back.
type gcRebuilder struct {
	set   rebuilder
	ready func(ctx context.Context) error
	// stop ends the wait (the node drains).
	stop <-chan struct{}
	hold time.Duration

	mu      sync.Mutex
	raised  int // rebuilds under way with the target raised
	prev    int // the target before the first of them
	setGCPC func(int) int
	// limited says raise set a memory limit, to put back as prevLimit.
	limited   bool
	prevLimit int64
	setLimit  func(int64) int64
	// heapLimit is the limit raise sets (0: none).
	heapLimit func() int64
}

func newGCRebuilder(set rebuilder, ready func(context.Context) error, stop <-chan struct{}) *gcRebuilder {
	return &gcRebuilder{set: set, ready: ready, stop: stop, hold: rebuildGCHold, setGCPC: debug.SetGCPercent,
		setLimit: debug.SetMemoryLimit, heapLimit: rebuildHeapLimit}
}

// Rebuild starts the rebuild, then holds the raised target until every
// runner is ready.
func (g *gcRebuilder) Rebuild(ctx context.Context, name string) (any, bool, error) {
	progress, found, err := g.set.Rebuild(ctx, name)
	if err != nil || !found || !g.raise() {
		return progress, found, err
	}
	go func() {
		wctx, cancel := context.WithTimeout(context.Background(), g.hold)
		defer cancel()
		go func() {
			select {
			case <-g.stop:
				cancel()
			case <-wctx.Done():
			}
		}()
		_ = g.ready(wctx)
		g.lower()
	}()
	return progress, found, err
}

// raise sets the rebuild's target unless the operator chose one or it is
// already as high or off; it says whether the caller must lower it.
func (g *gcRebuilder) raise() bool {
	if os.Getenv("GOGC") != "" {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.raised > 0 {
		g.raised++
		return true
	}
	prev := g.setGCPC(rebuildGCPercent)
	if prev < 0 || prev >= rebuildGCPercent {
		g.setGCPC(prev)
		return false
	}
	g.prev, g.raised = prev, 1
	if os.Getenv("GOMEMLIMIT") == "" && g.setLimit(-1) == math.MaxInt64 {
		if limit := g.heapLimit(); limit > 0 {
			g.prevLimit, g.limited = g.setLimit(limit), true
		}
	}
	return true
}

// lower puts the target back once the last raised rebuild is done.
func (g *gcRebuilder) lower() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.raised--; g.raised == 0 {
		g.setGCPC(g.prev)
		if g.limited {
			g.setLimit(g.prevLimit)
			g.limited = false
		}
	}
}

// rebuildHeapLimit is rebuildHeapShare of the memory the process may use
// (the machine's, or its cgroup's limit when lower), and at least three
// times the heap in use now; 0 when the machine's memory is unknown.
func rebuildHeapLimit() int64 {
	total := machineMemory()
	if total <= 0 {
		return 0
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return max(int64(float64(total)*rebuildHeapShare), 3*int64(ms.HeapAlloc))
}

// machineMemory is MemTotal of /proc/meminfo, or the cgroup (v2) memory
// limit when it is lower; 0 when neither can be read.
func machineMemory() int64 {
	var total int64
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				total = kb << 10
			}
		}
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	return total
}
