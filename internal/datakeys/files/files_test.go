package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/healthtech/partner-open-platform/internal/datakeys"
	"github.com/healthtech/partner-open-platform/internal/datakeys/keystest"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// The key store's conformance holds for a store as Open returns it, and
// as Opening does, its index still being built.
func TestConformance(t *testing.T) {
	for name, open := range map[string]func(string) (*Store, error){"Open": Open, "Opening": Opening} {
		t.Run(name, func(t *testing.T) {
			keystest.Run(t, func(t *testing.T) datakeys.Backend {
				s, err := open(filepath.Join(t.TempDir(), "keys"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			})
		})
	}
}

// TestDestroyRemovesTheBytes reopens the directory and reads every file left:
// the destroyed key's sealed form is nowhere, and the survivor reopens.
func TestDestroyRemovesTheBytes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	s, ks, m := openKeys(t, dir)
	ctx := context.Background()
	gone, _ := ks.DataKey(ctx, "user-1")
	kept, _ := ks.DataKey(ctx, "user-2")
	rec, _ := s.GetByKeyID(ctx, gone.ID)
	if err := ks.Destroy(ctx, "user-1"); err != nil {
		t.Fatal(err)
	}
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if bytes.Contains(b, []byte(rec.Sealed)) || bytes.Contains(b, []byte(gone.ID)) {
			t.Errorf("%s still holds the destroyed key", path)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v", path, info.Mode().Perm())
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Open(dir)
	if k, err := datakeys.New(again, m).ByID(ctx, kept.ID); err != nil || k.Subject != "user-2" {
		t.Fatalf("after reopen: %v", err)
	}
}

func master7(t *testing.T) *secrets.Sealer {
	m, err := secrets.New(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestReopenCompactsAndForgetsDestroyed destroys most of many keys, reopens
// (which compacts the mostly blank log) and checks that the survivors open,
// the destroyed stay destroyed, and the log shrank.
func TestReopenCompactsAndForgetsDestroyed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, m := context.Background(), master7(t)
	ks := datakeys.New(s, m)
	var subjects []string
	for i := range 600 {
		subjects = append(subjects, fmt.Sprintf("user-%d", i))
	}
	if err := ks.Prepare(ctx, subjects); err != nil {
		t.Fatal(err)
	}
	kept, _ := ks.DataKey(ctx, "user-599")
	for _, subj := range subjects[:590] {
		if err := ks.Destroy(ctx, subj); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	before, _ := os.Stat(filepath.Join(dir, logName))
	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	after, _ := os.Stat(filepath.Join(dir, logName))
	if after.Size()*2 >= before.Size() {
		t.Fatalf("log not compacted: %d bytes before, %d after", before.Size(), after.Size())
	}
	k2 := datakeys.New(again, m)
	if k, err := k2.ByID(ctx, kept.ID); err != nil || k.Subject != "user-599" {
		t.Fatalf("survivor after compaction: %v", err)
	}
	if _, err := k2.DataKey(ctx, "user-3"); !errors.Is(err, datakeys.ErrDestroyed) {
		t.Fatalf("destroyed subject after compaction: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, logName+".tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("compaction left its temporary file: %v", err)
	}
}

// TestTornLastLine is a crash during an append: the torn line was never
// acknowledged, so Open drops it and the store keeps working.
func TestTornLastLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	s, _ := Open(dir)
	ctx, m := context.Background(), master7(t)
	k, _ := datakeys.New(s, m).DataKey(ctx, "user-1")
	s.Close()
	f, _ := os.OpenFile(filepath.Join(dir, logName), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"op":"key","subject":"user-2","key_id":"us`)
	f.Close()
	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	ks := datakeys.New(again, m)
	if got, err := ks.ByID(ctx, k.ID); err != nil || got.ID != k.ID {
		t.Fatalf("after a torn line: %v", err)
	}
	if _, err := ks.DataKey(ctx, "user-2"); err != nil {
		t.Fatalf("append after a torn line: %v", err)
	}
	s3, _ := Open(dir) // the new line is whole
	defer s3.Close()
	if _, err := datakeys.New(s3, m).Lookup(ctx, "user-2"); err != nil {
		t.Fatal(err)
	}
}

// TestCrashBetweenTombstoneAndBlank reopens a log whose tombstone reached
// the disk but whose blanking did not: Open blanks the key line again.
func TestCrashBetweenTombstoneAndBlank(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	s, _ := Open(dir)
	ctx, m := context.Background(), master7(t)
	k, _ := datakeys.New(s, m).DataKey(ctx, "user-1")
	rec, _ := s.Get(ctx, "user-1")
	s.Close()
	f, _ := os.OpenFile(filepath.Join(dir, logName), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"op":"destroyed","subject":"user-1","at":"2026-01-01T00:00:00Z"}` + "\n")
	f.Close()
	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	b, _ := os.ReadFile(filepath.Join(dir, logName))
	if bytes.Contains(b, []byte(rec.Sealed)) || bytes.Contains(b, []byte(k.ID)) {
		t.Fatal("the destroyed key's line survived the reopen")
	}
	if _, err := datakeys.New(again, m).DataKey(ctx, "user-1"); !errors.Is(err, datakeys.ErrDestroyed) {
		t.Fatalf("%v", err)
	}
}

// TestMigratesSubjectFiles opens a directory of the previous format (one
// file per subject): keys and tombstones move into the log and the old
// files are gone.
func TestMigratesSubjectFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	ctx, m := context.Background(), master7(t)
	// Make a record with the current code, then write it in the old format.
	tmp, _ := Open(filepath.Join(t.TempDir(), "k"))
	k, _ := datakeys.New(tmp, m).DataKey(ctx, "user-1")
	rec, _ := tmp.Get(ctx, "user-1")
	tmp.Close()
	os.MkdirAll(filepath.Join(dir, "subjects"), 0o700)
	old := fmt.Sprintf(`{"key_id":%q,"master_key_id":%q,"sealed":%q,"created":"2026-01-01T00:00:00Z"}`, rec.KeyID, rec.MasterKeyID, rec.Sealed)
	os.WriteFile(filepath.Join(dir, "subjects", "user-1"), []byte(old), 0o600)
	os.WriteFile(filepath.Join(dir, "subjects", "user-2"), []byte(`{"destroyed_at":"2026-01-01T00:00:00Z"}`), 0o600)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ks := datakeys.New(s, m)
	if got, err := ks.ByID(ctx, k.ID); err != nil || got.Subject != "user-1" {
		t.Fatalf("migrated key: %v", err)
	}
	if _, err := ks.DataKey(ctx, "user-2"); !errors.Is(err, datakeys.ErrDestroyed) {
		t.Fatalf("migrated tombstone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "subjects")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("old subject files left: %v", err)
	}
}

// TestResealBlanksTheOldSealing rotates the master key: the key's old
// sealed form is no longer in the log, and a reopen finds the new one.
func TestResealBlanksTheOldSealing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	s, _ := Open(dir)
	ctx, oldM := context.Background(), master7(t)
	newM, _ := secrets.New(bytes.Repeat([]byte{9}, 32))
	k, _ := datakeys.New(s, oldM).DataKey(ctx, "user-1")
	before, _ := s.Get(ctx, "user-1")
	if n, err := datakeys.New(s, newM, oldM).Reseal(ctx); err != nil || n != 1 {
		t.Fatalf("reseal %d %v", n, err)
	}
	s.Close()
	b, _ := os.ReadFile(filepath.Join(dir, logName))
	if bytes.Contains(b, []byte(before.Sealed)) {
		t.Fatal("the old sealing is still in the log")
	}
	again, _ := Open(dir)
	defer again.Close()
	if _, err := datakeys.New(again, newM).ByID(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
}

// A reopened store keeps one copy of the master key's id for the keys it
// sealed, not one per person (a node holds a line per person in memory).
func TestReopenSharesTheMasterKeyID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	s, ctx := openWithKeys(t, dir, 3)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []string
	for i := range 3 {
		rec, err := s.Get(ctx, fmt.Sprint("user-", i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.MasterKeyID)
	}
	if ids[0] == "" || ids[1] != ids[0] || ids[2] != ids[0] {
		t.Fatalf("master key ids %q: want one, the same", ids)
	}
	if unsafe.StringData(ids[1]) != unsafe.StringData(ids[0]) || unsafe.StringData(ids[2]) != unsafe.StringData(ids[0]) {
		t.Error("each key holds a copy of its master key's id")
	}
}

// openWithKeys opens the key store in dir with the keys of user-0 to
// user-(n-1) made.
func openWithKeys(t testing.TB, dir string, n int) (*Store, context.Context) {
	t.Helper()
	s, ks, _ := openKeys(t, dir)
	ctx := context.Background()
	for i := range n {
		if _, err := ks.DataKey(ctx, fmt.Sprint("user-", i)); err != nil {
			t.Fatal(err)
		}
	}
	return s, ctx
}

// openKeys opens the key store in dir and its keys under a fixed master key.
func openKeys(t testing.TB, dir string) (*Store, *datakeys.Keys, *secrets.Sealer) {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := secrets.New(bytes.Repeat([]byte{7}, 32))
	return s, datakeys.New(s, m), m
}

// Until Opening's index is built, Get answers from the decoded lines: for
// every kind of line a log holds (a key, a key superseded by a later line
// or a tombstone before a crash let it be blanked, a destroyed key, a
// record kept whole, a line only encoding/json reads) and for a subject it
// does not hold, the answer is the index's.
func TestDecodedLogAnswersAsItsIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	s, ctx := openWithKeys(t, dir, 4)
	if err := s.Destroy(ctx, "user-2"); err != nil {
		t.Fatal(err)
	}
	first, _ := s.Get(ctx, "user-0")
	s.Close()
	f, _ := os.OpenFile(filepath.Join(dir, logName), os.O_WRONLY|os.O_APPEND, 0)
	moved := first
	moved.KeyID, moved.Sealed = "user-0~00000000000000ff", "v1:other"
	for _, l := range []string{
		string(encodeLine(item{rec: moved})),
		`{"op":"destroyed","subject":"user-1","at":"2026-01-01T00:00:00Z"}`,
		`{"op": "key", "subject": "user-9", "key_id": "user-9~1", "master_key_id": "m", "sealed": "s"}`,
		string(encodeLine(item{rec: datakeys.Record{Subject: "platform.x", KeyID: "platform.x~2", MasterKeyID: "m", Sealed: "v2:x"}})),
	} {
		f.WriteString(l + "\n")
	}
	f.Close()
	b, err := os.ReadFile(filepath.Join(dir, logName))
	if err != nil {
		t.Fatal(err)
	}
	again, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	// A big log is decoded in parts, one per core: a subject's lines may
	// then lie in several, and the last part that holds one decides.
	for _, parts := range []int{1, 2, 3, 5, 12} {
		lines := parseIn(b, parts)
		if !lines.clean {
			t.Fatalf("%d parts: a log of valid lines decoded as not clean", parts)
		}
		for _, subject := range []string{"user-0", "user-1", "user-2", "user-3", "user-9", "platform.x", "platform.absent", "user-404"} {
			want, wantErr := again.Get(ctx, subject)
			got, err := lines.get(subject)
			if !errors.Is(err, wantErr) || got != want {
				t.Errorf("%d parts, %s: decoded lines say %+v, %v; the index %+v, %v", parts, subject, got, err, want, wantErr)
			}
		}
	}
}

// A log the index would refuse fails Opening itself, before any caller
// could take an answer from it.
func TestOpeningRefusesADamagedLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	s, ks, _ := openKeys(t, dir)
	if _, err := ks.DataKey(context.Background(), "user-1"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, bad := range []string{`{"op":"key","subject":"user-2"`, `{"op":"renamed","subject":"user-2"}`, `{"op":"key","subject":".x"}`} {
		f, _ := os.OpenFile(filepath.Join(dir, logName), os.O_WRONLY|os.O_APPEND, 0)
		f.WriteString(bad + "\n")
		f.Close()
		if s, err := Opening(dir); err == nil {
			s.Close()
			t.Fatalf("a log ending in %s opened", bad)
		}
		b, _ := os.ReadFile(filepath.Join(dir, logName))
		os.WriteFile(filepath.Join(dir, logName), b[:bytes.LastIndexByte(b[:len(b)-1], '\n')+1], 0o600)
	}
}
