package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
)

// registerOne registers a fresh user with one group and returns its id.
func registerOne(t testing.TB, u *Users, channelID string) int64 {
	t.Helper()
	res, err := u.Register(context.Background(), Register{AppID: 1, ChannelUserID: channelID, User: UserInput{Name: "Li"},
		Groups: []GroupInput{{AppGroupID: 7, Name: "Home"}}}, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	return res.OpenUserID
}

// profileOf reads a user's current profile back from its stream.
func profileOf(t *testing.T, store events.Store, id int64) catalog.Profile {
	t.Helper()
	st := newUserState()
	if _, _, err := (streams{store, catalog.Registry()}).load(ctx, domain.UserStream(id), st.apply); err != nil {
		t.Fatal(err)
	}
	return st.profile
}

// A second handler on the same store stands for another node (or the
// process after a restart): what it appends is seen by the first handler's
// next command, which decides on it and not on what it had cached.
func TestCachedUserSeesAnotherNodesAppends(t *testing.T) {
	eventStores(t, func(t *testing.T, store events.Store) {
		reg := catalog.Registry()
		a := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC)
		b := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC)
		id := registerOne(t, a, "stale-"+time.Now().Format("150405.000000000"))
		if _, err := a.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: domain.Val("one")}, Meta{}); err != nil {
			t.Fatal(err) // a has the user cached now
		}
		if _, err := b.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: domain.Val("two")}, Meta{}); err != nil {
			t.Fatal(err)
		}
		// Setting "one" again is a change only if a sees b's "two".
		pos, err := a.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: domain.Val("one")}, Meta{})
		if err != nil {
			t.Fatal(err)
		}
		if got := profileOf(t, store, id).Nickname; got == nil || *got != "one" {
			t.Fatalf("nickname after a's second patch = %v, want one (a decided on stale state)", got)
		}
		recs, err := store.ReadStream(ctx, domain.UserStream(id), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if last := recs[len(recs)-1].Position; last != pos {
			t.Fatalf("patch answered %v, stream ends at %v", pos, last)
		}
		// b's group created elsewhere: a member upsert on a finds it.
		if _, err := b.UpsertGroup(ctx, 1, id, GroupInput{AppGroupID: 8, Name: "Parents"}, Meta{}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.UpsertMember(ctx, 1, id, MemberInput{AppUserID: "m1", AppGroupID: 8, Name: "Han", Relationship: "FATHER"}, Meta{}); err != nil {
			t.Fatalf("member in b's group through a: %v", err)
		}
	})
}

// conflictOnce makes the first append to one stream fail as a conflict
// after another writer got in first, as a racing node would.
type conflictOnce struct {
	events.Store
	stream string
	once   sync.Once
	before func()
}

func (c *conflictOnce) Append(ctx context.Context, stream string, exp events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	if stream == c.stream {
		fired := false
		c.once.Do(func() { fired = true })
		if fired {
			c.before()
		}
	}
	return c.Store.Append(ctx, stream, exp, evs...)
}

// A refused decision or a lost race leaves the cache as the store says:
// the next command decides on the stream's real state.
func TestFailedDecisionsLeaveTheCacheConsistent(t *testing.T) {
	store := memory.New()
	reg := catalog.Registry()
	u := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC)
	id := registerOne(t, u, "fail")
	// Validation error: nothing decided, nothing cached changes.
	if _, err := u.UpsertMember(ctx, 1, id, MemberInput{AppUserID: "m1", AppGroupID: 99, Name: "Han", Relationship: "FATHER"}, Meta{}); !errors.Is(err, domain.ErrFamilyGroupNotFound) {
		t.Fatalf("member in a missing group: %v", err)
	}
	// Another app's user is not found, and stays so.
	if _, err := u.UpdateProfile(ctx, 2, id, ProfilePatch{Nickname: domain.Val("x")}, Meta{}); !errors.Is(err, domain.ErrUserNotFound) {
		t.Fatalf("other app's patch: %v", err)
	}
	res, err := u.UpsertMember(ctx, 1, id, MemberInput{AppUserID: "m1", AppGroupID: 7, Name: "Han", Relationship: "FATHER"}, Meta{})
	if err != nil || !res.Created {
		t.Fatalf("member after refusals: %+v %v", res, err)
	}

	// Conflict: another node renames first; this node's decision loses
	// the race, is decided again on the new state, and wins.
	other := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC)
	racy := &conflictOnce{Store: store, stream: domain.UserStream(id), before: func() {
		if _, err := other.UpdateProfile(ctx, 1, id, ProfilePatch{Name: domain.Val("Other")}, Meta{}); err != nil {
			t.Error(err)
		}
	}}
	u.store = racy
	if _, err := u.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: domain.Val("nick")}, Meta{}); err != nil {
		t.Fatal(err)
	}
	p := profileOf(t, store, id)
	if p.Name != "Other" || p.Nickname == nil || *p.Nickname != "nick" {
		t.Fatalf("profile after the race: name %q nickname %v; want both changes", p.Name, p.Nickname)
	}
	// The member decided before is still known: a second upsert updates it.
	res2, err := u.UpsertMember(ctx, 1, id, MemberInput{AppUserID: "m1", AppGroupID: 7, Name: "Han Li", Relationship: "FATHER"}, Meta{})
	if err != nil || res2.Created || res2.MemberID != res.MemberID {
		t.Fatalf("second upsert: %+v %v (first %+v)", res2, err, res)
	}
}

// A decision works on a copy: changing its fields never reaches the cache.
// (Decisions are pure: they read the state's maps and the values in them and
// write neither; the maps are shared with the cache until it next changes.)
func TestDecisionsWorkOnACopy(t *testing.T) {
	store := memory.New()
	reg := catalog.Registry()
	u := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC)
	id := registerOne(t, u, "copy")
	_, err := u.change(ctx, 1, id, Meta{}, func(st *userState) ([]events.Payload, error) {
		st.profile.Name = "scribbled"
		st.registered = false
		st.groups, st.activeGroups = nil, nil
		return nil, errors.New("refused")
	})
	if err == nil {
		t.Fatal("refusal lost")
	}
	st, _, _, err := u.loaded.load(ctx, u.streams, domain.UserStream(id))
	if err != nil {
		t.Fatal(err)
	}
	if !st.registered || st.profile.Name != "Li" || st.groups[st.activeGroups[7]].name != "Home" {
		t.Fatalf("cached state changed by a refused decision: %+v", st)
	}
}

// The copy a decision works on stays as loaded while other commands
// change the cached user (members, groups, profile, erasure), also when
// they run at the same time (under -race, a map shared with the cache and
// written by it is a reported race).
func TestLoadedCopyIsASnapshot(t *testing.T) {
	store := memory.New()
	reg := catalog.Registry()
	u := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC).WithKeys(&keyDropper{})
	id := registerOne(t, u, "snapshot")
	if _, err := u.UpsertGroup(ctx, 1, id, GroupInput{AppGroupID: 8, Name: "Parents"}, Meta{}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"m1", "m2", "m3"} {
		if _, err := u.UpsertMember(ctx, 1, id, MemberInput{AppUserID: m, AppGroupID: 8, Name: m, Relationship: "SON"}, Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	snap, version, _, err := u.loaded.load(ctx, u.streams, domain.UserStream(id))
	if err != nil {
		t.Fatal(err)
	}
	want := deref(snap)
	stop := make(chan struct{})
	read := make(chan string)
	go func() { // a decision still reading its copy, at least once
		for {
			last := deref(snap)
			_, _ = snap.mapping()
			select {
			case <-stop:
				read <- last
				return
			default:
			}
		}
	}()
	groups, members := snap.mapping()
	changes := []func() error{
		func() error {
			_, err := u.UpsertMember(ctx, 1, id, MemberInput{AppUserID: "m1", AppGroupID: 8, Name: "renamed", Relationship: "SON", IsDefault: domain.Val(true)}, Meta{})
			return err
		},
		func() error { // decides nothing: the cache takes back only what no other copy shares
			_, err := u.UpsertMember(ctx, 1, id, MemberInput{AppUserID: "m1", AppGroupID: 8, Name: "renamed", Relationship: "SON", IsDefault: domain.Val(true)}, Meta{})
			return err
		},
		func() error {
			_, err := u.UpsertMember(ctx, 1, id, MemberInput{AppUserID: "m4", AppGroupID: 7, Name: "new", Relationship: "SON"}, Meta{})
			return err
		},
		func() error { _, err := u.DeleteMember(ctx, 1, id, members[1].MemberID, Meta{}); return err },
		func() error {
			_, err := u.UpsertGroup(ctx, 1, id, GroupInput{AppGroupID: 7, Name: "Renamed"}, Meta{})
			return err
		},
		func() error { _, err := u.DissolveGroup(ctx, 1, id, groups[1].FamilyGroupID, Meta{}); return err },
		func() error {
			_, err := u.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: domain.Val("nick")}, Meta{})
			return err
		},
		func() error { _, err := u.Erase(ctx, id, "test", Meta{}); return err },
	}
	for i, change := range changes {
		if err := change(); err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
		if got := deref(snap); got != want {
			t.Fatalf("after change %d the loaded copy is\n%s\nwas\n%s", i, got, want)
		}
	}
	close(stop)
	if got := <-read; got != want {
		t.Fatalf("a concurrent reader saw\n%s\nwant\n%s", got, want)
	}
	now, nowVersion, _, err := u.loaded.load(ctx, u.streams, domain.UserStream(id))
	if err != nil {
		t.Fatal(err)
	}
	if nowVersion <= version || now.registered || len(now.members) != 0 || len(now.groups) != 0 {
		t.Fatalf("the cache did not follow the changes: version %d (was %d): %s", nowVersion, version, deref(now))
	}
}

// Concurrent commands on one user through one handler (and its cache)
// and a second one: every change lands, none is decided on stale state.
func TestConcurrentCommandsOnOneCachedUser(t *testing.T) {
	eventStores(t, func(t *testing.T, store events.Store) {
		reg := catalog.Registry()
		a := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC)
		b := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC)
		id := registerOne(t, a, "conc-"+time.Now().Format("150405.000000000"))
		const n = 16
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h := a
				if i%4 == 3 {
					h = b
				}
				if _, err := h.UpsertMember(ctx, 1, id, MemberInput{AppUserID: fmt.Sprintf("m%d", i), AppGroupID: 7, Name: "m", Relationship: "SON"}, Meta{}); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		for _, h := range []*Users{a, b} {
			st, _, _, err := h.loaded.load(ctx, h.streams, domain.UserStream(id))
			if err != nil {
				t.Fatal(err)
			}
			if len(st.members) != n {
				t.Fatalf("%d members seen, want %d", len(st.members), n)
			}
		}
	})
}

// keyDropper stands for the key store: erasure only needs Destroy.
type keyDropper struct{ destroyed []string }

func (k *keyDropper) Destroy(_ context.Context, subject string) error {
	k.destroyed = append(k.destroyed, subject)
	return nil
}

// After an erasure no node keeps the person's data loaded: the erasing
// handler drops the user, and another node's cached state is emptied by
// user.erased before any decision.
func TestErasureLeavesNoPersonalDataCached(t *testing.T) {
	store := memory.New()
	reg := catalog.Registry()
	keys := &keyDropper{}
	a := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC).WithKeys(keys)
	b := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC)
	id := registerOne(t, a, "erase")
	if _, err := b.UpsertMember(ctx, 1, id, MemberInput{AppUserID: "m1", AppGroupID: 7, Name: "Han", Relationship: "FATHER", Phone: domain.Val("13800138000")}, Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.UpdateProfile(ctx, 1, id, ProfilePatch{Phone: domain.Val("13900139000")}, Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Erase(ctx, id, "asked", Meta{Actor: "op"}); err != nil {
		t.Fatal(err)
	}
	if a.loaded.len() != 0 {
		t.Fatalf("erasing handler still caches %d users", a.loaded.len())
	}
	if _, err := b.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: domain.Val("x")}, Meta{}); !errors.Is(err, domain.ErrUserNotFound) {
		t.Fatalf("patch of an erased user on the other node: %v", err)
	}
	st, _, _, err := b.loaded.load(ctx, b.streams, domain.UserStream(id))
	if err != nil {
		t.Fatal(err)
	}
	if st.profile != (catalog.Profile{}) || len(st.members) != 0 || len(st.memberByApp) != 0 || len(st.groups) != 0 {
		t.Fatalf("erased user's data still cached on the other node: %+v", st)
	}
}

// The cache is bounded: the least recently used user goes first, and an
// evicted user is loaded again in full on its next command.
func TestAggregateCacheIsBounded(t *testing.T) {
	store := memory.New()
	reg := catalog.Registry()
	u := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC).WithAggregateCache(2)
	var ids []int64
	for i := range 3 {
		id := registerOne(t, u, fmt.Sprintf("lru-%d", i))
		ids = append(ids, id)
		if _, err := u.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: domain.Val("n")}, Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := u.loaded.len(); n != 2 {
		t.Fatalf("%d users cached, bound is 2", n)
	}
	if _, err := u.UpdateProfile(ctx, 1, ids[0], ProfilePatch{Nickname: domain.Val("m")}, Meta{}); err != nil {
		t.Fatal(err)
	}
	if got := profileOf(t, store, ids[0]).Nickname; got == nil || *got != "m" {
		t.Fatalf("evicted user's patch: nickname %v", got)
	}
}

// Orders: goods changed through another handler are seen before an order
// is decided, and a transition decided on a cached order sees another
// node's review.
func TestCachedOrdersSeeAnotherNodesAppends(t *testing.T) {
	store := memory.New()
	reg := catalog.Registry()
	now := func() time.Time { return fixedNow }
	a := NewOrders(store, reg, NewAllocator(store, reg, 5), now)
	b := NewOrders(store, reg, NewAllocator(store, reg, 5), now)
	if _, _, err := a.CreateGoods(ctx, "G1", "Goods", Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ChangeGoods(ctx, "G1", ptr("Renamed"), nil, Meta{}); err != nil {
		t.Fatal(err) // a has G1 cached
	}
	off := false
	if _, err := b.ChangeGoods(ctx, "G1", nil, &off, Meta{}); err != nil {
		t.Fatal(err)
	}
	// Deactivating again through a decides nothing only if a sees b's change.
	before, err := store.ReadStream(ctx, domain.GoodsStream("G1"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.ChangeGoods(ctx, "G1", nil, &off, Meta{}); err != nil {
		t.Fatal(err)
	}
	after, err := store.ReadStream(ctx, domain.GoodsStream("G1"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("a deactivated goods b had deactivated: %d events, want %d", len(after), len(before))
	}
}

// Forget (called when a node's erasure follower sees another node's
// erasure) drops exactly that user's loaded state.
func TestForgetDropsOneCachedUser(t *testing.T) {
	store := memory.New()
	reg := catalog.Registry()
	u := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC)
	a, b := registerOne(t, u, "forget-a"), registerOne(t, u, "forget-b")
	for _, id := range []int64{a, b} {
		if _, err := u.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: domain.Val("n")}, Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := u.loaded.len(); n != 2 {
		t.Fatalf("%d users cached before Forget, want 2", n)
	}
	u.Forget(a)
	if n := u.loaded.len(); n != 1 {
		t.Fatalf("%d users cached after Forget, want 1", n)
	}
}

// readCounter counts the events ReadStream returns.
type readCounter struct {
	events.Store
	mu   sync.Mutex
	read int
}

func (r *readCounter) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]events.Recorded, error) {
	recs, err := r.Store.ReadStream(ctx, stream, from, limit)
	r.mu.Lock()
	r.read += len(recs)
	r.mu.Unlock()
	return recs, err
}

func (r *readCounter) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.read
}

// A command's own append advances the cached user from the bytes it wrote:
// the next command on the user reads none of them back, and the cached
// state is exactly the fold of the stream as the store holds it.
func TestOwnAppendsAdvanceTheCacheAsTheStoreHoldsThem(t *testing.T) {
	eventStores(t, func(t *testing.T, inner events.Store) {
		store := &readCounter{Store: inner}
		reg := catalog.Registry()
		u := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC)
		id := registerOne(t, u, "own-"+time.Now().Format("150405.000000000"))
		if _, err := u.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: domain.Val("one")}, Meta{}); err != nil {
			t.Fatal(err) // loads the user once
		}
		before := store.count()
		m, err := u.UpsertMember(ctx, 1, id, MemberInput{AppUserID: "m1", AppGroupID: 7, Name: "Han", Relationship: "FATHER"}, Meta{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := u.UpsertMember(ctx, 1, id, MemberInput{AppUserID: "m1", AppGroupID: 7, Name: "Han Mei", Relationship: "FATHER"}, Meta{}); err != nil {
			t.Fatal(err)
		}
		if _, err := u.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: domain.Val("two")}, Meta{}); err != nil {
			t.Fatal(err)
		}
		if _, err := u.DeleteMember(ctx, 1, id, m.MemberID, Meta{}); err != nil {
			t.Fatal(err)
		}
		if got := store.count() - before; got != 0 {
			t.Fatalf("%d events of the user's own appends read back, want 0", got)
		}
		// Setting "two" again decides nothing only if the cache has it.
		recs, err := inner.ReadStream(ctx, domain.UserStream(id), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		pos, err := u.UpdateProfile(ctx, 1, id, ProfilePatch{Nickname: domain.Val("two")}, Meta{})
		if err != nil || pos != recs[len(recs)-1].Position {
			t.Fatalf("unchanged patch: %v at %v, want nothing appended (stream ends at %v)", err, pos, recs[len(recs)-1].Position)
		}
		cached, version, _, err := u.loaded.load(ctx, u.streams, domain.UserStream(id))
		if err != nil {
			t.Fatal(err)
		}
		folded := newUserState()
		n, _, err := (streams{inner, reg}).load(ctx, domain.UserStream(id), folded.apply)
		if err != nil {
			t.Fatal(err)
		}
		if version != n || !sameUser(cached, folded) {
			t.Fatalf("cached user at version %d:\n%+v\nthe stream's fold at %d:\n%+v", version, deref(cached), n, deref(folded))
		}
	})
}

// sameUser compares two users' states, not which maps each may write
// without copying (userState.writable differs between a clone and a fold).
func sameUser(a, b *userState) bool {
	x, y := *a, *b
	x.writable, y.writable, x.sharers, y.sharers = 0, 0, [4]uint32{}, [4]uint32{}
	return reflect.DeepEqual(&x, &y)
}

// deref spells a user's state out, pointers followed, for a failure
// message.
func deref(s *userState) string {
	members := map[int64]catalog.Member{}
	for id, m := range s.members {
		members[id] = *m
	}
	groups := map[int64]groupState{}
	for id, g := range s.groups {
		groups[id] = *g
	}
	profile, _ := json.Marshal(s.profile)
	ms, _ := json.Marshal(members)
	return fmt.Sprintf("registered=%v erased=%v app=%d user=%d channel=%s profile=%s groups=%+v active=%v members=%s byApp=%v",
		s.registered, s.erased, s.appID, s.openUserID, s.channelUserID, profile, groups, s.activeGroups, ms, s.memberByApp)
}

// len is the number of cached streams (tests check the bound).
func (c *aggregateCache[S]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// WithAggregateCache bounds how many users stay loaded between commands
// (0 replays every stream from revision 0, as a baseline to measure against).
func (u *Users) WithAggregateCache(n int) *Users {
	u.loaded = newUserCache(n)
	return u
}

// A change decided on a cached user without reading the stream
// (trustedUsers) advances the cache in place once its append lands: the
// copy it decided on is dropped, so the cached maps are nobody else's, and
// the user's members are not copied per upsert. The cache still holds what
// the stream holds.
func TestTrustedChangeAdvancesTheCacheInPlace(t *testing.T) {
	store := memory.New()
	reg := catalog.Registry()
	u := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC)
	id := registerOne(t, u, "in-place")
	upsert := func(i int) {
		t.Helper()
		in := MemberInput{AppUserID: fmt.Sprintf("m-%d", i%3), AppGroupID: 7, Name: fmt.Sprintf("n-%d", i), Relationship: "SON"}
		if _, err := u.UpsertMember(ctx, 1, id, in, Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	stream := domain.UserStream(id)
	members := func() uintptr {
		e := u.loaded.entry(stream)
		e.mu.Lock()
		defer e.mu.Unlock()
		return reflect.ValueOf(e.state.members).Pointer()
	}
	for i := range 3 {
		upsert(i)
	}
	before := members()
	for i := 3; i < 9; i++ {
		upsert(i)
	}
	if after := members(); after != before {
		t.Fatalf("the cached user's members were copied by trusted upserts (map %#x, then %#x)", before, after)
	}
	cached, version, _, err := u.loaded.load(ctx, u.streams, stream)
	if err != nil {
		t.Fatal(err)
	}
	folded := newUserState()
	n, _, err := (streams{store, reg}).load(ctx, stream, folded.apply)
	if err != nil {
		t.Fatal(err)
	}
	if version != n || !sameUser(cached, folded) {
		t.Fatalf("cached user at version %d:\n%s\nthe stream's fold at %d:\n%s", version, deref(cached), n, deref(folded))
	}
}
