package bolt_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
)

// format1Streams is what testdata/format1.db holds: written by the build
// before format 2 (commit 3be1477), one event at a time with events.Any(),
// ids "v1-<len(stream)>-<i>".
var format1Streams = map[string]int64{
	"user-1":                 3,
	"user-10":                1,
	"a":                      2,
	"ab":                     1,
	strings.Repeat("x", 127): 1,
	strings.Repeat("x", 128): 2,
}

// format1File copies testdata/format1.db.gz into a fresh directory.
func format1File(t *testing.T) string { return fixture(t, "format1.db.gz") }

// fixture unzips testdata/name into a fresh directory's events.db.
func fixture(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "events.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// held is the count the store checks expectations against: a NoStream
// append to a stream that has events is refused with that count.
func held(t *testing.T, s *bolt.Store, stream string) int64 {
	t.Helper()
	_, err := s.Append(context.Background(), stream, events.NoStream(), ev("probe", 0))
	if err == nil {
		return 0
	}
	var ce *events.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("probe %q: %v", stream, err)
	}
	return ce.Actual
}

// inspect runs fn on the closed file's raw buckets.
func inspect(t *testing.T, path string, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(fn); err != nil {
		t.Fatal(err)
	}
}

func TestOpenMigratesFormat1(t *testing.T) {
	ctx := context.Background()
	path := format1File(t)
	inspect(t, path, func(tx *bbolt.Tx) error {
		if tx.Bucket([]byte("streams")) == nil || tx.Bucket([]byte("meta")) != nil {
			t.Fatal("testdata/format1.db is not a format 1 log")
		}
		return nil
	})
	s, err := bolt.Open(path)
	if err != nil {
		t.Fatalf("open format 1: %v", err)
	}
	for stream, n := range format1Streams {
		if got := held(t, s, stream); got != n {
			t.Errorf("%q: store counts %d events after migration, format 1 held %d", stream[:min(len(stream), 8)], got, n)
		}
		recs, err := s.ReadStream(ctx, stream, 0, 0)
		if err != nil || int64(len(recs)) != n {
			t.Fatalf("%q: read %d events, %v", stream[:min(len(stream), 8)], len(recs), err)
		}
		// The next revision continues the stream; a retry of an old event
		// is recognised by id.
		res, err := s.Append(ctx, stream, events.AfterVersion(uint64(n)), ev("after", 0))
		if err != nil || res.Revision != uint64(n) {
			t.Fatalf("%q: append after %d events: revision %d, %v", stream[:min(len(stream), 8)], n, res.Revision, err)
		}
		again := recs[0]
		res, err = s.Append(ctx, stream, events.Any(), events.Proposed{ID: again.ID, Type: again.Type, Data: again.Data, Meta: again.Meta})
		if err != nil || res.Position != again.Position {
			t.Fatalf("%q: retry of %s: %+v, %v; want its position %+v", stream[:min(len(stream), 8)], again.ID, res, err, again.Position)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	inspect(t, path, func(tx *bbolt.Tx) error {
		if tx.Bucket([]byte("streams")) != nil {
			t.Error("the format 1 streams bucket is still there")
		}
		m := tx.Bucket([]byte("meta"))
		if m == nil || !bytes.Equal(m.Get([]byte("format")), binary.BigEndian.AppendUint64(nil, 3)) {
			t.Error("no format 3 marker")
		}
		return nil
	})
	// Reopened as format 3, it still counts every stream.
	s = openT(t, path)
	for stream, n := range format1Streams {
		if got := held(t, s, stream); got != n+1 {
			t.Errorf("%q after reopen: %d, want %d", stream[:min(len(stream), 8)], got, n+1)
		}
	}
}

// A format 1 file whose two indexes disagree is not migrated: the open
// fails and the file keeps its streams bucket, unmarked.
func TestOpenRefusesInconsistentFormat1(t *testing.T) {
	path := format1File(t)
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("streams")).Put([]byte("ab"), binary.BigEndian.AppendUint64(nil, 5))
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	if s, err := bolt.Open(path); err == nil || !strings.Contains(err.Error(), `"ab"`) {
		if s != nil {
			_ = s.Close()
		}
		t.Fatalf("open of an inconsistent format 1 log: %v, want an error naming stream \"ab\"", err)
	}
	inspect(t, path, func(tx *bbolt.Tx) error {
		if tx.Bucket([]byte("streams")) == nil || tx.Bucket([]byte("meta")) != nil {
			t.Error("a refused migration changed the file")
		}
		return nil
	})
}

func TestOpenRefusesUnknownFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s := openT(t, path)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("format"), binary.BigEndian.AppendUint64(nil, 4))
	})
	_ = db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if s, err := bolt.Open(path); !errors.Is(err, bolt.ErrUnknownFormat) {
		if s != nil {
			_ = s.Close()
		}
		t.Fatalf("open of a format 4 log: %v, want ErrUnknownFormat", err)
	}
}

// A stream's count is read from the revision index by its key prefix:
// streams whose names share bytes, end in 0x00 or 0xff, or sit on either
// side of a length-prefix boundary must not see each other's keys.
func TestStreamCountsArePerStream(t *testing.T) {
	ctx := context.Background()
	s := openT(t, filepath.Join(t.TempDir(), "events.db"))
	names := []string{"a", "ab", "a\x00", "a\xff", "\xff", "\xff\xff", "b",
		strings.Repeat("x", 127), strings.Repeat("x", 128), strings.Repeat("\xff", 128), strings.Repeat("\xff", 129)}
	rng := rand.New(rand.NewPCG(1, 2))
	for len(names) < 120 {
		n := make([]byte, 1+rng.IntN(300))
		for i := range n {
			n[i] = []byte{0, 1, 'a', 0x7f, 0x80, 0xfe, 0xff}[rng.IntN(7)]
		}
		names = append(names, string(n))
	}
	want := map[string]int64{}
	for range 600 {
		name := names[rng.IntN(len(names))]
		if _, ok := want[name]; !ok && len(want) == len(names)-10 {
			continue // leave a few streams empty
		}
		n := want[name]
		res, err := s.Append(ctx, name, events.AfterVersion(uint64(n)), ev("counted", int(n)))
		if err != nil || res.Revision != uint64(n) {
			t.Fatalf("append %d to %q: revision %d, %v", n, name, res.Revision, err)
		}
		want[name] = n + 1
	}
	for _, name := range names {
		if got := held(t, s, name); got != want[name] {
			t.Fatalf("%q: counted %d, want %d", name, got, want[name])
		}
	}
}
