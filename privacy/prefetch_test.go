package privacy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
	"github.com/healthtech/partner-open-platform/internal/datakeys/files"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// roundTrips is a key backend that reads many keys at once, as the
// Postgres one does, and counts its reads.
type roundTrips struct {
	datakeys.Backend
	one, many atomic.Int64
}

func (b *roundTrips) GetByKeyID(ctx context.Context, keyID string) (datakeys.Record, error) {
	b.one.Add(1)
	return b.Backend.GetByKeyID(ctx, keyID)
}

func (b *roundTrips) GetByKeyIDs(ctx context.Context, keyIDs []string) ([]datakeys.Record, error) {
	b.many.Add(1)
	var out []datakeys.Record
	for _, id := range keyIDs {
		rec, err := b.Backend.GetByKeyID(ctx, id)
		if errors.Is(err, datakeys.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// sixtyPeople writes 600 sealed events of 60 people into a log, erases
// user-60, and returns the log, a store that reads it through a key
// backend that counts its reads (as the Postgres one, it reads many keys
// at once; this store never met any of the keys), and the log as read
// back by a store of its own.
func sixtyPeople(t *testing.T) (events.Store, *Store, *roundTrips, []events.Recorded) {
	t.Helper()
	ctx := context.Background()
	fb, err := files.Open(filepath.Join(t.TempDir(), "keys"))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := secrets.New(bytes.Repeat([]byte{1}, 32))
	log := memory.New()
	writer := New(log, datakeys.New(fb, m))
	for i := range 600 {
		user := 1 + i%60
		data := fmt.Sprintf(`{"open_user_id":%d,"member":{"member_id":%d,"name":"n%d","phone":"1%d"},"at":"2026-01-02T03:04:05Z"}`, user, i, i, i)
		if _, err := writer.Append(ctx, fmt.Sprintf("user-%d", user), events.Any(),
			events.Proposed{ID: uuid.NewString(), Type: "user.family_member.created", Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := datakeys.New(fb, m).Destroy(ctx, "user-60"); err != nil {
		t.Fatal(err)
	}
	want, err := New(log, datakeys.New(fb, m)).ReadAll(ctx, events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	counted := &roundTrips{Backend: fb}
	return log, New(log, datakeys.New(counted, m)), counted, want
}

// nextN reads n events from sub, then closes it.
func nextN(t *testing.T, sub events.Subscription, n int) []events.Recorded {
	t.Helper()
	defer sub.Close()
	got := make([]events.Recorded, n)
	for i := range got {
		var err error
		if got[i], err = sub.Next(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// openInPages opens recs in place in pages of size, and checks that they
// read as want.
func openInPages(t *testing.T, s *Store, recs []events.Recorded, size int, want []events.Recorded) {
	t.Helper()
	for page := range slices.Chunk(recs, size) {
		if err := s.OpenReplayed(context.Background(), page); err != nil {
			t.Fatal(err)
		}
	}
	wantOpened(t, recs, want)
}

// wantOpened checks that got is the log as want holds it, user-60's 10
// events erased.
func wantOpened(t *testing.T, got, want []events.Recorded) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d events opened, want %d", len(got), len(want))
	}
	erased := 0
	for i := range want {
		if !bytes.Equal(got[i].Data, want[i].Data) {
			t.Fatalf("event %d opened as %s, want %s", i, got[i].Data, want[i].Data)
		}
		if bytes.Contains(got[i].Data, []byte(`"name":null`)) {
			erased++
		}
	}
	if erased != 10 {
		t.Fatalf("%d events read erased, want user-60's 10", erased)
	}
}

// TestReplayLoadsAPagesKeysInOneRead: a node whose key store reads many
// keys at once replays 600 sealed events of 60 people it never met (a
// rebuild on Postgres): it reads the keys a page at a time, not one
// person at a time, and every event opens as the writer wrote it; an
// erased person's fields still read null, once per event, and the replay
// reads their missing key per event as before (nothing loops).
func TestReplayLoadsAPagesKeysInOneRead(t *testing.T) {
	ctx := context.Background()
	_, reader, counted, want := sixtyPeople(t)
	sub, err := reader.SubscribeAll(ctx, events.Position{})
	if err != nil {
		t.Fatal(err)
	}
	wantOpened(t, nextN(t, sub, len(want)), want)
	// Three pages of the memory log (256 events each): one read of many
	// keys each; the one key read alone per event is the erased one's.
	if many, one := counted.many.Load(), counted.one.Load(); many > 3 || one > 10 {
		t.Fatalf("the replay read the key store %d times for many keys and %d times for one, want at most 3 and 10", many, one)
	}
}

// A rebuild's read model opens the events its group's reader read as
// stored (OpenReplayed) as a replay subscription opens them: each as the
// writer wrote it, an erased person's fields null, the keys read a page
// at a time, and none of the plaintext kept in the opened-events cache.
func TestOpenReplayedOpensAPageAsAReplayDoes(t *testing.T) {
	ctx := context.Background()
	log, reader, counted, want := sixtyPeople(t)
	sealed, err := log.ReadAll(ctx, events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	stored := make([][]byte, len(sealed))
	for i := range sealed {
		stored[i] = bytes.Clone(sealed[i].Data)
	}
	// Pages of 200, as a read model's batches take them.
	openInPages(t, reader, sealed, 200, want)
	if many, one := counted.many.Load(), counted.one.Load(); many > 3 || one > 10 {
		t.Fatalf("opening three pages read the key store %d times for many keys and %d times for one, want at most 3 and 10", many, one)
	}
	again, err := log.ReadAll(ctx, events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range again {
		if !bytes.Equal(again[i].Data, stored[i]) {
			t.Fatalf("opening wrote into the stored event %d", i)
		}
	}
	reader.opened.mu.Lock()
	defer reader.opened.mu.Unlock()
	if n := len(reader.opened.byID); n != 0 {
		t.Fatalf("the opened-events cache keeps %d events of the replay", n)
	}
}

// A rebuild's shared reader hands the events on as stored
// (SubscribeSealed) and the read models open them in batches of a few
// events when they keep up with it: the reader reads the keys of its page
// at once, so that the openers find every key cached and read the key
// store only for the erased person's, whose key is not to be had.
func TestSealedReplayReadsAPagesKeysForItsOpeners(t *testing.T) {
	ctx := context.Background()
	log, reader, counted, want := sixtyPeople(t)
	stored, err := log.ReadAll(ctx, events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := reader.SubscribeSealed(ctx, events.Position{}, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	got := nextN(t, sub, len(want))
	for i := range got {
		if !bytes.Equal(got[i].Data, stored[i].Data) {
			t.Fatalf("event %d read as %s, want it as stored: %s", i, got[i].Data, stored[i].Data)
		}
	}
	if many, one := counted.many.Load(), counted.one.Load(); many > 3 || one > 0 {
		t.Fatalf("the reader read the key store %d times for many keys and %d times for one, want at most 3 and none", many, one)
	}
	counted.many.Store(0)
	openInPages(t, reader, got, 3, want)
	if many, one := counted.many.Load(), counted.one.Load(); many > 10 || one > 10 {
		t.Fatalf("the openers read the key store %d times for many keys and %d times for one, want at most the erased person's 10 each", many, one)
	}
}

// A read of several positions at once (a feed page's bodies) reads the
// events in one pass of the log and, where the key store reads many keys
// at once, the keys of the people it meets in one read: every event opens
// as the writer wrote it, in the order asked, an erased person's fields
// null, a position without an event left zero.
func TestReadPositionsLoadsTheKeysInOneRead(t *testing.T) {
	ctx := context.Background()
	_, reader, counted, want := sixtyPeople(t)
	var at []events.Position
	var wanted []events.Recorded
	for i := len(want) - 1; i >= 0; i -= 3 { // 200 events, newest first: 60 people, user-60 erased
		at, wanted = append(at, want[i].Position), append(wanted, want[i])
	}
	got, err := reader.ReadPositions(ctx, append(at, events.Position{Commit: 1 << 40, Prepare: 1 << 40}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(at)+1 || !got[len(at)].Position.IsZero() {
		t.Fatalf("read %d events for %d positions, the last %+v", len(got), len(at)+1, got[len(got)-1])
	}
	erased := 0
	for i := range wanted {
		if got[i].ID != wanted[i].ID || !bytes.Equal(got[i].Data, wanted[i].Data) {
			t.Fatalf("at %s read %s %s, want %s %s", at[i], got[i].ID, got[i].Data, wanted[i].ID, wanted[i].Data)
		}
		if bytes.Contains(got[i].Data, []byte(`"name":null`)) {
			erased++
		}
	}
	if erased == 0 {
		t.Fatal("no event of the erased person was read")
	}
	// One read of many keys; the one key read alone per event is the erased one's.
	if many, one := counted.many.Load(), counted.one.Load(); many != 1 || one > int64(erased) {
		t.Fatalf("the read of %d positions read the key store %d times for many keys and %d times for one, want once and at most %d", len(at), many, one, erased)
	}
}
