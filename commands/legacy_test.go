package commands

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
	keyfiles "github.com/healthtech/partner-open-platform/internal/datakeys/files"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/internal/secrets"
	"github.com/healthtech/partner-open-platform/privacy"
	"github.com/healthtech/partner-open-platform/projections"
	projmemory "github.com/healthtech/partner-open-platform/projections/memory"
	projpg "github.com/healthtech/partner-open-platform/projections/postgres"
)

// testdata/legacy-channel-users.json is a log written by the release
// before hashed binding names (commit 5d13e1c, its own commands and
// privacy store): events as stored, personal fields sealed, with the data
// keys and the master key that seals them. App 1: user 1 li.lei@example.com
// (a group, two members, a profile update), user 2 "+86 138-0013 8000",
// user 4 erased@example.com erased; app 2: user 3 li.lei@example.com.
type legacyFixture struct {
	MasterKey string            `json:"master_key"`
	Keys      []datakeys.Record `json:"keys"`
	Events    []struct {
		Stream string `json:"stream"`
		ID     string `json:"id"`
		Type   string `json:"type"`
		Data   string `json:"data"` // the stored bytes as JSON text
		Meta   string `json:"meta"`
	} `json:"events"`
}

// loadLegacy writes the fixture's events into inner exactly as stored, and
// its data keys into a key store; it returns the decrypting store over
// inner and the key store.
func loadLegacy(t *testing.T, inner events.Store) (*privacy.Store, *datakeys.Keys) {
	t.Helper()
	raw, err := os.ReadFile("testdata/legacy-channel-users.json")
	if err != nil {
		t.Fatal(err)
	}
	var f legacyFixture
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	master, err := hex.DecodeString(f.MasterKey)
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := secrets.New(master)
	if err != nil {
		t.Fatal(err)
	}
	backend, err := keyfiles.Open(filepath.Join(t.TempDir(), "keys"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	for _, rec := range f.Keys {
		if _, err := backend.Insert(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	for _, ev := range f.Events {
		if _, err := inner.Append(ctx, ev.Stream, events.Any(), events.Proposed{ID: ev.ID, Type: ev.Type, Data: []byte(ev.Data), Meta: []byte(ev.Meta)}); err != nil {
			t.Fatal(err)
		}
	}
	ks := datakeys.New(backend, sealer)
	return privacy.New(inner, ks), ks
}

// A log written by the release before hashed binding names keeps working:
// its users are found by their channel_user_id (no second open_user_id,
// also under concurrent registers), an erasure frees their legacy binding,
// a channel_user_id erased by the old release registers as a new person,
// and every binding written now is hashed, its id sealed.
func TestLegacyBindingsKeepWorking(t *testing.T) {
	eventStores(t, func(t *testing.T, inner events.Store) {
		store, ks := loadLegacy(t, inner)
		reg := catalog.Registry()
		// A log that had users: legacy bindings possible, as the node decides.
		u := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC).WithKeys(ks).WithLegacyBindings(true)
		register := func(app int64, channel string) RegisterResult {
			t.Helper()
			res, err := u.Register(ctx, Register{AppID: app, ChannelUserID: channel, User: UserInput{Name: "again"}}, Meta{AppID: app})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		// Registered by the old release: the same ids, nothing created.
		li := register(1, "li.lei@example.com")
		if li.Created || li.OpenUserID != 1 || li.ChannelUserID != "li.lei@example.com" || len(li.Groups) != 1 || len(li.Members) != 2 {
			t.Fatalf("legacy user re-registered: %+v", li)
		}
		if r := register(1, "+86 138-0013 8000"); r.Created || r.OpenUserID != 2 {
			t.Fatalf("legacy phone user: %+v", r)
		}
		if r := register(2, "li.lei@example.com"); r.Created || r.OpenUserID != 3 {
			t.Fatalf("legacy user of app 2: %+v", r)
		}
		// Concurrent registers of a legacy user all find it.
		var wg sync.WaitGroup
		results := make([]RegisterResult, 10)
		errs := make([]error, 10)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = u.Register(ctx, Register{AppID: 1, ChannelUserID: "li.lei@example.com", User: UserInput{Name: "x"}}, Meta{AppID: 1})
			}()
		}
		wg.Wait()
		for i := range results {
			if errs[i] != nil || results[i].Created || results[i].OpenUserID != 1 {
				t.Fatalf("concurrent register %d: %+v %v", i, results[i], errs[i])
			}
		}
		// None of that wrote a binding: neither hashed nor legacy streams moved.
		if recs, _ := inner.ReadStream(ctx, testNames.BindingStream(1, "li.lei@example.com"), 0, 0); len(recs) != 0 {
			t.Fatalf("a legacy user got a second binding: %+v", recs)
		}
		// Erased by the old release: a new person, bound on the hashed stream.
		again := register(1, "erased@example.com")
		if !again.Created || again.OpenUserID <= 4 {
			t.Fatalf("re-register of a channel user the old release erased: %+v", again)
		}
		hashed := testNames.BindingStream(1, "erased@example.com")
		checkSealedBinding(t, inner, hashed, "erased@example.com")
		// An erasure now frees the legacy binding, and neither of its
		// events names the channel user.
		if _, err := u.Erase(ctx, 2, "ticket 2", Meta{Actor: "operator-1"}); err != nil {
			t.Fatal(err)
		}
		legacy := domain.LegacyBindingStream(1, "+86 138-0013 8000")
		recs, err := inner.ReadStream(ctx, legacy, 0, 0)
		if err != nil || len(recs) != 2 || recs[1].Type != "channel_user.unbound" || strings.Contains(string(recs[1].Data), "0013 8000") {
			t.Fatalf("legacy binding after the erasure: %+v %v", recs, err)
		}
		userRecs, _ := inner.ReadStream(ctx, domain.UserStream(2), 0, 0)
		if last := userRecs[len(userRecs)-1]; last.Type != "user.erased" || strings.Contains(string(last.Data), "channel_user_id") {
			t.Fatalf("user.erased: %s %s", last.Type, last.Data)
		}
		phone := register(1, "+86 138-0013 8000")
		if !phone.Created || phone.OpenUserID == 2 {
			t.Fatalf("re-register after erasure: %+v", phone)
		}
		checkSealedBinding(t, inner, testNames.BindingStream(1, "+86 138-0013 8000"), "0013 8000")
		// A new channel user: hashed stream, no legacy one.
		fresh := register(1, "new.user@example.com")
		if !fresh.Created {
			t.Fatalf("new user: %+v", fresh)
		}
		checkSealedBinding(t, inner, testNames.BindingStream(1, "new.user@example.com"), "new.user")
		if recs, _ := inner.ReadStream(ctx, domain.LegacyBindingStream(1, "new.user@example.com"), 0, 0); len(recs) != 0 {
			t.Fatal("a new user was bound under the legacy name")
		}
		// Erasing a user bound now frees the hashed binding; replays then
		// read no channel_user_id of theirs anywhere.
		if _, err := u.Erase(ctx, fresh.OpenUserID, "ticket 3", Meta{Actor: "operator-1"}); err != nil {
			t.Fatal(err)
		}
		all, err := store.ReadAll(ctx, events.Position{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range all {
			if strings.Contains(string(rec.Data), "new.user") || strings.Contains(rec.Stream, "new.user") {
				t.Fatalf("the erased channel_user_id survives in %s %s: %s", rec.Stream, rec.Type, rec.Data)
			}
		}
		if r := register(1, "new.user@example.com"); !r.Created || r.OpenUserID == fresh.OpenUserID {
			t.Fatalf("re-register after erasing a hashed binding: %+v", r)
		}

		// The read models, rebuilt from this mixed log, find users by channel_user_id.
		readModels(t, func(t *testing.T, rm projections.UserStore) {
			project(t, store, rm)
			for _, c := range []struct {
				app     int64
				channel string
				want    int64
			}{{1, "li.lei@example.com", 1}, {2, "li.lei@example.com", 3}, {1, "erased@example.com", again.OpenUserID}, {1, "+86 138-0013 8000", phone.OpenUserID}} {
				got, err := rm.UserByChannelID(ctx, c.app, c.channel)
				if err != nil || got.OpenUserID != c.want {
					t.Fatalf("user by channel id %d %q: %+v %v, want %d", c.app, c.channel, got, err, c.want)
				}
			}
			if ms, err := rm.Members(ctx, 1, 1, time.Time{}); err != nil || len(ms) != 2 {
				t.Fatalf("legacy user's members: %+v %v", ms, err)
			}
			for _, erased := range []int64{2, 4, fresh.OpenUserID} {
				if _, err := rm.User(ctx, 1, erased); !errors.Is(err, projections.ErrNotFound) {
					t.Fatalf("erased user %d: %v", erased, err)
				}
			}
		})
	})
}

// checkSealedBinding: the binding stream holds one channel_user.bound, as
// stored with the id sealed (the clear text nowhere in it).
func checkSealedBinding(t *testing.T, inner events.Store, stream, clear string) {
	t.Helper()
	recs, err := inner.ReadStream(ctx, stream, 0, 0)
	if err != nil || len(recs) == 0 || recs[0].Type != "channel_user.bound" {
		t.Fatalf("binding %s: %+v %v", stream, recs, err)
	}
	if strings.Contains(string(recs[0].Data), clear) || !strings.Contains(string(recs[0].Data), `"channel_user_id":{"$enc":`) {
		t.Fatalf("binding stored as %s", recs[0].Data)
	}
}

// readModels runs a test on the memory and the Postgres users read model.
func readModels(t *testing.T, test func(t *testing.T, rm projections.UserStore)) {
	t.Run("memory read model", func(t *testing.T) { test(t, projmemory.New()) })
	t.Run("postgres read model", func(t *testing.T) {
		s, err := projpg.Open(context.Background(), pgtest.New(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		test(t, s)
	})
}

// project replays the whole log into the users read model.
func project(t *testing.T, store events.Store, rm projections.UserStore) {
	t.Helper()
	recs, err := store.ReadAll(ctx, events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := projections.UsersProjector(rm)
	reg := catalog.Registry()
	var batch []events.Envelope
	for _, rec := range recs {
		env, err := reg.Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, env)
	}
	if err := p.Apply(ctx, batch, recs[len(recs)-1].Position); err != nil {
		t.Fatal(err)
	}
}

// legacyReads counts the reads of legacy binding streams.
type legacyReads struct {
	events.Store
	n atomic.Int64
}

func (s *legacyReads) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]events.Recorded, error) {
	if _, _, ok := domain.ParseLegacyBindingStream(stream); ok {
		s.n.Add(1)
	}
	return s.Store.ReadStream(ctx, stream, from, limit)
}

// A handler told that the log holds no legacy bindings (a log begun with
// hashed names) reads no legacy binding stream on a register; one told
// nothing reads it whenever the hashed stream was never written (always
// right, one read more), and so finds a legacy binding.
func TestLegacyReadsOnlyWhenPossible(t *testing.T) {
	eventStores(t, func(t *testing.T, inner events.Store) {
		store := &legacyReads{Store: inner}
		reg := catalog.Registry()
		channel := "reads-" + time.Now().Format("150405.000000000")
		fresh := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC).WithLegacyBindings(false)
		if _, err := fresh.Register(ctx, Register{AppID: 1, ChannelUserID: channel, User: UserInput{Name: "n"}}, Meta{AppID: 1}); err != nil {
			t.Fatal(err)
		}
		if n := store.n.Load(); n != 0 {
			t.Fatalf("a register on a log begun with hashed names read %d legacy streams", n)
		}
		ev, err := reg.Encode(catalog.ChannelUserBound{AppID: 1, ChannelUserID: channel + "-old", OpenUserID: 77}, events.Metadata{AppID: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := inner.Append(ctx, domain.LegacyBindingStream(1, channel+"-old"), events.NoStream(), ev); err != nil {
			t.Fatal(err)
		}
		undecided := NewUsers(store, reg, NewAllocator(store, reg, 5), testNames, time.Now, time.UTC)
		res, err := undecided.Register(ctx, Register{AppID: 1, ChannelUserID: channel + "-old", User: UserInput{Name: "n"}}, Meta{AppID: 1})
		if err != nil || res.OpenUserID != 77 {
			t.Fatalf("register of a legacy-bound id: %+v %v", res, err)
		}
		if n := store.n.Load(); n != 1 {
			t.Fatalf("an undecided handler read %d legacy streams, want 1", n)
		}
	})
}
