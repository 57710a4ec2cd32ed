package subscribe_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/events/subscribe"
)

// inOrder is a read model that keeps the ids of the events it applied, in
// the order applied, and says when a batch's checkpoint is not its last
// event (it handles every event, so the two are the same).
type inOrder struct {
	name string

	mu      sync.Mutex
	ids     []string
	pos     events.Position
	badMark string
}

func (o *inOrder) Name() string        { return o.name }
func (o *inOrder) Handles(string) bool { return true }
func (o *inOrder) Checkpoint(context.Context) (events.Position, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pos, nil
}
func (o *inOrder) Reset(context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ids, o.pos = nil, events.Position{}
	return nil
}
func (o *inOrder) Apply(_ context.Context, batch []events.Envelope, pos events.Position) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, env := range batch {
		o.ids = append(o.ids, env.ID)
	}
	if n := len(batch); n > 0 && batch[n-1].Position != pos && o.badMark == "" {
		o.badMark = fmt.Sprintf("a batch ending with %s committed %s", batch[n-1].Position, pos)
	}
	o.pos = pos
	return nil
}

func (o *inOrder) applied() ([]string, string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.ids), o.badMark
}

// appendRuns appends n events over a few streams in appends of varying
// sizes, so that the log's appends, its pages and the batches applied all
// end in different places.
func appendRuns(t *testing.T, store events.Store, from, n int) {
	t.Helper()
	for i := from; i < from+n; {
		size := min(1+(i*7)%37, from+n-i)
		evs := make([]events.Proposed, size)
		for j := range evs {
			evs[j] = events.Proposed{ID: fmt.Sprintf("ev-%06d", i+j), Type: "t", Data: []byte(`{}`)}
		}
		if _, err := store.Append(context.Background(), fmt.Sprint("s-", i%5), events.Any(), evs...); err != nil {
			t.Fatal(err)
		}
		i += size
	}
}

// Read models apply the log in its order, every event once, whether they
// replay it at start, rebuild it together (paced) or follow appends made
// while they replay: a runner's reader (subscription, decryption, pacing)
// works ahead of its applier, and nothing between the two may move an
// event, so a rebuild's result equals the replay's.
func TestReadModelsApplyTheLogInItsOrder(t *testing.T) {
	store := memory.New()
	defer store.Close()
	const before, during = 5_000, 3_000
	appendRuns(t, store, 0, before)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	models := []*inOrder{{name: "a"}, {name: "b"}, {name: "c"}}
	var set subscribe.RunnerSet
	for i, m := range models {
		r := subscribe.NewRunner(store, nil, m, log, nil)
		r.BatchSize(100 + 23*i) // batches that cut pages anywhere
		run(t, r)
		set = append(set, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wantAll := func(what string) {
		t.Helper()
		_, recs := reached(t, ctx, store, set)
		want := make([]string, len(recs))
		for i, rec := range recs {
			want[i] = rec.ID
		}
		for _, m := range models {
			got, bad := m.applied()
			if bad != "" {
				t.Fatalf("%s, %s: %s", what, m.name, bad)
			}
			if !slices.Equal(got, want) {
				at := 0
				for at < min(len(got), len(want)) && got[at] == want[at] {
					at++
				}
				t.Fatalf("%s: %s applied %d events, the log holds %d; first difference at %d (%v against the log's %v)",
					what, m.name, len(got), len(want), at, got[at:min(at+3, len(got))], want[at:min(at+3, len(want))])
			}
		}
	}
	// The replay at start, with appends landing while it runs.
	appendRuns(t, store, before, during)
	wantAll("replay")
	// A rebuild of all of them together, paced, with appends again.
	if _, _, err := set.Rebuild(ctx, subscribe.AllReadModels); err != nil {
		t.Fatal(err)
	}
	appendRuns(t, store, before+during, during)
	wantAll("rebuild")
}

// reached waits until every runner of set reached the log's head, and
// returns the head and the log.
func reached(t *testing.T, ctx context.Context, store events.Store, set subscribe.RunnerSet) (events.Position, []events.Recorded) {
	t.Helper()
	head, err := store.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := set.WaitFor(ctx, head); err != nil {
		t.Fatal(err)
	}
	recs, err := store.ReadAll(ctx, events.Position{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return head, recs
}
