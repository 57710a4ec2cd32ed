package projections_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	evmemory "github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
	"github.com/healthtech/partner-open-platform/internal/datakeys/files"
	"github.com/healthtech/partner-open-platform/internal/secrets"
	"github.com/healthtech/partner-open-platform/privacy"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory"
)

// LogBodies reads each delivery's body from its webhook.delivery.created
// event, byte for byte, an erased one (null in the log) as empty, and
// refuses a position that holds another event.
func TestLogBodiesReadTheCreatedEventsBodies(t *testing.T) {
	ctx := context.Background()
	reg := catalog.Registry()
	log := evmemory.New()
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var positions []events.Position
	written := []string{`{"event":"user.registered","delivery_id":"d-0","app_id":1,"x":"\u00e9\n` + "\u00e9\n" + `"}`, ""}
	for i, body := range written {
		ev, err := reg.Encode(catalog.DeliveryCreated{DeliveryID: "d-" + strconv.Itoa(i), AppID: 1, EndpointID: domain.DefaultEndpointID,
			Event: "user.registered", Body: body, Deliver: true}, events.Metadata{AppID: 1, OccurredAt: at})
		if err != nil {
			t.Fatal(err)
		}
		res, err := log.Append(ctx, "webhook-delivery-"+ev.ID, events.NoStream(), ev)
		if err != nil {
			t.Fatal(err)
		}
		positions = append(positions, res.Position)
	}
	bodies, err := projections.LogBodies{Log: log, Registry: reg}.DeliveryBodies(ctx, []events.Position{positions[1], positions[0]})
	if err != nil {
		t.Fatal(err)
	}
	if string(bodies[1]) != written[0] || bodies[0] == nil || len(bodies[0]) != 0 {
		t.Fatalf("bodies read %q", bodies)
	}
	other, err := reg.Encode(&catalog.UserErased{OpenUserID: 7}, events.Metadata{OccurredAt: at})
	if err != nil {
		t.Fatal(err)
	}
	res, err := log.Append(ctx, "user-7", events.Any(), other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (projections.LogBodies{Log: log, Registry: reg}).DeliveryBodies(ctx, []events.Position{res.Position}); err == nil {
		t.Fatal("a position of another event read as a delivery's body")
	}
}

// A page of deliveries whose bodies are in the log reads them in one pass
// through the privacy layer and answers an erased person's body empty,
// exactly as a read of that delivery alone does: a page that mixes live
// people, a person erased in the log whose erasure the read model has not
// applied yet (the key is gone, the body in the log reads null), one it
// has applied (blanked in the row, read without the log) and a pending
// delivery (its body in memory).
func TestAPageMixingErasedAndLivePeopleReadsErasedBodiesEmpty(t *testing.T) {
	ctx := context.Background()
	kb, err := files.Open(filepath.Join(t.TempDir(), "keys"))
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Close()
	m, _ := secrets.New(bytes.Repeat([]byte{1}, 32))
	ks := datakeys.New(kb, m)
	log := privacy.New(evmemory.New(), ks)
	reg := catalog.Registry()
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rm := memory.New()
	rm.KeepBodiesInLog(projections.LogBodies{Log: log, Registry: reg})
	var ds []projections.Delivery
	for j := range 12 {
		user := 1 + j%4 // user-2 erased in the log, user-3 in the read model too
		id := fmt.Sprintf("d-%02d", j)
		body := fmt.Sprintf(`{"event":"user.profile.updated","delivery_id":%q,"app_id":1,"open_user_id":%d,"nickname":"n%d"}`, id, user, j)
		ev, err := reg.Encode(catalog.DeliveryCreated{DeliveryID: id, AppID: 1, Event: "user.profile.updated", Body: body, Deliver: true},
			events.Metadata{AppID: 1, OccurredAt: at})
		if err != nil {
			t.Fatal(err)
		}
		res, err := log.Append(ctx, "webhook-delivery-"+id, events.NoStream(), ev)
		if err != nil {
			t.Fatal(err)
		}
		d := projections.Delivery{DeliveryID: id, AppID: 1, EndpointID: domain.DefaultEndpointID, EventType: "user.profile.updated",
			Subject: fmt.Sprintf("user-%d", user), Status: domain.DeliveryDelivered, Attempts: 1, Cursor: res.Position,
			CreatedAt: at, UpdatedAt: at, Body: []byte(body)}
		if j == 4 {
			d.Status, d.Attempts, d.NextAttemptAt = domain.DeliveryPending, 0, &at
		}
		ds = append(ds, d)
	}
	if err := rm.UpdateDeliveries(ctx, "deliveries", ds[len(ds)-1].Cursor, func(tx projections.DeliveryTx) error {
		for _, d := range ds {
			if err := tx.PutDelivery(ctx, d); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, subject := range []string{"user-2", "user-3"} {
		if err := ks.Destroy(ctx, subject); err != nil {
			t.Fatal(err)
		}
	}
	// The read model applies user-3's erasure, not yet user-2's.
	if err := rm.UpdateDeliveries(ctx, "deliveries", ds[len(ds)-1].Cursor, func(tx projections.DeliveryTx) error {
		erased, err := tx.SubjectDeliveries(ctx, "user-3")
		if err != nil {
			return err
		}
		for _, d := range erased {
			d.Body, d.Subject = []byte{}, ""
			if err := tx.PutDelivery(ctx, d); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	page, err := rm.Deliveries(ctx, domain.DeliveryFilter{AppID: 1, Feed: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != len(ds) {
		t.Fatalf("the page holds %d deliveries, want %d", len(page), len(ds))
	}
	for i, d := range page {
		want := ds[i].Body
		if s := ds[i].Subject; s == "user-2" || s == "user-3" {
			want = []byte{}
		}
		if d.DeliveryID != ds[i].DeliveryID || d.Body == nil || !bytes.Equal(d.Body, want) {
			t.Fatalf("delivery %s (%s) reads %q in the page, want %q", d.DeliveryID, ds[i].Subject, d.Body, want)
		}
		one, _, err := rm.Delivery(ctx, 1, d.DeliveryID)
		if err != nil || !bytes.Equal(one.Body, d.Body) || (one.Body == nil) != (d.Body == nil) {
			t.Fatalf("delivery %s reads %q alone (%v), %q in the page", d.DeliveryID, one.Body, err, d.Body)
		}
	}
}

// A body read back from the log is, byte for byte, the DeliveryCreated.Body
// the registry decodes from the event: escapes, HTML-safe and line
// separator escapes, text beyond ASCII, an empty body.
func TestLogBodiesReadWhatTheRegistryDecodes(t *testing.T) {
	ctx := context.Background()
	reg := catalog.Registry()
	log := evmemory.New()
	bodies := []string{
		`{"event":"user.registered","delivery_id":"d-0","app_id":1,"name":"李雷 \"Li\" <b>&amp;</b>","note":"a\\b\tc` + "\u2028\u2029" + `😀"}`,
		"\x00\x1f\u007f\ufffd",
		"",
		`{"open_user_id":7}`,
	}
	var at []events.Position
	for i, body := range bodies {
		ev, err := reg.Encode(catalog.DeliveryCreated{DeliveryID: "d-" + strconv.Itoa(i), AppID: 1, Event: "user.registered", Body: body, Deliver: true},
			events.Metadata{AppID: 1, OccurredAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := log.Append(ctx, "webhook-delivery-"+ev.ID, events.NoStream(), ev)
		if err != nil {
			t.Fatal(err)
		}
		at = append(at, res.Position)
	}
	got, err := projections.LogBodies{Log: log, Registry: reg}.DeliveryBodies(ctx, at)
	if err != nil {
		t.Fatal(err)
	}
	for i, pos := range at {
		rec, _, err := events.ReadAt(ctx, log, pos)
		if err != nil {
			t.Fatal(err)
		}
		env, err := reg.Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		want := env.Payload.(*catalog.DeliveryCreated).Body
		if string(got[i]) != want || string(got[i]) != bodies[i] || got[i] == nil {
			t.Fatalf("body %d reads %q, the registry decodes %q, written %q", i, got[i], want, bodies[i])
		}
	}
}
