package webhooks

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	evmemory "github.com/healthtech/partner-open-platform/events/memory"
)

// deferralStore records, per append, whether its context was deferrable
// and since when its work was ready.
type deferralStore struct {
	*countingStore
	mu    sync.Mutex
	seen  []bool
	ready []time.Time
}

func (s *deferralStore) record(ctx context.Context) {
	ready, ok := events.DeferrableFrom(ctx)
	s.mu.Lock()
	s.seen, s.ready = append(s.seen, ok), append(s.ready, ready)
	s.mu.Unlock()
}

func (s *deferralStore) Append(ctx context.Context, stream string, expected events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	s.record(ctx)
	return s.countingStore.Append(ctx, stream, expected, evs...)
}

func (s *deferralStore) AppendMulti(ctx context.Context, parts ...events.StreamAppend) ([]events.AppendResult, error) {
	s.record(ctx)
	return s.countingStore.AppendMulti(ctx, parts...)
}

// prepared is a batch of one delivery of app 1, prepared at ready.
func prepared(t *testing.T, d *Dispatcher, id string, ready time.Time) PreparedBatch {
	t.Helper()
	c := catalog.DeliveryCreated{DeliveryID: id, AppID: 1, Event: "user.profile.updated", SourceStream: "user-" + id,
		Body: `{"delivery_id":"` + id + `","open_user_id":7}`, Deliver: true}
	ev, err := d.encode(c, "")
	if err != nil {
		t.Fatal(err)
	}
	return PreparedBatch{created: []catalog.DeliveryCreated{c}, evs: []events.Proposed{ev}, ready: ready}
}

// Batches committed together are deferrable from when the oldest was
// prepared: a batch staged behind a held commit has already waited, and
// its creation must not wait a whole hold again.
func TestACreationsDeferralCountsFromItsPreparation(t *testing.T) {
	f := newKnownFixture(t, false)
	store := &deferralStore{countingStore: f.store}
	f.d.Store = store
	older, newer := time.Now().Add(-time.Second), time.Now()
	if err := f.d.CommitBatches(context.Background(), []PreparedBatch{prepared(t, f.d, "d1", newer), prepared(t, f.d, "d2", older)}); err != nil {
		t.Fatal(err)
	}
	if len(store.seen) == 0 {
		t.Fatal("no append")
	}
	for i := range store.seen {
		if !store.seen[i] || !store.ready[i].Equal(older) {
			t.Fatalf("append %d: deferrable %v since %v, want deferrable since the oldest preparation %v", i, store.seen[i], store.ready[i], older)
		}
	}
}

// PrepareBatch stamps when the batch was ready (after its waits for the
// read models), so CommitBatches counts the deferral from then.
func TestAPreparedBatchKnowsWhenItWasReady(t *testing.T) {
	ctx := context.Background()
	reg := catalog.Registry()
	log := evmemory.New()
	defer log.Close()
	p := catalog.FamilyMemberUpdated{ChannelUserID: "ch-user-1", OpenUserID: 100001, Changed: []string{"name"},
		Member: catalog.Member{MemberID: 1, AppUserID: "app-user-1", FamilyGroupID: 7, AppGroupID: 3, Name: "Member"}}
	ev, err := reg.Encode(p, events.Metadata{AppID: 17, Actor: "test", OccurredAt: time.Date(2026, 11, 24, 6, 30, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := log.Append(ctx, "user-1", events.Any(), ev); err != nil {
		t.Fatal(err)
	}
	recs, err := log.ReadAll(ctx, events.Position{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	d := &Dispatcher{Store: log, Registry: reg, AppsReady: caughtUp{}, Projected: caughtUp{}, Clock: SystemClock{}, Location: time.UTC,
		Apps: benchApps{domain.App{AppID: 17, WebhookURL: "http://127.0.0.1:9/hook"}}}
	before := time.Now()
	got, err := d.PrepareBatch(ctx, recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.created) != 1 || got.ready.Before(before) || got.ready.After(time.Now()) {
		t.Fatalf("%d deliveries prepared at %v, want one stamped during PrepareBatch (after %v)", len(got.created), got.ready, before)
	}
	if empty, _ := d.PrepareBatch(ctx, nil); !empty.ready.IsZero() || !oldestReady([]PreparedBatch{empty}).IsZero() {
		t.Fatal("an empty batch carries a ready time")
	}
}
