package node

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory"
	"github.com/healthtech/partner-open-platform/queryapi"
)

// SnapshotFile is the embedded read models' snapshot in the data directory.
const SnapshotFile = "readmodels.snapshot"

// openSnapshots sets up the embedded read models' snapshot (loadSnapshot
// restores it once the directories exist); a rebuild of any read model shreds it.
func openSnapshots(cfg Config, mem *memory.Store, keys *datakeys.Keys, stored events.Store, log *slog.Logger) *memory.Snapshotter {
	snap := &memory.Snapshotter{
		Store: mem, Keys: keys, Log: stored, Path: filepath.Join(cfg.DataDir, SnapshotFile),
		ReadModels: projections.ReadModels,
		ErasedBy:   []projections.ReadModel{projections.ReadModelUsers, projections.ReadModelDeliveries, projections.ReadModelReports, projections.ReadModelOrders},
		Logger:     log.With("component", "snapshots"),
	}
	mem.OnReset(func(f projections.ReadModel) {
		snap.Invalidate(context.Background(), "rebuild of the "+string(f)+" read models")
	})
	return snap
}

// loadSnapshot restores the snapshot, after its checks against the log,
// into the read models and the journaled directories; call it before any
// runner starts. Without snapshots it does nothing.
func (n *Node) loadSnapshot(ctx context.Context, st *startup, dirs ...*projections.Journal) error {
	if n.snapshots == nil {
		return nil
	}
	n.snapshots.Directories = dirs
	restored, err := n.snapshots.Load(ctx)
	if err != nil {
		return fmt.Errorf("read-model snapshot: %w", err)
	}
	n.restored = restored
	n.Adapters["read models"] = "in memory, restored from " + n.snapshots.Path + " then caught up from the log"
	if !restored {
		n.Adapters["read models"] = "in memory, replayed from the log (snapshots in " + n.snapshots.Path + ")"
	}
	st.phase("snapshot")
	return nil
}

// runSnapshots writes the embedded read models' snapshot every interval,
// and after every cfg.SnapshotEvents events read (negative: the interval
// only), once every read model is ready.
func (n *Node) runSnapshots(ctx context.Context, cfg Config, readModels subscribe.RunnerSet) {
	if cfg.SnapshotEvents >= 0 {
		n.snapshots.AfterEvents = uint64(cfg.SnapshotEvents)
		n.snapshots.Progress = (&readProgress{runs: readModels}).Events
	}
	n.snapshots.Rebuilds = func() (time.Time, bool) { return rebuilds(readModels) }
	n.snapshots.Moves = func() <-chan struct{} { return nextMove(ctx, readModels) }
	n.spawn(ctx, "read-model snapshots", func(ctx context.Context) error {
		return n.snapshots.Run(ctx, cfg.SnapshotInterval, n.restored, func(ctx context.Context) error {
			for _, run := range readModels {
				if err := run.WaitReady(ctx); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// readProgress counts the events the read models have read since the
// node started, each read model's share counted once per event, rebuilds
// included: the snapshot follows it (Snapshotter.Progress). While the read
// models keep up, each reads every event and the count is the log's
// growth; during a rebuild it grows with every rebuilt read model's
// replay, the slowest one's to its end. Counting one read model alone
// missed the others' rebuilds (the snapshot is shredded at a rebuild's
// start): after a rebuild of every read model, the first to finish
// stopped the count and the slowest one's replay stayed out of the
// snapshot until the interval, so a kill -9 then replayed it whole; after
// a rebuild of any read model but that one no snapshot was written at all.
type readProgress struct {
	mu    sync.Mutex
	runs  subscribe.RunnerSet
	seen  []subscribe.Stats // each read model's stats at the last call
	total uint64            // events read, all read models together
}

// Events is the count divided among the read models: the log's growth
// while they keep up, whatever their number.
func (p *readProgress) Events() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen == nil {
		p.seen = make([]subscribe.Stats, len(p.runs))
	}
	for i, run := range p.runs {
		st := run.Stats()
		prev := p.seen[i]
		switch {
		case !st.Since.Equal(prev.Since) || st.Applied < prev.Applied:
			// Started or rebuilt since the last call: its count began again.
			p.total += st.Applied
		default:
			p.total += st.Applied - prev.Applied
		}
		p.seen[i] = st
	}
	return p.total / uint64(len(p.runs))
}

// nextMove returns a channel closed at the next move of any of runs after
// the call (Snapshotter.Moves), or when ctx ends: one goroutine parked on
// the runners' Changed channels, woken by nothing else.
func nextMove(ctx context.Context, runs subscribe.RunnerSet) <-chan struct{} {
	cases := make([]reflect.SelectCase, 0, len(runs)+1)
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	for _, run := range runs {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(run.Changed())})
	}
	moved := make(chan struct{})
	go func() {
		reflect.Select(cases)
		close(moved)
	}()
	return moved
}

// snapshotState is the snapshot on disk as the projections' list shows it.
func (n *Node) snapshotState() queryapi.SnapshotState {
	st := n.snapshots.State()
	out := queryapi.SnapshotState{OnDisk: st.OnDisk}
	if st.OnDisk {
		out.Written, out.Position = &st.Written, &st.Position
	}
	return out
}

// rebuilds reports when the latest rebuild of a read model started and
// whether one is under way (Snapshotter.Rebuilds): a runner's Since is the
// start of its last reset (or of the runner), set with Rebuilding under
// its lock, so a rebuild seen started is seen under way until it has
// caught up.
func rebuilds(runs subscribe.RunnerSet) (latest time.Time, rebuilding bool) {
	for _, run := range runs {
		st := run.Stats()
		if st.Since.After(latest) {
			latest = st.Since
		}
		rebuilding = rebuilding || st.Rebuilding
	}
	return latest, rebuilding
}

// erasingKeys is the key store as the erasure command sees it: before a
// person's key is destroyed, the read-model snapshot (which holds their
// fields in clear) is shredded and held back until the erasure is applied.
type erasingKeys struct {
	keys      *datakeys.Keys
	snapshots *memory.Snapshotter
}

func (e erasingKeys) Destroy(ctx context.Context, subject string) error {
	e.snapshots.Erasing(ctx, subject)
	return e.keys.Destroy(ctx, subject)
}

// startupGCPercent is the garbage collector's target while an embedded
// node opens (key log, snapshot restore): the heap only grows then, from
// nothing to the read models, so with the default 100 the collector ran
// about once per doubling and marked the whole growing heap each time
// (a sixth of a start's CPU at 1M events). At 400 it runs about half as
// often; the peak heap rises by at most the garbage of the decode, which
// the row codec keeps small. The setting is put back once every read-model
// read model has caught up with the log (or Open fails, or startupGCHold has
// passed): with it put back when Open returned, the heap restored at 400
// was already past the goal at 100, so a collection of the whole restored heap ran during the tail
// replay and its mark assists stalled the runners (GODEBUG=gctrace=1 after
// a kill -9: a 2.4 s cycle with 1.7 s of assist CPU at the tail's start).
const startupGCPercent = 400

// startupGCHold bounds how long the start-up target outlives Open when a
// read model does not catch up (a stalled projection must not leave the heap
// at five times its live size for the life of the process).
const startupGCHold = 2 * time.Minute

// startupGCState counts the nodes opening in this process (tests open
// several at once): the first raises the target, the last puts it back.
var startupGCState struct {
	sync.Mutex
	opening int
	prev    int
	// capped says capStartupHeap set a memory limit, to put back at the
	// end as prevLimit.
	capped    bool
	prevLimit int64
	// restored says a node restored a snapshot under the raised target:
	// the last one to finish opening returns the free heap (releaseHeap).
	restored bool
}

// releaseHeap returns the heap's free pages to the system. A restore
// decodes the snapshot into buffers and row slices it drops once the read
// models are built, and it ran at the raised target, so the process
// keeps pages of about twice its live heap after it: 415 MB resident for
// a 159 MB live heap after a kill -9 start at 300,000 events. Under the
// normal target those pages are not reused before the heap grows that
// far, and the runtime's background return only trims what lies beyond
// that target. So once every read model has caught up the free pages go
// back at once, for the price of one collection of the restored heap,
// after the node's first ready probe (releaseAfterReady).
var releaseHeap = func() { releaseAfterReady(debug.FreeOSMemory) }

// releaseAfterReady runs release on a goroutine of its own once a /readyz
// of this process has answered ready (noteReady), or releaseWait after the
// call if none has. Its collection marks the whole restored heap (2.4 GB
// at 10,000,000 events) and it then holds the heap's lock while it returns
// the pages: run before the first probe, it holds the listener and the
// probe back (by up to 0.78 s at 10M).
func releaseAfterReady(release func()) {
	answered := readyProbe.Load().answered
	go func() {
		wait := time.NewTimer(releaseWait)
		defer wait.Stop()
		select {
		case <-answered:
		case <-wait.C:
		}
		release()
	}()
}

// releaseWait bounds how long a release waits for a ready probe (a node
// that nothing probes).
const releaseWait = 30 * time.Second

// readySignal closes answered at the first /readyz of the process that
// answered ready.
type readySignal struct {
	once     sync.Once
	answered chan struct{}
}

func newReadySignal() *readySignal { return &readySignal{answered: make(chan struct{})} }

// readyProbe is the process's readySignal (a test puts in a fresh one).
var readyProbe atomic.Pointer[readySignal]

func init() { readyProbe.Store(newReadySignal()) }

// noteReady records that a /readyz answered ready.
func noteReady() {
	r := readyProbe.Load()
	r.once.Do(func() { close(r.answered) })
}

// minStartupHeapCap keeps capStartupHeap's limit from squeezing the small
// heaps of nodes opened in tests.
const minStartupHeapCap = 256 << 20

// capStartupHeap bounds the heap while the tail is replayed under the
// raised target: at 400 a long tail (90k events after 30 s of webhook
// traffic) grew the process to 4.3 GB before any collection. Called once
// Open has restored the read models, it sets a soft memory limit of twice
// the heap then (what the default target would allow after collecting the
// restore), unless the operator set one (GOMEMLIMIT) or the target was not
// raised. The collector then starts early enough below the limit to pace
// itself instead of stalling the runners with assists; the limit goes when
// the target is put back.
func capStartupHeap() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	st := &startupGCState
	st.Lock()
	defer st.Unlock()
	if st.opening == 0 || st.capped {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	limit := max(2*int64(ms.HeapAlloc), minStartupHeapCap)
	if prev := debug.SetMemoryLimit(-1); prev != math.MaxInt64 {
		return
	}
	st.prevLimit = debug.SetMemoryLimit(limit)
	st.capped = true
}

// noteRestored records that a node opening under the raised target
// restored a snapshot (see releaseHeap).
func noteRestored() {
	st := &startupGCState
	st.Lock()
	defer st.Unlock()
	if st.opening > 0 {
		st.restored = true
	}
}

// startupGC raises the collector's target for an embedded node's start
// and returns how to put it back; it leaves it alone when the operator
// chose one (GOGC set), with Postgres read models (nothing is restored
// into the heap), or when the target is already higher or off.
func startupGC(cfg Config) (restore func()) {
	if os.Getenv("GOGC") != "" || cfg.PostgresURL != "" {
		return func() {}
	}
	st := &startupGCState
	st.Lock()
	defer st.Unlock()
	if st.opening == 0 {
		prev := debug.SetGCPercent(startupGCPercent)
		if prev < 0 || prev > startupGCPercent {
			debug.SetGCPercent(prev)
			return func() {}
		}
		st.prev = prev
	}
	st.opening++
	var once sync.Once
	return func() {
		once.Do(func() {
			st.Lock()
			release := false
			if st.opening--; st.opening == 0 {
				debug.SetGCPercent(st.prev)
				if st.capped {
					debug.SetMemoryLimit(st.prevLimit)
					st.capped = false
				}
				release, st.restored = st.restored, false
			}
			st.Unlock()
			if release {
				releaseHeap()
			}
		})
	}
}
