// Package bolt is the durable embedded event store: one bbolt file in the
// data directory, so a single node runs without an EventStoreDB server and
// an acknowledged append survives a crash (bbolt fsyncs on every commit).
//
// Readers see only what is durable. bbolt makes a commit visible before it
// is durable: Tx.writeMeta pwrites the new meta page into the file, and so
// into the MAP_SHARED mmap that every new read transaction takes its meta
// from, then releases the meta lock and only then fdatasyncs it. A read
// transaction begun in between sees the commit; a power loss then can take
// it back. So every read here stops at a watermark, the last sequence of a
// commit whose Update returned (after that fdatasync), and the watermark
// moves before an append is acknowledged or subscribers are woken.
//
// Layout (all integers big-endian uint64 unless said otherwise):
//
//	log:       seq -> record              the global order; Position{seq, seq}
//	names:     stream -> number           a stream's number: the sequence of
//	           its first event
//	revisions: number+rev -> seq          stream reads by revision, and a
//	           stream's event count (its last key's revision + 1)
//	ids:       event id -> seq            idempotent retries
//	meta:      "format" -> uint64         the layout's version (format.go)
//
// The revision index is keyed by the stream's number, not its name, so the
// keys of streams created together sit together: an append to a stream
// that exists writes next to the keys of the streams created about when it
// was (a webhook drain's delivery streams, named by UUIDv5, land on a few
// leaves per commit instead of one random leaf each), and a new stream's
// first key goes at the index's end. Only a new stream writes its name,
// once, at the name's place in names. A stream's count is read from
// revisions, not kept per stream: an append already dirties the page that
// holds the stream's last key, and a second per-stream index would dirty
// one more page per stream written. Formats 1 and 2 keyed revisions by the
// name; Open migrates them (format.go).
package bolt

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/internal/groupcommit"
	"github.com/healthtech/partner-open-platform/events/internal/rules"
	"github.com/healthtech/partner-open-platform/events/internal/tail"
)

// LockTimeout is how long Open waits for another process to release the
// data file before reporting that the data directory is in use.
const LockTimeout = 2 * time.Second

var (
	bucketLog       = []byte("log")
	bucketNames     = []byte("names")
	bucketRevisions = []byte("revisions")
	bucketIDs       = []byte("ids")
)

// Store is a single node's durable log; one process owns the file (bbolt
// locks it) and may use the Store from any number of goroutines.
type Store struct {
	db     *bbolt.DB
	notify *tail.Notifier

	// durable is the last sequence known to be on disk: ReadAll, ReadStream,
	// Head and so subscriptions never go past it, whatever bbolt shows.
	durable atomic.Uint64
	// recent holds the last events committed, as written, so that the
	// followers reading the tail of the log (every projection, the app
	// directory, the dispatcher) share them from memory (ReadAll copies)
	// instead of each opening a bbolt read transaction and decoding the
	// records again.
	recent recentRing
	// blocks is the catch-up cache the subscriptions share (shared.go).
	blocks blockCache
	// beforePublish, when set (tests only), runs after a group's commit
	// returned and before its events are published or acknowledged.
	beforePublish func()
	// window, when set (tests only), replaces the group commit window
	// (windowFor) given the last commit's duration.
	window func(lastCommit time.Duration) time.Duration
	// waiting, when set (tests only), runs when a group of n starts waiting
	// for more appends.
	waiting func(n int)
	// deferral holds groups of deferrable appends (events.Deferrable) for
	// a plain append to share their commit; tests shorten or watch it.
	deferral groupcommit.Deferral
	// commits counts the transactions that wrote (tests).
	commits atomic.Uint64
	// decoded counts the records readRange decoded from bbolt (the
	// catch-up reads), for tests of how often a stretch is read again.
	decoded atomic.Uint64

	// Group commit: appends queue for one committer goroutine, which writes
	// everything queued while the previous fsync ran in one transaction. A
	// lone writer waits for nothing; concurrent writers share an fsync.
	queue *groupcommit.Queue

	closeOnce sync.Once
	closeErr  error
}

// maxGroup bounds how many appends share one transaction.
const maxGroup = 256

// Group commit window. A transaction costs a fixed part (the meta and
// freelist pages, the branch pages on the way to each leaf, one pwrite per
// run of pages, two fdatasyncs) besides what its appends write: several
// hundred CPU-µs, more than a register-shaped append's own share once a few
// appends share it (BenchmarkRegisterGroups). Under a steady offered rate
// the appends that queue during one commit are few, so each pays most of
// that part. While recent groups were larger than what is queued, the
// committer waits for more, up to the last commit's duration (at most
// maxWindow): the window then at most doubles the log's latency, and the
// writers it waits for share the transaction. A lone serial writer's
// groups are of one, so it never waits; nothing is acknowledged before its
// transaction is durable, whatever the window.
const (
	maxWindow    = 2 * time.Millisecond
	windowGroups = 4 // recent groups whose largest size is the target
)

// windowFor is how long a group may wait for more appends after a commit
// that took last.
func windowFor(last time.Duration) time.Duration { return min(last, maxWindow) }

var (
	_ events.Store               = (*Store)(nil)
	_ events.MultiStreamAppender = (*Store)(nil)
	_ events.PositionReader      = (*Store)(nil)
)

// Open opens (creating if needed) the event log in the file at path, so the
// node's data directory holds its whole write side in one file.
func Open(path string) (*Store, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("events/bolt: create data directory: %w", err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout: LockTimeout,
		// Every commit writes the freelist (one more page in the same
		// fdatasync), so an open after a crash reads it from its page
		// instead of walking and reading every page of the file: seconds
		// for a 1.5 GB log, for 3-7 % of a raw append's CPU on that log (measured
		// with TestMeasureRestart and scripts/bench.sh).
		NoFreelistSync: false,
		FreelistType:   bbolt.FreelistMapType,
	})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("events/bolt: data directory %s is in use by another process (no lock on %s within %s): %w", dir, path, LockTimeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("events/bolt: open %s: %w", path, err)
	}
	if err := prepare(db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("events/bolt: prepare %s: %w", path, err)
	}
	// A predecessor killed between bbolt's meta write and its fdatasync left
	// a commit in the page cache that this process already sees: make it
	// durable before the watermark below covers it. (The commit above
	// fdatasyncs the file too; this does not depend on that.)
	if err := db.Sync(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("events/bolt: sync %s: %w", path, err)
	}
	var last uint64
	err = db.View(func(tx *bbolt.Tx) error {
		if k, _ := tx.Bucket(bucketLog).Cursor().Last(); k != nil {
			last = binary.BigEndian.Uint64(k)
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("events/bolt: read head of %s: %w", path, err)
	}
	s := &Store{db: db, notify: tail.NewNotifier(), deferral: groupcommit.Defaults()}
	s.durable.Store(last)
	s.recent.reset(last + 1)
	s.queue = groupcommit.Start(maxGroup, s.commitLoop)
	return s, nil
}

// errNothingWritten rolls back a group in which no append wrote anything
// (all were retries or conflicts), so it costs no fsync.
var errNothingWritten = errors.New("events/bolt: nothing written")

// Append implements events.Store; it returns once the append is durable
// (fsynced) or refused.
func (s *Store) Append(ctx context.Context, stream string, expected events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	if err := checkStream(stream); err != nil {
		return events.AppendResult{}, err
	}
	res, err := s.submit(ctx, []events.StreamAppend{{Stream: stream, Expected: expected, Events: evs}})
	if err != nil {
		return events.AppendResult{}, s.wrap("append to "+stream, err)
	}
	return res[0], nil
}

// AppendMulti implements events.MultiStreamAppender: the parts are checked
// and written in one bbolt transaction, so they share one fsync and are
// recorded together or not at all.
func (s *Store) AppendMulti(ctx context.Context, parts ...events.StreamAppend) ([]events.AppendResult, error) {
	if err := rules.CheckParts(parts); err != nil {
		return nil, err
	}
	for _, p := range parts {
		if err := checkStream(p.Stream); err != nil {
			return nil, err
		}
	}
	res, err := s.submit(ctx, parts)
	if err != nil {
		return nil, s.wrap(fmt.Sprintf("append to %d streams", len(parts)), err)
	}
	return res, nil
}

func checkStream(stream string) error {
	if stream == "" || len(stream) > bbolt.MaxKeySize-binary.MaxVarintLen64-8 {
		return fmt.Errorf("events/bolt: invalid stream name of %d bytes", len(stream))
	}
	return nil
}

// submit queues parts for the committer and waits for their outcome.
func (s *Store) submit(ctx context.Context, parts []events.StreamAppend) ([]events.AppendResult, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	return s.queue.Submit(ctx, parts)
}

func (s *Store) commitLoop(queue *groupcommit.Queue) {
	group := make([]*groupcommit.Append, 0, maxGroup)
	var recent [windowGroups]int // sizes of the last groups
	var last time.Duration       // the last commit's duration
	var timer *time.Timer
	for n := 0; ; n++ {
		first, ok := <-queue.C()
		if !ok {
			return
		}
		group = queue.Gather(append(group[:0], first), maxGroup)
		group = s.deferral.Hold(queue, group)
		if target := min(slices.Max(recent[:]), maxGroup); len(group) < target && last > 0 {
			window := windowFor(last)
			if s.window != nil {
				window = s.window(last)
			}
			if window > 0 {
				if s.waiting != nil {
					s.waiting(len(group))
				}
				if timer == nil {
					timer = time.NewTimer(window)
				} else {
					timer.Reset(window)
				}
				group = await(queue.C(), group, target, timer.C)
				timer.Stop()
			}
		}
		began := time.Now()
		s.commit(group)
		last = time.Since(began)
		recent[n%windowGroups] = len(group)
	}
}

// await adds appends to group as they are queued, until it holds target
// of them, the timer fires or the queue is closed.
func await(queue <-chan *groupcommit.Append, group []*groupcommit.Append, target int, timer <-chan time.Time) []*groupcommit.Append {
	for len(group) < target {
		select {
		case p, ok := <-queue:
			if !ok {
				return group
			}
			group = append(group, p)
		case <-timer:
			return group
		}
	}
	return group
}

// commit decides and writes a group in one transaction, in queue order: each
// append sees the writes of those before it, exactly as if run one by one.
func (s *Store) commit(group []*groupcommit.Append) {
	now := time.Now().UTC()
	wrote := false
	var last uint64
	var written []events.Recorded
	// One append's checked parts, and the keys its writes build: scratch
	// for the whole group, since an append's parts are written before the
	// next append is checked, and bbolt copies keys.
	var checks []checked
	var keys []byte
	// The appends' results and the events' sequence numbers (values bbolt
	// keeps as given until the transaction ends) are cut from one array
	// each per commit, not allocated per append and per event.
	parts := 0
	for _, p := range group {
		parts += len(p.Parts)
	}
	var results []events.AppendResult
	var seqs []byte
	err := s.db.Update(func(tx *bbolt.Tx) error {
		written = written[:0]
		results = make([]events.AppendResult, parts)
		b := open(tx)
		b.written, b.keys, b.seqs = &written, &keys, &seqs
		for _, p := range group {
			p.Res, results = results[:len(p.Parts):len(p.Parts)], results[len(p.Parts):]
			p.Err, p.Wrote = nil, false
			if err := p.Ctx.Err(); err != nil {
				p.Err = err
				continue
			}
			// Check every part before writing any: all or none.
			checks = checks[:0]
			for i, part := range p.Parts {
				number, count := b.stream(part.Stream)
				r, again, err := rules.Check(part.Stream, part.Expected, count, part.Events, b.lookup)
				if err != nil {
					p.Err = err
					break
				}
				p.Res[i] = r
				checks = append(checks, checked{number: number, count: count, replayed: again})
			}
			if p.Err != nil {
				continue
			}
			for i, part := range p.Parts {
				if checks[i].replayed {
					continue
				}
				var err error
				if p.Res[i], err = b.write(part.Stream, checks[i].number, checks[i].count, part.Events, now); err != nil {
					return err
				}
				p.Wrote, wrote = true, true
			}
		}
		if !wrote {
			return errNothingWritten
		}
		last = b.log.Sequence()
		return nil
	})
	failed := err != nil && !errors.Is(err, errNothingWritten)
	if s.beforePublish != nil {
		s.beforePublish()
	}
	// Update returned, so bbolt's fdatasync of the meta page did too: only
	// now may readers, the appenders and subscribers learn of the group.
	if wrote && !failed {
		s.recent.push(written)
		s.durable.Store(last)
		s.commits.Add(1)
	}
	for _, p := range group {
		if failed {
			// The transaction rolled back: nothing of this group is recorded,
			// and a replay it matched may have been of this group's own writes.
			p.Res, p.Err = nil, err
		}
		p.Done()
	}
	if wrote && !failed {
		s.notify.Notify()
	}
}

// ReadStream implements events.Store.
func (s *Store) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]events.Recorded, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	out := []events.Recorded{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		// A stream read needs no id index, and the revisions and the log
		// only once the stream has an event (a register reads a binding
		// stream that mostly does not exist).
		n := tx.Bucket(bucketNames).Get([]byte(stream))
		if len(n) != 8 {
			return nil
		}
		b := buckets{revisions: tx.Bucket(bucketRevisions)}
		durable := s.durable.Load()
		c := b.revisions.Cursor()
		for k, seq := c.Seek(binary.BigEndian.AppendUint64(slices.Clip(n), from)); len(k) == 16 && bytes.Equal(k[:8], n); k, seq = c.Next() {
			if limit > 0 && len(out) == limit {
				break
			}
			// A stream's revisions are in log order: the rest is newer.
			if len(seq) == 8 && binary.BigEndian.Uint64(seq) > durable {
				break
			}
			if b.log == nil {
				b.log = tx.Bucket(bucketLog)
			}
			rec, err := b.record(seq)
			if err != nil {
				return err
			}
			out = append(out, rec)
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap("read "+stream, err)
	}
	return out, nil
}

// ReadAll implements events.Store; limit <= 0 reads to the end.
func (s *Store) ReadAll(ctx context.Context, after events.Position, limit int) ([]events.Recorded, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	start := startAfter(after)
	durable := s.durable.Load()
	if out, ok := s.recent.read(start, durable, limit); ok {
		return out, nil
	}
	out := []events.Recorded{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketLog).Cursor()
		for k, v := c.Seek(be(start)); k != nil; k, v = c.Next() {
			if limit > 0 && len(out) == limit {
				break
			}
			seq := binary.BigEndian.Uint64(k)
			if seq > durable {
				break
			}
			rec, err := decode(seq, v)
			if err != nil {
				return err
			}
			out = append(out, rec)
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap("read all", err)
	}
	return out, nil
}

// ReadPositions implements events.PositionReader: the events the ring of
// recent ones holds are copied from it, the others read in one bbolt read
// transaction, in the order of the log, by one cursor that steps to an
// event a few records ahead and seeks to one further.
func (s *Store) ReadPositions(ctx context.Context, positions []events.Position) ([]events.Recorded, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	out := make([]events.Recorded, len(positions))
	durable := s.durable.Load()
	rest := s.recent.readAt(positions, durable, out)
	if len(rest) == 0 {
		return out, nil
	}
	slices.SortFunc(rest, func(i, j int) int { return cmp.Compare(positions[i].Commit, positions[j].Commit) })
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketLog).Cursor()
		var at uint64 // the cursor's key; 0 before the first seek
		var v []byte
		for _, i := range rest {
			seq := positions[i].Commit
			if at == 0 || seq < at || seq-at > stepAhead {
				k, val := c.Seek(be(seq))
				if k == nil {
					break // past the last record: so are the rest
				}
				at, v = binary.BigEndian.Uint64(k), val
			}
			for at < seq {
				k, val := c.Next()
				if k == nil {
					return nil
				}
				at, v = binary.BigEndian.Uint64(k), val
			}
			if at != seq {
				continue
			}
			rec, err := decode(seq, v)
			if err != nil {
				return err
			}
			out[i] = rec
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap("read positions", err)
	}
	return out, nil
}

// stepAhead is how many records ahead ReadPositions's cursor steps to
// rather than seeking: a step is a move within a leaf page, a seek a walk
// from the root.
const stepAhead = 16

// Head implements events.Store: the durable watermark, which is the last
// sequence written by a commit that returned (an event's position is its
// sequence), not the last key bbolt may already show.
func (s *Store) Head(ctx context.Context) (events.Position, error) {
	if err := s.usable(ctx); err != nil {
		return events.Position{}, err
	}
	seq := s.durable.Load()
	return events.Position{Commit: seq, Prepare: seq}, nil
}

// SubscribeAll implements events.Store: catch up in pages, then wake on
// appends. The records delivered share their bytes with every other
// subscription's (shared.go): a subscriber must not write into Data or Meta.
func (s *Store) SubscribeAll(ctx context.Context, after events.Position) (events.Subscription, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	return tail.Subscribe(ctx, after, s.readShared, s.notify), nil
}

// Close implements events.Store; subscriptions end with events.ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.queue.Close() // the committer finishes what is queued, then stops
		s.notify.Close()
		if guarding() {
			s.recent.mu.Lock()
			s.recent.checkAll()
			s.recent.mu.Unlock()
			s.blocks.checkAll()
		}
		// Every commit wrote the freelist (see Open): the next Open, after
		// this close or after a crash, reads it from its page.
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("events/bolt: close: %w", err)
		}
	})
	return s.closeErr
}

func (s *Store) usable(ctx context.Context) error {
	if s.queue.Closed() {
		return events.ErrClosed
	}
	return ctx.Err()
}

// wrap keeps conflicts and closing recognisable through the context added.
func (s *Store) wrap(op string, err error) error {
	var ce *events.ConflictError
	switch {
	case errors.As(err, &ce):
		return err
	case errors.Is(err, berrors.ErrDatabaseNotOpen) || s.queue.Closed():
		return fmt.Errorf("events/bolt: %s: %w", op, events.ErrClosed)
	default:
		return fmt.Errorf("events/bolt: %s: %w", op, err)
	}
}

// checked is one part of an append between its check and its write.
type checked struct {
	number   uint64 // its stream's number; 0 for a stream with no events
	count    uint64 // its stream's events before the append
	replayed bool   // a retry of events the stream already holds
}

// buckets is one transaction's view of the event buckets.
type buckets struct {
	log, names, revisions, ids *bbolt.Bucket
	// The cursors serve the commit's lookups (each Seek starts from the
	// root, so a Put in between does not invalidate them): one cursor per
	// transaction instead of one per lookup, each of which bbolt allocates
	// with its own stack.
	namesCur, revisionsCur, idsCur *bbolt.Cursor
	written                        *[]events.Recorded // the commit's records, in order
	// keys is the commit's scratch for the keys write builds.
	keys *[]byte
	// seqs holds the commit's sequence numbers as written (nil: each is
	// allocated on its own); see seqValue.
	seqs *[]byte
}

// seqValue is seq big-endian, as a log key and as the value of the
// indexes' keys. bbolt keeps values as given until the transaction ends,
// so the bytes are never reused within it: a full array is left to the
// values cut from it and a new one started.
func (b buckets) seqValue(seq uint64) []byte {
	if b.seqs == nil {
		return be(seq)
	}
	s := *b.seqs
	if cap(s)-len(s) < 8 {
		s = make([]byte, 0, 8*256)
	}
	s = binary.BigEndian.AppendUint64(s, seq)
	*b.seqs = s
	return s[len(s)-8 : len(s) : len(s)]
}

func open(tx *bbolt.Tx) buckets {
	b := buckets{
		log:       tx.Bucket(bucketLog),
		names:     tx.Bucket(bucketNames),
		revisions: tx.Bucket(bucketRevisions),
		ids:       tx.Bucket(bucketIDs),
	}
	b.namesCur, b.revisionsCur, b.idsCur = b.names.Cursor(), b.revisions.Cursor(), b.ids.Cursor()
	return b
}

// stream is the number of the stream named name and its count of events;
// both 0 when it has none.
func (b buckets) stream(name string) (number, count uint64) {
	var buf [128]byte // most names, off the heap (bbolt keeps no seek key)
	k, v := b.namesCur.Seek(append(buf[:0], name...))
	if len(v) != 8 || string(k) != name {
		return 0, 0
	}
	number = binary.BigEndian.Uint64(v)
	return number, streamCount(b.revisionsCur, number)
}

// streamCount is the number of events of the stream numbered number: its
// last revision + 1, read from the revisions index (revisions are dense
// from 0, see write). It positions c after the stream's last key (no
// revision reaches MaxUint64) and steps back.
func streamCount(c *bbolt.Cursor, number uint64) uint64 {
	var buf [16]byte
	k, _ := c.Seek(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(buf[:0], number), math.MaxUint64))
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	if len(k) != 16 || binary.BigEndian.Uint64(k) != number {
		return 0
	}
	return binary.BigEndian.Uint64(k[8:]) + 1
}

func (b buckets) lookup(id string) (rules.Located, bool, error) {
	var buf [64]byte // an event id, off the heap (bbolt keeps no seek key)
	k, seq := b.idsCur.Seek(append(buf[:0], id...))
	if seq == nil || string(k) != id {
		return rules.Located{}, false, nil
	}
	rec, err := b.record(seq)
	if err != nil {
		return rules.Located{}, false, err
	}
	return rules.Located{Stream: rec.Stream, Revision: rec.Revision, Position: rec.Position}, true, nil
}

func (b buckets) record(seq []byte) (events.Recorded, error) {
	if len(seq) != 8 {
		return events.Recorded{}, fmt.Errorf("corrupt sequence %x", seq)
	}
	v := b.log.Get(seq)
	if v == nil {
		return events.Recorded{}, fmt.Errorf("index points to missing event %d", binary.BigEndian.Uint64(seq))
	}
	return decode(binary.BigEndian.Uint64(seq), v)
}

func (b buckets) write(stream string, number, count uint64, evs []events.Proposed, now time.Time) (events.AppendResult, error) {
	// Sequences only grow: full pages instead of half-empty splits.
	b.log.FillPercent = 1
	// bbolt copies keys on Put (values it keeps as given): the revision,
	// name and ID keys are built in the commit's scratch.
	*b.keys = slices.Grow((*b.keys)[:0], max(16, len(stream))+64)
	scratch := *b.keys
	var res events.AppendResult
	for i, ev := range evs {
		seq, err := b.log.NextSequence()
		if err != nil {
			return res, err
		}
		rev := count + uint64(i)
		key := b.seqValue(seq)
		if rev == 0 {
			// A new stream is numbered by its first event's sequence:
			// above every number given, so its revisions go at the end.
			number = seq
			if err := b.names.Put(append(scratch[:0], stream...), key); err != nil {
				return res, err
			}
		}
		rec := events.Recorded{ID: ev.ID, Stream: stream, Type: ev.Type, Revision: rev, Created: now, Data: ev.Data, Meta: ev.Meta}
		v, data, meta := encodeParts(rec)
		if err := b.log.Put(key, v); err != nil {
			return res, err
		}
		if b.written != nil {
			// Kept as written: the bytes are the encoded value's, which
			// nothing writes to once it is put (ReadAll's readers get
			// copies, subscriptions share them read-only).
			rec.Data, rec.Meta, rec.Position = data, meta, events.Position{Commit: seq, Prepare: seq}
			*b.written = append(*b.written, rec)
		}
		scratch = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(scratch[:0], number), rev)
		if err := b.revisions.Put(scratch, key); err != nil {
			return res, err
		}
		if err := b.ids.Put(append(scratch[:0], ev.ID...), key); err != nil {
			return res, err
		}
		res = events.AppendResult{Revision: rev, Position: events.Position{Commit: seq, Prepare: seq}}
	}
	return res, nil
}

func be(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }
