package queryapi

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// The event feed's long-poll (the wait parameter): a request with nothing
// after its cursor holds on until an event of its app enters the feed or
// the wait ends, so a partner that follows the feed (openplatform listen,
// a consumer without a public endpoint) sees an event about as soon as a
// webhook would carry it, with one request per event or per wait instead
// of one per polling interval.
const (
	// MaxFeedWait bounds wait: well under the server's 30 s write timeout
	// and the usual proxies' 60 s idle timeouts, so a wait never ends in a
	// cut connection.
	MaxFeedWait = 20
	// FeedWaitersPerApp bounds an app's waiting requests on one node; one
	// more answers 429 HTTP_429 with Retry-After (a listener or two and a
	// few consumers fit; a client that opens more is misbehaving).
	FeedWaitersPerApp = 8
	// feedRecheck is the least time between two reads of one waiter's
	// feed: the deliveries read model advances on every app's deliveries
	// and attempts, and a busy log must not turn each waiter into a loop
	// of queries. An event arriving after a quiet spell is read at once.
	feedRecheck = 200 * time.Millisecond
)

// feedWaiters counts each app's waiting feed requests on this node.
type feedWaiters struct {
	mu sync.Mutex
	n  map[int64]int
}

// enter takes one of the app's waiting places; false when all are taken.
func (f *feedWaiters) enter(appID int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[int64]int{}
	}
	if f.n[appID] >= FeedWaitersPerApp {
		return false
	}
	f.n[appID]++
	return true
}

func (f *feedWaiters) leave(appID int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[appID]--; f.n[appID] <= 0 {
		delete(f.n, appID)
	}
}

// feedWait reads the wait parameter: 0 (answer at once) when absent.
func feedWait(r *http.Request) (time.Duration, error) {
	n, err := httpapi.IntParam(r, "wait", 0, MaxFeedWait)
	return time.Duration(n) * time.Second, err
}

// errTooManyWaiters answers a wait beyond FeedWaitersPerApp.
var errTooManyWaiters = &httpapi.Problem{Status: http.StatusTooManyRequests, Code: "HTTP_429",
	Message: "too many waiting feed requests for this app (at most " + strconv.Itoa(FeedWaitersPerApp) + " per node); retry later",
	Headers: map[string]string{"Retry-After": "1"}}

// awaitFeed calls read until it returns something or wait ends, reading
// again each time the deliveries read model advances (the node learns of
// it from its own projection or, when another node projects it, from the
// owner's announcements): no polling of the store. The read model's
// runner missing (a test's bare API) makes it read once. It ends early,
// with what it last read, when the request ends or the node begins to
// shut down.
func awaitFeed[T any](ctx context.Context, q *API, wait time.Duration, read func() ([]T, error)) ([]T, error) {
	run := q.deliveriesRunner()
	if wait <= 0 || run == nil {
		return read()
	}
	// Taken before the read it guards: an advance during the read wakes
	// the wait at once.
	changed := run.Changed()
	list, err := read()
	if err != nil || len(list) > 0 {
		return list, err
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	last := time.Now()
	for {
		select {
		case <-changed:
		case <-timer.C:
			return list, nil
		case <-ctx.Done():
			return list, nil
		case <-q.Stopping:
			return list, nil
		}
		if d := feedRecheck - time.Since(last); d > 0 {
			pause := time.NewTimer(d)
			select {
			case <-pause.C:
			case <-timer.C:
				pause.Stop()
				return read()
			case <-ctx.Done():
				pause.Stop()
				return list, nil
			case <-q.Stopping:
				pause.Stop()
				return list, nil
			}
		}
		changed, last = run.Changed(), time.Now()
		if list, err = read(); err != nil || len(list) > 0 {
			return list, err
		}
	}
}
