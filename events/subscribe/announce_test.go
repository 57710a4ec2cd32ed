package subscribe

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
	leasememory "github.com/healthtech/partner-open-platform/internal/lease/memory"
)

// counting is a projector that only records its checkpoint.
type counting struct {
	mu  sync.Mutex
	pos events.Position
}

func (c *counting) Name() string { return "counting" }
func (c *counting) Checkpoint(context.Context) (events.Position, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pos, nil
}
func (c *counting) Reset(context.Context) error { return nil }
func (c *counting) Apply(_ context.Context, _ []events.Envelope, pos events.Position) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pos = pos
	return nil
}

// announcements is a Shared that records what the owner announces; its
// first failures announcements fail.
type announcements struct {
	mu       sync.Mutex
	failures int
	sent     []Progress
}

func (a *announcements) Progress(context.Context, string) (Progress, error) { return Progress{}, nil }
func (a *announcements) Announce(_ context.Context, _ string, p Progress) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.failures > 0 {
		a.failures--
		return errors.New("connection reset")
	}
	a.sent = append(a.sent, p)
	return nil
}
func (a *announcements) Watch(string) (<-chan Progress, func()) {
	return make(chan Progress), func() {}
}
func (a *announcements) RequestRebuild(context.Context, string) (int64, error) {
	return 0, errors.New("not here")
}

func (a *announcements) all() []Progress {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Progress(nil), a.sent...)
}

func (a *announcements) waitFor(t *testing.T, pos events.Position) {
	t.Helper()
	for range 2000 {
		if s := a.all(); len(s) > 0 && s[len(s)-1].Position == pos {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no announcement of %v; announced %v", pos, a.all())
}

// An idle owner's announcer sleeps until the next Heartbeat instead of
// waking every Poll: over an idle interval of hundreds of Polls it wakes
// at most once and announces nothing, while a new batch is still announced
// at once (the batch wakes it) and a failed announcement is retried after
// a Poll.
func TestIdleOwnerAnnouncerDoesNotWakeEveryPoll(t *testing.T) {
	store, reg := memory.New(), catalog.Registry()
	appendOne := func(stream string) events.Position {
		ev, err := reg.Encode(&catalog.UploaderRegistered{Name: stream}, events.Metadata{OccurredAt: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		res, err := store.Append(context.Background(), stream, events.Any(), ev)
		if err != nil {
			t.Fatal(err)
		}
		return res.Position
	}
	first := appendOne("app-1")
	shared := &announcements{failures: 3}
	r := NewRunner(store, reg, &counting{}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	const poll = time.Millisecond
	r.Own(Ownership{Leases: leasememory.New(), Holder: "a", TTL: time.Minute, Shared: shared, Poll: poll, Heartbeat: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	defer func() { cancel(); <-done }()

	shared.waitFor(t, first)          // after three failed tries, each a Poll apart
	time.Sleep(20 * time.Millisecond) // let the start's kicks settle
	wakes, sent := r.announceWakes.Load(), len(shared.all())
	idle := 300 * time.Millisecond // 300 Polls
	time.Sleep(idle)
	if n := r.announceWakes.Load() - wakes; n > 1 {
		t.Fatalf("the idle owner's announcer woke %d times in %d Polls, want at most once", n, idle/poll)
	}
	if n := len(shared.all()) - sent; n != 0 {
		t.Fatalf("%d announcements while idle, want none", n)
	}
	second := appendOne("app-2")
	shared.waitFor(t, second)
}
