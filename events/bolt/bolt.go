// Package bolt is the durable embedded event store: one bbolt file in the
// data directory, so a single node runs without an EventStoreDB server and
// an acknowledged append survives a crash (bbolt fsyncs on every commit).
//
// Layout (all integers big-endian uint64 unless said otherwise):
//
//	log:     seq -> record              the global order; Position{seq, seq}
//	streams: stream -> event count      O(1) expectation checks
//	revs:    uvarint(len)+stream+rev -> seq   stream reads by revision
//	ids:     event id -> seq            idempotent retries
package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/internal/feed"
	"github.com/healthtech/partner-open-platform/events/internal/rules"
)

// LockTimeout is how long Open waits for another process to release the
// data file before reporting that the data directory is in use.
const LockTimeout = 2 * time.Second

var (
	bucketLog     = []byte("log")
	bucketStreams = []byte("streams")
	bucketRevs    = []byte("revs")
	bucketIDs     = []byte("ids")
)

// Store is a single node's durable log; one process owns the file (bbolt
// locks it) and may use the Store from any number of goroutines.
type Store struct {
	db     *bbolt.DB
	notify *feed.Notifier
	closed atomic.Bool

	closeOnce sync.Once
	closeErr  error
}

var _ events.Store = (*Store)(nil)

// Open opens (creating if needed) the event log in the file at path, so the
// node's data directory holds its whole write side in one file.
func Open(path string) (*Store, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("events/bolt: create data directory: %w", err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{
		Timeout: LockTimeout,
		// The freelist is rebuilt on open instead of written on every
		// commit: fewer pages per fsync, same durability.
		NoFreelistSync: true,
		FreelistType:   bbolt.FreelistMapType,
	})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("events/bolt: data directory %s is in use by another process (no lock on %s within %s): %w", dir, path, LockTimeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("events/bolt: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range [][]byte{bucketLog, bucketStreams, bucketRevs, bucketIDs} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("bucket %s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("events/bolt: prepare %s: %w", path, err)
	}
	return &Store{db: db, notify: feed.NewNotifier()}, nil
}

// errReplayed rolls back the (empty) transaction of an idempotent retry, so
// a retry costs no fsync.
var errReplayed = errors.New("events/bolt: replayed")

// Append implements events.Store in one bbolt transaction.
func (s *Store) Append(ctx context.Context, stream string, expected events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	if err := s.usable(ctx); err != nil {
		return events.AppendResult{}, err
	}
	if stream == "" || len(stream) > bbolt.MaxKeySize-binary.MaxVarintLen64-8 {
		return events.AppendResult{}, fmt.Errorf("events/bolt: invalid stream name of %d bytes", len(stream))
	}
	var res events.AppendResult
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b := open(tx)
		count := b.count(stream)
		r, replayed, err := rules.Check(stream, expected, count, evs, b.lookup)
		if err != nil {
			return err
		}
		if replayed {
			res = r
			return errReplayed
		}
		res, err = b.write(stream, count, evs, time.Now().UTC())
		return err
	})
	switch {
	case errors.Is(err, errReplayed):
		return res, nil
	case err != nil:
		return events.AppendResult{}, s.wrap("append to "+stream, err)
	}
	s.notify.Notify()
	return res, nil
}

// ReadStream implements events.Store.
func (s *Store) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]events.Recorded, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	out := []events.Recorded{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		b := open(tx)
		prefix := streamPrefix(stream)
		c := b.revs.Cursor()
		for k, seq := c.Seek(revKey(prefix, from)); k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8; k, seq = c.Next() {
			if limit > 0 && len(out) == limit {
				break
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
	// The first sequence strictly after the position.
	start := after.Commit + 1
	if after.Prepare < after.Commit {
		start = after.Commit
	}
	out := []events.Recorded{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketLog).Cursor()
		for k, v := c.Seek(be(start)); k != nil; k, v = c.Next() {
			if limit > 0 && len(out) == limit {
				break
			}
			rec, err := decode(binary.BigEndian.Uint64(k), v)
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

// SubscribeAll implements events.Store: catch up in pages, then wake on appends.
func (s *Store) SubscribeAll(ctx context.Context, after events.Position) (events.Subscription, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	return feed.Subscribe(ctx, after, s.ReadAll, s.notify), nil
}

// Close implements events.Store; subscriptions end with events.ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.notify.Close()
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("events/bolt: close: %w", err)
		}
	})
	return s.closeErr
}

func (s *Store) usable(ctx context.Context) error {
	if s.closed.Load() {
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
	case errors.Is(err, berrors.ErrDatabaseNotOpen) || s.closed.Load():
		return fmt.Errorf("events/bolt: %s: %w", op, events.ErrClosed)
	default:
		return fmt.Errorf("events/bolt: %s: %w", op, err)
	}
}

// buckets is one transaction's view of the four buckets.
type buckets struct {
	log, streams, revs, ids *bbolt.Bucket
}

func open(tx *bbolt.Tx) buckets {
	return buckets{
		log:     tx.Bucket(bucketLog),
		streams: tx.Bucket(bucketStreams),
		revs:    tx.Bucket(bucketRevs),
		ids:     tx.Bucket(bucketIDs),
	}
}

func (b buckets) count(stream string) uint64 {
	v := b.streams.Get([]byte(stream))
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func (b buckets) lookup(id string) (rules.Located, bool, error) {
	seq := b.ids.Get([]byte(id))
	if seq == nil {
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

func (b buckets) write(stream string, count uint64, evs []events.Proposed, now time.Time) (events.AppendResult, error) {
	// Sequences only grow: full pages instead of half-empty splits.
	b.log.FillPercent = 1
	prefix := streamPrefix(stream)
	var res events.AppendResult
	for i, ev := range evs {
		seq, err := b.log.NextSequence()
		if err != nil {
			return res, err
		}
		rev := count + uint64(i)
		key := be(seq)
		rec := events.Recorded{ID: ev.ID, Stream: stream, Type: ev.Type, Revision: rev, Created: now, Data: ev.Data, Meta: ev.Meta}
		if err := b.log.Put(key, encode(rec)); err != nil {
			return res, err
		}
		if err := b.revs.Put(revKey(prefix, rev), key); err != nil {
			return res, err
		}
		if err := b.ids.Put([]byte(ev.ID), key); err != nil {
			return res, err
		}
		res = events.AppendResult{Revision: rev, Position: events.Position{Commit: seq, Prepare: seq}}
	}
	return res, b.streams.Put([]byte(stream), be(count+uint64(len(evs))))
}

func be(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// streamPrefix is length-prefixed so no stream's keys prefix another's.
func streamPrefix(stream string) []byte {
	p := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(stream)+8), uint64(len(stream)))
	return append(p, stream...)
}

func revKey(prefix []byte, rev uint64) []byte {
	return binary.BigEndian.AppendUint64(prefix[:len(prefix):len(prefix)], rev)
}
