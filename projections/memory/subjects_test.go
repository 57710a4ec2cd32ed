package memory

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// The deliveries of one subject share one copy of its name, whether put
// one by one or restored, and SubjectDeliveries finds exactly the
// subject's deliveries as they grow past the few a slice keeps and as an
// erasure blanks them (user.erased puts each again with no subject).
func TestSubjectDeliveriesShareTheSubjectAndFollowItsRows(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	of := func(s *Store, subject string) (ids []string, names []*byte) {
		t.Helper()
		if err := s.UpdateDeliveries(ctx, "probe", events.Position{Commit: 1, Prepare: 1}, func(tx projections.DeliveryTx) error {
			ds, err := tx.SubjectDeliveries(ctx, subject)
			for _, d := range ds {
				ids = append(ids, d.DeliveryID)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			names = append(names, unsafe.StringData(s.view(id).Subject))
		}
		slices.Sort(ids)
		return ids, names
	}
	// Each delivery brings its own copy of the name, as a decoded event does.
	mk := func(i int, subject string) projections.Delivery {
		return projections.Delivery{DeliveryID: fmt.Sprintf("d-%03d", i), AppID: 1, EndpointID: domain.DefaultEndpointID,
			EventType: "user.profile.updated", SourceEventID: fmt.Sprint("e-", i),
			SourcePosition: events.Position{Commit: uint64(2 * i), Prepare: uint64(2 * i)},
			Cursor:         events.Position{Commit: uint64(2*i + 1), Prepare: uint64(2*i + 1)},
			Body:           []byte(`{}`), Subject: string([]byte(subject)), Status: domain.DeliverySkipped, CreatedAt: at, UpdatedAt: at}
	}
	s := New()
	var want []string
	for i := 1; i <= 3*subjectFewIDs; i++ {
		subject := "user-7"
		if i%3 == 0 {
			subject = "user-8"
		} else {
			want = append(want, fmt.Sprintf("d-%03d", i))
		}
		putDeliveries(t, s, mk(i, subject))
		if i == 3 || i == 3*subjectFewIDs {
			got, names := of(s, "user-7")
			if !slices.Equal(got, want) {
				t.Fatalf("after %d puts, user-7's deliveries are %v, want %v", i, got, want)
			}
			for _, p := range names[1:] {
				if p != names[0] {
					t.Fatalf("after %d puts, user-7's rows hold more than one copy of the name", i)
				}
			}
		}
	}
	// Restored, the rows share one copy again.
	im, err := s.Image(ctx, projections.ReadModelDeliveries)
	if err != nil {
		t.Fatal(err)
	}
	r := New()
	if err := r.Restore(ctx, im); err != nil {
		t.Fatal(err)
	}
	got, names := of(r, "user-7")
	if !slices.Equal(got, want) {
		t.Fatalf("restored, user-7's deliveries are %v, want %v", got, want)
	}
	for _, p := range names[1:] {
		if p != names[0] {
			t.Fatal("restored, user-7's rows hold more than one copy of the name")
		}
	}
	// Blanked one by one, as an erasure does, the subject goes; the other stays.
	for _, id := range want {
		d := s.view(id)
		d.Subject, d.Body = "", []byte{}
		putDeliveries(t, s, d)
	}
	if got, _ := of(s, "user-7"); len(got) != 0 {
		t.Fatalf("user-7 still has %v after every delivery was blanked", got)
	}
	if _, ok := s.subjects["user-7"]; ok {
		t.Error("a subject with no delivery left is still indexed")
	}
	if got, _ := of(s, "user-8"); len(got) != subjectFewIDs {
		t.Fatalf("user-8 has %d deliveries, want %d", len(got), subjectFewIDs)
	}
}

// putDeliveries puts ds in one transaction of the deliveries read model.
func putDeliveries(t *testing.T, s *Store, ds ...projections.Delivery) {
	t.Helper()
	ctx := context.Background()
	if err := s.UpdateDeliveries(ctx, "deliveries", events.Position{Commit: 30, Prepare: 30}, func(tx projections.DeliveryTx) error {
		for _, d := range ds {
			if err := tx.PutDelivery(ctx, d); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
