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
// 2 file to format 3 in transactions of migrateChunk revision keys each
// (each records where the next resumes, so a crash part way leaves a format
// 2 file that the next Open carries on migrating; writes wait for the last).
// It refuses a format it does not know (a file written by a newer build), as
// format 2 builds refuse format 3; format 1 builds do not read the marker, so
// a migrated file must not be opened by them (docs/operations.md,
// "Upgrading").
const currentFormat = 3

var (
	bucketMeta = []byte("meta")
	keyFormat  = []byte("format")
	// keyMigrated is, while a format 2 file is migrated, the last key of
	// format 2's revs that names and revisions hold.
	keyMigrated = []byte("migrated-to-3")
	// bucketStreamsV1 is format 1's per-stream count index.
	bucketStreamsV1 = []byte("streams")
	// bucketRevsV2 is formats 1 and 2's revision index, keyed by the name.
	bucketRevsV2 = []byte("revs")
)

// migrateChunk is how many format 2 revision keys one migrating transaction
// moves: its dirty pages stay in memory until it commits.
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

// migrateRevisions moves up to migrateChunk keys of format 2's revs, in
// their order (a stream's revisions in order, from 0), into names and
// revisions, each stream numbered by its first event's sequence as a new
// stream is. Once revs is moved whole it is dropped and the file marked
// format 3, in the same transaction.
func migrateRevisions(tx *bbolt.Tx) (uint64, error) {
	meta := tx.Bucket(bucketMeta)
	names, err := tx.CreateBucketIfNotExists(bucketNames)
	if err != nil {
		return 0, err
	}
	revisions, err := tx.CreateBucketIfNotExists(bucketRevisions)
	if err != nil {
		return 0, err
	}
	old := tx.Bucket(bucketRevsV2)
	if old == nil {
		return 0, errors.New("format 2 log without its revs bucket")
	}
	c := old.Cursor()
	k, seq := c.First()
	if from := meta.Get(keyMigrated); from != nil {
		if k, seq = c.Seek(from); bytes.Equal(k, from) {
			k, seq = c.Next()
		}
	}
	var last []byte // the stream of the key before, and its number
	var number uint64
	for n := 0; k != nil && n < migrateChunk; k, seq = c.Next() {
		l, w := binary.Uvarint(k)
		if w <= 0 || uint64(len(k)-w) != l+8 || len(seq) != 8 {
			return 0, fmt.Errorf("revision key %x -> %x is not a format 2 key", k, seq)
		}
		stream, rev := k[w:w+int(l)], binary.BigEndian.Uint64(k[w+int(l):])
		switch {
		case rev == 0:
			number = binary.BigEndian.Uint64(seq)
			if err := names.Put(stream, be(number)); err != nil {
				return 0, err
			}
		case !bytes.Equal(stream, last):
			// The stream's first keys went in an earlier transaction.
			v := names.Get(stream)
			if len(v) != 8 {
				return 0, fmt.Errorf("stream %q: revision %d without revision 0", stream, rev)
			}
			number = binary.BigEndian.Uint64(v)
		}
		last = stream
		key := binary.BigEndian.AppendUint64(be(number), rev)
		if err := revisions.Put(key, bytes.Clone(seq)); err != nil {
			return 0, err
		}
		if n++; n == migrateChunk {
			if next, _ := c.Next(); next != nil {
				return 2, meta.Put(keyMigrated, bytes.Clone(k))
			}
			break
		}
	}
	if err := tx.DeleteBucket(bucketRevsV2); err != nil {
		return 0, err
	}
	if err := meta.Delete(keyMigrated); err != nil {
		return 0, err
	}
	return currentFormat, meta.Put(keyFormat, be(currentFormat))
}
