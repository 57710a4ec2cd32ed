package bolt

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

func sampleRecord() events.Recorded {
	return events.Recorded{
		Position: events.Position{Commit: 42, Prepare: 42},
		Stream:   "user-7f3a", Revision: 3, ID: "0190e4a2-6d3b-7c1e-9a2f-4b5c6d7e8f90", Type: "user.profile.updated",
		Created: time.Unix(0, 1_700_000_000_123_456_789).UTC(),
		Data:    []byte(`{"user_id":"7f3a","name":"Ada"}`), Meta: []byte(`{"schema":1}`),
	}
}

// A replay decodes every event of the log: two allocations per record (its
// strings, its bytes), not one per field (three strings, data and meta
// were five).
func TestDecodeAllocatesTwicePerRecord(t *testing.T) {
	want := sampleRecord()
	v, _, _ := encodeParts(want)
	var got events.Recorded
	allocs := testing.AllocsPerRun(200, func() {
		var err error
		if got, err = decode(42, v); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 {
		t.Fatalf("decode made %.0f allocations per record, want 2", allocs)
	}
	if got.Stream != want.Stream || got.Revision != want.Revision || got.ID != want.ID || got.Type != want.Type ||
		!got.Created.Equal(want.Created) || got.Position != want.Position ||
		!bytes.Equal(got.Data, want.Data) || !bytes.Equal(got.Meta, want.Meta) {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
}

// The decoded fields share one copy: writing into, or appending to, the
// data or meta a caller got changes no other field of the record, and the
// bbolt bytes it came from are not kept.
func TestDecodedFieldsDoNotOverlap(t *testing.T) {
	want := sampleRecord()
	v, _, _ := encodeParts(want)
	got, err := decode(42, v)
	if err != nil {
		t.Fatal(err)
	}
	for i := range v {
		v[i] = 0xff // bbolt reuses its pages once the transaction ends
	}
	for i := range got.Data {
		got.Data[i] = 'x'
	}
	_ = append(got.Data, "appended past data"...)
	_ = append(got.Meta, "appended past meta"...)
	if got.Stream != want.Stream || got.ID != want.ID || got.Type != want.Type || !bytes.Equal(got.Meta, want.Meta) {
		t.Fatalf("after writing into data: stream %q id %q type %q meta %q", got.Stream, got.ID, got.Type, got.Meta)
	}
}

// Empty data and meta read as nil, as the other adapters return them, and a
// damaged record is refused.
func TestDecodeEmptyAndCorrupt(t *testing.T) {
	rec := sampleRecord()
	rec.Data, rec.Meta = nil, nil
	v, _, _ := encodeParts(rec)
	got, err := decode(42, v)
	if err != nil {
		t.Fatal(err)
	}
	if got.Data != nil || got.Meta != nil || got.Type != rec.Type {
		t.Fatalf("empty data and meta decoded as %#v, %#v (type %q)", got.Data, got.Meta, got.Type)
	}
	full, _, _ := encodeParts(sampleRecord())
	for _, bad := range [][]byte{nil, {9}, full[:len(full)-1], append(bytes.Clone(full), 0)} {
		if _, err := decode(42, bad); !errors.Is(err, errCorrupt) {
			t.Errorf("decode(%x) = %v, want %v", bad, err, errCorrupt)
		}
	}
}
