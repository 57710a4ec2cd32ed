package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// TestManySubscribersShareReadsAndMissNothing: twenty subscribers of one
// node (as its followers are) read through the shared reader while eight
// writers append; each sees every event exactly once, in position order
// with no gap, and the events it was handed stay intact while the others
// consume theirs.
func TestManySubscribersShareReadsAndMissNothing(t *testing.T) {
	t.Parallel()
	const subscribers, writers, perWriter = 20, 8, 40
	s := open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	type seen struct {
		ids []string
		err error
	}
	results := make([]seen, subscribers)
	var subs sync.WaitGroup
	for i := range subscribers {
		sub, err := s.SubscribeAll(ctx, events.Position{})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		subs.Add(1)
		go func() {
			defer subs.Done()
			var prev uint64
			for len(results[i].ids) < writers*perWriter {
				rec, err := sub.Next(ctx)
				if err != nil {
					results[i].err = err
					return
				}
				if rec.Position.Commit != prev+1 {
					results[i].err = fmt.Errorf("position %d after %d", rec.Position.Commit, prev)
					return
				}
				if string(rec.Data) != rec.Stream {
					results[i].err = fmt.Errorf("event %s of %s carries %q", rec.ID, rec.Stream, rec.Data)
					return
				}
				prev = rec.Position.Commit
				results[i].ids = append(results[i].ids, rec.ID)
			}
		}()
	}

	appended := make([][]string, writers)
	var ws sync.WaitGroup
	for w := range writers {
		ws.Add(1)
		go func() {
			defer ws.Done()
			stream := fmt.Sprintf("shared-%d", w)
			for v := range perWriter {
				ev := proposed("t")
				ev.Data = []byte(stream)
				if _, err := s.Append(ctx, stream, events.AfterVersion(uint64(v)), ev); err != nil {
					t.Error(err)
					return
				}
				appended[w] = append(appended[w], ev.ID)
			}
		}()
	}
	ws.Wait()
	subs.Wait()
	want := map[string]bool{}
	for _, ids := range appended {
		for _, id := range ids {
			want[id] = true
		}
	}
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("subscriber %d: %v", i, r.err)
		}
		got := map[string]bool{}
		for _, id := range r.ids {
			got[id] = true
		}
		if len(got) != len(want) || len(r.ids) != len(want) {
			t.Fatalf("subscriber %d saw %d events (%d distinct), want %d", i, len(r.ids), len(got), len(want))
		}
		for id := range want {
			if !got[id] {
				t.Fatalf("subscriber %d missed %s", i, id)
			}
		}
	}
}

// TestSharedReadSeesWhatWasAcknowledged: a subscription read issued after
// an append returned always includes that append, also while other reads
// are in flight (a shared read is sent after it was queued).
func TestSharedReadSeesWhatWasAcknowledged(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stop := make(chan struct{})
	var busy sync.WaitGroup
	for range 4 { // readers keeping the shared reader busy
		busy.Add(1)
		go func() {
			defer busy.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.readShared(ctx, events.Position{}, 50); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	defer func() { close(stop); busy.Wait() }()
	var after events.Position
	for i := range 50 {
		res, err := s.Append(ctx, "acked", events.AfterVersion(uint64(i)), proposed("t"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.readShared(ctx, after, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 || got[len(got)-1].Position != res.Position {
			t.Fatalf("read after %s right after append %d at %s: %d events", after, i, res.Position, len(got))
		}
		after = res.Position
	}
}

// TestSharedReadEndsWithClose: a subscriber blocked in Next, and one that
// reads after Close, both get events.ErrClosed.
func TestSharedReadEndsWithClose(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sub, err := s.SubscribeAll(ctx, events.Position{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := sub.Next(ctx)
		done <- err
	}()
	_ = s.Close()
	if err := <-done; !errors.Is(err, events.ErrClosed) {
		t.Fatalf("blocked Next after Close: %v, want ErrClosed", err)
	}
	if _, err := s.readShared(ctx, events.Position{}, 10); !errors.Is(err, events.ErrClosed) {
		t.Fatalf("read after Close: %v, want ErrClosed", err)
	}
}
