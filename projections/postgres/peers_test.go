package postgres_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/projections/postgres"
)

// A node of the release before greetings listens for announcements
// without greeting (a plain LISTEN, then waiting): a node of this release
// finds its session and announces to it, so the older node's followers
// hear this node's owners during a rolling upgrade, as before.
func TestAnnouncementsReachAnOlderNodeThatDoesNotGreet(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := postgres.MigratedDB(t)
	old, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close(context.Background())
	if _, err := old.Exec(ctx, `LISTEN platform_projection_progress`); err != nil {
		t.Fatal(err)
	}
	s := open(t, url)
	defer s.Close()
	want := subscribe.Progress{Generation: 3, Position: events.Position{Commit: 42, Prepare: 42}, Applied: 7, CaughtUp: true, Owner: "new"}
	if err := s.Announce(ctx, "deliveries", want); err != nil {
		t.Fatal(err)
	}
	n, err := old.WaitForNotification(ctx)
	if err != nil {
		t.Fatalf("the older node heard no announcement: %v", err)
	}
	var got struct {
		Projection string `json:"p"`
		Generation int64  `json:"g"`
		Commit     uint64 `json:"c"`
		Owner      string `json:"o"`
	}
	if err := json.Unmarshal([]byte(n.Payload), &got); err != nil {
		t.Fatalf("payload %s: %v", n.Payload, err)
	}
	if got.Projection != "deliveries" || got.Generation != 3 || got.Commit != 42 || got.Owner != "new" {
		t.Fatalf("the older node heard %s", n.Payload)
	}
}

// A node of this release greets when its listener connects, and the
// greeting makes another node's owners announce to it.
func TestAnnouncementsReachANodeThatGreeted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := postgres.MigratedDB(t)
	a, b := open(t, url), open(t, url)
	defer a.Close()
	defer b.Close()
	hello := func(ch <-chan subscribe.Progress, what string) {
		t.Helper()
		select {
		case p := <-ch:
			if !p.Hello {
				t.Fatalf("%s: %+v before any announcement", what, p)
			}
		case <-ctx.Done():
			t.Fatalf("%s did not arrive", what)
		}
	}
	aHears, stopA := a.Watch("deliveries")
	defer stopA()
	hello(aHears, "a's own greeting") // a listens
	bHears, stopB := b.Watch("deliveries")
	defer stopB()
	hello(bHears, "b's own greeting")
	hello(aHears, "b's greeting at a")
	want := subscribe.Progress{Generation: 1, Position: events.Position{Commit: 9, Prepare: 9}, Owner: "a"}
	if err := a.Announce(ctx, "deliveries", want); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-bHears:
		if p.Hello || p.Generation != 1 || p.Position != want.Position || p.Owner != "a" {
			t.Fatalf("b heard %+v", p)
		}
	case <-ctx.Done():
		t.Fatal("b heard no announcement")
	}
}
