package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/bolt"
	"github.com/healthtech/partner-open-platform/events/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) events.Store {
		return openT(t, filepath.Join(t.TempDir(), "events.db"))
	})
}

func openT(t testing.TB, path string) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func ev(typ string, i int) events.Proposed {
	return events.Proposed{
		ID:   uuid.NewString(),
		Type: typ,
		Data: []byte(fmt.Sprintf(`{"i":%d,"note":"naïve ✓"}`, i)),
		Meta: []byte(fmt.Sprintf(`{"actor":"reopen","i":%d}`, i)),
	}
}

// TestReopen proves the durability promise: everything acknowledged before
// Close is there after Open, indexes included, and checkpoints stay valid.
func TestReopen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "data", "events.db")

	s := openT(t, path)
	retry := []events.Proposed{ev("reopen.a", 0), ev("reopen.a", 1)}
	first, err := s.Append(ctx, "a", events.NoStream(), retry...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := s.Append(ctx, fmt.Sprintf("s-%d", i%3), events.Any(), ev("reopen.b", i)); err != nil {
			t.Fatal(err)
		}
	}
	before, err := s.ReadAll(ctx, events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := s.SubscribeAll(ctx, events.Position{})
	if err != nil {
		t.Fatal(err)
	}
	var checkpoint events.Position
	for range 5 {
		r, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		checkpoint = r.Position
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Next(ctx); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("subscription of a closed store: %v, want ErrClosed", err)
	}

	s = openT(t, path)
	after, err := s.ReadAll(ctx, events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) || len(after) != 12 {
		t.Fatalf("reopened log holds %d events, had %d", len(after), len(before))
	}
	for i := range before {
		b, a := before[i], after[i]
		if a.ID != b.ID || a.Stream != b.Stream || a.Revision != b.Revision || a.Position != b.Position ||
			!a.Created.Equal(b.Created) || string(a.Data) != string(b.Data) || string(a.Meta) != string(b.Meta) || a.Type != b.Type {
			t.Fatalf("event %d changed across reopen:\n%+v\n%+v", i, b, a)
		}
	}

	// Stream lengths survived: expectations still hold.
	if _, err := s.Append(ctx, "a", events.NoStream(), ev("reopen.a", 2)); !errors.Is(err, events.ErrConflict) {
		t.Fatalf("NoStream on a reopened stream: %v, want a conflict", err)
	}
	third := ev("reopen.a", 2)
	res, err := s.Append(ctx, "a", events.Exact(1), third)
	if err != nil || res.Revision != 2 {
		t.Fatalf("Exact(1) after reopen: %+v, %v", res, err)
	}
	if !before[len(before)-1].Position.Less(res.Position) {
		t.Fatalf("position %s after reopen is not after %s", res.Position, before[len(before)-1].Position)
	}
	// The ID index survived: an old retry is still recognised.
	if again, err := s.Append(ctx, "a", events.NoStream(), retry...); err != nil || again != first {
		t.Fatalf("retry after reopen: %+v, %v; want %+v", again, err, first)
	}

	// A subscription resumes after its checkpoint, through the events from
	// before the reopen, the one appended since, and a live one.
	sub, err = s.SubscribeAll(ctx, checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	live := ev("reopen.live", 0)
	var want []string
	for _, r := range after[5:] {
		want = append(want, r.ID)
	}
	want = append(want, third.ID, live.ID)
	for i, id := range want {
		if id == live.ID {
			if _, err := s.Append(ctx, "live", events.NoStream(), live); err != nil {
				t.Fatal(err)
			}
		}
		nctx, ncancel := context.WithTimeout(ctx, 5*time.Second)
		r, err := sub.Next(nctx)
		ncancel()
		if err != nil {
			t.Fatalf("resumed subscription, event %d: %v", i, err)
		}
		if r.ID != id {
			t.Fatalf("resumed subscription event %d is %s (%s/%d), want %s", i, r.ID, r.Stream, r.Revision, id)
		}
	}
}

// TestLocked makes sure a second process gets a clear error instead of hanging.
func TestLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	openT(t, path)
	start := time.Now()
	s, err := bolt.Open(path)
	if err == nil {
		_ = s.Close()
		t.Fatal("second Open of a locked data file succeeded")
	}
	if !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("second Open: %v, want it to say the data directory is in use", err)
	}
	if waited := time.Since(start); waited > bolt.LockTimeout+3*time.Second {
		t.Fatalf("second Open took %s", waited)
	}
}

// BenchmarkAppend is the baseline for the HTTP write path: single-event
// appends, each its own fsynced transaction.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	payload := []byte(`{"app_id":1001,"open_user_id":123456789,"name":"Zoë","phone":"+8613800000000","gender":"female"}`)
	meta := []byte(`{"schema":1,"app_id":1001,"actor":"bench","request_id":"7d8c1f8e"}`)
	proposed := func() events.Proposed {
		return events.Proposed{ID: uuid.NewString(), Type: "bench.appended", Data: payload, Meta: meta}
	}

	b.Run("distinct-streams", func(b *testing.B) {
		s := openT(b, filepath.Join(b.TempDir(), "events.db"))
		for i := 0; b.Loop(); i++ {
			if _, err := s.Append(ctx, fmt.Sprintf("user-%d", i), events.NoStream(), proposed()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("one-stream-exact", func(b *testing.B) {
		s := openT(b, filepath.Join(b.TempDir(), "events.db"))
		for i := 0; b.Loop(); i++ {
			if _, err := s.Append(ctx, "one", events.AfterVersion(uint64(i)), proposed()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("distinct-streams-parallel", func(b *testing.B) {
		s := openT(b, filepath.Join(b.TempDir(), "events.db"))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := s.Append(ctx, uuid.NewString(), events.NoStream(), proposed()); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("batch-of-10", func(b *testing.B) {
		s := openT(b, filepath.Join(b.TempDir(), "events.db"))
		batch := make([]events.Proposed, 10)
		for i := 0; b.Loop(); i++ {
			for j := range batch {
				batch[j] = proposed()
			}
			if _, err := s.Append(ctx, fmt.Sprintf("batch-%d", i), events.NoStream(), batch...); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(10*b.N)/b.Elapsed().Seconds(), "events/s")
	})
}

// BenchmarkRead covers the read side every projection and the dispatcher
// use: a subscription page from the middle of the log, a stream, and Head.
func BenchmarkRead(b *testing.B) {
	ctx := context.Background()
	s := openT(b, filepath.Join(b.TempDir(), "events.db"))
	batch := make([]events.Proposed, 100)
	for i := range 20 {
		for j := range batch {
			batch[j] = ev("bench.read", j)
		}
		if _, err := s.Append(ctx, fmt.Sprintf("read-%d", i%4), events.Any(), batch...); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("read-all-page", func(b *testing.B) {
		for b.Loop() {
			if got, err := s.ReadAll(ctx, events.Position{Commit: 1000, Prepare: 1000}, 256); err != nil || len(got) != 256 {
				b.Fatal(len(got), err)
			}
		}
	})
	b.Run("read-stream", func(b *testing.B) {
		for b.Loop() {
			if got, err := s.ReadStream(ctx, "read-1", 100, 256); err != nil || len(got) != 256 {
				b.Fatal(len(got), err)
			}
		}
	})
	b.Run("head", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Head(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestRandomAndTimeOrderedIDs reopens a log written with random (version 4)
// event IDs, as every log was before IDs became time-ordered (version 7),
// and appends time-ordered ones to it: the old events read back unchanged,
// and a retry of an old or a new append is recognised by its IDs.
func TestRandomAndTimeOrderedIDs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "events.db")
	v7 := func(typ string, i int) events.Proposed {
		e := ev(typ, i)
		e.ID = uuid.Must(uuid.NewV7()).String()
		return e
	}

	s := openT(t, path)
	var old [][]events.Proposed
	var oldRes []events.AppendResult
	for i := range 40 {
		batch := []events.Proposed{ev("ids.v4", i)}
		res, err := s.Append(ctx, fmt.Sprintf("user-%d", i%7), events.Any(), batch...)
		if err != nil {
			t.Fatal(err)
		}
		old, oldRes = append(old, batch), append(oldRes, res)
	}
	before, err := s.ReadAll(ctx, events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openT(t, path)
	var fresh []events.Proposed
	for i := range 40 {
		e := v7("ids.v7", i)
		stream := fmt.Sprintf("user-%d", i%7)
		got, err := s.ReadStream(ctx, stream, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, stream, events.Exact(uint64(len(got))-1), e); err != nil {
			t.Fatalf("append a time-ordered id after %d events of %s: %v", len(got), stream, err)
		}
		fresh = append(fresh, e)
	}
	after, err := s.ReadAll(ctx, events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before)+len(fresh) {
		t.Fatalf("log holds %d events, want %d", len(after), len(before)+len(fresh))
	}
	for i, b := range before {
		a := after[i]
		if a.ID != b.ID || a.Stream != b.Stream || a.Revision != b.Revision || a.Position != b.Position ||
			!a.Created.Equal(b.Created) || string(a.Data) != string(b.Data) || string(a.Meta) != string(b.Meta) {
			t.Fatalf("old event %d changed:\n%+v\n%+v", i, b, a)
		}
	}
	for i, e := range fresh {
		if r := after[len(before)+i]; r.ID != e.ID || r.Type != "ids.v7" {
			t.Fatalf("new event %d is %s %s, want %s", i, r.ID, r.Type, e.ID)
		}
	}
	// Retries, each with the expectation its first attempt had.
	for i, batch := range old {
		again, err := s.Append(ctx, fmt.Sprintf("user-%d", i%7), events.Any(), batch...)
		if err != nil || again != oldRes[i] {
			t.Fatalf("retry of random-id append %d: %+v, %v; want %+v", i, again, err, oldRes[i])
		}
	}
	head, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if head != after[len(after)-1].Position {
		t.Fatalf("retries moved the head to %s, want %s", head, after[len(after)-1].Position)
	}
	for i, e := range fresh {
		stream := fmt.Sprintf("user-%d", i%7)
		if _, err := s.Append(ctx, stream, events.Any(), e); err != nil {
			t.Fatalf("retry of time-ordered append %d: %v", i, err)
		}
	}
	if again, err := s.ReadAll(ctx, events.Position{}, 0); err != nil || len(again) != len(after) {
		t.Fatalf("retries wrote events: %d events, %v; want %d", len(again), err, len(after))
	}
}
