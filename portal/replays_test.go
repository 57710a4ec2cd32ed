package portal_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/portal/portaltest"
)

// From an endpoint's delivery log a developer replays the app's past
// events of a type to that endpoint: the replay page shows its progress
// until it completes, the endpoint receives the same delivery ids again,
// bad input is refused, and another developer's replay is the missing page.
func TestReplayFromTheDeliveryLog(t *testing.T) {
	configs(t, node.Config{WebhookAllowLoopback: true}, func(t *testing.T, cfg node.Config) {
		p := portaltest.Start(t, cfg)
		b, devID := p.Developer(portaltest.Email(t, "replayer"), true)
		other, _ := p.Developer(portaltest.Email(t, "stranger"), true)
		creds := devApp(t, p, devID, "Replays")
		hook := newReceiver(t, "hook")
		epID, _ := addEndpoint(t, b, creds.AppID, hook.srv.URL+"/hook", "user.family_member.created")
		registerUser(t, p, creds, "r-1")
		live := hook.await(t, 2)

		logPath := fmt.Sprintf("/portal/apps/%d/endpoints/%d/deliveries", creds.AppID, epID)
		if page := b.Get(logPath); !strings.Contains(page.Text(), "Replay to this endpoint") {
			t.Fatalf("the delivery log has no replay form: %s", page.Text())
		}
		replays := fmt.Sprintf("/portal/apps/%d/endpoints/%d/replays", creds.AppID, epID)
		if bad := b.Post(replays, url.Values{"events": {"user.nope"}, "since": {"2020-01-01T00:00"}}); bad.Status != http.StatusBadRequest {
			t.Fatalf("unknown event type: %d %s", bad.Status, bad.Text())
		}
		res := b.Post(replays, url.Values{"events": {"user.family_member.created"}, "since": {"2020-01-01T00:00"}})
		m := regexp.MustCompile(`/replays/(\d+)$`).FindStringSubmatch(res.Location())
		if res.Status != http.StatusSeeOther || m == nil {
			t.Fatalf("replay: %d %q %s", res.Status, res.Location(), res.Text())
		}
		page := b.Get(res.Location())
		for deadline := time.Now().Add(20 * time.Second); !strings.Contains(page.Text(), "COMPLETED"); page = b.Get(res.Location()) {
			if time.Now().After(deadline) {
				t.Fatalf("replay page never showed COMPLETED: %s", page.Text())
			}
			time.Sleep(20 * time.Millisecond)
		}
		again := hook.await(t, 4)[2:]
		ids := []string{again[0].id, again[1].id}
		want := []string{live[0].id, live[1].id}
		slices.Sort(ids)
		slices.Sort(want)
		if fmt.Sprint(ids) != fmt.Sprint(want) {
			t.Fatalf("replayed %v, want the original ids %v", ids, want)
		}
		// An endpoint added after the events had no delivery of them: the
		// replay creates them under new ids, derived from the endpoint and
		// the event, signed with its own secret; replayed again, the same ids.
		late := newReceiver(t, "late")
		lateID, lateSecret := addEndpoint(t, b, creds.AppID, late.srv.URL+"/hook", "")
		lateReplays := fmt.Sprintf("/portal/apps/%d/endpoints/%d/replays", creds.AppID, lateID)
		for round := 1; round <= 2; round++ {
			res := b.Post(lateReplays, url.Values{"events": {"user.family_member.created"}, "since": {"2020-01-01T00:00"}})
			if res.Status != http.StatusSeeOther {
				t.Fatalf("replay to the late endpoint: %d %s", res.Status, res.Text())
			}
			for page, deadline := b.Get(res.Location()), time.Now().Add(20*time.Second); !strings.Contains(page.Text(), "COMPLETED"); page = b.Get(res.Location()) {
				if time.Now().After(deadline) {
					t.Fatalf("replay %d to the late endpoint never completed: %s", round, page.Text())
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		got := late.await(t, 4)
		var first, second []string
		for i, w := range got {
			verify(t, w, lateSecret)
			if i < 2 {
				first = append(first, w.id)
			} else {
				second = append(second, w.id)
			}
		}
		slices.Sort(first)
		slices.Sort(second)
		if fmt.Sprint(first) != fmt.Sprint(second) || slices.Contains(want, first[0]) || slices.Contains(want, first[1]) || first[0] == first[1] {
			t.Fatalf("late endpoint got %v then %v (the first endpoint's %v): want two new ids, the same both times", first, second, want)
		}

		if got := other.Get(res.Location()); got.Status != http.StatusNotFound {
			t.Fatalf("another developer's view of the replay: %d", got.Status)
		}
		if got := other.Post(res.Location()+"/cancel", nil); got.Status != http.StatusNotFound {
			t.Fatalf("another developer's cancel: %d", got.Status)
		}
		if got := b.Post(res.Location()+"/cancel", nil); got.Status != http.StatusConflict {
			t.Fatalf("cancel of a completed replay: %d %s", got.Status, got.Text())
		}
	})
}
