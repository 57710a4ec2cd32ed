package memory

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// A restore builds the deliveries' indexes directly (restoreDeliveries);
// they must be what the projector's puts built in the store the image was
// taken from: the rows, both feeds, status counts, source positions and
// their counts, the subjects' deliveries and the due queue's contents.
func TestRestoreDeliveriesBuildsTheSameIndexes(t *testing.T) {
	ctx := context.Background()
	src := New()
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	statuses := []string{"pending", "retrying", "delivered", "dead_letter"}
	if err := src.UpdateDeliveries(ctx, "deliveries", events.Position{Commit: 1, Prepare: 1}, func(tx projections.DeliveryTx) error {
		for i := 500; i >= 1; i-- { // not in feed order
			next := at.Add(time.Duration(i%7) * time.Minute)
			d := projections.Delivery{DeliveryID: fmt.Sprintf("d%04d", (i*37)%1000), AppID: int64(1 + i%4), EndpointID: int64(i % 2),
				EventType: "user.registered", SourceEventID: fmt.Sprint("e", i/3),
				SourcePosition: events.Position{Commit: uint64(10 + i/3), Prepare: uint64(10 + i/3)}, // three deliveries per source
				Cursor:         events.Position{Commit: uint64(2000 + (i*53)%997), Prepare: uint64(2000 + (i*53)%997)},
				Body:           []byte(`{}`), Status: statuses[i%4], CreatedAt: at, UpdatedAt: at}
			if i%5 != 0 {
				d.Subject = fmt.Sprint("user-", i%40)
			}
			if i%3 != 0 {
				d.NextAttemptAt = &next
			}
			if err := tx.PutDelivery(ctx, d); err != nil {
				return err
			}
			if i%4 == 1 {
				if err := tx.AddAttempt(ctx, projections.Attempt{DeliveryID: d.DeliveryID, Attempt: 1, At: at, Outcome: "retry"}); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	im, err := src.Image(ctx, projections.ReadModelDeliveries)
	if err != nil {
		t.Fatal(err)
	}
	dst := New()
	if err := dst.Restore(ctx, im); err != nil {
		t.Fatal(err)
	}
	a, b := src.deliveryIndexes, dst.deliveryIndexes
	for name, pair := range map[string][2]any{
		"rows": {rowViews(src), rowViews(dst)}, "attempts": {a.attempts, b.attempts}, "feed": {feedIDs(src, a.feed), feedIDs(dst, b.feed)},
		"app feeds": {appFeedIDs(src), appFeedIDs(dst)}, "statuses": {a.statuses, b.statuses}, "sources": {a.sources, b.sources},
		"subjects": {subjectSets(src), subjectSets(dst)},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%s differ after the restore", name)
		}
	}
	due := func(q appDue) []dueKey {
		var keys []dueKey
		for _, h := range q.apps {
			keys = append(keys, h.keys...)
			for i, k := range h.keys {
				if cell := h.at[k.id]; cell == nil || *cell != i || h.pos[i] != cell {
					t.Fatalf("due heap: %s is at %d, its index cell is not that position's", k.id, i)
				}
			}
		}
		slices.SortFunc(keys, compareDue)
		return keys
	}
	if got, want := due(b.due), due(a.due); !reflect.DeepEqual(got, want) || len(want) == 0 {
		t.Errorf("due queue differs after the restore: %d keys, want %d", len(got), len(want))
	}
	if len(a.feed) < 400 || len(a.subjects) == 0 || len(a.sources) == 0 {
		t.Fatalf("fixture too small: %d deliveries, %d subjects, %d sources", len(a.feed), len(a.subjects), len(a.sources))
	}
}

// feedIDs is the delivery ids of a feed of places in s, in its order
// (a restore puts the rows at other places than the puts did).
func feedIDs(s *Store, feed []uint32) []string {
	ids := make([]string, len(feed))
	for i, at := range feed {
		ids[i] = s.deliveries.at(at).deliveryID()
	}
	return ids
}

// appFeedIDs is each app's feed as feedIDs.
func appFeedIDs(s *Store) map[int64][]string {
	out := map[int64][]string{}
	for app, feed := range s.appFeed {
		out[app] = feedIDs(s, feed)
	}
	return out
}

// subjectSets is each subject's delivery ids, sorted (the index keeps them
// in no particular order).
func subjectSets(s *Store) map[string][]string {
	out := map[string][]string{}
	for subject, r := range s.subjects {
		var ids []string
		r.ids(func(at uint32) { ids = append(ids, s.deliveries.at(at).deliveryID()) })
		slices.Sort(ids)
		out[subject] = ids
	}
	return out
}

// rowViews is every delivery as its row reads (a row's event type is a
// number in its own store's table, its subject that store's entry).
func rowViews(s *Store) map[string]projections.Delivery {
	out := map[string]projections.Delivery{}
	for _, at := range s.feed {
		r := s.deliveries.at(at)
		d := r.view(r.deliveryID(), &s.eventTypes)
		out[d.DeliveryID] = d
	}
	return out
}
