package privacy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
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

// TestReplayLoadsAPagesKeysInOneRead: a node whose key store reads many
// keys at once replays 600 sealed events of 60 people it never met (a
// rebuild on Postgres): it reads the keys a page at a time, not one
// person at a time, and every event opens as the writer wrote it; an
// erased person's fields still read null, once per event, and the replay
// reads their missing key per event as before (nothing loops).
func TestReplayLoadsAPagesKeysInOneRead(t *testing.T) {
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
	reader := New(log, datakeys.New(counted, m))
	sub, err := reader.SubscribeAll(ctx, events.Position{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	erased := 0
	for i := range want {
		got, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Data, want[i].Data) {
			t.Fatalf("event %d opened as %s, want %s", i, got.Data, want[i].Data)
		}
		if bytes.Contains(got.Data, []byte(`"name":null`)) {
			erased++
		}
	}
	if erased != 10 {
		t.Fatalf("%d events read erased, want user-60's 10", erased)
	}
	// Three pages of the memory log (256 events each): one read of many
	// keys each; the one key read alone per event is the erased one's.
	if many, one := counted.many.Load(), counted.one.Load(); many > 3 || one > 10 {
		t.Fatalf("the replay read the key store %d times for many keys and %d times for one, want at most 3 and 10", many, one)
	}
}
