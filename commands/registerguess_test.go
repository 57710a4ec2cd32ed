package commands

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Where no binding can sit under a legacy name, a register of a new
// channel user reads no stream (the ids come from an allocator on another
// store view here). A channel user bound already, by this node or another,
// conflicts on its binding, is read and answered with its ids, nothing
// appended and no contention; registers of one channel user racing on two
// nodes make one user.
func TestARegisterOfANewChannelUserReadsNoStream(t *testing.T) {
	eventStores(t, func(t *testing.T, inner events.Store) {
		store := &streamReads{Store: inner}
		reg := catalog.Registry()
		here := NewUsers(store, reg, NewAllocator(inner, reg, 50), testNames, time.Now, time.UTC).WithLegacyBindings(false)
		other := NewUsers(inner, reg, NewAllocator(inner, reg, 50), testNames, time.Now, time.UTC).WithLegacyBindings(false)
		run := time.Now().Format("150405.000000000")
		register := func(u *Users, channel string) RegisterResult {
			t.Helper()
			res, err := u.Register(ctx, Register{AppID: 1, ChannelUserID: channel, User: UserInput{Name: "Li"},
				Groups: []GroupInput{{AppGroupID: 7, Name: "Home"}}}, Meta{})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		register(here, "guess-warm-up-"+run) // the allocator's first blocks

		before := store.count()
		created := register(here, "guess-"+run)
		if got := store.count() - before; got != 0 || !created.Created {
			t.Errorf("register of a new channel user: created %v after %d stream reads, want created after none", created.Created, got)
		}
		for name, u := range map[string]*Users{"this node": here, "another node": other} {
			before := store.count()
			again := register(u, "guess-"+run)
			if again.Created || again.OpenUserID != created.OpenUserID || fmt.Sprint(again.Groups) != fmt.Sprint(created.Groups) {
				t.Errorf("register again on %s: %+v, want %+v answered as existing", name, again, created)
			}
			if u == here && store.count()-before == 0 {
				t.Errorf("register again on %s answered without reading the binding", name)
			}
		}
		if got := len(streamOf(t, inner, created)); got != 2 {
			t.Errorf("the user's stream holds %d events after registers of a bound channel user, want its 2", got)
		}

		for k := range 3 {
			channel := fmt.Sprintf("race-%d-%s", k, run)
			got := make([]RegisterResult, 2)
			var wg sync.WaitGroup
			for i, u := range []*Users{here, other} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got[i], _ = u.Register(ctx, Register{AppID: 1, ChannelUserID: channel, User: UserInput{Name: "Li"}}, Meta{})
				}()
			}
			wg.Wait()
			if got[0].OpenUserID == 0 || got[0].OpenUserID != got[1].OpenUserID || got[0].Created == got[1].Created {
				t.Errorf("%s on two nodes at once: %+v and %+v, want one user created once", channel, got[0], got[1])
			}
		}
	})
}

// streamOf reads the registered user's stream.
func streamOf(t *testing.T, store events.Store, res RegisterResult) []events.Recorded {
	t.Helper()
	recs, err := store.ReadStream(ctx, domain.UserStream(res.OpenUserID), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
