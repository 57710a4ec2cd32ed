package privacy_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/privacy"
)

// forgetLog records the subjects a follower forgot, in order.
type forgetLog struct {
	mu       sync.Mutex
	subjects []string
	at       []events.Position
}

func (l *forgetLog) Forget(subject string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.subjects = append(l.subjects, subject)
}

func (l *forgetLog) forgot(_ string, at events.Position) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at = append(l.at, at)
}

func (l *forgetLog) seen() ([]string, []events.Position) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.subjects), slices.Clone(l.at)
}

func appendEvent(t *testing.T, s events.Store, stream string, p events.Payload) events.Position {
	t.Helper()
	ev, err := catalog.Registry().Encode(p, events.Metadata{AppID: 1, Actor: "test", OccurredAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Append(context.Background(), stream, events.Any(), ev)
	if err != nil {
		t.Fatal(err)
	}
	return res.Position
}

// runFollower runs f until the returned stop is called; stop reports Run's result.
func runFollower(f *privacy.ErasureFollower) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	return func() error { cancel(); return <-done }
}

func waitForgotten(t *testing.T, l *forgetLog, n int) ([]string, []events.Position) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		subjects, at := l.seen()
		if len(subjects) >= n || time.Now().After(deadline) {
			return subjects, at
		}
		time.Sleep(time.Millisecond)
	}
}

// An erasure appended after From makes the follower forget exactly that
// person's key, at the erasure's position; erasures at or before From (the
// head when the node started) and other events are left alone, and a
// restarted Run resumes after what it already forgot.
func TestErasureFollowerForgetsErasedSubjects(t *testing.T) {
	s := memory.New()
	defer s.Close()
	appendEvent(t, s, "user-1", catalog.UserErased{AppID: 1, OpenUserID: 1, Reason: "old", ErasedBy: "op"})
	head, err := s.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	l := &forgetLog{}
	f := &privacy.ErasureFollower{Store: s, Keys: l, From: head, Forgot: l.forgot}
	stop := runFollower(f)
	appendEvent(t, s, "app-1", catalog.AppCreated{AppID: 1, Name: "a"})
	at7 := appendEvent(t, s, "user-7", catalog.UserErased{AppID: 1, OpenUserID: 7, Reason: "asked", ErasedBy: "op"})
	subjects, at := waitForgotten(t, l, 1)
	if !slices.Equal(subjects, []string{"user-7"}) || !slices.Equal(at, []events.Position{at7}) {
		t.Fatalf("forgot %v at %v, want [user-7] at [%s]", subjects, at, at7)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if f.From.Less(at7) {
		t.Fatalf("From is %s after Run, want at least %s", f.From, at7)
	}

	at9 := appendEvent(t, s, "user-9", catalog.UserErased{AppID: 1, OpenUserID: 9, Reason: "asked", ErasedBy: "op"})
	stop = runFollower(f)
	defer stop()
	subjects, at = waitForgotten(t, l, 2)
	if !slices.Equal(subjects, []string{"user-7", "user-9"}) || !slices.Equal(at, []events.Position{at7, at9}) {
		t.Fatalf("after a restart forgot %v at %v, want [user-7 user-9] at [%s %s]", subjects, at, at7, at9)
	}
}
