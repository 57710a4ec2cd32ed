package memory_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory"
	"github.com/healthtech/partner-open-platform/projections/memory/snapfile"
)

// userWrite is the i-th write of a projector that keeps changing a users
// read model of n users filled by snapFixture.fill: it renames a user,
// registers a new one (user, group, member), deletes a member or erases a
// user, spread over the whole key range (so over pages read already and
// pages still to read). It depends on i and n alone, so a replay applies
// the same writes.
func userWrite(ctx context.Context, i, n int) func(projections.UserTx) error {
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	k := int64(1 + (i*7919)%n)
	return func(tx projections.UserTx) error {
		switch i % 4 {
		case 0: // a rename, or a user erased before registering again
			if err := tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: k, ChannelUserID: fmt.Sprintf("c%d", k), Name: fmt.Sprintf("renamed %d", i), Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}); err != nil {
				return err
			}
			return tx.PutMember(ctx, projections.Member{AppID: 1, OpenUserID: k, MemberID: k, AppUserID: "m", AppGroupID: 1, FamilyGroupID: k, Name: fmt.Sprintf("m%d", i), Relationship: "SON", UpdatedAt: at})
		case 1:
			id := int64(n + i)
			if err := tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: id, ChannelUserID: fmt.Sprintf("new%d", id), Name: "n", Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}); err != nil {
				return err
			}
			if err := tx.PutGroup(ctx, projections.Group{AppID: 1, OpenUserID: id, FamilyGroupID: id, AppGroupID: 1, Name: "g", CreatedAt: at, UpdatedAt: at}); err != nil {
				return err
			}
			return tx.PutMember(ctx, projections.Member{AppID: 1, OpenUserID: id, MemberID: id, AppUserID: "m", AppGroupID: 1, FamilyGroupID: id, Name: "m", Relationship: "SON", UpdatedAt: at})
		case 2:
			return tx.DeleteMember(ctx, k, at)
		default:
			return tx.EraseUser(ctx, k)
		}
	}
}

// restoredImages loads f's snapshot into a fresh store and returns its
// images, which are what the file holds.
func restoredImages(t *testing.T, f *snapFixture) []snapfile.Image {
	t.Helper()
	g := *f
	g.store = memory.New()
	ok, err := g.snapshotter().Load(f.ctx)
	if err != nil || !ok {
		t.Fatalf("Load = %v, %v", ok, err)
	}
	return imagesOf(t, g.store)
}

// deliveryWrite is the i-th write of a projector that keeps changing a
// deliveries read model filled by fillDeliveries(n): a retry (an attempt
// added, the delivery's state changed in place and rescheduled in the due
// queue), a new delivery in the
// middle of the feed, a delivery done (its attempts' excerpts cleared, out
// of the due queue) or a delivery moved elsewhere in the feed, spread over
// the whole feed. It depends on i, n and the read model alone, so a replay
// applies the same writes.
func deliveryWrite(ctx context.Context, i, n int) func(projections.DeliveryTx) error {
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	k := 1 + (i*7919)%n
	id := fmt.Sprintf("p%05d", k)
	return func(tx projections.DeliveryTx) error {
		if i%4 == 1 {
			next := at.Add(time.Duration(i) * time.Minute)
			nid := fmt.Sprintf("q%05d", i)
			if err := tx.PutDelivery(ctx, projections.Delivery{DeliveryID: nid, AppID: int64(1 + k%3), EventType: "user.registered",
				SourceEventID: nid, SourcePosition: events.Position{Commit: uint64(k), Prepare: uint64(k)}, Cursor: events.Position{Commit: uint64(2*k + 1), Prepare: uint64(2*k + 1)},
				Body: []byte(`{"new":1}`), Subject: "user-new", Status: "pending", NextAttemptAt: &next, CreatedAt: at, UpdatedAt: at}); err != nil {
				return err
			}
			return tx.AddAttempt(ctx, projections.Attempt{DeliveryID: nid, Attempt: 1, At: at, ResponseExcerpt: "new"})
		}
		if i%4 == 0 { // a retry, as an outcome records it: the state alone
			attempt := 0
			err := tx.UpdateDeliveryState(ctx, id, func(st *projections.DeliveryState) {
				st.Status, st.Attempts, st.UpdatedAt = "retrying", st.Attempts+1, at
				next := at.Add(time.Duration(i) * time.Second)
				code := 500
				st.NextAttemptAt, st.LastStatus = &next, &code
				attempt = st.Attempts
			})
			if err != nil {
				return err
			}
			code := 500
			return tx.AddAttempt(ctx, projections.Attempt{DeliveryID: id, Attempt: attempt, At: at, StatusCode: &code, ResponseExcerpt: fmt.Sprint("busy ", i)})
		}
		d, err := tx.Delivery(ctx, id)
		if err != nil {
			return err
		}
		d.UpdatedAt = at
		switch i % 4 {
		case 2: // delivered; its receiver's answers erased
			d.Status, d.NextAttemptAt = "delivered", nil
			if err := tx.ClearExcerpts(ctx, id); err != nil {
				return err
			}
		default: // moved, before or after its place in the feed
			c := uint64(2*((k*31)%n) + 1)
			d.Cursor = events.Position{Commit: c, Prepare: c}
		}
		return tx.PutDelivery(ctx, d)
	}
}

// fillDeliveries fills the fixture with few users and n deliveries with
// one or two attempts each, every other one due, at even cursors
// (deliveryWrite puts new and moved ones at odd cursors, between them).
func (f *snapFixture) fillDeliveries(t *testing.T, n int) {
	t.Helper()
	f.fill(t, 10)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	for from := 1; from <= n; from += 100 {
		if err := f.store.UpdateDeliveries(f.ctx, "deliveries", f.event(t), func(tx projections.DeliveryTx) error {
			for k := from; k < from+100 && k <= n; k++ {
				id := fmt.Sprintf("p%05d", k)
				d := projections.Delivery{DeliveryID: id, AppID: int64(1 + k%3), EventType: "user.registered", SourceEventID: id,
					SourcePosition: events.Position{Commit: uint64(k), Prepare: uint64(k)}, Cursor: events.Position{Commit: uint64(2 * k), Prepare: uint64(2 * k)},
					Body: []byte(`{"x":1}`), Subject: fmt.Sprintf("user-%d", k%50), Status: "delivered", Attempts: 1 + k%2, CreatedAt: at, UpdatedAt: at}
				if k%2 == 0 {
					next := at.Add(time.Duration(k) * time.Second)
					d.Status, d.NextAttemptAt = "retrying", &next
				}
				if err := tx.PutDelivery(f.ctx, d); err != nil {
					return err
				}
				for a := 1; a <= d.Attempts; a++ {
					if err := tx.AddAttempt(f.ctx, projections.Attempt{DeliveryID: id, Attempt: a, At: at, ResponseExcerpt: "ok"}); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// reportWrite is the i-th write of a projector that keeps changing a
// reports read model filled by fillReports(n): a new report, a report
// moved to another day, or a user's reports erased, spread over the whole
// key range. It depends on i, n and the read model alone.
func reportWrite(ctx context.Context, i, n int) func(projections.ReportTx) error {
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	k := int64(1 + (i*7919)%n)
	return func(tx projections.ReportTx) error {
		switch i % 3 {
		case 0:
			return tx.PutReport(ctx, reportOf(int64(n+i), k%40, at))
		case 1:
			r, err := tx.Report(ctx, k)
			if err != nil {
				return err
			}
			r.Day, r.IsViewed, r.UpdatedAt = fmt.Sprintf("2026-02-%02d", 1+i%28), true, at
			return tx.PutReport(ctx, r)
		default:
			return tx.EraseUserReports(ctx, k%40)
		}
	}
}

// reportOf is report id of user, with personal fields an erasure blanks.
func reportOf(id, user int64, at time.Time) projections.Report {
	path, op := fmt.Sprintf("/files/%d", id), "operator"
	return projections.Report{ReportID: id, AppID: 1, OpenUserID: user, FilePath: &path, OperatorName: &op, RawData: []byte(`{"bp":120}`),
		UploadedAt: at, Day: "2026-01-02", UpdatedAt: at}
}

// fillReports fills the fixture with few users and n reports of 40 users.
func (f *snapFixture) fillReports(t *testing.T, n int) {
	t.Helper()
	f.fill(t, 10)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	if err := f.store.UpdateReports(f.ctx, "reports", f.event(t), func(tx projections.ReportTx) error {
		for k := 1; k <= n; k++ {
			if err := tx.PutReport(f.ctx, reportOf(int64(k), int64(k%40), at)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// orderWrite is the i-th write of a projector that keeps changing an
// orders read model filled by fillOrders(n): a new order, an order
// shipped, or goods renamed, spread over the whole key range. It depends
// on i, n and the read model alone.
func orderWrite(ctx context.Context, i, n int) func(projections.OrderTx) error {
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	k := int64(1 + (i*7919)%n)
	return func(tx projections.OrderTx) error {
		switch i % 3 {
		case 0:
			return tx.PutOrder(ctx, orderOf(int64(n+i), k, at))
		case 1:
			o, err := tx.Order(ctx, k)
			if err != nil {
				return err
			}
			track := fmt.Sprint("T", i)
			o.Status, o.TrackingNumber, o.ShippedAt, o.UpdatedAt = "SHIPPED", &track, &at, at
			return tx.PutOrder(ctx, o)
		default:
			g, err := tx.Goods(ctx, k)
			if err != nil {
				return err
			}
			g.GoodsName, g.UpdatedAt = fmt.Sprint("renamed ", i), at
			return tx.PutGoods(ctx, g)
		}
	}
}

// orderOf is order id, of one line of goods.
func orderOf(id, goods int64, at time.Time) projections.Order {
	return projections.Order{OrderID: id, OrderCode: fmt.Sprint("O", id), AppID: 1, Status: "PAID", OrderTime: at, CreatedAt: at, UpdatedAt: at,
		Items: []projections.OrderItem{{ItemID: id, GoodsID: goods, GoodsCode: fmt.Sprint("G", goods), Quantity: 1, UnitPrice: 100, TotalPrice: 100, DeviceSNs: []string{}}}}
}

// fillOrders fills the fixture with few users, n goods and n orders.
func (f *snapFixture) fillOrders(t *testing.T, n int) {
	t.Helper()
	f.fill(t, 10)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	if err := f.store.UpdateOrders(f.ctx, "orders", f.event(t), func(tx projections.OrderTx) error {
		for k := int64(1); k <= int64(n); k++ {
			if err := tx.PutGoods(f.ctx, projections.Goods{GoodsID: k, GoodsCode: fmt.Sprint("G", k), GoodsName: "g", Active: true, CreatedAt: at, UpdatedAt: at}); err != nil {
				return err
			}
			if err := tx.PutOrder(f.ctx, orderOf(k, k, at)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// pagedModel is a read model whose snapshot image is paged, and how the
// tests below fill and change it.
type pagedModel struct {
	model projections.ReadModel
	// fill fills the fixture with n rows per table of the model (and few
	// of the other paged models, so their pages do not count here).
	fill func(f *snapFixture, t *testing.T, n int)
	// tables is how many of its tables fill gives n rows or more.
	tables int
	// apply makes the model's i-th write at pos.
	apply func(s *memory.Store, ctx context.Context, pos events.Position, i, n int) error
}

var pagedModels = []pagedModel{
	{projections.ReadModelUsers, (*snapFixture).fill, 3, func(s *memory.Store, ctx context.Context, pos events.Position, i, n int) error {
		return s.Update(ctx, "users", pos, userWrite(ctx, i, n))
	}},
	{projections.ReadModelDeliveries, (*snapFixture).fillDeliveries, 2, func(s *memory.Store, ctx context.Context, pos events.Position, i, n int) error {
		return s.UpdateDeliveries(ctx, "deliveries", pos, deliveryWrite(ctx, i, n))
	}},
	{projections.ReadModelReports, (*snapFixture).fillReports, 1, func(s *memory.Store, ctx context.Context, pos events.Position, i, n int) error {
		return s.UpdateReports(ctx, "reports", pos, reportWrite(ctx, i, n))
	}},
	{projections.ReadModelOrders, (*snapFixture).fillOrders, 2, func(s *memory.Store, ctx context.Context, pos events.Position, i, n int) error {
		return s.UpdateOrders(ctx, "orders", pos, orderWrite(ctx, i, n))
	}},
}

// cloneImage copies an image's row slices, which Restore takes over.
func cloneImage(im snapfile.Image) snapfile.Image {
	im.Users, im.Groups, im.Members = slices.Clone(im.Users), slices.Clone(im.Groups), slices.Clone(im.Members)
	im.Deliveries, im.Attempts, im.Reports = slices.Clone(im.Deliveries), slices.Clone(im.Attempts), slices.Clone(im.Reports)
	im.Goods, im.Orders = slices.Clone(im.Goods), slices.Clone(im.Orders)
	return im
}

// fixture is a store filled with n rows per table of the model, whose
// paged images read pages of pageRows rows until the test ends.
func (m pagedModel) fixture(t *testing.T, pageRows, n int) *snapFixture {
	t.Cleanup(memory.SetPageRows(pageRows))
	f := newSnapFixture(t)
	m.fill(f, t, n)
	return f
}

// at is the model's index in the snapshot's images.
func (m pagedModel) at() int { return slices.Index(projections.ReadModels, m.model) }

// A snapshot write reads the users, deliveries, reports and orders read
// models a page at a time, releasing their lock in between, so the
// projector's writes go on during the write (each one here runs while the
// write is in progress, in the gap between two holds: it would deadlock if
// a hold spanned the copy), and the file still holds every row exactly as
// it was at the image's checkpoint.
func TestPagedSnapshotIsTheImageAtItsCheckpoint(t *testing.T) {
	for _, m := range pagedModels {
		t.Run(string(m.model), func(t *testing.T) {
			const n = 1000
			f := m.fixture(t, 64, n)
			want := imagesOf(t, f.store)
			steps := 0
			memory.SetImageStep(f.store, func() {
				steps++
				if err := m.apply(f.store, f.ctx, f.event(t), steps, n); err != nil {
					t.Error(err)
				}
			})
			if err := f.snapshotter().Write(f.ctx); err != nil {
				t.Fatal(err)
			}
			memory.SetImageStep(f.store, nil)
			// n rows or more in each of its tables, listed then read 64
			// at a time.
			if least := 2 * m.tables * (n / 64); steps < least {
				t.Fatalf("the write released the read model's lock %d times: want at least %d (every 64 rows listed or read)", steps, least)
			}
			now := imagesOf(t, f.store)
			if reflect.DeepEqual(now[m.at()], want[m.at()]) {
				t.Fatal("the writes made between the image's holds did not reach the read model")
			}
			got := restoredImages(t, f)
			if got[m.at()].Checkpoint != want[m.at()].Checkpoint {
				t.Fatalf("the snapshot's checkpoint is %s: want %s, where the write began", got[m.at()].Checkpoint, want[m.at()].Checkpoint)
			}
			if !reflect.DeepEqual(got, want) {
				for i := range got {
					if !reflect.DeepEqual(got[i], want[i]) {
						t.Errorf("read model %s: the snapshot (%d rows) differs from its image when the write began (%d rows)", want[i].ReadModel, got[i].Rows(), want[i].Rows())
					}
				}
				t.FailNow()
			}
			// The write ended its copy-on-write side: the next one holds
			// the writes made meanwhile.
			if err := f.snapshotter().Write(f.ctx); err != nil {
				t.Fatal(err)
			}
			if got := restoredImages(t, f); !reflect.DeepEqual(got, now) {
				t.Fatal("the next snapshot differs from the read models it was written from")
			}
		})
	}
}

// Snapshots written while a projector keeps writing from another goroutine
// each equal a replay of the same writes up to the snapshot's checkpoint
// (run it with -race: the pages, the key listing and the copy-on-write
// side share the read model's lock with the projector).
func TestPagedSnapshotsUnderConcurrentWritesEqualReplays(t *testing.T) {
	for _, m := range pagedModels {
		t.Run(string(m.model), func(t *testing.T) {
			const n = 600
			f := m.fixture(t, 32, n)
			base := imagesOf(t, f.store)[m.at()]

			type write struct {
				pos events.Position
				i   int
			}
			var mu sync.Mutex
			var writes []write
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 1; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					pos := f.event(t)
					if err := m.apply(f.store, f.ctx, pos, i, n); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					writes = append(writes, write{pos, i})
					mu.Unlock()
				}
			}()
			var snaps []snapfile.Image
			for len(snaps) < 4 {
				if err := f.snapshotter().Write(f.ctx); err != nil {
					t.Fatal(err)
				}
				snaps = append(snaps, restoredImages(t, f)[m.at()])
			}
			close(stop)
			wg.Wait()

			mu.Lock()
			defer mu.Unlock()
			during := 0
			for _, snap := range snaps {
				replay := memory.New()
				if err := replay.Restore(f.ctx, cloneImage(base)); err != nil {
					t.Fatal(err)
				}
				for _, w := range writes {
					if snap.Checkpoint.Less(w.pos) {
						during++
						break
					}
					if err := m.apply(replay, f.ctx, w.pos, w.i, n); err != nil {
						t.Fatal(err)
					}
				}
				want, err := replay.Image(f.ctx, m.model)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(snap, want) {
					t.Fatalf("the snapshot at %s (%d rows) differs from a replay of the writes up to it (%d rows)", snap.Checkpoint, snap.Rows(), want.Rows())
				}
			}
			if during == 0 {
				t.Fatal("every write came after the last snapshot: none was written while writes kept coming")
			}
		})
	}
}

// A read model emptied (a rebuild's reset) while its image is being
// written fails the write instead of writing a mix of the two states.
func TestPagedSnapshotFailsWhenItsReadModelIsReset(t *testing.T) {
	for _, m := range pagedModels {
		t.Run(string(m.model), func(t *testing.T) {
			f := m.fixture(t, 64, 300)
			reset := false
			memory.SetImageStep(f.store, func() {
				if !reset {
					reset = true
					if err := f.store.ResetReadModel(f.ctx, m.model); err != nil {
						t.Error(err)
					}
				}
			})
			if err := f.snapshotter().Write(f.ctx); err == nil {
				t.Fatal("a snapshot was written across a reset of its read model")
			}
		})
	}
}
