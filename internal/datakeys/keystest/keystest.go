// Package keystest is the conformance suite every datakeys.Backend adapter
// passes, run through datakeys.Keys as the platform uses it.
package keystest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/datakeys"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// Run holds an adapter to the key store's contract. open returns a fresh,
// empty backend and registers its own cleanup.
func Run(t *testing.T, open func(t *testing.T) datakeys.Backend) {
	cases := []struct {
		name string
		run  func(t *testing.T, b datakeys.Backend)
	}{
		{"CreatedOnFirstUse", testCreatedOnFirstUse},
		{"SealedNotClear", testSealedNotClear},
		{"Destroy", testDestroy},
		{"ConcurrentFirstUse", testConcurrentFirstUse},
		{"Reseal", testReseal},
		{"WrongMasterKey", testWrongMasterKey},
		{"InvalidSubject", testInvalidSubject},
		{"PrepareBatch", testPrepareBatch},
		{"ConcurrentPrepare", testConcurrentPrepare},
		{"PrepareRacesDestroy", testPrepareRacesDestroy},
		{"ForgetSeesDestroyElsewhere", testForget},
		{"PlatformSecretSurvivesRotation", testPlatformSecret},
		{"Prefetch", testPrefetch},
		{"RecordsReadAsStored", testRecordsReadAsStored},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
	}
}

func master(t *testing.T) *secrets.Sealer {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	s, err := secrets.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// roundTrip encrypts with one key and decrypts with the other.
func roundTrip(t *testing.T, enc, dec datakeys.Key) {
	t.Helper()
	nonce := make([]byte, enc.AEAD.NonceSize())
	ct := enc.AEAD.Seal(nil, nonce, []byte("11010519491231002X"), []byte("ad"))
	pt, err := dec.AEAD.Open(nil, nonce, ct, []byte("ad"))
	if err != nil || string(pt) != "11010519491231002X" {
		t.Fatalf("round trip: %q %v", pt, err)
	}
}

func testCreatedOnFirstUse(t *testing.T, b datakeys.Backend) {
	c, m := ctx(t), master(t)
	ks := datakeys.New(b, m)
	if _, err := ks.Lookup(c, "user-1"); !errors.Is(err, datakeys.ErrNotFound) {
		t.Fatalf("lookup before first use: %v", err)
	}
	k1, err := ks.DataKey(c, "user-1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := ks.DataKey(c, "user-1")
	if err != nil || again.ID != k1.ID {
		t.Fatalf("second use gave %s (%v), first %s", again.ID, err, k1.ID)
	}
	other, err := ks.DataKey(c, "user-2")
	if err != nil || other.ID == k1.ID {
		t.Fatalf("two subjects share key %s (%v)", other.ID, err)
	}
	// A fresh store over the same backend (no cache) opens the same key.
	fresh := datakeys.New(b, m)
	byID, err := fresh.ByID(c, k1.ID)
	if err != nil || byID.Subject != "user-1" {
		t.Fatalf("by id: %+v %v", byID, err)
	}
	roundTrip(t, k1, byID)
	looked, err := fresh.Lookup(c, "user-1")
	if err != nil || looked.ID != k1.ID {
		t.Fatalf("lookup: %v", err)
	}
	if _, err := fresh.ByID(c, "user-1~0000000000000000"); !errors.Is(err, datakeys.ErrNotFound) {
		t.Fatalf("unknown key id: %v", err)
	}
}

func testSealedNotClear(t *testing.T, b datakeys.Backend) {
	c, m := ctx(t), master(t)
	ks := datakeys.New(b, m)
	k, err := ks.DataKey(c, "order-7")
	if err != nil {
		t.Fatal(err)
	}
	var seen int
	err = b.List(c, func(r datakeys.Record) error {
		seen++
		if r.KeyID != k.ID || r.Subject != "order-7" || r.MasterKeyID != m.KeyID() || !strings.HasPrefix(r.Sealed, "v1:") {
			return fmt.Errorf("record %+v", r)
		}
		if _, err := m.Open(r.Sealed); err != nil {
			return err
		}
		return nil
	})
	if err != nil || seen != 1 {
		t.Fatalf("list: %d records, %v", seen, err)
	}
}

func testDestroy(t *testing.T, b datakeys.Backend) {
	c, m := ctx(t), master(t)
	ks := datakeys.New(b, m)
	k, err := ks.DataKey(c, "user-9")
	if err != nil {
		t.Fatal(err)
	}
	keep, err := ks.DataKey(c, "user-10")
	if err != nil {
		t.Fatal(err)
	}
	if err := ks.Destroy(c, "user-9"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*datakeys.Keys{ks, datakeys.New(b, m)} {
		if _, err := s.ByID(c, k.ID); !errors.Is(err, datakeys.ErrNotFound) {
			t.Fatalf("destroyed key still opens: %v", err)
		}
		if _, err := s.DataKey(c, "user-9"); !errors.Is(err, datakeys.ErrDestroyed) {
			t.Fatalf("destroyed subject got a key again: %v", err)
		}
		if _, err := s.Lookup(c, "user-9"); !errors.Is(err, datakeys.ErrDestroyed) {
			t.Fatalf("lookup of a destroyed subject: %v", err)
		}
		if got, err := s.ByID(c, keep.ID); err != nil || got.ID != keep.ID {
			t.Fatalf("another subject's key went too: %v", err)
		}
	}
	if err := ks.Destroy(c, "user-9"); err != nil {
		t.Fatalf("destroying twice: %v", err)
	}
	if err := ks.Destroy(c, "user-never"); err != nil {
		t.Fatalf("destroying a subject without a key: %v", err)
	}
	if _, err := ks.DataKey(c, "user-never"); !errors.Is(err, datakeys.ErrDestroyed) {
		t.Fatalf("a destroyed subject without a key got one: %v", err)
	}
	err = b.List(c, func(r datakeys.Record) error {
		if r.Subject == "user-9" || r.KeyID == k.ID {
			return fmt.Errorf("destroyed key listed: %s", r.KeyID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func testConcurrentFirstUse(t *testing.T, b datakeys.Backend) {
	c, m := ctx(t), master(t)
	const n = 20
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			k, err := datakeys.New(b, m).DataKey(c, "user-concurrent") // no shared cache
			ids[i], errs[i] = k.ID, err
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("goroutine %d got key %q (%v), goroutine 0 %q", i, ids[i], errs[i], ids[0])
		}
	}
	count := 0
	_ = b.List(c, func(datakeys.Record) error { count++; return nil })
	if count != 1 {
		t.Fatalf("%d keys stored for one subject", count)
	}
}

func testReseal(t *testing.T, b datakeys.Backend) {
	c, oldM, newM := ctx(t), master(t), master(t)
	old := datakeys.New(b, oldM)
	var made []datakeys.Key
	for i := range 3 {
		k, err := old.DataKey(c, fmt.Sprintf("user-%d", 100+i))
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, k)
	}
	rotating := datakeys.New(b, newM, oldM)
	n, err := rotating.Reseal(c)
	if err != nil || n != 3 {
		t.Fatalf("resealed %d: %v", n, err)
	}
	if n, err := rotating.Reseal(c); err != nil || n != 0 {
		t.Fatalf("second reseal %d: %v", n, err)
	}
	onlyNew := datakeys.New(b, newM)
	for _, k := range made {
		got, err := onlyNew.ByID(c, k.ID)
		if err != nil {
			t.Fatalf("after rotation: %v", err)
		}
		roundTrip(t, k, got) // the data key itself did not change
	}
	if _, err := datakeys.New(b, oldM).ByID(c, made[0].ID); err == nil {
		t.Fatal("the retired master key still opens a re-sealed key")
	}
}

func testWrongMasterKey(t *testing.T, b datakeys.Backend) {
	c := ctx(t)
	k, err := datakeys.New(b, master(t)).DataKey(c, "user-5")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := datakeys.New(b, master(t)).ByID(c, k.ID); err == nil || errors.Is(err, datakeys.ErrNotFound) {
		t.Fatalf("wrong master key: %v", err)
	}
}

func testInvalidSubject(t *testing.T, b datakeys.Backend) {
	c := ctx(t)
	ks := datakeys.New(b, master(t))
	for _, s := range []string{"", "../etc/passwd", ".hidden", "a/b", strings.Repeat("x", 129), "名前"} {
		if _, err := ks.DataKey(c, s); !errors.Is(err, datakeys.ErrInvalidSubject) {
			t.Fatalf("subject %q: %v", s, err)
		}
	}
}

// testPrepareBatch makes keys ahead of use: each prepared subject's first
// use, through a store without a cache, finds the prepared key; a subject
// that had a key keeps it and a destroyed one gets none.
func testPrepareBatch(t *testing.T, b datakeys.Backend) {
	c, m := ctx(t), master(t)
	ks := datakeys.New(b, m)
	had, err := ks.DataKey(c, "user-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := ks.Destroy(c, "user-2"); err != nil {
		t.Fatal(err)
	}
	subjects := []string{"user-1", "user-2"}
	for i := 3; i <= 50; i++ {
		subjects = append(subjects, fmt.Sprintf("user-%d", i))
	}
	if err := ks.Prepare(c, subjects); err != nil {
		t.Fatal(err)
	}
	if err := ks.Prepare(c, subjects); err != nil {
		t.Fatalf("preparing twice: %v", err)
	}
	fresh := datakeys.New(b, m)
	for _, s := range subjects[2:] {
		cachedKey, err := ks.DataKey(c, s)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := fresh.DataKey(c, s)
		if err != nil || stored.ID != cachedKey.ID {
			t.Fatalf("%s: prepared %s, stored %s (%v)", s, cachedKey.ID, stored.ID, err)
		}
		roundTrip(t, cachedKey, stored)
	}
	if k, err := fresh.DataKey(c, "user-1"); err != nil || k.ID != had.ID {
		t.Fatalf("a subject's existing key was replaced: %s %v", k.ID, err)
	}
	if _, err := fresh.DataKey(c, "user-2"); !errors.Is(err, datakeys.ErrDestroyed) {
		t.Fatalf("a destroyed subject was prepared: %v", err)
	}
	count := 0
	_ = b.List(c, func(datakeys.Record) error { count++; return nil })
	if count != 49 {
		t.Fatalf("%d keys stored, want 49", count)
	}
	if err := ks.Prepare(c, []string{"user-51", "../x"}); !errors.Is(err, datakeys.ErrInvalidSubject) {
		t.Fatalf("invalid subject in a batch: %v", err)
	}
}

// testConcurrentPrepare races overlapping batches with single first uses:
// every subject ends with exactly one key that everyone agrees on.
func testConcurrentPrepare(t *testing.T, b datakeys.Backend) {
	c, m := ctx(t), master(t)
	const n = 30
	subjects := make([]string, n)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("user-%d", 1000+i)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, 8+n)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs <- datakeys.New(b, m).Prepare(c, subjects[w*5:])
		}()
	}
	got := make([]string, n)
	for i := range subjects {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			k, err := datakeys.New(b, m).DataKey(c, subjects[i])
			got[i] = k.ID
			errs <- err
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	fresh := datakeys.New(b, m)
	for i, s := range subjects {
		k, err := fresh.Lookup(c, s)
		if err != nil || k.ID != got[i] {
			t.Fatalf("%s: first use got %s, store has %s (%v)", s, got[i], k.ID, err)
		}
	}
	count := 0
	_ = b.List(c, func(datakeys.Record) error { count++; return nil })
	if count != n {
		t.Fatalf("%d keys stored for %d subjects", count, n)
	}
}

// testPrepareRacesDestroy races batches made ahead of use with erasures of
// the same subjects: an erased subject never ends with a key, whichever came
// first, and every subject not erased ends with exactly one.
func testPrepareRacesDestroy(t *testing.T, b datakeys.Backend) {
	c, m := ctx(t), master(t)
	const n = 40
	subjects := make([]string, n)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("user-%d", 2000+i)
	}
	erased := func(i int) bool { return i%3 == 0 }
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, 4+n)
	for w := range 4 {
		wg.Go(func() {
			<-start
			errs <- datakeys.New(b, m).Prepare(c, subjects[w*3:])
		})
	}
	for i, s := range subjects {
		if erased(i) {
			wg.Go(func() {
				<-start
				errs <- datakeys.New(b, m).Destroy(c, s)
			})
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	fresh := datakeys.New(b, m)
	for i, s := range subjects {
		_, err := fresh.Lookup(c, s)
		switch {
		case erased(i) && !errors.Is(err, datakeys.ErrDestroyed):
			t.Errorf("%s was erased while a batch prepared it, and reads %v, want ErrDestroyed", s, err)
		case !erased(i) && err != nil:
			t.Errorf("%s: %v", s, err)
		}
	}
	count := 0
	_ = b.List(c, func(datakeys.Record) error { count++; return nil })
	if want := n - (n+2)/3; count != want {
		t.Errorf("%d keys stored, want %d (the subjects not erased)", count, want)
	}
}

// testForget is two nodes on one backend: a key destroyed through one stays
// cached on the other until that one forgets it, and then reads as gone.
func testForget(t *testing.T, b datakeys.Backend) {
	c, m := ctx(t), master(t)
	a, other := datakeys.New(b, m), datakeys.New(b, m)
	k, err := a.DataKey(c, "user-77")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.ByID(c, k.ID); err != nil {
		t.Fatal(err)
	}
	if err := a.Destroy(c, "user-77"); err != nil {
		t.Fatal(err)
	}
	other.Forget("user-77")
	if _, err := other.ByID(c, k.ID); !errors.Is(err, datakeys.ErrNotFound) {
		t.Fatalf("a forgotten, destroyed key still opens: %v", err)
	}
	if _, err := other.DataKey(c, "user-77"); !errors.Is(err, datakeys.ErrDestroyed) {
		t.Fatalf("after forgetting: %v", err)
	}
}

// testPlatformSecret: a platform secret (the pseudonym key of stream names)
// is one value for every process that shares the backend, created once by
// concurrent first uses, the same after a restart (a new Keys) and after a
// master-key rotation, and never written in clear.
func testPlatformSecret(t *testing.T, b datakeys.Backend) {
	c, oldM, newM := ctx(t), master(t), master(t)
	const subject = "platform.test-secret"
	const n = 8
	got := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got[i], errs[i] = datakeys.New(b, oldM).PlatformSecret(c, subject) // one process each
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || len(got[i]) != 32 || string(got[i]) != string(got[0]) {
			t.Fatalf("process %d got %x (%v), process 0 %x", i, got[i], errs[i], got[0])
		}
	}
	var stored []datakeys.Record
	_ = b.List(c, func(r datakeys.Record) error { stored = append(stored, r); return nil })
	if len(stored) != 1 || stored[0].Subject != subject {
		t.Fatalf("stored %+v, want one record of %s", stored, subject)
	}
	if strings.Contains(stored[0].Sealed, fmt.Sprintf("%x", got[0])) {
		t.Fatal("the secret is stored in clear")
	}
	if _, err := datakeys.New(b, newM, oldM).Reseal(c); err != nil {
		t.Fatal(err)
	}
	after, err := datakeys.New(b, newM).PlatformSecret(c, subject)
	if err != nil || string(after) != string(got[0]) {
		t.Fatalf("after the master key rotated: %x (%v), want %x", after, err, got[0])
	}
	if _, err := datakeys.New(b, oldM).PlatformSecret(c, subject); err == nil {
		t.Fatal("the retired master key still opens the re-sealed secret")
	}
	if _, err := datakeys.New(b, newM).PlatformSecret(c, "~bad"); !errors.Is(err, datakeys.ErrInvalidSubject) {
		t.Fatalf("invalid subject: %v", err)
	}
}

// testPrefetch: Prefetch caches, in a store that never met them, the live
// keys among the ids it is given (one of them twice), and neither a
// destroyed nor an unknown one; the keys it cached are the ones the
// backend holds. A backend that cannot read many keys at once caches
// nothing.
func testPrefetch(t *testing.T, b datakeys.Backend) {
	c, m := ctx(t), master(t)
	ks := datakeys.New(b, m)
	var ids [][]byte
	for _, subject := range []string{"user-1", "user-2", "user-3"} {
		k, err := ks.DataKey(c, subject)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, []byte(k.ID))
	}
	if err := ks.Destroy(c, "user-3"); err != nil {
		t.Fatal(err)
	}
	ids = append(ids, ids[0], []byte("user-9~0000000000000000"))
	fresh := datakeys.New(b, m)
	fresh.Prefetch(c, ids)
	for i, id := range ids {
		live := i == 0 || i == 1 || i == 3
		if got := fresh.CachedID(id); got != (live && fresh.CanPrefetch()) {
			t.Errorf("key %s cached after Prefetch: %v (live %v, backend reads many at once: %v)", id, got, live, fresh.CanPrefetch())
		}
	}
	for _, id := range ids[:2] {
		got, err := fresh.ByIDBytes(c, id)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ks.ByID(c, string(id))
		if err != nil {
			t.Fatal(err)
		}
		roundTrip(t, want, got)
	}
}

// StoredForms are records as an adapter may be handed them: the form
// datakeys.Keys makes, and forms it does not (an adapter may keep the
// first compactly, never at the others' expense).
func StoredForms() []datakeys.Record {
	at := time.Date(2026, 11, 23, 12, 37, 54, 914356000, time.UTC)
	sealed := "v1:" + strings.Repeat("AbC+/9", 16) // the base64 of 72 bytes
	return []datakeys.Record{
		{Subject: "user-1", KeyID: "user-1~4e4e7e109a0a344a", MasterKeyID: "mk-1", Sealed: sealed, Created: at},
		{Subject: "user-2", KeyID: "user-2~4E4E7E109A0A344A", MasterKeyID: "mk-1", Sealed: sealed, Created: at},                           // upper-case hex
		{Subject: "user-3", KeyID: "user-3~4e4e7e10", MasterKeyID: "mk-1", Sealed: sealed, Created: at},                                   // a shorter id
		{Subject: "user-4", KeyID: "user-4~4e4e7e109a0a344a", MasterKeyID: "mk-1", Sealed: "v1:AB==", Created: at},                        // a shorter sealing
		{Subject: "user-5", KeyID: "user-5~4e4e7e109a0a344a", MasterKeyID: "mk-1", Sealed: sealed[:98] + "*", Created: at},                // not base64
		{Subject: "user-8", KeyID: "user-8~4e4e7e109a0a344a", MasterKeyID: "mk-1", Sealed: sealed[:50] + "\n" + sealed[51:], Created: at}, // a line break the decoder skips
		{Subject: "user-6", KeyID: "user-6~4e4e7e109a0a344a", MasterKeyID: "mk-1", Sealed: "v2:" + sealed[3:], Created: at},
		{Subject: "user-7", KeyID: "user-7~4e4e7e109a0a344a", MasterKeyID: "mk-2", Sealed: sealed, Created: at.Add(time.Hour)},
	}
}

func testRecordsReadAsStored(t *testing.T, b datakeys.Backend) {
	c := ctx(t)
	recs := StoredForms()
	for _, r := range recs {
		if _, err := b.Insert(c, r); err != nil {
			t.Fatalf("insert %s: %v", r.Subject, err)
		}
	}
	same := func(how string, got, want datakeys.Record) {
		t.Helper()
		if got.Subject != want.Subject || got.KeyID != want.KeyID || got.MasterKeyID != want.MasterKeyID ||
			got.Sealed != want.Sealed || !got.Created.Equal(want.Created) {
			t.Errorf("%s: read %+v, stored %+v", how, got, want)
		}
	}
	listed := map[string]datakeys.Record{}
	if err := b.List(c, func(r datakeys.Record) error { listed[r.Subject] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, want := range recs {
		got, err := b.Get(c, want.Subject)
		if err != nil {
			t.Fatalf("get %s: %v", want.Subject, err)
		}
		same("get", got, want)
		if got, err = b.GetByKeyID(c, want.KeyID); err != nil {
			t.Fatalf("get %s by key id: %v", want.KeyID, err)
		}
		same("get by key id", got, want)
		same("list", listed[want.Subject], want)
	}
}
