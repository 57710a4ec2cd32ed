package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	bbolt "go.etcd.io/bbolt"
)

// The log's layout is versioned so that a build never misreads a file laid
// out by another: the "format" key of the meta bucket holds the version.
//
//	1  log, streams (stream -> event count), revs, ids; no meta bucket
//	2  log, revs (uvarint(len)+stream+rev -> seq), ids, meta: a stream's
//	   count comes from revs
//	3  log, names, revisions (number+rev -> seq), ids, meta (bolt.go)
//
// Open migrates a format 1 file to format 2 in one transaction, and a format
// 2 file to format 3 in transactions of about migrateChunk keys each (each
// records where the next resumes, so a crash part way leaves a format 2
// file that the next Open carries on migrating; writes wait for the last).
// It refuses a format it does not know (a file written by a newer build), as
// format 2 builds refuse format 3; format 1 builds do not read the marker, so
// a migrated file must not be opened by them (docs/operations.md,
// "Upgrading").
const currentFormat = 3

var (
	bucketMeta = []byte("meta")
	keyFormat  = []byte("format")
	// keyMigrated is, while a format 2 file is migrated, where the next
	// migrating transaction resumes (migrateRevisions).
	keyMigrated = []byte("migrated-to-3")
	// bucketStreamsV1 is format 1's per-stream count index.
	bucketStreamsV1 = []byte("streams")
	// bucketRevsV2 is formats 1 and 2's revision index, keyed by the name.
	bucketRevsV2 = []byte("revs")
)

// migrateChunk is about how many keys one migrating transaction writes: its
// dirty pages stay in memory until it commits.
var migrateChunk = 100_000

// ErrUnknownFormat reports a log this build cannot read, so that an operator
// learns which build wrote it instead of seeing a corrupt-looking log.
var ErrUnknownFormat = errors.New("unknown event log format")

// prepare creates the buckets of a new file, and brings a file of an older
// format to the current one, before Open serves anything.
func prepare(db *bbolt.DB) error {
	var format uint64
	err := db.Update(func(tx *bbolt.Tx) (err error) {
		format, err = prepareMarked(tx)
		return err
	})
	if err != nil {
		return err
	}
	for format == 2 {
		if err := db.Update(func(tx *bbolt.Tx) (err error) {
			format, err = migrateRevisions(tx)
			return err
		}); err != nil {
			return fmt.Errorf("events/bolt: migrate from format 2: %w", err)
		}
	}
	return nil
}

// prepareMarked reads the file's format, creating a new file's buckets and
// bringing a format 1 file to format 2.
func prepareMarked(tx *bbolt.Tx) (uint64, error) {
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return 0, fmt.Errorf("bucket %s: %w", bucketMeta, err)
	}
	if v := meta.Get(keyFormat); v != nil {
		if len(v) != 8 {
			return 0, fmt.Errorf("%w: format marker of %d bytes", ErrUnknownFormat, len(v))
		}
		if f := binary.BigEndian.Uint64(v); f != 2 && f != currentFormat {
			return 0, fmt.Errorf("%w: the log is in format %d (this build reads formats 1 to %d; a newer build wrote it)", ErrUnknownFormat, f, currentFormat)
		}
		return binary.BigEndian.Uint64(v), nil
	}
	// No marker: a new file, or format 1.
	if tx.Bucket(bucketLog) == nil {
		for _, name := range [][]byte{bucketLog, bucketNames, bucketRevisions, bucketIDs} {
			if _, err := tx.CreateBucket(name); err != nil {
				return 0, fmt.Errorf("bucket %s: %w", name, err)
			}
		}
		return currentFormat, meta.Put(keyFormat, be(currentFormat))
	}
	for _, name := range [][]byte{bucketRevsV2, bucketIDs} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return 0, fmt.Errorf("bucket %s: %w", name, err)
		}
	}
	if err := migrateStreams(tx); err != nil {
		return 0, err
	}
	return 2, meta.Put(keyFormat, be(2))
}

// migrateStreams drops format 1's streams bucket once every count it holds
// is the count revs gives, so the migration changes no expectation check; a
// mismatch leaves the file as it was and fails the open.
func migrateStreams(tx *bbolt.Tx) error {
	old := tx.Bucket(bucketStreamsV1)
	if old == nil {
		return nil
	}
	revs := tx.Bucket(bucketRevsV2).Cursor()
	err := old.ForEach(func(stream, v []byte) error {
		if len(v) != 8 {
			return fmt.Errorf("stream %q: count of %d bytes", stream, len(v))
		}
		want := binary.BigEndian.Uint64(v)
		if got := streamCountV2(revs, stream); got != want {
			return fmt.Errorf("stream %q: the streams index counts %d events, the revision index %d", stream, want, got)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("events/bolt: migrate from format 1: %w", err)
	}
	return tx.DeleteBucket(bucketStreamsV1)
}

// streamCountV2 is a stream's count in format 2's revs: its last key's
// revision + 1. The key prefix's uvarint length keeps it prefix-free.
func streamCountV2(c *bbolt.Cursor, stream []byte) uint64 {
	prefix := append(binary.AppendUvarint(nil, uint64(len(stream))), stream...)
	k, _ := c.Seek(binary.BigEndian.AppendUint64(bytes.Clone(prefix), math.MaxUint64))
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	if len(k) != len(prefix)+8 || !bytes.HasPrefix(k, prefix) {
		return 0
	}
	return binary.BigEndian.Uint64(k[len(prefix):]) + 1
}

// Migration phases from format 2, in the first byte of keyMigrated's value;
// the rest is where the phase resumes.
const (
	phaseNames     = 1 // the rest: the last revs key read
	phaseRevisions = 2 // the rest: the last log sequence read
)

// migrateRevisions moves format 2's revs into names and revisions, each
// stream numbered by its first event's sequence as a new stream is, at most
// migrateChunk keys per call (one transaction). Both indexes are written in
// their own key order, so each transaction appends to their ends instead of
// dirtying pages all over them: first names, from revs in name order; then
// revisions, from the log in sequence order, taking at each stream's first
// event all of its revisions from revs (numbers grow with the log). Once
// revs is moved whole it is dropped and the file marked format 3, in the
// same transaction.
func migrateRevisions(tx *bbolt.Tx) (uint64, error) {
	meta := tx.Bucket(bucketMeta)
	old := tx.Bucket(bucketRevsV2)
	if old == nil {
		return 0, errors.New("format 2 log without its revs bucket")
	}
	phase, from := byte(phaseNames), []byte(nil)
	if v := meta.Get(keyMigrated); len(v) > 0 {
		phase, from = v[0], v[1:]
	}
	var next []byte
	var err error
	switch phase {
	case phaseNames:
		names, err := tx.CreateBucketIfNotExists(bucketNames)
		if err != nil {
			return 0, err
		}
		next, err = migrateNames(old.Cursor(), names, from)
		if err != nil {
			return 0, err
		}
		if next == nil {
			phase, next = phaseRevisions, be(0)
		}
	case phaseRevisions:
		revisions, err := tx.CreateBucketIfNotExists(bucketRevisions)
		if err != nil {
			return 0, err
		}
		if len(from) != 8 {
			return 0, fmt.Errorf("migration resumes at %x, not a sequence", from)
		}
		next, err = migrateStreamRevisions(tx.Bucket(bucketLog).Cursor(), old.Cursor(), revisions, binary.BigEndian.Uint64(from))
		if err != nil {
			return 0, err
		}
	default:
		return 0, fmt.Errorf("migration in unknown phase %d", phase)
	}
	if next != nil {
		return 2, meta.Put(keyMigrated, append([]byte{phase}, next...))
	}
	if err = tx.DeleteBucket(bucketRevsV2); err != nil {
		return 0, err
	}
	if err := meta.Delete(keyMigrated); err != nil {
		return 0, err
	}
	return currentFormat, meta.Put(keyFormat, be(currentFormat))
}

// parseRevKey splits a format 2 revs key into its stream and revision.
func parseRevKey(k []byte) (stream []byte, rev uint64, ok bool) {
	l, w := binary.Uvarint(k)
	if w <= 0 || uint64(len(k)-w) != l+8 {
		return nil, 0, false
	}
	return k[w : w+int(l)], binary.BigEndian.Uint64(k[w+int(l):]), true
}

// migrateNames puts the name of each stream whose revision 0 follows the
// revs key after (from the first when nil), up to migrateChunk of them, in
// name order; it returns the last key read, or nil when revs is done.
func migrateNames(c *bbolt.Cursor, names *bbolt.Bucket, after []byte) ([]byte, error) {
	k, seq := c.First()
	if after != nil {
		if k, seq = c.Seek(after); bytes.Equal(k, after) {
			k, seq = c.Next()
		}
	}
	for n := 0; k != nil; k, seq = c.Next() {
		stream, rev, ok := parseRevKey(k)
		if !ok {
			return nil, fmt.Errorf("revision key %x is not a format 2 key", k)
		}
		if rev != 0 {
			continue // checked as revisions are moved
		}
		if len(seq) != 8 {
			return nil, fmt.Errorf("stream %q: revision 0 at %x, not a sequence", stream, seq)
		}
		if err := names.Put(stream, bytes.Clone(seq)); err != nil {
			return nil, err
		}
		if n++; n == migrateChunk {
			return bytes.Clone(k), nil
		}
	}
	return nil, nil
}

// migrateStreamRevisions reads the log after sequence after and, at each
// stream's first event, puts all of the stream's revisions from revs under
// its number (that sequence), until it has put migrateChunk keys or more;
// it returns the last sequence read, or nil when the log is done.
func migrateStreamRevisions(log, revs *bbolt.Cursor, revisions *bbolt.Bucket, after uint64) ([]byte, error) {
	n := 0
	for k, v := log.Seek(be(after + 1)); k != nil; k, v = log.Next() {
		// A record starts with its version, then its stream as format 2's
		// key prefix, then its revision (codec.go).
		if len(v) == 0 || v[0] != recordV1 {
			return nil, fmt.Errorf("event %x: %w", k, errCorrupt)
		}
		l, w := binary.Uvarint(v[1:])
		if w <= 0 || uint64(len(v)-1-w) < l {
			return nil, fmt.Errorf("event %x: %w", k, errCorrupt)
		}
		prefix := v[1 : 1+w+int(l)]
		if rev, w := binary.Uvarint(v[1+len(prefix):]); w <= 0 || rev != 0 {
			if w <= 0 {
				return nil, fmt.Errorf("event %x: %w", k, errCorrupt)
			}
			continue
		}
		number := binary.BigEndian.Uint64(k)
		want := uint64(0)
		for rk, seq := revs.Seek(binary.BigEndian.AppendUint64(bytes.Clone(prefix), 0)); len(rk) == len(prefix)+8 && bytes.HasPrefix(rk, prefix); rk, seq = revs.Next() {
			rev := binary.BigEndian.Uint64(rk[len(prefix):])
			if rev != want || len(seq) != 8 || (rev == 0 && binary.BigEndian.Uint64(seq) != number) {
				return nil, fmt.Errorf("stream %q: revision %d -> %x in revs, want revision %d, and revision 0 at %d", prefix[w:], rev, seq, want, number)
			}
			if err := revisions.Put(binary.BigEndian.AppendUint64(be(number), rev), bytes.Clone(seq)); err != nil {
				return nil, err
			}
			want++
		}
		if want == 0 {
			return nil, fmt.Errorf("stream %q: event %d is its revision 0, which revs does not hold", prefix[w:], number)
		}
		if n += int(want); n >= migrateChunk {
			return bytes.Clone(k), nil
		}
	}
	return nil, nil
}
