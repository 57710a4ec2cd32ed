package memory_test

import (
	"cmp"
	"context"
	"crypto/cipher"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	evmemory "github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
	keyfiles "github.com/healthtech/partner-open-platform/internal/datakeys/files"
	"github.com/healthtech/partner-open-platform/internal/secrets"
	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory"
	"github.com/healthtech/partner-open-platform/projections/memory/snapfile"
)

// snapFixture is a store whose read models were filled while a log grew, so
// every checkpoint is the position of a real event.
type snapFixture struct {
	ctx   context.Context
	log   *evmemory.Store
	keys  *datakeys.Keys
	store *memory.Store
	path  string
}

func newSnapFixture(t testing.TB) *snapFixture {
	t.Helper()
	dir := t.TempDir()
	backend, err := keyfiles.Open(filepath.Join(dir, "keys"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	sealer, err := secrets.New([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	return &snapFixture{ctx: context.Background(), log: evmemory.New(), keys: datakeys.New(backend, sealer), store: memory.New(),
		path: filepath.Join(dir, "readmodels.snapshot")}
}

func (f *snapFixture) snapshotter() *memory.Snapshotter {
	return &memory.Snapshotter{Store: f.store, Keys: f.keys, Log: f.log, Path: f.path, ReadModels: projections.ReadModels,
		ErasedBy: []projections.ReadModel{projections.ReadModelUsers}}
}

// event appends one event and returns its position.
func (f *snapFixture) event(t testing.TB) events.Position {
	t.Helper()
	res, err := f.log.Append(f.ctx, "s-"+uuid.NewString(), events.NoStream(), events.Proposed{ID: uuid.NewString(), Type: "t", Data: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	return res.Position
}

// fill writes rows to every read model, each write at a new event's position.
func (f *snapFixture) fill(t *testing.T, users int) {
	t.Helper()
	ctx := f.ctx
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	phone := "13800000000"
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= users; i++ {
		id := int64(i)
		must(f.store.Update(ctx, "users", f.event(t), func(tx projections.UserTx) error {
			if err := tx.PutUser(ctx, projections.User{AppID: 1, OpenUserID: id, ChannelUserID: fmt.Sprintf("c%d", i), Name: "n", Phone: &phone, Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}); err != nil {
				return err
			}
			if err := tx.PutGroup(ctx, projections.Group{AppID: 1, OpenUserID: id, FamilyGroupID: id, AppGroupID: 1, Name: "g", CreatedAt: at, UpdatedAt: at}); err != nil {
				return err
			}
			if err := tx.PutMember(ctx, projections.Member{AppID: 1, OpenUserID: id, MemberID: id, AppUserID: "m", AppGroupID: 1, FamilyGroupID: id, Name: "m", Relationship: "SON", UpdatedAt: at}); err != nil {
				return err
			}
			if i%3 == 0 {
				return tx.DeleteMember(ctx, id, at.Add(time.Second))
			}
			return nil
		}))
	}
	code := 200
	must(f.store.UpdateDeliveries(ctx, "deliveries", f.event(t), func(tx projections.DeliveryTx) error {
		for i := 1; i <= 3; i++ {
			next := at.Add(time.Hour)
			if err := tx.PutDelivery(ctx, projections.Delivery{DeliveryID: fmt.Sprintf("d%d", i), AppID: 1, EventType: "user.registered",
				SourceEventID: "e", SourcePosition: events.Position{Commit: uint64(i), Prepare: uint64(i)}, Cursor: events.Position{Commit: uint64(10 + i), Prepare: uint64(10 + i)},
				Body: []byte(`{"x":1}`), Subject: "user-1", Status: "retrying", Attempts: 1, NextAttemptAt: &next, CreatedAt: at, UpdatedAt: at}); err != nil {
				return err
			}
			if err := tx.AddAttempt(ctx, projections.Attempt{DeliveryID: fmt.Sprintf("d%d", i), Attempt: 1, At: at, StatusCode: &code, LatencyMS: 5}); err != nil {
				return err
			}
		}
		return nil
	}))
	must(f.store.UpdateReports(ctx, "reports", f.event(t), func(tx projections.ReportTx) error {
		return tx.PutReport(ctx, projections.Report{ReportID: 1, AppID: 1, OpenUserID: 1, Day: "2026-01-02", UploadedAt: at, UpdatedAt: at})
	}))
	must(f.store.UpdateOrders(ctx, "orders", f.event(t), func(tx projections.OrderTx) error {
		if err := tx.PutGoods(ctx, projections.Goods{GoodsID: 1, GoodsCode: "G1", CreatedAt: at, UpdatedAt: at}); err != nil {
			return err
		}
		return tx.PutOrder(ctx, projections.Order{OrderID: 1, AppID: 1, OrderCode: "O1", Status: "PAID", CreatedAt: at, UpdatedAt: at})
	}))
	must(f.store.UpdateBenefits(ctx, "benefits", f.event(t), func(tx projections.BenefitTx) error {
		if err := tx.PutProvider(ctx, projections.ServiceProvider{ProviderID: 1, AppID: 1, CreatedAt: at, UpdatedAt: at}); err != nil {
			return err
		}
		return tx.PutCard(ctx, projections.Card{CardNumber: "C1", IssuerAppID: 1, Items: []projections.CardItem{{UserBenefitItemID: 1}}, CreatedAt: at, UpdatedAt: at})
	}))
	must(f.store.UpdateAudit(ctx, "audit", f.event(t), func(tx projections.AuditTx) error {
		return tx.AddAuditFact(ctx, projections.AuditFact{EventID: "a1", At: at})
	}))
}

func imagesOf(t *testing.T, s *memory.Store) []snapfile.Image {
	t.Helper()
	var out []snapfile.Image
	for _, f := range projections.ReadModels {
		im, err := s.Image(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, im)
	}
	return out
}

func TestSnapshotRestoresEveryReadModel(t *testing.T) {
	f := newSnapFixture(t)
	f.fill(t, 20)
	if err := f.snapshotter().Write(f.ctx); err != nil {
		t.Fatal(err)
	}
	want := imagesOf(t, f.store)

	f.store = memory.New()
	ok, err := f.snapshotter().Load(f.ctx)
	if err != nil || !ok {
		t.Fatalf("Load = %v, %v", ok, err)
	}
	got := imagesOf(t, f.store)
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(want, got) {
		t.Fatal("restored read models differ from the snapshotted ones")
	}
	// The indexes came back with the rows: lookups by every key answer.
	ctx := f.ctx
	if u, err := f.store.UserByChannelID(ctx, 1, "c7"); err != nil || u.OpenUserID != 7 {
		t.Errorf("UserByChannelID = %+v, %v", u, err)
	}
	if u, err := f.store.UserByPhone(ctx, 1, "13800000000"); err != nil || u.OpenUserID != 1 {
		t.Errorf("UserByPhone = %+v, %v", u, err)
	}
	if gs, err := f.store.Groups(ctx, 1, 3); err != nil || len(gs) != 1 || gs[0].MemberCount != 0 {
		t.Errorf("Groups of a user whose member was deleted = %+v, %v", gs, err)
	}
	if counts, err := f.store.CountByStatus(ctx); err != nil || counts["retrying"] != 3 {
		t.Errorf("CountByStatus = %v, %v", counts, err)
	}
	if last, err := f.store.LastSource(ctx); err != nil || last.Commit != 3 {
		t.Errorf("LastSource = %v, %v", last, err)
	}
	if o, err := f.store.OrderByCode(ctx, 1, "O1"); err != nil || o.OrderID != 1 {
		t.Errorf("OrderByCode = %+v, %v", o, err)
	}
	if c, err := f.store.CardByNumber(ctx, 1, "C1"); err != nil || len(c.Items) != 1 {
		t.Errorf("CardByNumber = %+v, %v", c, err)
	}
	for _, fam := range projections.ReadModels {
		cp, _ := f.store.Checkpoint(ctx, string(fam))
		if cp.IsZero() {
			t.Errorf("family %s restored without its checkpoint", fam)
		}
	}
}

// writtenSnapshot is a fixture filled with several sealed chunks' worth
// of rows, and the snapshot file it wrote.
func writtenSnapshot(t *testing.T) (*snapFixture, []byte) {
	t.Helper()
	f := newSnapFixture(t)
	f.fill(t, 16000)
	if err := f.snapshotter().Write(f.ctx); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	return f, good
}

// A snapshot that is torn (a crash before the rename can only leave a
// temporary file, but a disk can still lose a tail), altered or emptied is
// refused as a whole and shredded; the store stays empty for a replay.
func TestSnapshotDamageIsDetected(t *testing.T) {
	f, good := writtenSnapshot(t)
	if len(good) < 2<<20 {
		t.Fatalf("the fixture makes a %d-byte snapshot: too small to span chunks", len(good))
	}
	h, err := snapfile.ReadHeader(f.path)
	if err != nil {
		t.Fatal(err)
	}
	key, err := f.keys.Lookup(f.ctx, h.KeySubject)
	if err != nil {
		t.Fatal(err)
	}
	cuts := []int{0, 10, len(good) / 2, len(good) - 1, len(good) - 1000}
	for _, n := range cuts {
		if err := os.WriteFile(f.path, good[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := snapfile.Read(f.path, key.AEAD); !errors.Is(err, snapfile.ErrInvalid) {
			t.Errorf("cut at %d of %d: %v, want snapfile.ErrInvalid", n, len(good), err)
		}
	}
	for _, at := range []int{100, len(good) / 3, len(good) - 5} {
		bad := append([]byte(nil), good...)
		bad[at] ^= 0x40
		if err := os.WriteFile(f.path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := snapfile.Read(f.path, key.AEAD); !errors.Is(err, snapfile.ErrInvalid) {
			t.Errorf("byte %d changed: %v, want snapfile.ErrInvalid", at, err)
		}
	}
	if err := os.WriteFile(f.path, append(append([]byte(nil), good...), 0), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := snapfile.Read(f.path, key.AEAD); !errors.Is(err, snapfile.ErrInvalid) {
		t.Errorf("a byte appended: %v, want snapfile.ErrInvalid", err)
	}

	// Load refuses the damaged file, shreds it and leaves the store empty.
	if err := os.WriteFile(f.path, good[:len(good)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	f.store = memory.New()
	if ok, err := f.snapshotter().Load(f.ctx); ok || err != nil {
		t.Fatalf("Load of a torn snapshot = %v, %v", ok, err)
	}
	if _, err := os.Stat(f.path); !os.IsNotExist(err) {
		t.Errorf("the torn snapshot was kept: %v", err)
	}
	if _, err := f.keys.Lookup(f.ctx, h.KeySubject); err == nil {
		t.Error("the torn snapshot's key was kept")
	}
	if cp, _ := f.store.Checkpoint(f.ctx, "users"); !cp.IsZero() {
		t.Errorf("users checkpoint after a refused snapshot = %v, want zero (replay)", cp)
	}
}

// A start restores each section's rows as the file is read, before its
// end is checked: a file refused after rows were restored (torn in the
// middle, its last chunk altered, or a byte after its end, which is found
// once every read model was restored) leaves the store as a fresh one.
func TestRefusedSnapshotLeavesAFreshStore(t *testing.T) {
	fresh := imagesOf(t, memory.New())
	for _, damage := range []struct {
		name string
		of   func(good []byte) []byte
	}{
		{"torn", func(good []byte) []byte { return good[:len(good)/2] }},
		{"last chunk altered", func(good []byte) []byte {
			bad := append([]byte(nil), good...)
			bad[len(bad)-5] ^= 0x40
			return bad
		}},
		{"a byte appended", func(good []byte) []byte { return append(append([]byte(nil), good...), 0) }},
	} {
		f, good := writtenSnapshot(t) // each its own key: a refused file's is destroyed
		if err := os.WriteFile(f.path, damage.of(good), 0o600); err != nil {
			t.Fatal(err)
		}
		f.store = memory.New()
		if ok, err := f.snapshotter().Load(f.ctx); ok || err != nil {
			t.Fatalf("%s: Load = %v, %v; want it refused", damage.name, ok, err)
		}
		if got := imagesOf(t, f.store); !reflect.DeepEqual(got, fresh) {
			t.Errorf("%s: the refused snapshot's rows were kept", damage.name)
		}
		for _, rm := range projections.ReadModels {
			if cp, _ := f.store.Checkpoint(f.ctx, string(rm)); !cp.IsZero() {
				t.Errorf("%s: %s checkpoint %v, want zero (replay)", damage.name, rm, cp)
			}
		}
	}
}

// A snapshot must never be ahead of the log it is restored over, nor be
// of another log: both are refused.
func TestSnapshotMustMatchTheLog(t *testing.T) {
	f := newSnapFixture(t)
	f.fill(t, 3)
	if err := f.snapshotter().Write(f.ctx); err != nil {
		t.Fatal(err)
	}
	saved, _ := os.ReadFile(f.path)

	// The log behind the snapshot (restored from an older backup).
	f.log = evmemory.New()
	f.event(t)
	f.store = memory.New()
	if ok, err := f.snapshotter().Load(f.ctx); ok || err != nil {
		t.Fatalf("Load over a shorter log = %v, %v", ok, err)
	}

	// Another log as long as the first: its events have other ids.
	if err := f.snapshotter().Write(f.ctx); err != nil { // nothing to write: the store is empty at zero
		t.Fatal(err)
	}
	other := evmemory.New()
	for i := 0; i < 20; i++ {
		if _, err := other.Append(f.ctx, fmt.Sprintf("o-%d", i), events.NoStream(), events.Proposed{ID: uuid.NewString(), Type: "t", Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(f.path, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	f.log = other
	f.store = memory.New()
	if ok, err := f.snapshotter().Load(f.ctx); ok || err != nil {
		t.Fatalf("Load over another log = %v, %v", ok, err)
	}
	if u, _ := imagesOf(t, f.store)[0], 0; len(u.Users) != 0 {
		t.Fatal("rows of a refused snapshot were kept")
	}
}

// Erasing shreds the snapshot at once and holds every new one back until
// the erasure's event is applied by the read models that erase.
func TestSnapshotHeldThroughErasure(t *testing.T) {
	f := newSnapFixture(t)
	f.fill(t, 3)
	s := f.snapshotter()
	if err := s.Write(f.ctx); err != nil {
		t.Fatal(err)
	}
	s.Erasing(f.ctx, "user-2")
	if _, err := os.Stat(f.path); !os.IsNotExist(err) {
		t.Fatalf("snapshot kept after Erasing: %v", err)
	}
	if err := s.Write(f.ctx); !errors.Is(err, memory.ErrSnapshotHeld) {
		t.Fatalf("Write during an erasure = %v, want ErrSnapshotHeld", err)
	}
	erased := f.event(t)
	s.Erased(f.ctx, "user-2", erased)
	if err := s.Write(f.ctx); !errors.Is(err, memory.ErrSnapshotHeld) {
		t.Fatalf("Write before the users family applied the erasure = %v, want ErrSnapshotHeld", err)
	}
	if err := f.store.Update(f.ctx, "users", erased, func(tx projections.UserTx) error { return tx.EraseUser(f.ctx, 2) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(f.ctx); err != nil {
		t.Fatalf("Write once the erasure is applied: %v", err)
	}
	f.store = memory.New()
	if ok, err := f.snapshotter().Load(f.ctx); !ok || err != nil {
		t.Fatalf("Load = %v, %v", ok, err)
	}
	if _, err := f.store.User(f.ctx, 1, 2); !errors.Is(err, projections.ErrNotFound) {
		t.Fatalf("the erased user came back from the snapshot: %v", err)
	}
}

// An erasure racing a snapshot being written: once Erasing returns, no
// snapshot file is left, whichever finished first.
func TestSnapshotErasingRacesWrite(t *testing.T) {
	f := newSnapFixture(t)
	f.fill(t, 200)
	for i := 0; i < 10; i++ {
		s := f.snapshotter()
		if err := f.store.Update(f.ctx, "users", f.event(t), func(projections.UserTx) error { return nil }); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			if err := s.Write(f.ctx); err != nil && !errors.Is(err, memory.ErrSnapshotHeld) {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			s.Erasing(f.ctx, fmt.Sprintf("user-%d", i))
			if _, err := os.Stat(f.path); !os.IsNotExist(err) {
				t.Errorf("round %d: a snapshot exists after Erasing returned: %v", i, err)
			}
		}()
		wg.Wait()
		if _, err := os.Stat(f.path); !os.IsNotExist(err) {
			t.Fatalf("round %d: a snapshot exists while the erasure is pending: %v", i, err)
		}
	}
}

// A rebuild's reset shreds the snapshot: a restart must not bring the old rows back.
func TestSnapshotShreddedByReset(t *testing.T) {
	f := newSnapFixture(t)
	f.fill(t, 3)
	s := f.snapshotter()
	f.store.OnReset(func(fam projections.ReadModel) { s.Invalidate(f.ctx, "reset of "+string(fam)) })
	if err := s.Write(f.ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.store.ResetReadModel(f.ctx, projections.ReadModelReports); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.path); !os.IsNotExist(err) {
		t.Fatalf("snapshot kept after a family's reset: %v", err)
	}
}

// A snapshot whose log's tail erases someone (another node's erasure,
// unseen here) is restored, then shredded at once: the file must not
// outlive the restore; Run writes a new one once caught up. A tail without
// erasure keeps the snapshot.
func TestSnapshotBehindAnErasureIsConsumed(t *testing.T) {
	f := newSnapFixture(t)
	f.fill(t, 3)
	if err := f.snapshotter().Write(f.ctx); err != nil {
		t.Fatal(err)
	}
	f.event(t) // a tail without erasure
	f.store = memory.New()
	if ok, err := f.snapshotter().Load(f.ctx); !ok || err != nil {
		t.Fatalf("Load = %v, %v", ok, err)
	}
	if _, err := os.Stat(f.path); err != nil {
		t.Fatalf("a snapshot with a harmless tail was dropped: %v", err)
	}
	if _, err := f.log.Append(f.ctx, "user-2", events.Any(), events.Proposed{ID: uuid.NewString(), Type: (catalog.UserErased{}).EventType(), Data: []byte(`{"open_user_id":2}`)}); err != nil {
		t.Fatal(err)
	}
	f.store = memory.New()
	s := f.snapshotter()
	if ok, err := s.Load(f.ctx); !ok || err != nil {
		t.Fatalf("Load = %v, %v", ok, err)
	}
	if _, err := f.store.User(f.ctx, 1, 2); err != nil {
		t.Fatalf("restored rows missing: %v", err)
	}
	if _, err := os.Stat(f.path); !os.IsNotExist(err) {
		t.Fatalf("a snapshot behind the log outlived its restore: %v", err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx, time.Hour, true, func(context.Context) error { return nil }) }()
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(f.path); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if _, err := os.Stat(f.path); err != nil {
		t.Fatalf("no new snapshot after a consumed one: %v", err)
	}
}

// A snapshot larger than one section per table (users, groups and members
// cut in several, decoded concurrently) with many deliveries written out of
// feed order restores to the same rows, the same feed order and the same
// due queue. Every fifth delivery carries a 2 KB body, so the deliveries'
// section is bigger than a sealed chunk and the sections (encoded one
// after another into one reused buffer) differ in size.
func TestSnapshotManySectionsRestoreEqual(t *testing.T) {
	f := newSnapFixture(t)
	f.fill(t, 20000)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	const deliveries = 3000
	if err := f.store.UpdateDeliveries(f.ctx, "deliveries", f.event(t), func(tx projections.DeliveryTx) error {
		for i := deliveries; i >= 1; i-- { // the feed is ordered by cursor: written backwards here
			next := at.Add(time.Duration(i%97) * time.Minute)
			if err := tx.PutDelivery(f.ctx, projections.Delivery{DeliveryID: fmt.Sprintf("m%05d", i), AppID: int64(1 + i%3), EventType: "user.registered",
				SourceEventID: "e", SourcePosition: events.Position{Commit: uint64(100 + i), Prepare: uint64(100 + i)},
				Cursor: events.Position{Commit: uint64(1000 + i), Prepare: uint64(1000 + i)}, Body: bodyOf(i), Subject: fmt.Sprintf("user-%d", i),
				Status: "pending", NextAttemptAt: &next, CreatedAt: at, UpdatedAt: at}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := f.snapshotter().Write(f.ctx); err != nil {
		t.Fatal(err)
	}
	want := imagesOf(t, f.store)
	wantFeed, wantDue := feedOf(t, f.store)
	before := f.store

	f.store = memory.New()
	if ok, err := f.snapshotter().Load(f.ctx); err != nil || !ok {
		t.Fatalf("Load = %v, %v", ok, err)
	}
	if got := imagesOf(t, f.store); !reflect.DeepEqual(got, want) {
		t.Fatal("restored read models differ from the snapshotted ones")
	}
	gotFeed, gotDue := feedOf(t, f.store)
	if !reflect.DeepEqual(gotFeed, wantFeed) || !reflect.DeepEqual(gotDue, wantDue) {
		t.Fatalf("feed or due queue differ after the restore: %d/%d feed, %d/%d due", len(gotFeed), len(wantFeed), len(gotDue), len(wantDue))
	}
	if len(wantFeed) != deliveries+3 || before == f.store {
		t.Fatalf("the fixture lists %d deliveries, want %d", len(wantFeed), deliveries+3)
	}
}

// bodyOf is a delivery's body: 2 KB for every fifth, else two bytes.
func bodyOf(i int) []byte {
	if i%5 != 0 {
		return []byte(`{}`)
	}
	return fmt.Appendf(nil, `{"n":%d,"pad":%q}`, i, strings.Repeat(string(rune('a'+i%26)), 2048))
}

// feedOf lists every delivery's id in feed order (per app and overall)
// and the due queue's order.
func feedOf(t *testing.T, s *memory.Store) (feed, due []string) {
	t.Helper()
	for _, app := range []int64{0, 1, 2, 3} {
		after := events.Position{}
		for {
			page, err := s.Deliveries(context.Background(), domain.DeliveryFilter{AppID: app, After: after, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			for _, d := range page {
				feed = append(feed, fmt.Sprint(app, d.DeliveryID))
			}
			after = page[len(page)-1].Cursor
		}
	}
	ds, err := s.Due(context.Background(), time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), 100000)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		due = append(due, d.DeliveryID)
	}
	return feed[:len(feed)/2], due // app 0 lists them all; apps 1-3 the same again, split
}

// Snapshots in the older formats (one gob stream; gob sections; the row
// codec with every body in its row) written by nodes before are still restored, and replaced by one in the current
// format as soon as the read models are ready.
func TestOlderSnapshotFormatsAreRestoredThenRewritten(t *testing.T) {
	writers := map[int]func(string, snapfile.Header, cipher.AEAD, []snapfile.Image, []snapfile.Directory) error{
		1: snapfile.WriteV1,
		2: snapfile.WriteV2,
		3: snapfile.WriteV3,
	}
	for format, write := range writers {
		t.Run(fmt.Sprintf("format %d", format), func(t *testing.T) { testOlderFormatRewritten(t, format, write) })
	}
}

func testOlderFormatRewritten(t *testing.T, format int, write func(string, snapfile.Header, cipher.AEAD, []snapfile.Image, []snapfile.Directory) error) {
	f := newSnapFixture(t)
	f.fill(t, 50)
	var images []snapfile.Image
	h := snapfile.Header{KeySubject: "readmodels-snapshot-1", Created: time.Now().UTC()}
	for _, im := range imagesOf(t, f.store) {
		images = append(images, im)
		h.ReadModels = append(h.ReadModels, snapfile.ReadModel{ReadModel: im.ReadModel, Checkpoint: im.Checkpoint, EventID: eventAt(t, f, im.Checkpoint), Rows: im.Rows()})
	}
	key, err := f.keys.DataKey(f.ctx, h.KeySubject)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(f.path, h, key.AEAD, images, nil); err != nil {
		t.Fatal(err)
	}
	want := imagesOf(t, f.store)

	f.store = memory.New()
	s := f.snapshotter()
	if ok, err := s.Load(f.ctx); err != nil || !ok {
		t.Fatalf("Load of a format %d snapshot = %v, %v", format, ok, err)
	}
	if got := imagesOf(t, f.store); !reflect.DeepEqual(got, want) {
		t.Fatalf("format %d snapshot restored different read models", format)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, time.Hour, true, func(context.Context) error { return nil }) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if h, err := snapfile.ReadHeader(f.path); err == nil && h.Version == snapfile.Version {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the format %d snapshot was not replaced by a format %d one", format, snapfile.Version)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := f.keys.Lookup(f.ctx, h.KeySubject); err == nil {
		t.Errorf("the format %d snapshot's key outlived its replacement", format)
	}
	f.store = memory.New()
	if ok, err := f.snapshotter().Load(f.ctx); err != nil || !ok {
		t.Fatalf("Load of the rewritten snapshot = %v, %v", ok, err)
	}
	if got := imagesOf(t, f.store); !reflect.DeepEqual(got, want) {
		t.Fatal("the rewritten snapshot restored different read models")
	}
}

// eventAt is the id of the log's event at pos.
func eventAt(t *testing.T, f *snapFixture, pos events.Position) string {
	t.Helper()
	recs, err := f.log.ReadAll(f.ctx, events.Position{}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Position == pos {
			return r.ID
		}
	}
	t.Fatalf("no event at %v", pos)
	return ""
}

// moving stands for the read models' moves (Snapshotter.Moves): move
// closes the channel the last call of moves returned.
func moving() (moves func() <-chan struct{}, move func()) {
	var mu sync.Mutex
	ch := make(chan struct{})
	moves = func() <-chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		return ch
	}
	move = func() {
		mu.Lock()
		defer mu.Unlock()
		close(ch)
		ch = make(chan struct{})
	}
	return moves, move
}

// putUser writes user id to the users read model at a new event's position.
func (f *snapFixture) putUser(t *testing.T, id int64) {
	t.Helper()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := f.store.Update(f.ctx, "users", f.event(t), func(tx projections.UserTx) error {
		return tx.PutUser(f.ctx, projections.User{AppID: 1, OpenUserID: id, ChannelUserID: fmt.Sprintf("c%d", id), Name: "n", Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at})
	}); err != nil {
		t.Fatal(err)
	}
}

// running writes s's snapshot, then runs s (as after a restore, every hour)
// until t ends, and counts the snapshots Run writes.
func (f *snapFixture) running(t *testing.T, s *memory.Snapshotter) *atomic.Int32 {
	t.Helper()
	if err := s.Write(f.ctx); err != nil {
		t.Fatal(err)
	}
	writes := new(atomic.Int32)
	s.OnWrite = func(int64, time.Duration) { writes.Add(1) }
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx, time.Hour, true, func(context.Context) error { return nil }) }()
	t.Cleanup(func() { cancel(); <-done })
	return writes
}

// waitWrites waits until n snapshots were written (at most 5 s).
func waitWrites(t *testing.T, writes *atomic.Int32, n int32) {
	t.Helper()
	for i := 0; i < 500 && writes.Load() < n; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if got := writes.Load(); got != n {
		t.Fatalf("%d snapshots written, want %d", got, n)
	}
}

// A snapshot follows the log's growth: with AfterEvents set, Run writes one
// once the read models have read that many events since the last, long before
// the interval, and not before; a start then restores the rows the tail
// added instead of replaying them.
func TestSnapshotAfterEvents(t *testing.T) {
	f := newSnapFixture(t)
	f.fill(t, 3)
	s := f.snapshotter()
	var read atomic.Uint64
	moves, move := moving()
	s.AfterEvents, s.Progress, s.Moves = 5, read.Load, moves
	writes := f.running(t, s)
	put := func(id int64) {
		t.Helper()
		f.putUser(t, id)
		read.Add(1)
		move()
	}
	for id := int64(100); id < 104; id++ {
		put(id)
	}
	time.Sleep(2*memory.ProgressCheck + 200*time.Millisecond) // the looks after the moves find fewer events than the mark
	if n := writes.Load(); n != 0 {
		t.Fatalf("%d snapshots written after 4 of 5 events", n)
	}
	put(104)
	waitWrites(t, writes, 1)
	f.store = memory.New()
	if ok, err := f.snapshotter().Load(f.ctx); !ok || err != nil {
		t.Fatalf("Load = %v, %v", ok, err)
	}
	if _, err := f.store.User(f.ctx, 1, 104); err != nil {
		t.Fatalf("the snapshot written after 5 events lacks the fifth's row: %v", err)
	}
}

// An idle node's snapshotter does not look at the read models' progress
// or rebuilds while they stand still (a look every second would wake the node
// every second); once they move past the mark, the snapshot is written.
// A write held back by an erasure whose end comes without a move (the
// erasure follower's Erased) is written once it is let go.
func TestSnapshotLooksOnlyWhenTheReadModelsMove(t *testing.T) {
	f := newSnapFixture(t)
	f.fill(t, 3)
	s := f.snapshotter()
	var read atomic.Uint64
	var looks atomic.Int32
	moves, move := moving()
	var watches atomic.Int32
	s.AfterEvents, s.Moves = 2, func() <-chan struct{} { watches.Add(1); return moves() }
	s.Progress = func() uint64 { looks.Add(1); return read.Load() }
	s.Rebuilds = func() (time.Time, bool) { looks.Add(1); return time.Time{}, false }
	writes := f.running(t, s)
	time.Sleep(2*memory.ProgressCheck + 200*time.Millisecond)
	if n := looks.Load(); n != 1 { // the rebuilds' read at Run's start
		t.Fatalf("%d looks at the read models while they stood still, want none after the start's", n-1)
	}
	put := func(id int64) {
		t.Helper()
		f.putUser(t, id)
		read.Add(1)
	}
	put(100)
	put(101)
	move()
	waitWrites(t, writes, 1)

	s.Erasing(f.ctx, "user-2")
	put(102)
	put(103)
	move() // the look finds the write held back, and looks again every rest
	for i := 0; i < 500 && looks.Load() < 9; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	// One watch at the start and one after each of the two moves: the looks
	// again without a move keep the watch they have.
	if n := watches.Load(); n > 3 {
		t.Errorf("%d watches for moves, want 3: a look without a move added one", n)
	}
	s.Erased(f.ctx, "user-2", events.Position{}) // no move follows
	waitWrites(t, writes, 2)
}

// An image taken while the projector writes is the effect of the log up to
// its checkpoint (each write puts a user and its group together) and in key
// order, though the sort runs after the read model's lock is released.
func TestImageDuringWrites(t *testing.T) {
	f := newSnapFixture(t)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for id := int64(1); id <= 300; id++ {
			res, err := f.log.Append(f.ctx, "s-"+uuid.NewString(), events.NoStream(), events.Proposed{ID: uuid.NewString(), Type: "t", Data: []byte(`{}`)})
			if err != nil {
				t.Error(err)
				return
			}
			pos := res.Position
			if err := f.store.Update(f.ctx, "users", pos, func(tx projections.UserTx) error {
				if err := tx.PutUser(f.ctx, projections.User{AppID: 1, OpenUserID: id, ChannelUserID: fmt.Sprintf("c%d", id), Name: "n", Status: "ACTIVE", RegisteredAt: at, UpdatedAt: at}); err != nil {
					return err
				}
				return tx.PutGroup(f.ctx, projections.Group{AppID: 1, OpenUserID: id, FamilyGroupID: id, AppGroupID: 1, Name: "g", CreatedAt: at, UpdatedAt: at})
			}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 0; i < 50; i++ {
		im, err := f.store.Image(f.ctx, projections.ReadModelUsers)
		if err != nil {
			t.Fatal(err)
		}
		if len(im.Users) != len(im.Groups) {
			t.Fatalf("image at %s has %d users and %d groups: not one write's effect", im.Checkpoint, len(im.Users), len(im.Groups))
		}
		if !slices.IsSortedFunc(im.Users, func(a, b projections.User) int { return cmp.Compare(a.OpenUserID, b.OpenUserID) }) {
			t.Fatalf("image at %s is not in key order", im.Checkpoint)
		}
	}
	wg.Wait()
}

// A write made by Run rests after each read model's image and each sealed
// chunk, for WriteRest times the work since its last rest, so it never
// holds a core for its whole length while the node answers requests; a
// write at a graceful stop (Write) does not rest.
func TestRunWritesRestBetweenChunks(t *testing.T) {
	f := newSnapFixture(t)
	f.fill(t, 25000)
	var mu sync.Mutex
	var pauses []time.Duration
	var size atomic.Int64
	s := f.snapshotter()
	s.Pause = func(d time.Duration) {
		mu.Lock()
		pauses = append(pauses, d)
		mu.Unlock()
	}
	s.OnWrite = func(n int64, _ time.Duration) { size.Store(n) }
	if err := s.Write(f.ctx); err != nil {
		t.Fatal(err)
	}
	if len(pauses) != 0 || size.Load() == 0 {
		t.Fatalf("Write (graceful stop) rested %d times, wrote %d bytes: want no rest", len(pauses), size.Load())
	}
	f.event(t) // the log moves on, so Run's first write is not skipped as unchanged
	if err := f.store.Update(f.ctx, "users", f.event(t), func(projections.UserTx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	size.Store(0)
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Run(ctx, time.Hour, false, func(context.Context) error { return nil })
	}()
	for i := 0; i < 1000 && size.Load() == 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	chunks := int(size.Load() >> 20)
	if size.Load() == 0 || chunks < 2 {
		t.Fatalf("Run wrote %d bytes: want a snapshot of at least two chunks", size.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pauses) == 0 {
		t.Fatal("Run's write never rested")
	}
	for _, d := range pauses {
		if d < memory.WriteRest*memory.WriteSlice {
			t.Fatalf("a rest of %v: want WriteRest times the work before it, at least a slice's", d)
		}
	}
}

// The snapshot's state (GET /admin/v1/projections, which an operator polls
// for a rebuild's progress) answers while a write is under way: at a million
// users a paced write lasts minutes, and the list waited for it (the
// rebuild's progress went unreported until the client gave up).
func TestSnapshotStateAnswersDuringAWrite(t *testing.T) {
	f := newSnapFixture(t)
	f.fill(t, 2000)
	s := f.snapshotter()
	resting, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s.Pause = func(time.Duration) {
		once.Do(func() { close(resting) })
		<-release
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Run(ctx, time.Hour, false, func(context.Context) error { return nil })
	}()
	defer func() { cancel(); close(release); <-done }()
	<-resting // the first write rests in its middle, holding the writer's lock
	answered := make(chan memory.SnapshotState, 1)
	go func() { answered <- s.State() }()
	select {
	case st := <-answered:
		if st.OnDisk {
			t.Fatalf("state during the first write %+v: want none on disk yet", st)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("State waited for the snapshot write under way")
	}
}

// A write that finds every read model and directory at the checkpoint of
// the snapshot on disk ends before taking images (an image lists every
// table's keys): an idle node's interval write costs a few reads whatever
// the read models hold. A move is still written.
func TestWriteWithNothingMovedTakesNoImage(t *testing.T) {
	f := newSnapFixture(t)
	f.fill(t, 300)
	s := f.snapshotter()
	if err := s.Write(f.ctx); err != nil {
		t.Fatal(err)
	}
	written := s.State()
	allocs := testing.AllocsPerRun(3, func() {
		if err := s.Write(f.ctx); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 10 {
		t.Fatalf("a write with nothing moved allocated %.0f times, want at most 10 (no image)", allocs)
	}
	if s.State() != written {
		t.Fatal("a write with nothing moved replaced the snapshot")
	}
	f.putUser(t, 1000)
	if err := s.Write(f.ctx); err != nil {
		t.Fatal(err)
	}
	if s.State() == written {
		t.Fatal("the write after a move left the snapshot as it was")
	}
}
