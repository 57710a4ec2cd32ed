package cluster_test

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/healthtech/partner-open-platform/e2e/harness"
)

// A register of a new channel user sends no read of its binding stream: it
// claims the binding as a stream never written, and the append's expected
// revision catches one bound already. A channel user bound through another
// node is then read on this one and answered 200 with the ids it was given,
// nothing appended; two nodes registering one channel user at once make one
// user, answered 201 on one node and 200 with the same ids on the other.
func TestARegisterOfANewChannelUserReadsNoStream(t *testing.T) {
	t.Parallel()
	db := harness.NodeDB(t)
	stmts, proxied := harness.CountStatements(t, db)
	cfg := harness.ClusterConfig(t, proxied, "node-one", 0)
	cfg.IDBlockSize = 1000 // no id block is reserved (a stream read) while counting
	one := harness.Start(t, cfg)
	two := harness.Start(t, harness.ClusterConfig(t, db, "node-two", 0))
	a := two.CreateApp("register-guess")
	onOne, onTwo := a.On(one), a.On(two)
	onOne.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("guess-warm-up"), http.StatusCreated, "0")

	streamReads := func() int { return stmts.Count(harness.Has("WHERE stream = $1 AND revision >= $2")) }
	before := streamReads()
	const n = 10
	for i := range n {
		onOne.Expect("POST", "/open/v1/channel/users", harness.RegisterBody(fmt.Sprintf("guess-%d", i)), http.StatusCreated, "0")
	}
	if got := streamReads() - before; got != 0 {
		t.Errorf("%d registers of new channel users sent %d stream reads, want none", n, got)
	}

	// body is a register of channelUserID whose nickname makes its
	// signature its own (an identical body in the same second is a replay).
	body := func(channelUserID, nickname string) map[string]any {
		b := harness.RegisterBody(channelUserID)
		b["user"].(map[string]any)["nickname"] = nickname
		return b
	}
	var first, again harness.RegisterData
	onTwo.Expect("POST", "/open/v1/channel/users", body("bound-elsewhere", "two"), http.StatusCreated, "0").Data(t, &first)
	count := one.EventCount()
	onOne.Expect("POST", "/open/v1/channel/users", body("bound-elsewhere", "one"), http.StatusOK, "0").Data(t, &again)
	if got := one.EventCount(); got != count {
		t.Errorf("the register of a bound channel user appended %d events", got-count)
	}
	if again.Created || !sameUser(first, again) {
		t.Errorf("register of a channel user bound on node two: %+v, want %+v answered as existing", again, first)
	}

	for k := range 3 {
		channel := fmt.Sprintf("race-%d", k)
		got := make([]harness.Response, 2)
		var wg sync.WaitGroup
		for i, on := range []*harness.App{onOne, onTwo} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[i] = on.Do("POST", "/open/v1/channel/users", body(channel, fmt.Sprintf("node-%d", i)))
			}()
		}
		wg.Wait()
		statuses := []int{got[0].Status, got[1].Status}
		slices.Sort(statuses)
		if !slices.Equal(statuses, []int{http.StatusOK, http.StatusCreated}) {
			t.Fatalf("%s on both nodes at once: %d %s / %d %s, want one 201 and one 200", channel, got[0].Status, got[0].Raw, got[1].Status, got[1].Raw)
		}
		var r0, r1 harness.RegisterData
		got[0].Data(t, &r0)
		got[1].Data(t, &r1)
		if !sameUser(r0, r1) {
			t.Errorf("%s on both nodes at once: %+v and %+v, want one user", channel, r0, r1)
		}
	}
}

// sameUser says whether two register answers name the same user, groups and members.
func sameUser(a, b harness.RegisterData) bool {
	return a.OpenUserID == b.OpenUserID && a.ChannelUserID == b.ChannelUserID &&
		fmt.Sprint(a.FamilyGroups) == fmt.Sprint(b.FamilyGroups) && fmt.Sprint(a.FamilyMembers) == fmt.Sprint(b.FamilyMembers)
}
