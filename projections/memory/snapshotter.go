package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory/snapfile"
)

// SnapshotKeys is the part of the personal-data key store (datakeys.Keys) a
// snapshotter uses: each snapshot is sealed with a data key of its own, so
// destroying that key (erasure, rebuild) shreds the snapshot even where
// the file system keeps freed blocks, and a master-key rotation re-seals it
// like any other data key.
type SnapshotKeys interface {
	DataKey(ctx context.Context, subject string) (datakeys.Key, error)
	Lookup(ctx context.Context, subject string) (datakeys.Key, error)
	Destroy(ctx context.Context, subject string) error
}

// SnapshotLog is what a snapshotter reads of the event log (as stored):
// its head, and the event at a checkpoint, to check that the log a
// snapshot reflects is still there.
type SnapshotLog interface {
	Head(ctx context.Context) (events.Position, error)
	ReadAll(ctx context.Context, after events.Position, limit int) ([]events.Recorded, error)
}

// Snapshotter keeps a snapshot of a Store's read models in a file so that
// a start restores them and follows the log from their checkpoints instead
// of replaying it all. It writes on Write (periodically from Run, and at a
// graceful stop); Load restores at start after checking the snapshot
// against the log; Invalidate shreds it (rebuild); Erasing and Erased keep
// an erased person's plaintext out of every snapshot.
type Snapshotter struct {
	Store *Store
	Keys  SnapshotKeys
	Log   SnapshotLog
	// Path is the snapshot file.
	Path string
	// ReadModels are the read models snapshotted, in order.
	ReadModels []projections.ReadModel
	// ErasedBy are the read models that apply user.erased: after an erasure
	// at position P, a snapshot is written only once each of them has
	// applied P, so it cannot hold the person's fields.
	ErasedBy []projections.ReadModel
	// Directories are the journaled in-memory projections kept beside the
	// read models (by name); Load restores them by reading their events back.
	Directories []*projections.Journal
	Logger      *slog.Logger
	// OnWrite (optional) reports each snapshot written (metrics, tests).
	OnWrite func(size int64, took time.Duration)
	// AfterEvents, with Progress, makes Run also write a snapshot once the
	// read models have read that many events since the last one: with the
	// interval alone, a burst of writes left a start after a crash
	// hundreds of thousands of events to replay (about 60 µs each).
	AfterEvents uint64
	// Progress counts the events the read models have read since start (a
	// count that goes back, as after a rebuild, restarts the mark). Run
	// looks at it when Moves says the read models moved.
	Progress func() uint64
	// Rebuilds (optional) reports the read models' rebuilds: the time the
	// latest one started (any value that changes with each start will do)
	// and whether one is under way (reset, not yet caught up). Run writes a
	// snapshot as soon as a rebuild has ended, so a kill -9 right after it
	// restores the rebuilt read models instead of replaying the log (the
	// rebuild shredded the snapshot), and writes none for the AfterEvents
	// mark while one is under way: those images of half-rebuilt read
	// models cost the replay about a sixth of its CPU, and the write at
	// its end makes them moot.
	Rebuilds func() (latest time.Time, rebuilding bool)
	// Moves returns a channel closed at the read models' next move after
	// the call (a batch applied, a reset, a rebuild's end): Run looks at
	// Progress and Rebuilds only then, at most once a ProgressCheck, so a
	// node with nothing to apply is not woken for them (a look every
	// ProgressCheck would be an idle embedded node's most frequent wake-up).
	// Without it, Run looks every ProgressCheck.
	Moves func() <-chan struct{}
	// Pause (optional) is how Run's writes rest between read models and
	// between sealed chunks (WriteRest); nil sleeps. Tests record it.
	Pause func(time.Duration)

	mu      sync.Mutex // one Write, Load or Invalidate at a time
	written map[projections.ReadModel]events.Position
	// rewrite: Load restored a snapshot behind the log's head and shredded
	// it (the tail may erase someone it holds); Run writes a new one as
	// soon as the read models have caught up.
	rewrite bool
	// state is the snapshot on disk, for operators (State), under a lock
	// of its own: a write holds mu for its whole length (minutes, paced,
	// at a million users), and the projections' list an operator polls
	// for a rebuild's progress must not wait for it.
	stateMu sync.Mutex
	state   SnapshotState

	pendMu  sync.Mutex
	pending map[string]int // subjects being erased, not yet seen in the log
	barrier events.Position
}

// SnapshotState is what an operator sees of the snapshot on disk.
type SnapshotState struct {
	// OnDisk is false while there is none (shredded by a rebuild or an
	// erasure, or not written yet).
	OnDisk bool
	// Written is when it was written.
	Written time.Time
	// Position is the lowest checkpoint it holds: a start after a crash
	// restores it and replays the log from there.
	Position events.Position
}

// State reports the snapshot on disk as this snapshotter last wrote,
// restored or shredded it.
func (s *Snapshotter) State() SnapshotState {
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	return s.state
}

// held records the snapshot of h as the one on disk; s.mu is held.
func (s *Snapshotter) held(h snapfile.Header) {
	st := SnapshotState{OnDisk: true, Written: h.Created}
	for i, f := range append(slices.Clone(h.ReadModels), h.Directories...) {
		if i == 0 || f.Checkpoint.Less(st.Position) {
			st.Position = f.Checkpoint
		}
	}
	s.setState(st)
}

// setState records the snapshot on disk (State).
func (s *Snapshotter) setState(st SnapshotState) {
	s.stateMu.Lock()
	s.state = st
	s.stateMu.Unlock()
}

// ErrSnapshotHeld is returned by Write while an erasure keeps snapshots
// from being written (its event not yet applied by every read model that
// erases).
var ErrSnapshotHeld = errors.New("projections/memory: snapshot held back by an erasure in progress")

func (s *Snapshotter) log() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

// Load restores every read model from the snapshot, if there is one and it
// passes every check: its key exists, its body opens (not torn or
// altered), and for each read model the log's head is at or after the
// checkpoint and the event at the checkpoint has the recorded id (the log
// was not replaced by another or cut back). Otherwise the snapshot is
// shredded and the store stays empty, so the runners replay the log. It
// returns whether the read models were restored. Call it before the runners start.
func (s *Snapshotter) Load(ctx context.Context) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	began := time.Now()
	h, err := snapfile.ReadHeader(s.Path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	reject := func(why error) (bool, error) {
		s.log().Warn("read-model snapshot not used; replaying the log", "path", s.Path, "reason", why)
		s.shred(ctx, h.KeySubject)
		for _, f := range s.ReadModels {
			if err := s.Store.clear(f); err != nil {
				return false, err
			}
		}
		return false, nil
	}
	if err != nil {
		return reject(err)
	}
	head, err := s.Log.Head(ctx)
	if err != nil {
		return false, fmt.Errorf("snapshot: head of the log: %w", err)
	}
	for _, f := range append(slices.Clone(h.ReadModels), h.Directories...) {
		if head.Less(f.Checkpoint) {
			return reject(fmt.Errorf("%w: family %s is at %s, ahead of the log's head %s", snapfile.ErrInvalid, f.ReadModel, f.Checkpoint, head))
		}
		id, err := eventIDAt(ctx, s.Log, f.Checkpoint)
		if err != nil {
			return false, fmt.Errorf("snapshot: read the log at %s: %w", f.Checkpoint, err)
		}
		if id != f.EventID {
			return reject(fmt.Errorf("%w: family %s: the log holds event %q at %s, the snapshot was taken after %q",
				snapfile.ErrInvalid, f.ReadModel, id, f.Checkpoint, f.EventID))
		}
	}
	key, err := s.Keys.Lookup(ctx, h.KeySubject)
	if err != nil {
		return reject(fmt.Errorf("%w: its key %s: %v", snapfile.ErrInvalid, h.KeySubject, err))
	}
	// Read models are decoded and restored concurrently, each section's rows
	// as soon as they are decoded, before the file's end is checked: a
	// failure anywhere drops them all (reject), so the store is left as a
	// fresh one.
	var rows atomic.Int64
	_, dirs, err := snapfile.ReadEach(s.Path, key.AEAD, func(rm snapfile.ReadModel, n []int) (snapfile.Restorer, error) {
		for _, n := range n {
			rows.Add(int64(n))
		}
		return s.Store.Restoring(ctx, rm, n)
	})
	if err != nil {
		return reject(err)
	}
	s.written = map[projections.ReadModel]events.Position{}
	for _, f := range h.ReadModels {
		s.written[f.ReadModel] = f.Checkpoint
	}
	for _, d := range dirs {
		for _, j := range s.Directories {
			if j.Name() != d.Name {
				continue
			}
			// A journal that cannot be read back is scanned for by its runner.
			if err := j.Restore(ctx, d.Checkpoint, d.Positions); err != nil {
				s.log().Warn("directory not restored from the snapshot; its runner scans the log", "directory", d.Name, "err", err)
				if err := j.Reset(ctx); err != nil {
					return false, err
				}
				continue
			}
			s.written[projections.ReadModel("directory "+d.Name)] = d.Checkpoint
		}
	}
	s.held(h)
	s.log().Info("read models restored from snapshot", "path", s.Path, "rows", rows.Load(), "created", h.Created,
		"format", h.Version, "took", time.Since(began))
	if h.Version < snapfile.Version {
		// An older format reads slower or says less: replace it once caught up (nothing
		// counts as written, so the next Write does not skip it).
		s.rewrite, s.written = true, nil
	}
	// The log's tail after the snapshot may hold an erasure made by another
	// node sharing the log (this node's own erasures shred the snapshot
	// before they happen): then the file must not outlive this restore.
	// The rows are in memory now, so it is shredded at once and a new one
	// written once caught up.
	erased, err := s.erasureAfter(ctx, h, head)
	if err != nil {
		return false, err
	}
	if erased {
		s.log().Info("read-model snapshot shredded after its restore: the log erased someone since", "path", s.Path)
		s.shred(ctx, h.KeySubject)
		s.rewrite = true
	}
	return true, nil
}

// erasedType is the event type of an erasure.
var erasedType = (catalog.UserErased{}).EventType()

// erasureAfter reports whether the log holds an erasure after the oldest
// checkpoint of the snapshot's erasing read models, up to head. It reads the
// tail as stored (types only), which a restart after a graceful stop has
// none of.
func (s *Snapshotter) erasureAfter(ctx context.Context, h snapfile.Header, head events.Position) (bool, error) {
	from, found := head, false
	for _, f := range h.ReadModels {
		if slices.Contains(s.ErasedBy, f.ReadModel) && f.Checkpoint.Less(from) {
			from, found = f.Checkpoint, true
		}
	}
	if !found {
		return false, nil
	}
	for from.Less(head) {
		recs, err := s.Log.ReadAll(ctx, from, 1000)
		if err != nil {
			return false, fmt.Errorf("snapshot: read the log's tail: %w", err)
		}
		if len(recs) == 0 {
			return false, nil
		}
		for _, rec := range recs {
			if rec.Type == erasedType {
				return true, nil
			}
		}
		from = recs[len(recs)-1].Position
	}
	return false, nil
}

// eventIDAt is the id of the event at pos, "" for the log's start or if
// no event is there.
func eventIDAt(ctx context.Context, log SnapshotLog, pos events.Position) (string, error) {
	if pos.IsZero() {
		return "", nil
	}
	rec, _, err := events.ReadAt(ctx, log, pos)
	return rec.ID, err
}

// Write snapshots every read model, each at its own checkpoint, unless nothing
// moved since the last snapshot; it returns ErrSnapshotHeld while an
// erasure is in progress. The file is replaced atomically, then the
// previous snapshot's key is destroyed.
func (s *Snapshotter) Write(ctx context.Context) error {
	return s.write(ctx, nil)
}

// WriteRest is how many times its work a write made by Run rests before it
// goes on, once it has worked writeSlice since its last rest: a write then
// holds a core at most a third of the time, never more than about a slice
// at once. Unpaced, it held one core for its whole length (a few hundred
// milliseconds at tens of thousands of users, then the collection of its
// garbage), and on a two-core node answering writes at half its capacity
// (three quarters of its CPU) the requests queued behind it for that long.
// Longer rests are no better: while a write runs, each write to a row it
// has yet to read copies the row, so a node's requests cost more for as
// long as the write lasts; at 1,000 registers a second, resting five times
// its work gave a p99 no lower and more calls over 10 ms than twice, in
// each of three alternated pairs. The write's CPU is the same; it takes
// about three times as long, so the log's tail a crash leaves grows by the
// events of that time. A write at a graceful stop is not paced.
const WriteRest = 2

// writeSlice is how long a write made by Run works before it rests: the
// longest a request on a two-core node waits for the core it holds.
// Between two rests the write lists a paged read model's keys 4,096 at a
// time, sorts one table's keys, reads and encodes parts of 1,024 rows
// (snapfile.Write's pace) or seals one chunk: at 100,000 users the longest
// of them is a table's sort, about 10 ms of a core.
const writeSlice = 2 * time.Millisecond

// pacer rests a write for WriteRest times the time it worked since its last
// rest, once that is at least writeSlice.
type pacer struct {
	last  time.Time
	pause func(time.Duration)
	now   func() time.Time // time.Now; tests set it
}

func (p *pacer) rest() {
	if p == nil {
		return
	}
	now := time.Now
	if p.now != nil {
		now = p.now
	}
	d := now().Sub(p.last)
	if d < writeSlice {
		return
	}
	p.pause(WriteRest * d)
	p.last = now()
}

// write is Write, resting between its parts when pace is set.
func (s *Snapshotter) write(ctx context.Context, pace *pacer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pendMu.Lock()
	held, barrier := len(s.pending) > 0, s.barrier
	s.pendMu.Unlock()
	if held {
		return ErrSnapshotHeld
	}
	if moved, err := s.moved(ctx); err != nil || !moved {
		return err
	}
	began := time.Now()
	images := make([]snapfile.Image, 0, len(s.ReadModels))
	for _, f := range s.ReadModels {
		im, end, err := s.Store.imageToWrite(ctx, f, pace.rest)
		if err != nil {
			return fmt.Errorf("snapshot %s: %w", f, err)
		}
		defer end()
		images = append(images, im)
		pace.rest()
	}
	dirs := make([]snapfile.Directory, 0, len(s.Directories))
	for _, j := range s.Directories {
		cp, positions, err := j.State(ctx)
		if err != nil {
			return fmt.Errorf("snapshot %s: %w", j.Name(), err)
		}
		dirs = append(dirs, snapfile.Directory{Name: j.Name(), Checkpoint: cp, Positions: positions})
	}
	for _, im := range images {
		for _, f := range s.ErasedBy {
			if im.ReadModel == f && im.Checkpoint.Less(barrier) {
				return ErrSnapshotHeld
			}
		}
	}
	h := snapfile.Header{KeySubject: "readmodels-snapshot-" + strconv.FormatInt(time.Now().UnixNano(), 10), Created: time.Now().UTC()}
	for _, im := range images {
		id, err := eventIDAt(ctx, s.Log, im.Checkpoint)
		if err != nil {
			return fmt.Errorf("snapshot: read the log at %s: %w", im.Checkpoint, err)
		}
		h.ReadModels = append(h.ReadModels, snapfile.ReadModel{ReadModel: im.ReadModel, Checkpoint: im.Checkpoint, EventID: id, Rows: im.Rows()})
	}
	for _, d := range dirs {
		id, err := eventIDAt(ctx, s.Log, d.Checkpoint)
		if err != nil {
			return fmt.Errorf("snapshot: read the log at %s: %w", d.Checkpoint, err)
		}
		h.Directories = append(h.Directories, snapfile.ReadModel{ReadModel: projections.ReadModel(d.Name), Checkpoint: d.Checkpoint, EventID: id, Rows: len(d.Positions)})
	}
	key, err := s.Keys.DataKey(ctx, h.KeySubject)
	if err != nil {
		return fmt.Errorf("snapshot key: %w", err)
	}
	old, _ := snapfile.ReadHeader(s.Path)
	var rest func()
	if pace != nil {
		rest = pace.rest
	}
	size, err := snapfile.Write(s.Path, h, key.AEAD, images, dirs, rest)
	if err != nil {
		_ = s.Keys.Destroy(ctx, h.KeySubject)
		return err
	}
	if old.KeySubject != "" {
		s.shredKey(ctx, old.KeySubject)
	}
	s.held(h)
	s.written = map[projections.ReadModel]events.Position{}
	for _, im := range images {
		s.written[im.ReadModel] = im.Checkpoint
	}
	for _, d := range dirs {
		s.written[projections.ReadModel("directory "+d.Name)] = d.Checkpoint
	}
	took := time.Since(began)
	s.log().Info("read-model snapshot written", "path", s.Path, "bytes", size, "took", took)
	if s.OnWrite != nil {
		s.OnWrite(size, took)
	}
	return nil
}

// Invalidate shreds the snapshot (its key destroyed, its file removed), so
// no start restores it: a rebuild's reset calls it, as the rebuilt read model
// must not come back from before the rebuild.
func (s *Snapshotter) Invalidate(ctx context.Context, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, err := snapfile.ReadHeader(s.Path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	s.log().Info("read-model snapshot shredded", "path", s.Path, "reason", reason)
	s.shred(ctx, h.KeySubject)
}

// moved says whether a read model or a directory is past the checkpoint
// the snapshot on disk holds for it (s.mu held). It is asked before the
// images are taken: an image lists its tables' keys, at a million users
// a good part of a write's CPU, which an idle node's interval write would
// spend for nothing. A checkpoint only grows until a reset, and a reset
// shreds the snapshot, so a move seen here is still one in the images.
func (s *Snapshotter) moved(ctx context.Context) (bool, error) {
	if s.written == nil {
		return true, nil
	}
	for _, f := range s.ReadModels {
		cp, err := s.Store.Checkpoint(ctx, string(f))
		if err != nil {
			return false, fmt.Errorf("snapshot %s: %w", f, err)
		}
		if prev, ok := s.written[f]; !ok || prev != cp {
			return true, nil
		}
	}
	for _, j := range s.Directories {
		cp, _, err := j.State(ctx)
		if err != nil {
			return false, fmt.Errorf("snapshot %s: %w", j.Name(), err)
		}
		if prev, ok := s.written[projections.ReadModel("directory "+j.Name())]; !ok || prev != cp {
			return true, nil
		}
	}
	return false, nil
}

// shred destroys a snapshot's key and removes its file; s.mu is held.
func (s *Snapshotter) shred(ctx context.Context, subject string) {
	if subject != "" {
		s.shredKey(ctx, subject)
	}
	if err := os.Remove(s.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log().Error("could not remove the read-model snapshot", "path", s.Path, "err", err)
	}
	s.written = nil
	s.setState(SnapshotState{})
}

func (s *Snapshotter) shredKey(ctx context.Context, subject string) {
	if !datakeys.ValidSubject(subject) {
		return
	}
	if err := s.Keys.Destroy(ctx, subject); err != nil {
		s.log().Error("could not destroy a read-model snapshot's key", "subject", subject, "err", err)
	}
}

// Erasing is called before a person's key is destroyed on this node: it
// shreds the snapshot (which holds their fields in clear) and holds every
// snapshot back until Erased reports the erasure's event.
func (s *Snapshotter) Erasing(ctx context.Context, subject string) {
	s.pendMu.Lock()
	if s.pending == nil {
		s.pending = map[string]int{}
	}
	s.pending[subject]++
	s.pendMu.Unlock()
	s.Invalidate(ctx, "erasure of "+subject)
}

// Erased is called when the log shows a person's erasure at pos (on any
// node): the snapshot is shredded, and the next one waits until every
// read model in ErasedBy has applied pos.
func (s *Snapshotter) Erased(ctx context.Context, subject string, pos events.Position) {
	s.pendMu.Lock()
	if s.pending[subject] > 0 {
		delete(s.pending, subject)
	}
	if s.barrier.Less(pos) {
		s.barrier = pos
	}
	s.pendMu.Unlock()
	s.Invalidate(ctx, "erasure of "+subject)
}

// afterProgressCheck is Moves for a Snapshotter without one: a channel
// closed a ProgressCheck from now.
func afterProgressCheck() <-chan struct{} {
	c := make(chan struct{})
	time.AfterFunc(ProgressCheck, func() { close(c) })
	return c
}

// isClosed reports whether c is closed (c is only ever closed, never sent on).
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// ProgressCheck is how often, at most, Run looks at Progress after the
// read models moved: a read of a counter, so a snapshot follows the
// AfterEvents mark by at most this much, and a busy node looks once a
// ProgressCheck, not at every batch.
const ProgressCheck = time.Second

// AfterEventsGap is how many times the last write's CPU Run leaves
// between the start of a write and one the AfterEvents mark asks for: a
// write costs about a second of a core per million rows, so a log growing
// fast spends at most a fifth of a core on snapshots, and the tail a crash
// leaves is then about what the log gains in two writes' time (a write
// paced by WriteRest lasts about three times its CPU, within the gap).
// The gap is counted in
// CPU, not wall time: on a loaded machine a write's wall time is several
// times its CPU, and a gap in wall time would grow the tail with the load.
const AfterEventsGap = 5

// Run writes a snapshot once ready returns (the read models caught up with
// the log as it was at start) unless Load restored one, then every
// interval, whenever the read models have read AfterEvents events since
// the last write (not while a rebuild is under way), and as soon as a
// rebuild has ended (Rebuilds), until ctx ends; the last two are looked at
// when the read models move (Moves), and without a move only while a write
// they asked for is held back by an erasure or waits for its gap. Writes run on Run's goroutine: appends
// never wait for them, and a read model's projector only for its rows' copy (the
// users, deliveries, reports and orders read models': one page of their
// rows at a time).
func (s *Snapshotter) Run(ctx context.Context, interval time.Duration, restored bool, ready func(context.Context) error) error {
	rebuilds := func() (time.Time, bool) { return time.Time{}, false }
	if s.Rebuilds != nil {
		rebuilds = s.Rebuilds
	}
	moves := s.Moves
	if moves == nil {
		moves = afterProgressCheck
	}
	var (
		moved <-chan struct{} // the next move, when Run waits for one
		after <-chan struct{} // the first move since the last look, once its rest is over
		again bool            // the last look asked for another without a move
	)
	if s.AfterEvents > 0 && s.Progress != nil || s.Rebuilds != nil {
		moved = moves() // before the rebuilds' read: a rebuild from now on is a move
	}
	// A rebuild that starts from now on is followed by a write at its end.
	rebuilt, _ := rebuilds()
	if err := ready(ctx); err != nil {
		return nil
	}
	progress := func() uint64 { return 0 }
	if s.AfterEvents > 0 && s.Progress != nil {
		progress = s.Progress
	}
	// Progress counts from the start, and the snapshot on disk (if any)
	// is from before it: the tail replayed at start counts toward the mark.
	var mark uint64
	var next time.Time  // no write for the mark before this
	heldLogged := false // a hold is logged once, not at every check while it lasts
	write := func() error {
		at := progress() // the image is taken after this: it holds at least these events
		var err error
		began := time.Now()
		pause := s.Pause
		if pause == nil {
			pause = func(d time.Duration) {
				t := time.NewTimer(d)
				defer t.Stop()
				select {
				case <-t.C:
				case <-ctx.Done():
				}
			}
		}
		cpu := measureCPU(func() { err = s.write(ctx, &pacer{last: began, pause: pause}) })
		// Counted from the write's start: each write is then followed by
		// at least AfterEventsGap times its CPU of wall time, the write
		// included (a write slowed by a loaded machine is not charged
		// twice, once in its own duration and again in the gap).
		next = began.Add(AfterEventsGap * cpu)
		if err == nil {
			s.log().Info("read-model snapshot write cost", "cpu", cpu, "next_after", AfterEventsGap*cpu)
		}
		held := errors.Is(err, ErrSnapshotHeld)
		if !held {
			mark = at // held: look again at the next check
		}
		switch {
		case err == nil || ctx.Err() != nil:
		case held && heldLogged:
		case held:
			s.log().Info("read-model snapshot not written", "err", err)
		default:
			s.log().Error("read-model snapshot not written", "err", err)
		}
		heldLogged = held
		return err
	}
	s.mu.Lock()
	rewrite := s.rewrite
	s.mu.Unlock()
	if !restored || rewrite {
		_ = write()
	}
	// look reads the rebuilds and the progress after a move, writes when
	// they ask for it, and says whether to look again after the rest
	// without a move: a write held back by an erasure (its end may come
	// from the erasure follower, not a move), or the mark reached before
	// the last write's gap ended.
	look := func() (again bool, rest time.Duration) {
		latest, rebuilding := rebuilds()
		if rebuilding {
			return false, ProgressCheck // its end is a move, and writes one
		}
		if !latest.Equal(rebuilt) {
			// A rebuild ended (the read models caught up again) since the
			// last look: the snapshot it shredded comes back now, not
			// after the rest of the mark or the interval.
			if err := write(); errors.Is(err, ErrSnapshotHeld) {
				return true, ProgressCheck
			}
			rebuilt = latest
			return false, ProgressCheck
		}
		if s.AfterEvents == 0 || s.Progress == nil {
			return false, ProgressCheck
		}
		p := progress()
		if p < mark { // the count restarted (a rebuild resets it): count from there
			mark = p
		}
		if p-mark < s.AfterEvents {
			return false, ProgressCheck
		}
		if wait := time.Until(next); wait > 0 {
			return true, max(wait, ProgressCheck)
		}
		return errors.Is(write(), ErrSnapshotHeld), ProgressCheck
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	rest := time.NewTimer(ProgressCheck)
	rest.Stop()
	defer rest.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			_ = write()
			continue
		case <-rest.C:
			if !again {
				moved = after // already closed when the read models moved meanwhile
				continue
			}
		case <-moved:
		}
		// Taken before the look, so a move during the look or the rest
		// prompts the next one; one still waiting (a look again without a
		// move) is kept rather than joined by another.
		if after == nil || isClosed(after) {
			after = moves()
		}
		moved = nil
		var d time.Duration
		again, d = look()
		rest.Reset(d)
	}
}
