package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/storetest"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// open gives t a store on a fresh database of the test server.
func open(t testing.TB) *Store {
	t.Helper()
	return openURL(t, pgtest.New(t))
}

// openURL opens a store on the database at url: two stores on one database
// are two nodes sharing the log.
func openURL(t testing.TB, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), url)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) events.Store { return open(t) })
}

// TestLateCommitIsNeverSkipped holds one node's append transaction open
// after it numbered its event under the append lock and before it wrote
// and committed it, and has a second node on the
// same database append meanwhile. With a bigserial the second would take the
// next number, commit first, and a subscriber would move past the first for
// good (TestNaiveSerialSkips shows exactly that on the same server). Here
// the second append waits for the append lock, a subscriber on the second
// node sees nothing while the first is open, and then sees both, in order,
// with no gap.
func TestLateCommitIsNeverSkipped(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	s, other := openURL(t, db), openURL(t, db)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	held, release := make(chan events.Position, 1), make(chan struct{})
	s.beforeCommit = func(last events.Position) {
		if last.Commit == 1 {
			held <- last
			<-release
		}
	}
	sub, err := other.SubscribeAll(ctx, events.Position{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()

	first, second := proposed("late"), proposed("early")
	type result struct {
		res events.AppendResult
		err error
	}
	lateDone, earlyDone := make(chan result, 1), make(chan result, 1)
	go func() {
		r, err := s.Append(ctx, "late", events.NoStream(), first)
		lateDone <- result{r, err}
	}()
	pos := <-held // the first append numbered position 1 and has not committed
	go func() {
		r, err := other.Append(ctx, "early", events.NoStream(), second)
		earlyDone <- result{r, err}
	}()

	select {
	case r := <-earlyDone:
		t.Fatalf("second append returned %+v, %v while the first was uncommitted: it could commit first", r.res, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	wctx, wcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	ev, err := sub.Next(wctx)
	wcancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("subscriber saw %s at %s while nothing had committed (err %v)", ev.ID, ev.Position, err)
	}

	close(release)
	late, early := <-lateDone, <-earlyDone
	if late.err != nil || early.err != nil {
		t.Fatalf("appends: %v, %v", late.err, early.err)
	}
	if late.res.Position != pos || !late.res.Position.Less(early.res.Position) {
		t.Fatalf("positions: held %s, late %s, early %s", pos, late.res.Position, early.res.Position)
	}
	for _, want := range []events.Proposed{first, second} {
		nctx, ncancel := context.WithTimeout(ctx, 5*time.Second)
		got, err := sub.Next(nctx)
		ncancel()
		if err != nil || got.ID != want.ID {
			t.Fatalf("subscriber: got %s (err %v), want %s", got.ID, err, want.ID)
		}
	}
}

// TestNaiveSerialSkips is the control for the test above: the same
// interleaving on a plain bigserial table makes a reader skip a row for
// good. It documents the hazard this adapter's lock exists for.
func TestNaiveSerialSkips(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, pgtest.New(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE naive (pos bigserial PRIMARY KEY, v text)`); err != nil {
		t.Fatal(err)
	}
	late, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Rollback(ctx)
	if _, err := late.Exec(ctx, `INSERT INTO naive (v) VALUES ('late')`); err != nil { // takes pos 1
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO naive (v) VALUES ('early')`); err != nil { // pos 2, committed
		t.Fatal(err)
	}
	var checkpoint int64
	if err := pool.QueryRow(ctx, `SELECT max(pos) FROM naive WHERE pos > 0`).Scan(&checkpoint); err != nil {
		t.Fatal(err)
	}
	if err := late.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var after int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM naive WHERE pos > $1`, checkpoint).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if checkpoint != 2 || after != 0 {
		t.Fatalf("checkpoint %d, %d rows after it: the naive reader did not skip as expected", checkpoint, after)
	}
}

// TestConcurrentAppendsGapless has writers on two nodes append while a
// subscriber reads: it must see positions 1, 2, 3, ... with no gap and end
// with every event, which is what a skipped late commit would break.
func TestConcurrentAppendsGapless(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	nodes := []*Store{openURL(t, db), openURL(t, db)}
	s := nodes[0]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const writers, each = 8, 25
	sub, err := s.SubscribeAll(ctx, events.Position{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := nodes[w%2].Append(ctx, fmt.Sprintf("w-%d", w), events.Any(), proposed("gapless")); err != nil {
					errs <- err
					cancel() // fail fast: the subscriber would wait for it
					return
				}
			}
		}()
	}
	for want := uint64(1); want <= writers*each; want++ {
		ev, err := sub.Next(ctx)
		if err != nil {
			select {
			case werr := <-errs:
				t.Fatalf("writer: %v", werr)
			default:
			}
			t.Fatalf("subscriber after %d events: %v", want-1, err)
		}
		if ev.Position.Commit != want {
			t.Fatalf("subscriber got position %s, want %d: a gap", ev.Position, want)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func proposed(typ string) events.Proposed {
	return events.Proposed{ID: uuid.NewString(), Type: typ, Data: []byte(`{}`)}
}

// TestNotifyWakesOtherNode: an append on one node wakes a subscriber
// waiting on another through LISTEN/NOTIFY, well before the poll would.
func TestNotifyWakesOtherNode(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	writer, reader := openURL(t, db), openURL(t, db)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sub, err := reader.SubscribeAll(ctx, events.Position{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for i := range 3 {
		type next struct {
			ev  events.Recorded
			err error
		}
		got := make(chan next, 1)
		go func() {
			nctx, ncancel := context.WithTimeout(ctx, 5*time.Second)
			defer ncancel()
			ev, err := sub.Next(nctx)
			got <- next{ev, err}
		}()
		time.Sleep(200 * time.Millisecond) // Next has read nothing and waits
		ev := proposed("wake")
		if _, err := writer.Append(ctx, "wake", events.Any(), ev); err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-got:
			if n.err != nil || n.ev.ID != ev.ID {
				t.Fatalf("append %d: subscriber on the other node got %q, %v", i, n.ev.ID, n.err)
			}
		case <-time.After(pollEvery / 2):
			t.Fatalf("append %d: subscriber on the other node not woken within %s: NOTIFY did not reach it", i, pollEvery/2)
		}
	}
}
