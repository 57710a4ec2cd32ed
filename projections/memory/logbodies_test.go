package memory

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory/snapfile"
)

// fakeLog is the log's deliveries' bodies by their event's position, and
// how many it read.
type fakeLog struct {
	bodies map[events.Position][]byte
	reads  int
}

func (l *fakeLog) DeliveryBodies(_ context.Context, at []events.Position) ([][]byte, error) {
	out := make([][]byte, len(at))
	for i, p := range at {
		b, ok := l.bodies[p]
		if !ok {
			return nil, errors.New("no delivery created there")
		}
		out[i] = append([]byte{}, b...)
		l.reads++
	}
	return out, nil
}

// A store that keeps final deliveries' bodies in the log answers every
// read as one that keeps them all: the pending delivery's body from
// memory, the final ones' from the log, an erased one empty without the
// log, through a rolled-back update, an erasure and an image restored into
// another store. A list without bodies reads no log. An image of a file
// written before bodies were left in the log reads a nil body as erased.
func TestFinalDeliveriesReadTheirBodiesFromTheLog(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	ds := make([]projections.Delivery, 4)
	log := &fakeLog{bodies: map[events.Position][]byte{}}
	for j := range ds {
		ds[j] = benchDelivery(10*j+1, at) // pending (j%10 == 1 is not): made pending below
		ds[j].Status, ds[j].NextAttemptAt = domain.DeliveryPending, &at
		log.bodies[ds[j].Cursor] = ds[j].Body
	}
	ds[1].Status, ds[1].NextAttemptAt = domain.DeliverySkipped, nil
	ds[2].Status, ds[2].NextAttemptAt, ds[2].Body, ds[2].Subject = domain.DeliveryAbandoned, nil, []byte{}, "" // erased
	logged, whole := New(), New()
	logged.KeepBodiesInLog(log)
	both := func(fn func(tx projections.DeliveryTx) error) {
		t.Helper()
		for _, s := range []*Store{logged, whole} {
			if err := s.UpdateDeliveries(ctx, "deliveries", events.Position{}, fn); err != nil {
				t.Fatal(err)
			}
		}
	}
	same := func(what string, wantReads int) {
		t.Helper()
		log.reads = 0
		for _, d := range ds {
			got, _, err := logged.Delivery(ctx, 0, d.DeliveryID)
			want, _, werr := whole.Delivery(ctx, 0, d.DeliveryID)
			if err != nil || werr != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: %s reads\n%+v (%v), not\n%+v (%v)", what, d.DeliveryID, got, err, want, werr)
			}
		}
		got, err := logged.Deliveries(ctx, domain.DeliveryFilter{})
		want, werr := whole.Deliveries(ctx, domain.DeliveryFilter{})
		if err != nil || werr != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the feed reads\n%+v (%v), not\n%+v (%v)", what, got, err, want, werr)
		}
		if log.reads != 2*wantReads {
			t.Fatalf("%s: %d reads of the log, not %d (each delivery, then the feed)", what, log.reads, 2*wantReads)
		}
	}
	both(func(tx projections.DeliveryTx) error {
		for _, d := range ds {
			if err := tx.PutDelivery(ctx, d); err != nil {
				return err
			}
		}
		return nil
	})
	same("created", 1) // the skipped one
	log.reads = 0
	if list, err := logged.Deliveries(ctx, domain.DeliveryFilter{WithoutBodies: true}); err != nil || len(list) != 4 || list[1].Body != nil || log.reads != 0 {
		t.Fatalf("a list without bodies read the log %d times, or gave the body in the log: %v", log.reads, err)
	}
	deliver := func(id string) func(tx projections.DeliveryTx) error {
		return func(tx projections.DeliveryTx) error {
			return tx.UpdateDeliveryState(ctx, id, func(st *projections.DeliveryState) {
				st.Status, st.NextAttemptAt, st.Attempts = domain.DeliveryDelivered, nil, 1
			})
		}
	}
	both(deliver(ds[0].DeliveryID))
	same("one delivered", 2)
	// Rolled back: the delivery keeps its body in memory; the erasure of
	// a body in the log leaves it there.
	failed := errors.New("rolled back")
	for _, s := range []*Store{logged, whole} {
		if err := s.UpdateDeliveries(ctx, "deliveries", events.Position{}, func(tx projections.DeliveryTx) error {
			if err := deliver(ds[3].DeliveryID)(tx); err != nil {
				return err
			}
			d, err := tx.Delivery(ctx, ds[1].DeliveryID)
			if err != nil {
				return err
			}
			d.Body = []byte{}
			if err := tx.PutDelivery(ctx, d); err != nil {
				return err
			}
			return failed
		}); !errors.Is(err, failed) {
			t.Fatal(err)
		}
	}
	same("rolled back", 2)
	// Erased: read empty, from no log, and an outcome sees it erased.
	both(func(tx projections.DeliveryTx) error {
		d, err := tx.Delivery(ctx, ds[0].DeliveryID)
		if err != nil {
			return err
		}
		d.Body, d.Subject = []byte{}, ""
		if err := tx.PutDelivery(ctx, d); err != nil {
			return err
		}
		return tx.UpdateDeliveryState(ctx, ds[0].DeliveryID, func(st *projections.DeliveryState) {
			if !st.Erased {
				t.Error("an erased body that was in the log is not read as erased")
			}
		})
	})
	same("erased", 1)

	im, err := logged.Image(ctx, projections.ReadModelDeliveries)
	if err != nil {
		t.Fatal(err)
	}
	if im.Deliveries[1].Body != nil || im.Deliveries[2].Body == nil || im.Deliveries[3].Body == nil {
		t.Fatalf("an image holds a body in the log, or an erased one as if in the log: %q", [][]byte{im.Deliveries[1].Body, im.Deliveries[2].Body})
	}
	// A store that reads no log refuses an image whose bodies are there
	// (its node then replays the log), and leaves its read model empty.
	noLog := New()
	if err := noLog.Restore(ctx, im); !errors.Is(err, snapfile.ErrInvalid) {
		t.Fatalf("a store without a log restored an image whose bodies are in the log: %v", err)
	}
	if got, err := noLog.Deliveries(ctx, domain.DeliveryFilter{Limit: 100}); err != nil || len(got) != 0 {
		t.Fatalf("after the refusal the store lists %d deliveries (%v)", len(got), err)
	}
	restored := New()
	restored.KeepBodiesInLog(log)
	if err := restored.Restore(ctx, im); err != nil {
		t.Fatal(err)
	}
	logged = restored
	same("restored", 1)

	// A file of a store that kept every body: a nil body is an erased one.
	old, err := whole.Image(ctx, projections.ReadModelDeliveries)
	if err != nil {
		t.Fatal(err)
	}
	if old.BodiesInLog {
		t.Fatal("the image of a store that reads no log says its bodies are in the log")
	}
	old.Deliveries[2].Body = nil
	if err := restored.Restore(ctx, old); err != nil {
		t.Fatal(err)
	}
	if d, _, err := restored.Delivery(ctx, 0, ds[2].DeliveryID); err != nil || d.Body == nil || len(d.Body) != 0 {
		t.Fatalf("an erased body of an older file reads %q (%v), not empty", d.Body, err)
	}
}
