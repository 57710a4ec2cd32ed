package commands

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/secrets"
	"github.com/healthtech/partner-open-platform/keys"
	"github.com/healthtech/partner-open-platform/keys/files"
	"github.com/healthtech/partner-open-platform/privacy"
)

// sealingStore is the privacy store over inner with a fresh key store.
func sealingStore(t *testing.T, inner events.Store) (*privacy.Store, *keys.Keys) {
	t.Helper()
	b, err := files.Open(filepath.Join(t.TempDir(), "keys"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := secrets.New(bytes.Repeat([]byte{3}, 32))
	if err != nil {
		t.Fatal(err)
	}
	ks := keys.New(b, m)
	return privacy.New(inner, ks), ks
}

// eraseAround destroys a user's key once, right before or right after the
// next append to the user's stream lands: an erasure (on this node, or on
// another one and seen here) racing a command between its decision and
// the cache's update.
type eraseAround struct {
	*privacy.Store
	keys   *keys.Keys
	stream string
	after  bool // destroy once the append returned, not before it
	armed  atomic.Bool
}

func (e *eraseAround) Append(ctx context.Context, stream string, exp events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	fire := stream == e.stream && e.armed.CompareAndSwap(true, false)
	if fire && !e.after {
		if err := e.keys.Destroy(ctx, stream); err != nil {
			return events.AppendResult{}, err
		}
	}
	res, err := e.Store.Append(ctx, stream, exp, evs...)
	if fire && e.after {
		if derr := e.keys.Destroy(ctx, stream); derr != nil {
			return res, derr
		}
	}
	return res, err
}

// A command whose append races its person's erasure never leaves plaintext
// in the cached user that the log no longer reveals: the cached state is
// always the fold of the stream as a read decrypts it.
func TestCachedUserHoldsNothingTheLogNoLongerReveals(t *testing.T) {
	for _, after := range []bool{false, true} {
		name := "key destroyed before the append"
		if after {
			name = "key destroyed after the append"
		}
		t.Run(name, func(t *testing.T) {
			eventStores(t, func(t *testing.T, inner events.Store) {
				ps, ks := sealingStore(t, inner)
				reg := catalog.Registry()
				race := &eraseAround{Store: ps, keys: ks, after: after}
				u := NewUsers(race, reg, NewAllocator(race, reg, 5), time.Now, time.UTC)
				id := registerOne(t, u, fmt.Sprintf("erased-race-%v-%s", after, time.Now().Format("150405.000000000")))
				race.stream = domain.UserStream(id)
				if _, err := u.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: domain.Val("before")}, Meta{}); err != nil {
					t.Fatal(err) // the user is cached now
				}
				race.armed.Store(true)
				if _, err := u.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: domain.Val("secret-nickname"), Phone: domain.Val("13700137000")}, Meta{}); err != nil {
					t.Fatal(err)
				}
				if race.armed.Load() {
					t.Fatal("the patch appended nothing: the race was not run")
				}
				folded := newUserState()
				n, _, err := (streams{ps, reg}).load(ctx, domain.UserStream(id), folded.apply)
				if err != nil {
					t.Fatal(err)
				}
				if folded.profile.Nickname != nil || folded.profile.Phone != nil {
					t.Fatalf("the log still reveals the erased person's fields: %+v", folded.profile)
				}
				// What the process holds in memory, before any load tidies it
				// (what it decrypted before the erasure goes with the erasure's
				// drop, or at the next load, below): none of the racing
				// command's plaintext.
				if held, version, ok := u.loaded.peek(domain.UserStream(id)); ok && (held.profile.Nickname != nil && *held.profile.Nickname == "secret-nickname" || held.profile.Phone != nil) {
					t.Fatalf("cached user at version %d holds what the log no longer reveals:\n%s\nthe stream as read at %d:\n%s", version, deref(held), n, deref(folded))
				}
				// And what the next decision works on.
				cached, version, _, err := u.loaded.load(ctx, u.streams, domain.UserStream(id))
				if err != nil {
					t.Fatal(err)
				}
				if version != n || !sameUser(cached, folded) {
					t.Fatalf("loaded user at version %d:\n%s\nthe stream as read at %d:\n%s", version, deref(cached), n, deref(folded))
				}
			})
		})
	}
}

// peek copies a cached entry's state as held, without reading the store.
func (c *aggregateCache[S]) peek(stream string) (S, uint64, bool) {
	c.mu.Lock()
	el, ok := c.entries[stream]
	c.mu.Unlock()
	if !ok {
		var zero S
		return zero, 0, false
	}
	e := el.Value.(*cachedAggregate[S])
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state.clone(), e.version, true
}
