package webhooks_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// feedAnswer is one feed request's answer, read off the test goroutine.
type feedAnswer struct {
	status  int
	code    any
	retry   string
	page    harness.FeedPage
	raw     []byte
	err     error
	elapsed time.Duration
}

// waitFeed sends GET /open/v1/webhooks/events with wait in the background
// and returns where its answer will arrive.
func waitFeed(t *testing.T, a *harness.App, after string, wait int) <-chan feedAnswer {
	t.Helper()
	req := a.Request("GET", fmt.Sprintf("/open/v1/webhooks/events?after=%s&wait=%d", after, wait), nil, time.Now())
	out := make(chan feedAnswer, 1)
	go func() {
		began := time.Now()
		res, err := a.P.Client.Do(req)
		if err != nil {
			out <- feedAnswer{err: err}
			return
		}
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		ans := feedAnswer{status: res.StatusCode, retry: res.Header.Get("Retry-After"), raw: raw, err: err, elapsed: time.Since(began)}
		var env struct {
			Code any             `json:"code"`
			Data json.RawMessage `json:"data"`
		}
		if ans.err == nil {
			ans.err = json.Unmarshal(raw, &env)
		}
		ans.code = env.Code
		if ans.err == nil && res.StatusCode == http.StatusOK {
			ans.err = json.Unmarshal(env.Data, &ans.page)
		}
		out <- ans
	}()
	return out
}

func answerOf(t *testing.T, ch <-chan feedAnswer) feedAnswer {
	t.Helper()
	select {
	case ans := <-ch:
		if ans.err != nil {
			t.Fatalf("feed request: %v (body %s)", ans.err, ans.raw)
		}
		return ans
	case <-time.After(harness.WaitBound):
		t.Fatal("the feed request did not answer")
	}
	return feedAnswer{}
}

// trigger asks for one sample event of typ for the sandbox app.
func trigger(t *testing.T, a *harness.App, typ string) {
	t.Helper()
	a.Expect("POST", "/open/v1/webhooks/sandbox-events", map[string]any{"event": typ}, http.StatusAccepted, "0")
}

// A feed request with wait and nothing after its cursor holds on and
// answers with the event written after it began (the event's cursor as
// next_cursor); a wait with nothing new answers 200 with no events and
// the cursor it was given once the wait ends; neither appends anything.
func TestFeedWaitAnswersWithAnEventWrittenWhileItWaits(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		p := harness.Start(t, cfg)
		a := p.CreateApp("long-poll")
		trigger(t, a, "user.profile.updated")
		start := feedAfter(t, a, "", 1)[0].Cursor

		// Nothing new: a short wait ends empty, as a read without wait would.
		before := p.EventCount()
		empty := answerOf(t, waitFeed(t, a, start, 1))
		if empty.status != http.StatusOK || len(empty.page.Events) != 0 || empty.page.NextCursor != start || empty.page.HasMore {
			t.Fatalf("empty wait: %d %s", empty.status, empty.raw)
		}
		if n := p.EventCount(); n != before {
			t.Fatalf("a waiting read appended %d events", n-before)
		}

		// The event arrives while the request waits. The pause only gives
		// the request time to start waiting; were it late, the event would
		// already be there and the answer the same.
		waiting := waitFeed(t, a, start, harnessWait)
		time.Sleep(300 * time.Millisecond)
		trigger(t, a, "order.shipped")
		got := answerOf(t, waiting)
		if got.status != http.StatusOK || len(got.page.Events) != 1 || got.page.Events[0].Event != "order.shipped" ||
			got.page.NextCursor != got.page.Events[0].Cursor || got.page.NextCursor == start {
			t.Fatalf("waiting read: %d %s", got.status, got.raw)
		}
		if got.elapsed >= harnessWait*time.Second {
			t.Fatalf("the waiting read answered only when its wait ended (%v): the event did not wake it", got.elapsed)
		}
		// It is the feed's entry for that event, bytes and all.
		if f := feedAfter(t, a, start, 1)[0]; f.DeliveryID != got.page.Events[0].DeliveryID || string(f.Payload) != string(got.page.Events[0].Payload) {
			t.Fatalf("feed %+v, waited %+v", f, got.page.Events[0])
		}
		// Metrics keep waits apart from reads: latency alerts judge the
		// reads, and a wait lasts what its caller chose.
		m := scrape(t, p)
		waits := `platform_http_request_duration_seconds_count{method="GET",route="/open/v1/webhooks/events?wait",status="200"} 2`
		reads := `platform_http_request_duration_seconds_count{method="GET",route="/open/v1/webhooks/events",status="200"}`
		if !strings.Contains(m, waits) || !strings.Contains(m, reads) {
			t.Fatalf("metrics of the feed, want the two waits under their own route label:\n%s", grepLines(m, "webhooks/events"))
		}
	})
}

// harnessWait is the wait of the requests that an event or a shutdown must
// end: the longest the API takes, so a request that merely waited it out
// is told apart from one that was woken.
const harnessWait = 20

// An app may keep FeedWaitersPerApp requests waiting on a node; one more
// answers 429 HTTP_429 with Retry-After and appends nothing. A node that
// begins to shut down answers every waiting request at once with what it
// has (no events, the cursor given) instead of holding the shutdown, and
// later requests with wait answer without waiting.
func TestFeedWaitersAreBoundedAndEndAtShutdown(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	a := p.CreateApp("waiters")
	trigger(t, a, "order.shipped")
	start := feedAfter(t, a, "", 1)[0].Cursor
	b := p.CreateApp("other")
	before := p.EventCount()

	// One more request than the bound, all waiting side by side (their
	// waits overlap whatever the scheduling): exactly one is refused.
	const bound = 8 // queryapi.FeedWaitersPerApp
	answers := make(chan feedAnswer, bound+1)
	for range bound + 1 {
		ch := waitFeed(t, a, start, harnessWait)
		go func() { answers <- <-ch }()
	}
	refused := answerOf(t, answers)
	if refused.status != http.StatusTooManyRequests || fmt.Sprint(refused.code) != "HTTP_429" || refused.retry == "" {
		t.Fatalf("the request beyond the bound: %d %s (Retry-After %q)", refused.status, refused.raw, refused.retry)
	}
	// Another app is not limited by this one's waiters.
	if other := answerOf(t, waitFeed(t, b, "", 1)); other.status != http.StatusOK {
		t.Fatalf("another app's wait: %d %s", other.status, other.raw)
	}

	p.Node.Drain()
	for i := range bound {
		ans := answerOf(t, answers)
		if ans.status != http.StatusOK || len(ans.page.Events) != 0 || ans.page.NextCursor != start {
			t.Fatalf("waiter %d at shutdown: %d %s", i, ans.status, ans.raw)
		}
		if ans.elapsed >= harnessWait*time.Second {
			t.Fatalf("waiter %d answered only when its wait ended (%v), not at shutdown", i, ans.elapsed)
		}
	}
	if late := answerOf(t, waitFeed(t, a, start, harnessWait)); late.status != http.StatusOK || late.elapsed >= harnessWait*time.Second {
		t.Fatalf("a wait after shutdown began: %d after %v", late.status, late.elapsed)
	}
	if n := p.EventCount(); n != before {
		t.Fatalf("waiting reads appended %d events", n-before)
	}
}
