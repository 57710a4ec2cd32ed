package files

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/datakeys"
	"github.com/healthtech/partner-open-platform/internal/datakeys/keystest"
)

// The keys datakeys.Keys makes are packed into their index entries, and
// every record, packed or kept whole, reads back exactly as stored, from
// the store that wrote it, after a reopen (the log parsed) and after a
// compaction.
func TestRecordsReadBackExactlyAsStored(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	s, ks, _ := openKeys(t, dir)
	ctx := context.Background()
	var want []datakeys.Record
	for i := range 3 {
		subject := fmt.Sprint("user-", 100+i)
		if _, err := ks.DataKey(ctx, subject); err != nil {
			t.Fatal(err)
		}
		rec, err := s.Get(ctx, subject)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, rec)
	}
	at := time.Date(2026, 11, 23, 12, 37, 54, 914356377, time.UTC)
	odd := []datakeys.Record{
		{Subject: "user-200", KeyID: want[0].KeyID[len("user-100"):], MasterKeyID: "mk-1", Sealed: want[0].Sealed, Created: at}, // an id not of its subject
		{Subject: "user-201", KeyID: "user-201~0123456789abcdef", MasterKeyID: "mk-1", Sealed: want[0].Sealed, Created: at.In(time.FixedZone("", 7200))},
		{Subject: "user-202", KeyID: "user-202~0123456789abcdef", MasterKeyID: "mk-1", Sealed: want[0].Sealed, Created: time.Date(2400, 1, 1, 0, 0, 0, 0, time.UTC)}, // past unix nanoseconds
	}
	for _, r := range append(storedFormsForFiles(), odd...) {
		if _, err := s.Insert(ctx, r); err != nil {
			t.Fatal(err)
		}
		want = append(want, r)
	}
	packed := []int{0, 1, 2}
	check := func(how string, s *Store) {
		t.Helper()
		for _, w := range want {
			got, err := s.Get(ctx, w.Subject)
			if err != nil {
				t.Fatalf("%s: get %s: %v", how, w.Subject, err)
			}
			if got.Subject != w.Subject || got.KeyID != w.KeyID || got.MasterKeyID != w.MasterKeyID || got.Sealed != w.Sealed || !got.Created.Equal(w.Created) {
				t.Errorf("%s: read %+v, stored %+v", how, got, w)
			}
		}
		for _, i := range packed {
			if e := s.index[want[i].Subject]; e == nil || e.whole {
				t.Errorf("%s: the key datakeys.Keys made for %s is not packed", how, want[i].Subject)
			}
		}
	}
	check("written", s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	check("reopened", s)
	if err := s.compact(); err != nil {
		t.Fatal(err)
	}
	check("compacted", s)
	// A packed record replaced by an odd one (a re-seal of another form),
	// and back.
	for _, step := range []struct {
		r      datakeys.Record
		packed []int
	}{{odd[1], []int{0, 2}}, {want[0], []int{0, 1, 2}}} {
		r := step.r
		r.Subject, r.KeyID = want[1].Subject, want[1].KeyID
		cur, _ := s.Get(ctx, r.Subject)
		if err := s.Update(ctx, cur.MasterKeyID, r); err != nil {
			t.Fatal(err)
		}
		want[1], packed = r, step.packed
		check("updated", s)
	}
	// Of the suite's forms, two are the form datakeys.Keys makes.
	if n := len(storedFormsForFiles()) - 2 + len(odd); len(s.whole) != n {
		t.Errorf("%d records kept whole, want %d", len(s.whole), n)
	}
	s.Close()
}

// storedFormsForFiles are the conformance suite's forms under subjects of
// their own here.
func storedFormsForFiles() []datakeys.Record {
	var out []datakeys.Record
	for i, r := range keystest.StoredForms() {
		sub := fmt.Sprint("form-", i)
		r.KeyID = sub + r.KeyID[len(r.Subject):]
		r.Subject = sub
		out = append(out, r)
	}
	return out
}

// BenchmarkKeysLiveHeap reports the heap a reopened store holds per key
// of the form datakeys.Keys makes.
func BenchmarkKeysLiveHeap(b *testing.B) {
	const people = 20000
	dir := filepath.Join(b.TempDir(), "keys")
	s, ks, _ := openKeys(b, dir)
	ctx := context.Background()
	subjects := make([]string, people)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("0f8fad5b-d9cb-469f-a165-%012d", i)
	}
	if err := ks.Prepare(ctx, subjects); err != nil {
		b.Fatal(err)
	}
	s.Close()
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/people, "B/key")
		runtime.KeepAlive(s)
		s.Close()
	}
}

// BenchmarkOpen reads a log of 20,000 keys into a store.
func BenchmarkOpen(b *testing.B) {
	const people = 20000
	dir := filepath.Join(b.TempDir(), "keys")
	s, ks, _ := openKeys(b, dir)
	subjects := make([]string, people)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("0f8fad5b-d9cb-469f-a165-%012d", i)
	}
	if err := ks.Prepare(context.Background(), subjects); err != nil {
		b.Fatal(err)
	}
	s.Close()
	b.ReportAllocs()
	for b.Loop() {
		s, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/people, "ns/key")
}

// A record that packs reads back exactly, whatever its strings hold.
func FuzzPackReadsBack(f *testing.F) {
	for _, r := range keystest.StoredForms() {
		f.Add(r.Subject, r.KeyID, r.Sealed, r.Created.UnixNano(), int32(0))
	}
	f.Add("user-1", "user-1~4e4e7e109a0a344a", "v1:"+strings.Repeat("A", 96), int64(-1), int32(3600))
	f.Fuzz(func(t *testing.T, subject, keyID, sealed string, created int64, zone int32) {
		rec := datakeys.Record{Subject: subject, KeyID: keyID, MasterKeyID: "mk-1", Sealed: sealed, Created: time.Unix(0, created).UTC()}
		if zone != 0 {
			rec.Created = rec.Created.In(time.FixedZone("", int(zone)))
		}
		var e entry
		if !e.pack(rec) {
			return
		}
		if got := e.record(subject); got != rec {
			t.Fatalf("packed %+v, read back %+v", rec, got)
		}
	})
}
