package bolt_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
)

// The tail of the log read from memory is what bbolt holds: the same
// records whether a follower reads them right after the appends (from the
// recent ring), from far behind (past the ring: bbolt) or after a restart;
// pages end at the limit; and a reader that scribbles on the bytes it got
// changes nothing another reader gets.
func TestRecentTailReadsAsTheFileHoldsIt(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "events.db")
	s := openT(t, path)
	const appends, per = 90, 100 // 9,000 events: past the 8,192 kept in memory
	for i := range appends {
		evs := make([]events.Proposed, per)
		for j := range evs {
			evs[j] = events.Proposed{ID: uuid.NewString(), Type: "t", Data: []byte(fmt.Sprintf(`{"n":%d}`, i*per+j))}
			if j%3 == 0 {
				evs[j].Meta = []byte(`{"actor":"a"}`)
			}
		}
		if _, err := s.Append(ctx, fmt.Sprintf("s-%d", i%7), events.Any(), evs...); err != nil {
			t.Fatal(err)
		}
	}
	readAll := func(s interface {
		ReadAll(context.Context, events.Position, int) ([]events.Recorded, error)
	}, after uint64, limit int) []events.Recorded {
		t.Helper()
		recs, err := s.ReadAll(ctx, events.Position{Commit: after, Prepare: after}, limit)
		if err != nil {
			t.Fatal(err)
		}
		return recs
	}
	live := readAll(s, 0, 0) // from bbolt: it starts before what memory holds
	tail := readAll(s, appends*per-8000, 0)
	page := readAll(s, appends*per-8000, 20)
	if len(live) != appends*per || len(tail) != 8000 || len(page) != 20 {
		t.Fatalf("read %d, %d, %d events; want %d, 8000, 20", len(live), len(tail), len(page), appends*per)
	}
	if !reflect.DeepEqual(page, tail[:20]) {
		t.Fatal("a page of the tail differs from the whole tail's start")
	}
	for i := range tail {
		tail[i].Data[0] = 'X' // a careless reader
	}
	again := readAll(s, appends*per-8000, 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, path)
	defer s.Close()
	disk := readAll(s, 0, 0)
	if !reflect.DeepEqual(live, disk) {
		for i := range live {
			if !reflect.DeepEqual(live[i], disk[i]) {
				t.Fatalf("event %d read live:\n%+v\nafter reopening:\n%+v", i+1, live[i], disk[i])
			}
		}
	}
	if !reflect.DeepEqual(again, disk[len(disk)-8000:]) {
		t.Fatal("the tail read from memory differs from the file's, or another reader's writes to its bytes reached it")
	}
}

// ReadPositions reads the events at positions from the ring of recent ones
// and from bbolt in one pass, and finds what ReadAll finds at each: after
// a restart (every event in bbolt alone), with events appended since (in
// the ring), in any order, with repeats, gaps a cursor steps over and gaps
// it seeks past, and positions that hold no event.
func TestReadPositionsReadsTheRingAndTheFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "events.db")
	s := openT(t, path)
	appendN := func(n int) {
		t.Helper()
		for i := range n {
			ev := events.Proposed{ID: uuid.NewString(), Type: "t", Data: []byte(fmt.Sprintf(`{"n":%d}`, i)), Meta: []byte(`{"actor":"a"}`)}
			if _, err := s.Append(ctx, fmt.Sprintf("s-%d", i%5), events.Any(), ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendN(60)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, path)
	defer s.Close()
	appendN(5) // 61-65 in the ring, 1-60 in bbolt only
	all, err := s.ReadAll(ctx, events.Position{}, 0)
	if err != nil || len(all) != 65 {
		t.Fatalf("ReadAll: %d events (%v)", len(all), err)
	}
	seqs := []uint64{64, 3, 1, 2, 40, 3, 61, 0, 59, 60, 41, 17, 66, 1 << 40, 65, 20}
	at := make([]events.Position, len(seqs))
	for i, seq := range seqs {
		at[i] = events.Position{Commit: seq, Prepare: seq}
	}
	at = append(at, events.Position{Commit: 30, Prepare: 29})
	got, err := s.ReadPositions(ctx, at)
	if err != nil {
		t.Fatal(err)
	}
	for i, pos := range at {
		var want events.Recorded
		if pos.Commit == pos.Prepare && pos.Commit >= 1 && pos.Commit <= 65 {
			want = all[pos.Commit-1]
		}
		if !reflect.DeepEqual(got[i], want) {
			t.Fatalf("at %s read\n%+v\nnot\n%+v", pos, got[i], want)
		}
	}
}
