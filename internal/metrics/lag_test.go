package metrics_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/internal/metrics"
)

// TestLagShowsAStuckFollower: a follower that does not move is reported
// behind by every event after it, with the age of the oldest growing, while
// one at the head is reported at zero.
func TestLagShowsAStuckFollower(t *testing.T) {
	store := memory.New()
	ctx := context.Background()
	var first events.AppendResult
	for i := 0; i < 3; i++ {
		res, err := store.Append(ctx, "s", events.Any(), events.Proposed{ID: uuid.NewString(), Type: "t.happened", Data: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = res
		}
	}
	head, _ := store.Head(ctx)
	at := func(p events.Position) func(context.Context) (events.Position, error) {
		return func(context.Context) (events.Position, error) { return p, nil }
	}
	stuck := metrics.Follower{Kind: "projection", Name: "stuck", Position: at(first.Position)}
	current := metrics.Follower{Kind: "projection", Name: "current", Position: at(head)}

	behind, age1, ok := metrics.Lag(ctx, store, stuck)
	if !ok || behind != 2 {
		t.Fatalf("stuck follower: behind %d ok %v, want 2", behind, ok)
	}
	time.Sleep(20 * time.Millisecond)
	if _, age2, _ := metrics.Lag(ctx, store, stuck); age2 <= age1 {
		t.Fatalf("the oldest unapplied event did not age: %v then %v", age1, age2)
	}
	if behind, age, ok := metrics.Lag(ctx, store, current); !ok || behind != 0 || age != 0 {
		t.Fatalf("current follower: %d %v %v", behind, age, ok)
	}

	m := metrics.New()
	m.WatchLag(store, func() []metrics.Follower { return []metrics.Follower{stuck, current} })
	want := `
# HELP platform_follower_events_behind Events in the log after the follower's position (counted up to 10000): projections, delivery creation and the relay.
# TYPE platform_follower_events_behind gauge
platform_follower_events_behind{kind="projection",name="current"} 0
platform_follower_events_behind{kind="projection",name="stuck"} 2
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "platform_follower_events_behind"); err != nil {
		t.Fatal(err)
	}
}
