package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
)

// appendTyped appends n events of type typ to one new stream, in appends of
// at most 500.
func appendTyped(t *testing.T, s *Store, typ string, n int) {
	t.Helper()
	ctx := context.Background()
	stream := "s-" + uuid.NewString()
	for done := 0; done < n; {
		k := min(500, n-done)
		evs := make([]events.Proposed, k)
		for i := range evs {
			evs[i] = events.Proposed{ID: uuid.NewString(), Type: typ, Data: []byte(fmt.Sprintf(`{"n":%d}`, done+i))}
		}
		if _, err := s.Append(ctx, stream, events.Any(), evs...); err != nil {
			t.Fatal(err)
		}
		done += k
	}
}

// follow reads sub until it delivers the event at head, returning what it delivered.
func follow(t *testing.T, sub events.Subscription, head uint64) []events.Recorded {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []events.Recorded
	for {
		rec, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("after %d events: %v", len(got), err)
		}
		if len(got) > 0 && !got[len(got)-1].Position.Less(rec.Position) {
			t.Fatalf("position %v after %v", rec.Position, got[len(got)-1].Position)
		}
		got = append(got, rec)
		if rec.Position.Commit >= head {
			return got
		}
	}
}

func ofType(recs []events.Recorded, prefix string) []uint64 {
	var out []uint64
	for _, r := range recs {
		if strings.HasPrefix(r.Type, prefix) {
			out = append(out, r.Position.Commit)
		}
	}
	return out
}

// TestSubscribeAllForSkipsWhatTheFollowerIgnores: a follower of two rare
// types on a log of thousands of other events gets both of its events, in
// order, and reaches the head having been handed a few dozen events, not
// the log; it then follows new events live. A follower of every type gets
// every event.
func TestSubscribeAllForSkipsWhatTheFollowerIgnores(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	appendTyped(t, s, "app.created", 1)
	appendTyped(t, s, "user.registered", 3000)
	appendTyped(t, s, "app.updated", 1)
	appendTyped(t, s, "user.profile.updated", 2000)
	head, err := s.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	apps := func(typ string) bool { return strings.HasPrefix(typ, "app.") }

	sub, err := s.SubscribeAllFor(ctx, events.Position{}, apps)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	got := follow(t, sub, head.Commit)
	if want := []uint64{1, 3002}; fmt.Sprint(ofType(got, "app.")) != fmt.Sprint(want) {
		t.Fatalf("app events at %v, want %v", ofType(got, "app."), want)
	}
	// A full page of others (256) before each jump, at most: the log's
	// 5,002 events are not read through.
	if len(got) > 3*256 {
		t.Errorf("the follower was handed %d of %d events: nothing was skipped", len(got), head.Commit)
	}
	t.Logf("handed %d of %d events", len(got), head.Commit)

	// Live: new events of both kinds, near the head, as SubscribeAll.
	appendTyped(t, s, "user.registered", 10)
	appendTyped(t, s, "app.updated", 1)
	if live := follow(t, sub, head.Commit+11); fmt.Sprint(ofType(live, "app.")) != fmt.Sprint([]uint64{head.Commit + 11}) {
		t.Fatalf("live: app events at %v", ofType(live, "app."))
	}

	all, err := s.SubscribeAllFor(ctx, events.Position{}, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	if every := follow(t, all, head.Commit+11); len(every) != int(head.Commit)+11 {
		t.Fatalf("a follower of every type was handed %d of %d events", len(every), head.Commit+11)
	}

	// A follower whose types the log does not hold yet jumps to the head.
	none, err := s.SubscribeAllFor(ctx, events.Position{}, func(typ string) bool { return typ == "operator.created" })
	if err != nil {
		t.Fatal(err)
	}
	defer none.Close()
	if got := follow(t, none, head.Commit+11); len(got) > 2*256 {
		t.Errorf("a follower of no event was handed %d events", len(got))
	}
}
