package memory

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory/snapfile"
)

// A delivery's row holds its event type and subject as a number and a
// pointer, its times and positions as numbers: 120 bytes with its id (a
// projections.Delivery is 256), every one of them in the table.
func TestDeliveryRowIs120Bytes(t *testing.T) {
	if size := unsafe.Sizeof(deliveryRow{}); size > 120 {
		t.Fatalf("a delivery row is %d bytes, over 120", size)
	}
}

// Every delivery reads back exactly as written, by every read and through
// an image restored into another store, whatever it holds: every status
// and one the row has no code for, no body, an empty body, attempts'
// outcomes, a next attempt, positions whose commit and prepare differ,
// zero times, a count of attempts past int32, no event type, event types
// past the table's reach, bodies that start as a rendered webhook's (kept
// as their tail) and others that nearly do, and delivery and source event
// ids that are uuids in their canonical text (kept as 16 bytes) or not.
func TestDeliveryRowsReadAsWritten(t *testing.T) {
	was := maxEventTypes
	maxEventTypes = 2 // "user.registered" and "report.created"; "x" and "y" in more
	t.Cleanup(func() { maxEventTypes = was })
	ctx := context.Background()
	at := time.Date(2026, 11, 30, 1, 2, 3, 456789000, time.UTC)
	next := at.Add(time.Minute)
	code, msg, class := 503, "unavailable", domain.ErrorClassTimeout
	ep := int64(4)
	rows := []projections.Delivery{
		{DeliveryID: "d-1", AppID: 1, EndpointID: domain.DefaultEndpointID, EventType: "user.registered", SourceEventID: "e-1",
			SourcePosition: events.Position{Commit: 10, Prepare: 10}, Cursor: events.Position{Commit: 11, Prepare: 11},
			Body: []byte(`{"a":1}`), Subject: "user-7", Status: domain.DeliverySkipped, CreatedAt: at, UpdatedAt: at},
		{DeliveryID: "d-2", AppID: 1, EndpointID: ep, EventType: "user.registered", SourceEventID: "e-1",
			SourcePosition: events.Position{Commit: 10, Prepare: 10}, Cursor: events.Position{Commit: 12, Prepare: 12},
			Body: []byte(`{"a":2}`), Subject: "user-7", Status: domain.DeliveryRetrying, Attempts: 2, NextAttemptAt: &next,
			LastStatus: &code, LastError: &msg, LastErrorClass: &class, CreatedAt: at, UpdatedAt: next},
		{DeliveryID: "d-3", AppID: 2, EndpointID: ep, EventType: "report.created", SourceEventID: "e-2",
			SourcePosition: events.Position{Commit: 20, Prepare: 19}, Cursor: events.Position{Commit: 21, Prepare: 18},
			Body: []byte{}, Status: domain.DeliveryDelivered, Attempts: 1, LastStatus: &code, CreatedAt: at, UpdatedAt: at},
		{DeliveryID: "d-4", AppID: 2, EndpointID: ep, EventType: "report.created", SourceEventID: "e-3",
			SourcePosition: events.Position{Commit: 22, Prepare: 22}, Cursor: events.Position{Commit: 23, Prepare: 23},
			Status: "some_status_of_no_code", Attempts: 1 << 40},
		{DeliveryID: "d-5", AppID: 3, EndpointID: ep, EventType: "x", Cursor: events.Position{Commit: 24, Prepare: 24},
			Body: []byte(`{}`), Status: domain.DeliveryPending, NextAttemptAt: &at, CreatedAt: at, UpdatedAt: at},
		{DeliveryID: "d-6", AppID: 3, EndpointID: ep, EventType: "x", Cursor: events.Position{Commit: 25, Prepare: 25},
			Body: []byte(`{}`), Status: domain.DeliveryAbandoned, CreatedAt: at, UpdatedAt: at},
		{DeliveryID: "d-7", AppID: 3, EndpointID: ep, EventType: "y", Cursor: events.Position{Commit: 26, Prepare: 26},
			Body: []byte(`{}`), Status: domain.DeliveryDeadLetter, CreatedAt: at, UpdatedAt: at},
		{DeliveryID: "d-8", AppID: 3, EndpointID: ep, Cursor: events.Position{Commit: 27, Prepare: 27},
			Body: []byte(`{}`), Subject: "user-7", Status: domain.DeliverySkipped, CreatedAt: at, UpdatedAt: at},
		rendered("0b5e4c52-8a0e-5d3c-9f6e-1c2d3e4f5a6b", 4, "user.registered", "7d1a0c3e-2b4f-4e6a-8c9d-0e1f2a3b4c5d", 28, `,"open_user_id":7}`),
		rendered("1b5e4c52-8a0e-5d3c-9f6e-1c2d3e4f5a6b", 4, "user.registered", "7D1A0C3E-2B4F-4E6A-8C9D-0E1F2A3B4C5D", 29, ``),
		rendered("2b5e4c52-8a0e-5d3c-9f6e-1c2d3e4f5a6b", 4, "x", "7d1a0c3e-2b4f-4e6a-8c9d-0e1f2a3b4c5", 30, `2,"open_user_id":7}`),
		rendered("3b5e4c52-8a0e-5d3c-9f6e-1c2d3e4f5a6b", 4, "y", "7d1a0c3e_2b4f-4e6a-8c9d-0e1f2a3b4c5d", 31, `}`),
		rendered("d-9", 4, "report.created", "7d1a0c3e-2b4f-4e6a-8c9d-0e1f2a3b4c5g", 32, `}`),
	}
	// Bodies that start as another delivery's.
	rows = append(rows, rendered("d-10", 4, "report.created", "", 33, `}`), rendered("d-11", 4, "report.created", "", 34, `}`))
	rows[len(rows)-2].Body = rows[len(rows)-1].Body
	rows[len(rows)-1].Body = []byte(`{"event":"report.created","delivery_id":"d-11","app_id"`)
	// A delivery id that is a uuid but not in its canonical text.
	rows = append(rows, rendered("4B5E4C52-8A0E-5D3C-9F6E-1C2D3E4F5A6B", 4, "user.registered", "", 35, `}`))
	s := New()
	putDeliveries(t, s, rows...)
	check := func(s *Store, how string) {
		t.Helper()
		for _, want := range rows {
			want = copyDelivery(want)
			got, _, err := s.Delivery(ctx, 0, want.DeliveryID)
			if err != nil {
				t.Fatalf("%s: %s: %v", how, want.DeliveryID, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: Delivery(%s)\n got %+v\nwant %+v", how, want.DeliveryID, got, want)
			}
			var inTx projections.Delivery
			var bySubject []projections.Delivery
			s.UpdateDeliveries(ctx, "probe", events.Position{Commit: 1, Prepare: 1}, func(tx projections.DeliveryTx) error {
				inTx, err = tx.Delivery(ctx, want.DeliveryID)
				if want.Subject != "" {
					bySubject, _ = tx.SubjectDeliveries(ctx, want.Subject)
				}
				return err
			})
			if !reflect.DeepEqual(inTx, want) {
				t.Errorf("%s: tx.Delivery(%s)\n got %+v\nwant %+v", how, want.DeliveryID, inTx, want)
			}
			found := false
			for _, d := range bySubject {
				found = found || reflect.DeepEqual(d, want)
			}
			if want.Subject != "" && !found {
				t.Errorf("%s: SubjectDeliveries(%s) has no %+v", how, want.Subject, want)
			}
		}
		listed, err := s.Deliveries(ctx, domain.DeliveryFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(listed) != len(rows) {
			t.Fatalf("%s: Deliveries listed %d, want %d", how, len(listed), len(rows))
		}
		for i, want := range rows {
			if want = copyDelivery(want); !reflect.DeepEqual(listed[i], want) {
				t.Errorf("%s: Deliveries[%d]\n got %+v\nwant %+v", how, i, listed[i], want)
			}
		}
		due, err := s.Due(ctx, next.Add(time.Hour), 10)
		if err != nil {
			t.Fatal(err)
		}
		wantDue := []domain.DueDelivery{{DeliveryID: "d-5", AppID: 3, EndpointID: ep}, {DeliveryID: "d-2", AppID: 1, EndpointID: ep}}
		if !reflect.DeepEqual(due, wantDue) {
			t.Errorf("%s: Due = %+v, want %+v", how, due, wantDue)
		}
	}
	check(s, "written")

	im, err := s.Image(ctx, projections.ReadModelDeliveries)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range rows {
		if want = copyDelivery(want); !reflect.DeepEqual(im.Deliveries[i], want) {
			t.Errorf("image row %d\n got %+v\nwant %+v", i, im.Deliveries[i], want)
		}
	}
	check(throughSnapshot(t, im), "restored")
}

// throughSnapshot is a store restored from im through the snapshot's own
// encoding, as a start restores it.
func throughSnapshot(t *testing.T, im snapfile.Image) *Store {
	t.Helper()
	path := t.TempDir() + "/snap"
	aead := testAEAD(t)
	if _, err := snapfile.Write(path, snapfile.Header{ReadModels: []snapfile.ReadModel{{ReadModel: im.ReadModel, Rows: im.Rows()}}}, aead, []snapfile.Image{im}, nil, nil); err != nil {
		t.Fatal(err)
	}
	_, images, _, err := snapfile.Read(path, aead)
	if err != nil {
		t.Fatal(err)
	}
	restored := New()
	if err := restored.Restore(context.Background(), images[0]); err != nil {
		t.Fatal(err)
	}
	return restored
}

// rendered is a delivery of app 4 whose body starts as the dispatcher
// renders one (webhooks.Render), with tail after the app id.
func rendered(id string, appID int64, eventType, sourceEventID string, cursor uint64, tail string) projections.Delivery {
	at := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	return projections.Delivery{DeliveryID: id, AppID: appID, EndpointID: domain.DefaultEndpointID, EventType: eventType, SourceEventID: sourceEventID,
		SourcePosition: events.Position{Commit: cursor - 1, Prepare: cursor - 1}, Cursor: events.Position{Commit: cursor, Prepare: cursor},
		Body:   []byte(`{"event":"` + eventType + `","delivery_id":"` + id + `","app_id":4` + tail),
		Status: domain.DeliverySkipped, CreatedAt: at, UpdatedAt: at}
}

// A rendered body is kept as what follows its head (event type, delivery
// id, app id: the row holds them), and a source event id in a uuid's
// canonical text as its 16 bytes; both read back whole.
func TestARenderedBodyKeepsOnlyItsTail(t *testing.T) {
	ctx := context.Background()
	d := rendered("0b5e4c52-8a0e-5d3c-9f6e-1c2d3e4f5a6b", 4, "user.profile.updated", "7d1a0c3e-2b4f-4e6a-8c9d-0e1f2a3b4c5d", 10, `,"open_user_id":7}`)
	s := New()
	putDeliveries(t, s, d)
	r, _ := s.deliveries.get(d.DeliveryID)
	if r.body != `,"open_user_id":7}` || r.more != nil {
		t.Errorf("the row keeps the body %q and more %+v, want only the tail and no more", r.body, r.more)
	}
	got, _, err := s.Delivery(ctx, 4, d.DeliveryID)
	if err != nil || string(got.Body) != string(d.Body) || got.SourceEventID != d.SourceEventID {
		t.Errorf("read %q, %q, %v; want %q, %q", got.Body, got.SourceEventID, err, d.Body, d.SourceEventID)
	}
}

func testAEAD(t testing.TB) cipher.AEAD {
	t.Helper()
	block, err := aes.NewCipher(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	return aead
}
