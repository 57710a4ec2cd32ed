package webhooks

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
)

// resendFixture is a log of deliveries of app 1: ids[0] about an erased
// user (empty body), ids[1] already pending, ids[2] of app 2, the rest
// abandoned (resendable).
type resendFixture struct {
	reg *events.Registry
	ids []string
}

func newResendFixture(t *testing.T, s events.Store, n int) resendFixture {
	t.Helper()
	f := resendFixture{reg: events.NewRegistry()}
	f.reg.MustRegister(1, catalog.DeliveryCreated{}, catalog.DeliveryAttempted{}, catalog.DeliveryResendRequested{})
	for i := range n {
		id := fmt.Sprintf("d%03d", i)
		f.ids = append(f.ids, id)
		c := catalog.DeliveryCreated{DeliveryID: id, AppID: 1, Event: "user.profile.updated", Body: `{}`, Deliver: true}
		switch i {
		case 0:
			c.Body = ""
		case 2:
			c.AppID = 2
		}
		f.append(t, s, id, c, 0)
		if i != 1 {
			f.append(t, s, id, catalog.DeliveryAttempted{DeliveryID: id, Attempt: 6, Outcome: domain.OutcomeAbandoned}, 1)
		}
	}
	return f
}

func (f resendFixture) append(t *testing.T, s events.Store, id string, p events.Payload, after uint64) {
	t.Helper()
	ev, err := f.reg.Encode(p, events.Metadata{AppID: 1, Actor: "dispatcher", OccurredAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	exp := events.NoStream()
	if after > 0 {
		exp = events.AfterVersion(after)
	}
	if _, err := s.Append(context.Background(), domain.DeliveryStream(id), exp, ev); err != nil {
		t.Fatal(err)
	}
}

// resends lists, per delivery, who asked for each of its resends.
func (f resendFixture) resends(t *testing.T, s events.Store) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, id := range f.ids {
		recs, err := s.ReadStream(context.Background(), domain.DeliveryStream(id), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			env, err := f.reg.Decode(r)
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := env.Payload.(*catalog.DeliveryResendRequested); ok {
				out[id] = append(out[id], p.RequestedBy)
			}
		}
	}
	return out
}

// meddlingStore changes a delivery stream once, just before the first
// (multi-stream or single) append that touches it: a concurrent resend or
// attempt landing between ResendMany's decision and its append.
type meddlingStore struct {
	events.Store
	once   sync.Once
	meddle func()
}

func (m *meddlingStore) Append(ctx context.Context, stream string, exp events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	m.once.Do(m.meddle)
	return m.Store.Append(ctx, stream, exp, evs...)
}

// multiMeddlingStore also appends to several streams at once.
type multiMeddlingStore struct{ *meddlingStore }

func (m multiMeddlingStore) AppendMulti(ctx context.Context, parts ...events.StreamAppend) ([]events.AppendResult, error) {
	m.once.Do(m.meddle)
	return events.AppendMulti(ctx, m.Store, parts...)
}

// TestResendManyDecidesEachStreamAtItsRevision: with or without
// multi-stream appends, a page of deliveries is resent once each and
// counted: the erased one, the pending one and another app's are passed
// over uncounted; a delivery another operator resent between the decision
// and the append is not resent again nor counted, and one attempted in
// between is decided again (and resent) without losing the others.
func TestResendManyDecidesEachStreamAtItsRevision(t *testing.T) {
	for _, multi := range []bool{true, false} {
		t.Run(fmt.Sprintf("multi=%v", multi), func(t *testing.T) {
			mem := memory.New()
			f := newResendFixture(t, mem, 1200)
			inner := &meddlingStore{Store: mem}
			inner.meddle = func() {
				f.append(t, mem, f.ids[3], catalog.DeliveryResendRequested{DeliveryID: f.ids[3], RequestedBy: "other"}, 2)
				f.append(t, mem, f.ids[700], catalog.DeliveryAttempted{DeliveryID: f.ids[700], Attempt: 7, Outcome: domain.OutcomeAbandoned}, 2)
			}
			var store events.Store = inner
			if multi {
				store = multiMeddlingStore{inner}
			}
			d := &Dispatcher{Store: store, Registry: f.reg, Clock: SystemClock{}}
			n, last, err := d.ResendMany(context.Background(), 1, append(f.ids, "unknown"), "op")
			if err != nil {
				t.Fatal(err)
			}
			// 1200 less the erased, pending, other app's and the one
			// resent by "other".
			if n != 1196 || last.IsZero() {
				t.Fatalf("queued %d (last %v), want 1196", n, last)
			}
			got := f.resends(t, mem)
			for i, id := range f.ids {
				want := []string{"op"}
				switch i {
				case 0, 1, 2:
					want = nil
				case 3:
					want = []string{"other"}
				}
				if fmt.Sprint(got[id]) != fmt.Sprint(want) {
					t.Fatalf("delivery %d resent by %v, want %v", i, got[id], want)
				}
			}
			// Everything is pending now: a second pass queues nothing.
			if n, _, err := d.ResendMany(context.Background(), 1, f.ids, "op"); err != nil || n != 0 {
				t.Fatalf("second pass: %d, %v", n, err)
			}
		})
	}
}

// TestResendManyConcurrentWithSingleResends: bulk resends and single
// resends of the same deliveries at once resend each exactly once, and the
// counts add up to that.
func TestResendManyConcurrentWithSingleResends(t *testing.T) {
	mem := memory.New()
	f := newResendFixture(t, mem, 600)
	d := &Dispatcher{Store: mem, Registry: f.reg, Clock: SystemClock{}}
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			n, _, err := d.ResendMany(context.Background(), 1, f.ids, fmt.Sprint("bulk", w))
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
		go func() {
			defer wg.Done()
			for i := 3 + w; i < len(f.ids); i += 3 {
				pos, err := d.Resend(context.Background(), 1, f.ids[i], fmt.Sprint("single", w))
				if err != nil {
					t.Error(err)
					return
				}
				if !pos.IsZero() {
					mu.Lock()
					total++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	got := f.resends(t, mem)
	for i, id := range f.ids[3:] {
		if len(got[id]) != 1 {
			t.Fatalf("delivery %d resent %d times: %v", i+3, len(got[id]), got[id])
		}
	}
	if total != len(f.ids)-3 {
		t.Fatalf("counted %d resends, want %d", total, len(f.ids)-3)
	}
}
