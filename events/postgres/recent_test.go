package postgres

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// waitListening waits until s's listener holds its LISTEN, so that its
// commits start runs (recent.go).
func waitListening(t *testing.T, s *Store) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.recent.mu.Lock()
		on := s.recent.listening
		s.recent.mu.Unlock()
		if on {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the listener did not LISTEN within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sameRecorded compares an event as a subscription handed it out with the
// same event read from Postgres: every field, the bytes and whether meta
// is absent included.
func sameRecorded(got, want events.Recorded) error {
	switch {
	case got.Position != want.Position || got.Stream != want.Stream || got.Revision != want.Revision ||
		got.ID != want.ID || got.Type != want.Type:
		return fmt.Errorf("got %+v, Postgres has %+v", got, want)
	case !bytes.Equal(got.Data, want.Data) || (got.Data == nil) != (want.Data == nil):
		return fmt.Errorf("event %s: data %q, Postgres has %q", got.ID, got.Data, want.Data)
	case !bytes.Equal(got.Meta, want.Meta) || (got.Meta == nil) != (want.Meta == nil):
		return fmt.Errorf("event %s: meta %q, Postgres has %q", got.ID, got.Meta, want.Meta)
	case !got.Created.Equal(want.Created) || got.Created.Location() != want.Created.Location():
		return fmt.Errorf("event %s: created %v, Postgres has %v", got.ID, got.Created, want.Created)
	}
	return nil
}

// TestOwnCommitsReachSubscriptionsWithoutAQuery: a subscription that is
// caught up reads this node's own appends without a round trip to
// Postgres, and what it is handed is exactly what Postgres holds
// (positions, revisions, bytes, absent meta, created time).
func TestOwnCommitsReachSubscriptionsWithoutAQuery(t *testing.T) {
	t.Parallel()
	s := open(t)
	waitListening(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sub, err := s.SubscribeAll(ctx, events.Position{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	first := proposed("first")
	if _, err := s.Append(ctx, "own", events.NoStream(), first); err != nil {
		t.Fatal(err)
	}
	if ev, err := sub.Next(ctx); err != nil || ev.ID != first.ID {
		t.Fatalf("first event: %q, %v", ev.ID, err)
	}
	before := s.dbReads.Load()
	var got []events.Recorded
	for i := range 20 {
		ev := events.Proposed{ID: uuid.NewString(), Type: "own", Data: []byte(fmt.Sprintf(`{"i":%d}`, i))}
		switch i % 3 {
		case 1:
			ev.Meta = []byte(`{"m":1}`)
		case 2:
			ev.Data = nil
		}
		if _, err := s.AppendMulti(ctx, events.StreamAppend{Stream: fmt.Sprintf("own-%d", i%4), Expected: events.Any(), Events: []events.Proposed{ev}}); err != nil {
			t.Fatal(err)
		}
		rec, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rec)
	}
	if n := s.dbReads.Load() - before; n != 0 {
		t.Errorf("the caught-up subscription read Postgres %d times for 20 own appends, want 0", n)
	}
	want, err := s.ReadAll(ctx, events.Position{Commit: 1, Prepare: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != len(got) {
		t.Fatalf("subscription handed out %d events, Postgres holds %d", len(got), len(want))
	}
	for i := range want {
		if err := sameRecorded(got[i], want[i]); err != nil {
			t.Error(err)
		}
	}
}

// TestAnotherNodesAppendDuringAnOwnCommitIsNotMissed: another node
// appends right after this node's commit, and this node's listener hears
// of it before the committer has kept its own events. A subscription that
// starts afterwards must still get both events at once: kept as the log's
// end, the own commit would have answered its read with a short page, and
// the other node's notification, already heard, would wake nobody until
// the 30 s poll.
func TestAnotherNodesAppendDuringAnOwnCommitIsNotMissed(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	a, b := openURL(t, db), openURL(t, db)
	waitListening(t, a)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start, err := a.Append(ctx, "a", events.NoStream(), proposed("a"))
	if err != nil {
		t.Fatal(err)
	}
	other := proposed("b")
	var once sync.Once
	a.afterCommit = func() {
		once.Do(func() {
			a.recent.mu.Lock()
			epoch := a.recent.epoch
			a.recent.mu.Unlock()
			if _, err := b.Append(ctx, "b", events.NoStream(), other); err != nil {
				t.Error(err)
				return
			}
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				a.recent.mu.Lock()
				heard := a.recent.epoch != epoch
				a.recent.mu.Unlock()
				if heard {
					return
				}
			}
			t.Error("node a did not hear node b's append within 10s")
		})
	}
	own := proposed("a")
	if _, err := a.Append(ctx, "a", events.Exact(0), own); err != nil {
		t.Fatal(err)
	}
	sub, err := a.SubscribeAll(ctx, start.Position)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for _, want := range []string{own.ID, other.ID} {
		nctx, ncancel := context.WithTimeout(ctx, 5*time.Second)
		ev, err := sub.Next(nctx)
		ncancel()
		if err != nil || ev.ID != want {
			t.Fatalf("subscription got %q, %v; want %s (the poll is %s away)", ev.ID, err, want, pollEvery)
		}
	}
}

// TestTwoNodesAppendingEachSubscriptionSeesTheWholeLog: two nodes append
// concurrently (each also serving its own commits to its subscriptions);
// a subscription on each sees every event once, gapless, in position
// order, exactly as Postgres holds it.
func TestTwoNodesAppendingEachSubscriptionSeesTheWholeLog(t *testing.T) {
	t.Parallel()
	const writersPerNode, perWriter = 4, 40
	db := pgtest.New(t)
	nodes := []*Store{openURL(t, db), openURL(t, db)}
	for _, n := range nodes {
		waitListening(t, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	total := len(nodes) * writersPerNode * perWriter
	got := make([][]events.Recorded, len(nodes))
	errs := make([]error, len(nodes))
	var readers, writers sync.WaitGroup
	for i, n := range nodes {
		sub, err := n.SubscribeAll(ctx, events.Position{})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		readers.Add(1)
		go func() {
			defer readers.Done()
			for len(got[i]) < total {
				ev, err := sub.Next(ctx)
				if err != nil {
					errs[i] = err
					return
				}
				got[i] = append(got[i], ev)
			}
		}()
		for w := range writersPerNode {
			writers.Add(1)
			go func() {
				defer writers.Done()
				for k := range perWriter {
					ev := proposed("two")
					if k%2 == 0 {
						ev.Meta = []byte(`{}`)
					}
					if _, err := n.Append(ctx, fmt.Sprintf("n%d-w%d", i, w), events.Any(), ev); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
	}
	writers.Wait()
	readers.Wait()
	want, err := nodes[0].ReadAll(ctx, events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != total {
		t.Fatalf("Postgres holds %d events, want %d", len(want), total)
	}
	for i := range nodes {
		if errs[i] != nil {
			t.Fatalf("node %d's subscription: %v (after %d events)", i, errs[i], len(got[i]))
		}
		for k := range want {
			if err := sameRecorded(got[i][k], want[k]); err != nil {
				t.Fatalf("node %d, event %d: %v", i, k, err)
			}
		}
	}
}
