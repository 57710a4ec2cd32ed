package postgres

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// TestReplayingFollowersShareTheLogsFullPages: followers replay a log
// another node wrote (2,000 events, past any run of own commits), one
// after the other, the third from the middle of a page: the later ones
// read Postgres only for the page at the head, every full page coming
// from the first's reads, and each gets every event, in order, as
// Postgres holds it. Before, each follower fetched every page itself (8
// reads each).
func TestReplayingFollowersShareTheLogsFullPages(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	writer, reader := openURL(t, db), openURL(t, db)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const total = 2000
	for i := 0; i < total; i += 100 {
		evs := make([]events.Proposed, 100)
		for j := range evs {
			evs[j] = events.Proposed{ID: uuid.NewString(), Type: "t", Data: []byte(fmt.Sprintf(`{"i":%d}`, i+j))}
		}
		if _, err := writer.Append(ctx, fmt.Sprintf("s-%d", i), events.NoStream(), evs...); err != nil {
			t.Fatal(err)
		}
	}
	want, err := reader.ReadAll(ctx, events.Position{}, 0)
	if err != nil || len(want) != total {
		t.Fatalf("ReadAll: %d events, %v", len(want), err)
	}
	replay := func(from int) int64 {
		before := reader.dbReads.Load()
		after := events.Position{}
		if from > 0 {
			after = want[from-1].Position
		}
		sub, err := reader.SubscribeAll(ctx, after)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		for i := from; i < len(want); i++ {
			rec, err := sub.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := sameRecorded(rec, want[i]); err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
		}
		return reader.dbReads.Load() - before
	}
	first := replay(0)
	second := replay(0)
	// A follower that starts between pages (a restart from its
	// checkpoint) reads the same pages, not pages of its own.
	third := replay(1000)
	if first < total/256 {
		t.Fatalf("the first follower read Postgres %d times for %d events: not the path under test", first, total)
	}
	if second > 1 || third > 1 {
		t.Fatalf("the followers after the first read Postgres %d and %d times, want at most 1 (the page at the head)", second, third)
	}
}

// TestFromPagesIsTheReadItStandsFor: a read cut out of its aligned pages
// is the read itself (the first page-size events at or after its start)
// for every start, whether the positions have gaps or not and wherever
// the head is.
func TestFromPagesIsTheReadItStandsFor(t *testing.T) {
	t.Parallel()
	const page = 256
	for _, gaps := range []bool{false, true} {
		var log []events.Recorded
		for p := uint64(1); len(log) < 5*page; p++ {
			if gaps && p%7 == 3 {
				continue
			}
			log = append(log, events.Recorded{Position: events.Position{Commit: p, Prepare: p}})
		}
		read := func(k readKey) []events.Recorded { // what readAllQuery returns
			// The log is in commit order: the read is the run from the
			// first event at or after k.start, at most k.limit long.
			i := sort.Search(len(log), func(i int) bool { return int64(log[i].Position.Commit) >= k.start })
			j := i + int(min(k.limit, int64(len(log)-i)))
			if i == j {
				return nil
			}
			return slices.Clone(log[i:j])
		}
		for head := 3 * page; head <= len(log); head += 97 {
			whole := log
			log = log[:head]
			for start := int64(1); start <= int64(log[len(log)-1].Position.Commit)+2; start += 5 {
				k := readKey{start, page}
				first, second, ok := alignedPages(k)
				if !ok {
					t.Fatalf("no aligned pages for %v", k)
				}
				fetched := map[readKey][]events.Recorded{first: read(first)}
				if second != (readKey{}) {
					fetched[second] = read(second)
				}
				got, want := fromPages(k, fetched), read(k)
				// The log's events are their positions (nothing else is set).
				if !slices.EqualFunc(got, want, func(a, b events.Recorded) bool { return a.Position == b.Position }) {
					t.Fatalf("gaps %v, head %d, read from %d: got %d events, want %d", gaps, head, start, len(got), len(want))
				}
			}
			log = whole
		}
	}
}
