package commands

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// streamReads counts the ReadStream calls on one stream (every stream
// while stream is empty).
type streamReads struct {
	events.Store
	stream string
	mu     sync.Mutex
	calls  int
}

func (r *streamReads) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]events.Recorded, error) {
	if r.stream == "" || stream == r.stream {
		r.mu.Lock()
		r.calls++
		r.mu.Unlock()
	}
	return r.Store.ReadStream(ctx, stream, from, limit)
}

func (r *streamReads) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

// A user this node has loaded is decided on as cached, without reading its
// stream, when the decision appends: the append's expected revision is the
// cached version. A user another node changed since conflicts, is read and
// decided again (both changes kept, no contention reported); a decision
// that refuses or changes nothing, which appends nothing, is decided again
// on a read; a user erased through another node is read, found erased and
// refused, with nothing appended.
func TestALoadedUserIsDecidedWithoutReadingItsStream(t *testing.T) {
	eventStores(t, func(t *testing.T, inner events.Store) {
		store := &streamReads{Store: inner}
		reg := catalog.Registry()
		keys := &keyDropper{}
		here := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC)
		other := NewUsers(inner, reg, NewAllocator(inner, reg, 5), testNames, time.Now, time.UTC).WithKeys(keys)
		id := registerOne(t, here, "trusted-"+time.Now().Format("150405.000000000"))
		store.stream = domain.UserStream(id)
		if _, err := here.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: domain.Val("one")}, Meta{}); err != nil {
			t.Fatal(err) // loads the user
		}
		reads := func(what string, want int, run func()) {
			t.Helper()
			before := store.count()
			run()
			if got := store.count() - before; got != want {
				t.Errorf("%s: %d reads of the user's stream, want %d", what, got, want)
			}
		}
		reads("a change of a loaded user", 0, func() {
			if _, err := here.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: domain.Val("two")}, Meta{}); err != nil {
				t.Fatal(err)
			}
		})
		if _, err := other.UpdateProfile(ctx, 1, id, ProfilePatch{Name: domain.Val("Changed elsewhere")}, Meta{}); err != nil {
			t.Fatal(err)
		}
		reads("a change after another node's", 1, func() {
			if _, err := here.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: domain.Val("three")}, Meta{}); err != nil {
				t.Fatal(err)
			}
		})
		if p := profileOf(t, inner, id); p.Name != "Changed elsewhere" || p.Nickname == nil || *p.Nickname != "three" {
			t.Fatalf("profile: name %q nickname %v; want both nodes' changes", p.Name, p.Nickname)
		}
		head, err := inner.ReadStream(ctx, domain.UserStream(id), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		last := head[len(head)-1].Position
		reads("an unchanged patch", 1, func() {
			if pos, err := here.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: domain.Val("three")}, Meta{}); err != nil || pos != last {
				t.Fatalf("unchanged patch: %v at %v, want nothing appended (stream ends at %v)", err, pos, last)
			}
		})
		reads("another app's patch", 1, func() {
			if _, err := here.UpdateProfile(ctx, 2, id, ProfilePatch{Nickname: domain.Val("x")}, Meta{}); !errors.Is(err, domain.ErrUserNotFound) {
				t.Fatalf("another app's patch: %v, want user not found", err)
			}
		})
		if _, err := other.Erase(ctx, id, "asked", Meta{Actor: "op"}); err != nil {
			t.Fatal(err)
		}
		erased, err := inner.ReadStream(ctx, domain.UserStream(id), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		reads("a patch of a user erased elsewhere", 1, func() {
			if _, err := here.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: domain.Val("after")}, Meta{}); !errors.Is(err, domain.ErrUserNotFound) {
				t.Fatalf("patch of a user erased elsewhere: %v, want user not found", err)
			}
		})
		if after, err := inner.ReadStream(ctx, domain.UserStream(id), 0, 0); err != nil || len(after) != len(erased) {
			t.Fatalf("the refused patch appended %d events (%v)", len(after)-len(erased), err)
		}
	})
}
