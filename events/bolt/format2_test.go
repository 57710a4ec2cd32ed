package bolt_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
)

// format2Streams is what testdata/format2.db holds: written by the last
// build of format 2 (commit eee660d), round by round (one event of each
// stream still short of its count per round, so streams interleave in the
// log), ids "v2-<len(stream)>-<round>", data {"i":<round>}.
var format2Streams = map[string]int{
	"user-1":                 3,
	"user-10":                1,
	"a":                      2,
	"ab":                     1,
	strings.Repeat("x", 127): 1,
	strings.Repeat("x", 128): 2,
	"many":                   300,
}

// format2File copies testdata/format2.db.gz into a fresh directory.
func format2File(t *testing.T) string { return fixture(t, "format2.db.gz") }

func formatOf(t *testing.T, path string) (format uint64, buckets []string) {
	t.Helper()
	inspect(t, path, func(tx *bbolt.Tx) error {
		if v := tx.Bucket([]byte("meta")).Get([]byte("format")); len(v) == 8 {
			format = binary.BigEndian.Uint64(v)
		}
		return tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
			buckets = append(buckets, string(name))
			return nil
		})
	})
	return format, buckets
}

// checkFormat2Streams reads every stream of testdata/format2.db back in
// order, checks the count expectations see, and that a retry of an old
// event is recognised by id.
func checkFormat2Streams(t *testing.T, s *bolt.Store) {
	t.Helper()
	ctx := context.Background()
	for stream, n := range format2Streams {
		short := stream[:min(len(stream), 8)]
		recs, err := s.ReadStream(ctx, stream, 0, 0)
		if err != nil || len(recs) != n {
			t.Fatalf("%q: read %d events, %v; want %d", short, len(recs), err, n)
		}
		for i, r := range recs {
			if r.Revision != uint64(i) || r.ID != fmt.Sprintf("v2-%d-%d", len(stream), i) || string(r.Data) != fmt.Sprintf(`{"i":%d}`, i) {
				t.Fatalf("%q revision %d: %+v", short, i, r)
			}
		}
		if got := held(t, s, stream); got != int64(n) {
			t.Fatalf("%q: store counts %d events, want %d", short, got, n)
		}
		from, err := s.ReadStream(ctx, stream, uint64(n-1), 1)
		if err != nil || len(from) != 1 || from[0].ID != recs[n-1].ID {
			t.Fatalf("%q: read from revision %d: %+v, %v", short, n-1, from, err)
		}
		again := recs[0]
		res, err := s.Append(ctx, stream, events.Any(), events.Proposed{ID: again.ID, Type: again.Type, Data: again.Data})
		if err != nil || res.Position != again.Position {
			t.Fatalf("%q: retry of %s: %+v, %v; want its position %+v", short, again.ID, res, err, again.Position)
		}
	}
}

// A format 2 directory opens as format 3 and keeps every stream: its
// events by revision, the counts expectations are checked against, retries
// by id, and appends that continue each stream after a reopen.
func TestOpenMigratesFormat2(t *testing.T) {
	ctx := context.Background()
	path := format2File(t)
	if f, buckets := formatOf(t, path); f != 2 || !strings.Contains(strings.Join(buckets, ","), "revs") {
		t.Fatalf("testdata/format2.db is format %d with %v", f, buckets)
	}
	s, err := bolt.Open(path)
	if err != nil {
		t.Fatalf("open format 2: %v", err)
	}
	checkFormat2Streams(t, s)
	for stream, n := range format2Streams {
		if _, err := s.Append(ctx, stream, events.AfterVersion(uint64(n)), ev("after", n)); err != nil {
			t.Fatalf("append after %d events: %v", n, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if f, buckets := formatOf(t, path); f != 3 || strings.Join(buckets, ",") != "ids,log,meta,names,revisions" {
		t.Fatalf("migrated file is format %d with buckets %v", f, buckets)
	}
	s = openT(t, path)
	for stream, n := range format2Streams {
		if got := held(t, s, stream); got != int64(n+1) {
			t.Errorf("%q after reopen: %d events, want %d", stream[:min(len(stream), 8)], got, n+1)
		}
	}
}

// A migration is split into transactions; a file left between two of them
// (a crash part way: each commits the keys it moved with where the next
// resumes) is still format 2 and the next Open finishes it. The chunk of 7
// splits both phases (names, then revisions in log order) into several
// transactions.
func TestOpenResumesFormat2Migration(t *testing.T) {
	defer bolt.SetMigrateChunk(7)()
	path := format2File(t)
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Make the last revision of "many" (the last stream of the log's first
	// round, so moved in a later transaction than the streams before it)
	// unreadable as format 2, so the migration stops with an error after
	// the transactions before it committed.
	var broken, good []byte
	err = db.Update(func(tx *bbolt.Tx) error {
		revs := tx.Bucket([]byte("revs"))
		broken = binary.BigEndian.AppendUint64(append(binary.AppendUvarint(nil, 4), "many"...), 299)
		good = bytes.Clone(revs.Get(broken))
		return revs.Put(broken, []byte{1})
	})
	_ = db.Close()
	if err != nil || len(good) != 8 {
		t.Fatalf("break many: %v", err)
	}
	if s, err := bolt.Open(path); err == nil {
		_ = s.Close()
		t.Fatal("open migrated a broken format 2 file")
	}
	var migrated []byte
	inspect(t, path, func(tx *bbolt.Tx) error {
		migrated = bytes.Clone(tx.Bucket([]byte("meta")).Get([]byte("migrated-to-3")))
		return nil
	})
	if f, _ := formatOf(t, path); f != 2 || len(migrated) != 9 || migrated[0] != 2 {
		t.Fatalf("after a failed migration: format %d, resume key %x; want format 2 with its names moved and revisions part moved", f, migrated)
	}
	// Repair the key and open again: the migration resumes.
	db, err = bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("revs")).Put(broken, good) })
	_ = db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := openT(t, path)
	checkFormat2Streams(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if f, buckets := formatOf(t, path); f != 3 || strings.Join(buckets, ",") != "ids,log,meta,names,revisions" {
		t.Fatalf("resumed migration left format %d with buckets %v", f, buckets)
	}
}
