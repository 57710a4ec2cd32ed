package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"

	bbolt "go.etcd.io/bbolt"
)

// The log's layout is versioned so that a build never misreads a file laid
// out by another: the "format" key of the meta bucket holds the version.
//
//	1  log, streams (stream -> event count), revs, ids; no meta bucket
//	2  log, revs, ids, meta: a stream's count comes from revs
//
// Open migrates a format 1 file in place, in one transaction, and refuses a
// format it does not know (a file written by a newer build). Builds before
// format 2 do not read the marker, so a migrated file must not be opened by
// them (README, "Upgrading").
const currentFormat = 2

var (
	bucketMeta = []byte("meta")
	keyFormat  = []byte("format")
	// bucketStreamsV1 is format 1's per-stream count index.
	bucketStreamsV1 = []byte("streams")
)

// ErrUnknownFormat reports a log this build cannot read, so that an operator
// learns which build wrote it instead of seeing a corrupt-looking log.
var ErrUnknownFormat = errors.New("unknown event log format")

// prepare creates the buckets of a new file, and brings a format 1 file to
// the current format, in Open's first transaction.
func prepare(tx *bbolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return fmt.Errorf("bucket %s: %w", bucketMeta, err)
	}
	if v := meta.Get(keyFormat); v != nil {
		if len(v) != 8 {
			return fmt.Errorf("%w: format marker of %d bytes", ErrUnknownFormat, len(v))
		}
		if f := binary.BigEndian.Uint64(v); f != currentFormat {
			return fmt.Errorf("%w: the log is in format %d (this build reads formats 1 and %d; a newer build wrote it)", ErrUnknownFormat, f, currentFormat)
		}
		return nil
	}
	// No marker: a new file, or format 1.
	for _, name := range [][]byte{bucketLog, bucketRevs, bucketIDs} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("bucket %s: %w", name, err)
		}
	}
	if err := migrateStreams(tx); err != nil {
		return err
	}
	return meta.Put(keyFormat, be(currentFormat))
}

// migrateStreams drops format 1's streams bucket once every count it holds
// is the count revs gives, so the migration changes no expectation check; a
// mismatch leaves the file as it was and fails the open.
func migrateStreams(tx *bbolt.Tx) error {
	old := tx.Bucket(bucketStreamsV1)
	if old == nil {
		return nil
	}
	revs := tx.Bucket(bucketRevs).Cursor()
	err := old.ForEach(func(stream, v []byte) error {
		if len(v) != 8 {
			return fmt.Errorf("stream %q: count of %d bytes", stream, len(v))
		}
		want := binary.BigEndian.Uint64(v)
		if got := streamCount(revs, streamPrefix(string(stream))); got != want {
			return fmt.Errorf("stream %q: the streams index counts %d events, the revision index %d", stream, want, got)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("events/bolt: migrate from format 1: %w", err)
	}
	return tx.DeleteBucket(bucketStreamsV1)
}
