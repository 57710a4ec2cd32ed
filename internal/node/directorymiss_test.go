package node

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/auth"
)

// unreachableLog is an event store whose head cannot be read.
type unreachableLog struct{ *fakeLog }

var errUnreachable = errors.New("connection refused")

func (unreachableLog) Head(context.Context) (events.Position, error) {
	return events.Position{}, errUnreachable
}

// A miss is an answer only once the directory is known to hold the log's
// head: when the head cannot be read, the miss says so (an error wrapping
// auth.ErrDirectoryUnconfirmed and its cause) instead of "not found".
func TestMissWithoutTheHeadIsUnconfirmed(t *testing.T) {
	t.Parallel()
	f := &follower{store: unreachableLog{newFakeLog()}, runner: newFakeLog(), log: quiet()}
	_, ok, err := lookupChecked(f, "test", func() (int, bool) { return 0, false })
	if ok || !errors.Is(err, auth.ErrDirectoryUnconfirmed) || !errors.Is(err, errUnreachable) {
		t.Fatalf("miss with the head unreadable: ok=%v err=%v, want not found, unconfirmed, with the cause", ok, err)
	}
	// A hit needs no head to be an answer when the entry is there.
	v, ok, err := lookupChecked(&follower{store: unreachableLog{newFakeLog()}, runner: newFakeLog(), maxAge: -1, log: quiet()},
		"test", func() (int, bool) { return 7, true })
	if v != 7 || !ok || err != nil {
		t.Fatalf("hit: %v %v %v", v, ok, err)
	}
}

// A directory that does not reach the head within directoryWait (its
// follower stalled) leaves the miss unconfirmed; one that reaches it
// confirms the miss: not found, no error.
func TestMissConfirmedOnlyAtTheHead(t *testing.T) {
	t.Parallel()
	stalled := newFakeLog()
	stalled.head.Store(3) // the directory never applies event 3
	f := &follower{store: stalled, runner: stalled, log: quiet()}
	start := time.Now()
	_, ok, err := lookupChecked(f, "test", func() (int, bool) { return 0, false })
	if ok || !errors.Is(err, auth.ErrDirectoryUnconfirmed) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stalled directory: ok=%v err=%v, want unconfirmed after the wait", ok, err)
	}
	if waited := time.Since(start); waited < directoryWait-100*time.Millisecond {
		t.Fatalf("gave up after %v, before directoryWait (%v)", waited, directoryWait)
	}

	current := newFakeLog()
	current.head.Store(3)
	current.apply(3)
	_, ok, err = lookupChecked(&follower{store: current, runner: current, log: quiet()}, "test", func() (int, bool) { return 0, false })
	if ok || err != nil {
		t.Fatalf("miss at the head: ok=%v err=%v, want a confirmed miss", ok, err)
	}
}

// An entry the directory applies while the miss waits is found: the
// lookup answers with it, not with the failure to confirm.
func TestMissFoundAfterTheWaitIsAHit(t *testing.T) {
	t.Parallel()
	log := newFakeLog()
	log.head.Store(1)
	f := &follower{store: log, runner: log, log: quiet()}
	var arrived atomic.Bool
	go func() {
		time.Sleep(50 * time.Millisecond)
		arrived.Store(true)
		log.apply(1)
	}()
	v, ok, err := lookupChecked(f, "test", func() (int, bool) { return 5, arrived.Load() })
	if v != 5 || !ok || err != nil {
		t.Fatalf("entry applied during the wait: %v %v %v", v, ok, err)
	}
}
