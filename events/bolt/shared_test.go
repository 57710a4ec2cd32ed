package bolt_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
	"github.com/healthtech/partner-open-platform/internal/sharedguard"
)

func appendN(t *testing.T, s *bolt.Store, stream string, from, n int) {
	t.Helper()
	evs := make([]events.Proposed, n)
	for j := range evs {
		evs[j] = events.Proposed{ID: uuid.NewString(), Type: "t", Data: []byte(fmt.Sprintf(`{"n":%d}`, from+j))}
		if j%3 == 0 {
			evs[j].Meta = []byte(`{"actor":"a"}`)
		}
	}
	if _, err := s.Append(context.Background(), stream, events.Any(), evs...); err != nil {
		t.Error(err)
	}
}

// Twenty subscriptions, started at different points of a log that already
// holds more than the ring keeps (so some catch up from bbolt blocks, some
// from the ring, some live), read while four writers append: each gets
// every event after its start exactly once, in order, with the bytes the
// file holds; one subscriber is slow (it sleeps on nothing but reads one
// event per scheduling turn and closes and reopens its subscription) and
// still gets everything; and nobody's bytes were written to.
func TestTwentySubscribersShareReadsWithConcurrentWriters(t *testing.T) {
	sharedguard.On()
	sharedguard.Reset()
	ctx := context.Background()
	s := openT(t, filepath.Join(t.TempDir(), "events.db"))
	const before, writers, per, batch = 10_000, 4, 1_500, 10
	for i := 0; i < before; i += 100 {
		appendN(t, s, "pre", i, 100)
	}
	const total = before + writers*per
	var wg sync.WaitGroup
	got := make([][]events.Recorded, 20)
	starts := make([]uint64, 20)
	for i := range got {
		starts[i] = uint64(i * 700) // 0 .. 13,300: bbolt, blocks, ring, live
		wg.Add(1)
		go func() {
			defer wg.Done()
			after := events.Position{Commit: starts[i], Prepare: starts[i]}
			sub, err := s.SubscribeAll(ctx, after)
			if err != nil {
				t.Error(err)
				return
			}
			for n := 0; uint64(len(got[i]))+starts[i] < total; n++ {
				rec, err := sub.Next(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				got[i] = append(got[i], rec)
				if i == 19 && n%997 == 0 { // the slow one, closing and reopening
					_ = sub.Close()
					if sub, err = s.SubscribeAll(ctx, rec.Position); err != nil {
						t.Error(err)
						return
					}
				}
			}
			_ = sub.Close()
		}()
	}
	var ww sync.WaitGroup
	for w := range writers {
		ww.Add(1)
		go func() {
			defer ww.Done()
			for i := 0; i < per; i += batch {
				appendN(t, s, fmt.Sprintf("w-%d", w), i, batch)
			}
		}()
	}
	ww.Wait()
	wg.Wait()
	if t.Failed() {
		return
	}
	all, err := s.ReadAll(ctx, events.Position{}, 0) // copies, from bbolt
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != total {
		t.Fatalf("log holds %d events, want %d", len(all), total)
	}
	for i, recs := range got {
		want := all[starts[i]:]
		if len(recs) != len(want) {
			t.Fatalf("subscriber %d from %d got %d events, want %d", i, starts[i], len(recs), len(want))
		}
		for j := range recs {
			if recs[j].Position != want[j].Position || recs[j].ID != want[j].ID || !bytes.Equal(recs[j].Data, want[j].Data) || !bytes.Equal(recs[j].Meta, want[j].Meta) {
				t.Fatalf("subscriber %d, event %d: got %s %s %q, want %s %s %q", i, j, recs[j].Position, recs[j].ID, recs[j].Data, want[j].Position, want[j].ID, want[j].Data)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sharedguard.Violations(); err != nil {
		t.Fatal(err)
	}
}

// The contract of shared bytes is checked: a subscriber that writes into
// the bytes it was delivered (tail from the ring, or catch-up from the
// block cache) is reported by sharedguard.Violations once the store closes, so
// the suites that run every follower under the guard (the e2e packages)
// fail if any consumer does.
func TestSharedViolationsCatchAScribbler(t *testing.T) {
	sharedguard.On()
	for _, tc := range []struct {
		name  string
		after uint64
	}{{"catch-up block", 0}, {"recent ring", 9_900}} {
		t.Run(tc.name, func(t *testing.T) {
			sharedguard.Reset()
			defer sharedguard.Reset()
			ctx := context.Background()
			s := openT(t, filepath.Join(t.TempDir(), "events.db"))
			for i := 0; i < 10_000; i += 100 {
				appendN(t, s, "s", i, 100)
			}
			sub, err := s.SubscribeAll(ctx, events.Position{Commit: tc.after, Prepare: tc.after})
			if err != nil {
				t.Fatal(err)
			}
			rec, err := sub.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := sharedguard.Violations(); err != nil {
				t.Fatalf("a reader that only reads is reported: %v", err)
			}
			s2 := openT(t, filepath.Join(t.TempDir(), "events.db"))
			for i := 0; i < 10_000; i += 100 {
				appendN(t, s2, "s", i, 100)
			}
			sub, err = s2.SubscribeAll(ctx, events.Position{Commit: tc.after, Prepare: tc.after})
			if err != nil {
				t.Fatal(err)
			}
			if rec, err = sub.Next(ctx); err != nil {
				t.Fatal(err)
			}
			rec.Data[0] = 'X' // a careless subscriber
			if err := s2.Close(); err != nil {
				t.Fatal(err)
			}
			err = sharedguard.Violations()
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(rec.ID)) {
				t.Fatalf("a subscriber wrote into shared bytes of %s and the guard said %v", rec.ID, err)
			}
		})
	}
}
