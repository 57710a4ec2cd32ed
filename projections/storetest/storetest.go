// Package storetest is the conformance suite of the read-model port: the
// embedded and the Postgres stores must answer the query API identically, so
// both run exactly these cases.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// Run checks that the stores made by open honour every promise of
// projections.UserStore, DeliveryStore, ReportStore, ReportTx, NonceStore,
// OrderStore, OrderTx, BenefitStore and BenefitTx, so that the query API, the
// delivery log, the dispatcher, the report pull, the replay guard and the
// order and benefit reads behave the same whichever store the deployment uses. open
// is called once per case and must return an empty store; Run closes it when
// the case ends.
// Store is an adapter under test: every family's port, the nonce store,
// and the adapter's own Reset (every family) and Close.
type Store interface {
	projections.UserStore
	projections.DeliveryStore
	projections.ReportStore
	projections.OrderStore
	projections.BenefitStore
	projections.NonceStore
	Reset(ctx context.Context) error
	Close() error
}

func Run(t *testing.T, open func(t *testing.T) Store) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(t *testing.T, s Store)
	}{
		{"CheckpointZeroForUnknownProjection", testCheckpointZero},
		{"UpdateSetsCheckpointWithWrites", testUpdateAtomic},
		{"FailedUpdateChangesNothing", testFailedUpdate},
		{"CheckpointsArePerProjection", testCheckpointsPerProjection},
		{"CheckpointFullUint64Range", testCheckpointRange},
		{"UserLookupsAndTenancy", testUserLookups},
		{"PutUserReplacesAllFields", testPutUserReplaces},
		{"UserRoundTrip", testUserRoundTrip},
		{"GroupsFilterOrderAndCount", testGroups},
		{"GroupRoundTrip", testGroupRoundTrip},
		{"MembersFilterAndOrder", testMembers},
		{"MembersUpdatedAfterStrict", testMembersUpdatedAfter},
		{"MemberRoundTrip", testMemberRoundTrip},
		{"DeleteMember", testDeleteMember},
		{"ResetEmptiesEverything", testReset},
		{"ResetFamilyLeavesTheOthers", testResetFamily},
		{"FamiliesUpdateConcurrently", testFamiliesConcurrently},
		{"ConcurrentUpdates", testConcurrentUpdates},
		{"TxReadsSeeOwnWrites", testTxReads},
		{"TxReadsAfterFailedUpdate", testTxReadsAfterFailure},
		{"ChannelIDConflictFailsUpdate", testChannelConflict},

		{"DeliveryRoundTrip", testDeliveryRoundTrip},
		{"PutDeliveryReplacesAllFields", testPutDeliveryReplaces},
		{"DeliveryTenancy", testDeliveryTenancy},
		{"DeliveriesFilters", testDeliveriesFilters},
		{"DeliveriesCursorPaging", testDeliveriesPaging},
		{"DeliveriesLimits", testDeliveriesLimits},
		{"DueOrderAndBound", testDue},
		{"NextDue", testNextDue},
		{"CountByStatus", testCountByStatus},
		{"LastSource", testLastSource},
		{"AttemptsOrderAndUpsert", testAttempts},
		{"ErrorClassesRoundTrip", testErrorClasses},
		{"DeliveryTxReadsSeeOwnWrites", testDeliveryTxReads},
		{"FailedUpdateDeliveriesChangesNothing", testFailedUpdateDeliveries},
		{"DeliveryCheckpointsAreUpdateCheckpoints", testDeliveryCheckpoints},
		{"ResetEmptiesDeliveries", testResetDeliveries},
		{"ConcurrentDeliveryUpdates", testConcurrentDeliveries},
		{"DeliveriesMatchModel", testDeliveriesModel},

		{"ReportRoundTrip", testReportRoundTrip},
		{"PutReportReplacesAllFields", testPutReportReplaces},
		{"ReportTxReadsSeeOwnWrites", testReportTxReads},
		{"FailedUpdateChangesNoReports", testFailedUpdateReports},
		{"ReportTenancy", testReportTenancy},
		{"ReportsOfDayFilterAndOrder", testReportsOfDay},
		{"UserByPhone", testUserByPhone},
		{"ResetEmptiesReportsKeepsNonces", testResetReports},
		{"NoncesFreshOnceUntilExpired", testNonces},
		{"ConcurrentNonceUse", testNonceRace},
		{"BindingsHoldUntilExpired", testBindings},
		{"ConcurrentBinding", testBindingRace},

		{"GoodsRoundTripAndOrder", testGoods},
		{"GoodsCodeUnique", testGoodsCodeUnique},
		{"OrderRoundTrip", testOrderRoundTrip},
		{"PutOrderReplacesOrderAndItems", testPutOrderReplaces},
		{"OrderTxReadsSeeOwnWrites", testOrderTxReads},
		{"FailedUpdateChangesNoOrders", testFailedUpdateOrders},
		{"OrderTenancyAndUniqueCode", testOrderTenancy},
		{"OrdersFiltersOrderAndPaging", testOrdersFilters},
		{"OrdersLimits", testOrdersLimits},

		{"BenefitItemsRoundTripAndOrder", testBenefitItems},
		{"ProvidersRoundTripAndFilter", testProviders},
		{"CardRoundTripAndTenancy", testCards},
		{"CardItemsReplacedAndUnique", testCardItems},
		{"FulfillmentRoundTrip", testFulfillmentRoundTrip},
		{"BenefitTxReadsSeeOwnWrites", testBenefitTxReads},
		{"FailedUpdateChangesNoBenefits", testFailedUpdateBenefits},
		{"FulfillmentsFiltersOrderAndPaging", testFulfillmentsFilters},
		{"FulfillmentsLimits", testFulfillmentsLimits},
		{"FulfillmentsOfProviderAppOnePage", testFulfillmentsOfProviderApp},
		{"ResetEmptiesOrdersAndBenefits", testResetCommerce},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := open(t)
			if s == nil {
				t.Fatal("open returned a nil store")
			}
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			c.fn(t, s)
		})
	}
}

// BenchmarkUserSnapshotRead measures the reads the snapshot endpoint makes
// for one user (User, Groups, Members), so the stores can be compared on the
// query API's hottest path.
func BenchmarkUserSnapshotRead(b *testing.B, s Store) {
	b.Helper()
	ctx := context.Background()
	const app, owner = int64(7), int64(1001)
	err := s.Update(ctx, "bench", events.Position{Commit: 1, Prepare: 1}, func(tx projections.UserTx) error {
		// Neighbours make the indexes matter.
		for o := owner - 50; o <= owner+50; o++ {
			u := fullUser(app, o, fmt.Sprintf("bench-%d", o))
			if err := tx.PutUser(ctx, u); err != nil {
				return err
			}
			for g := int64(0); g < 3; g++ {
				gid := o*10 + g
				if err := tx.PutGroup(ctx, group(app, o, gid)); err != nil {
					return err
				}
				for m := int64(0); m < 3; m++ {
					if err := tx.PutMember(ctx, member(app, o, gid, gid*10+m)); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatalf("seed: %v", err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.User(ctx, app, owner); err != nil {
			b.Fatal(err)
		}
		gs, err := s.Groups(ctx, app, owner)
		if err != nil || len(gs) != 3 {
			b.Fatalf("Groups: %d, %v", len(gs), err)
		}
		ms, err := s.Members(ctx, app, owner, time.Time{})
		if err != nil || len(ms) != 9 {
			b.Fatalf("Members: %d, %v", len(ms), err)
		}
	}
}

// MemberReader is implemented by stores that can read one member row even
// when it is soft-deleted; the port exposes deleted rows nowhere, so the suite
// uses it, when present, to check what DeleteMember wrote.
type MemberReader interface {
	// Member returns the member row, deleted or not, if it belongs to appID.
	Member(ctx context.Context, appID, memberID int64) (projections.Member, error)
}

// ---- fixtures ----

var base = time.Date(2024, 3, 5, 8, 9, 10, 123456000, time.UTC)

func ptr[T any](v T) *T { return &v }

func at(us int) time.Time { return base.Add(time.Duration(us) * time.Microsecond) }

func fullUser(app, open int64, channel string) projections.User {
	return projections.User{
		AppID:         app,
		OpenUserID:    open,
		ChannelUserID: channel,
		Name:          "张三 Zhang 👨‍👩‍👧",
		Nickname:      ptr("小张"),
		Gender:        "male",
		Avatar:        ptr("https://cdn.example/a/" + channel + ".png"),
		Phone:         ptr("+86 138 0013 8000"),
		Email:         ptr("zhang@example.com"),
		BirthDate:     ptr("1990-02-03"),
		Status:        "ACTIVE",
		RegisteredAt:  at(1),
		UpdatedAt:     at(2),
	}
}

func group(app, owner, id int64) projections.Group {
	return projections.Group{
		AppID:         app,
		OpenUserID:    owner,
		FamilyGroupID: id,
		AppGroupID:    id + 900000,
		Name:          fmt.Sprintf("家庭 %d", id),
		CreatedAt:     at(10),
		UpdatedAt:     at(11),
	}
}

func member(app, owner, groupID, id int64) projections.Member {
	return projections.Member{
		AppID:         app,
		OpenUserID:    owner,
		MemberID:      id,
		AppUserID:     fmt.Sprintf("app-user-%d", id),
		AppGroupID:    groupID + 900000,
		FamilyGroupID: groupID,
		Name:          fmt.Sprintf("成员 %d", id),
		Relationship:  "child",
		Gender:        ptr("female"),
		BirthDate:     ptr("2015-06-07"),
		Phone:         ptr("13900139000"),
		IDType:        ptr("ID_CARD"),
		IDNumber:      ptr("11010519491231002X"),
		Height:        ptr(int64(132)),
		Weight:        ptr(int64(2850)),
		BloodType:     ptr("O"),
		IsDefault:     id%2 == 0,
		UpdatedAt:     at(20),
	}
}

// ---- helpers ----

func update(t *testing.T, s Store, projection string, pos events.Position, fn func(projections.UserTx) error) {
	t.Helper()
	if err := s.Update(context.Background(), projection, pos, fn); err != nil {
		t.Fatalf("Update(%q, %v): %v", projection, pos, err)
	}
}

func put(t *testing.T, s Store, users []projections.User, groups []projections.Group, members []projections.Member) {
	t.Helper()
	update(t, s, "fixture", events.Position{Commit: 1, Prepare: 1}, func(tx projections.UserTx) error {
		ctx := context.Background()
		for _, u := range users {
			if err := tx.PutUser(ctx, u); err != nil {
				return fmt.Errorf("PutUser %d: %w", u.OpenUserID, err)
			}
		}
		for _, g := range groups {
			if err := tx.PutGroup(ctx, g); err != nil {
				return fmt.Errorf("PutGroup %d: %w", g.FamilyGroupID, err)
			}
		}
		for _, m := range members {
			if err := tx.PutMember(ctx, m); err != nil {
				return fmt.Errorf("PutMember %d: %w", m.MemberID, err)
			}
		}
		return nil
	})
}

func checkpoint(t *testing.T, s Store, projection string) events.Position {
	t.Helper()
	p, err := s.Checkpoint(context.Background(), projection)
	if err != nil {
		t.Fatalf("Checkpoint(%q): %v", projection, err)
	}
	return p
}

func wantCheckpoint(t *testing.T, s Store, projection string, want events.Position) {
	t.Helper()
	if got := checkpoint(t, s, projection); got != want {
		t.Errorf("Checkpoint(%q) = %v, want %v", projection, got, want)
	}
}

func getUser(t *testing.T, s Store, app, open int64) projections.User {
	t.Helper()
	u, err := s.User(context.Background(), app, open)
	if err != nil {
		t.Fatalf("User(%d, %d): %v", app, open, err)
	}
	return u
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, projections.ErrNotFound) {
		t.Errorf("%s: err = %v, want ErrNotFound", what, err)
	}
}

func groups(t *testing.T, s Store, app, owner int64) []projections.Group {
	t.Helper()
	gs, err := s.Groups(context.Background(), app, owner)
	if err != nil {
		t.Fatalf("Groups(%d, %d): %v", app, owner, err)
	}
	return gs
}

func members(t *testing.T, s Store, app, owner int64, after time.Time) []projections.Member {
	t.Helper()
	ms, err := s.Members(context.Background(), app, owner, after)
	if err != nil {
		t.Fatalf("Members(%d, %d, %v): %v", app, owner, after, err)
	}
	return ms
}

func memberIDs(ms []projections.Member) []int64 {
	ids := make([]int64, len(ms))
	for i, m := range ms {
		ids[i] = m.MemberID
	}
	return ids
}

func groupIDs(gs []projections.Group) []int64 {
	ids := make([]int64, len(gs))
	for i, g := range gs {
		ids[i] = g.FamilyGroupID
	}
	return ids
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sameTime compares instants at the microsecond precision every store keeps
// and insists on UTC, which the API renders without conversion.
func sameTime(got, want time.Time) bool {
	return got.Location() == time.UTC &&
		got.Truncate(time.Microsecond).Equal(want.Truncate(time.Microsecond))
}

func sameTimePtr(got, want *time.Time) bool {
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	return sameTime(*got, *want)
}

func sameStr(got, want *string) bool {
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	return *got == *want
}

func sameInt(got, want *int64) bool {
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	return *got == *want
}

func show[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprintf("%v", *p)
}

func diffUser(got, want projections.User) []string {
	var d []string
	f := func(name string, ok bool, g, w any) {
		if !ok {
			d = append(d, fmt.Sprintf("%s: got %v, want %v", name, g, w))
		}
	}
	f("AppID", got.AppID == want.AppID, got.AppID, want.AppID)
	f("OpenUserID", got.OpenUserID == want.OpenUserID, got.OpenUserID, want.OpenUserID)
	f("ChannelUserID", got.ChannelUserID == want.ChannelUserID, got.ChannelUserID, want.ChannelUserID)
	f("Name", got.Name == want.Name, got.Name, want.Name)
	f("Nickname", sameStr(got.Nickname, want.Nickname), show(got.Nickname), show(want.Nickname))
	f("Gender", got.Gender == want.Gender, got.Gender, want.Gender)
	f("Avatar", sameStr(got.Avatar, want.Avatar), show(got.Avatar), show(want.Avatar))
	f("Phone", sameStr(got.Phone, want.Phone), show(got.Phone), show(want.Phone))
	f("Email", sameStr(got.Email, want.Email), show(got.Email), show(want.Email))
	f("BirthDate", sameStr(got.BirthDate, want.BirthDate), show(got.BirthDate), show(want.BirthDate))
	f("Status", got.Status == want.Status, got.Status, want.Status)
	f("RegisteredAt", sameTime(got.RegisteredAt, want.RegisteredAt), got.RegisteredAt, want.RegisteredAt)
	f("UpdatedAt", sameTime(got.UpdatedAt, want.UpdatedAt), got.UpdatedAt, want.UpdatedAt)
	return d
}

func diffGroup(got, want projections.Group) []string {
	var d []string
	f := func(name string, ok bool, g, w any) {
		if !ok {
			d = append(d, fmt.Sprintf("%s: got %v, want %v", name, g, w))
		}
	}
	f("AppID", got.AppID == want.AppID, got.AppID, want.AppID)
	f("OpenUserID", got.OpenUserID == want.OpenUserID, got.OpenUserID, want.OpenUserID)
	f("FamilyGroupID", got.FamilyGroupID == want.FamilyGroupID, got.FamilyGroupID, want.FamilyGroupID)
	f("AppGroupID", got.AppGroupID == want.AppGroupID, got.AppGroupID, want.AppGroupID)
	f("Name", got.Name == want.Name, got.Name, want.Name)
	f("Dissolved", got.Dissolved == want.Dissolved, got.Dissolved, want.Dissolved)
	f("MemberCount", got.MemberCount == want.MemberCount, got.MemberCount, want.MemberCount)
	f("CreatedAt", sameTime(got.CreatedAt, want.CreatedAt), got.CreatedAt, want.CreatedAt)
	f("UpdatedAt", sameTime(got.UpdatedAt, want.UpdatedAt), got.UpdatedAt, want.UpdatedAt)
	return d
}

func diffMember(got, want projections.Member) []string {
	var d []string
	f := func(name string, ok bool, g, w any) {
		if !ok {
			d = append(d, fmt.Sprintf("%s: got %v, want %v", name, g, w))
		}
	}
	f("AppID", got.AppID == want.AppID, got.AppID, want.AppID)
	f("OpenUserID", got.OpenUserID == want.OpenUserID, got.OpenUserID, want.OpenUserID)
	f("MemberID", got.MemberID == want.MemberID, got.MemberID, want.MemberID)
	f("AppUserID", got.AppUserID == want.AppUserID, got.AppUserID, want.AppUserID)
	f("AppGroupID", got.AppGroupID == want.AppGroupID, got.AppGroupID, want.AppGroupID)
	f("FamilyGroupID", got.FamilyGroupID == want.FamilyGroupID, got.FamilyGroupID, want.FamilyGroupID)
	f("Name", got.Name == want.Name, got.Name, want.Name)
	f("Relationship", got.Relationship == want.Relationship, got.Relationship, want.Relationship)
	f("Gender", sameStr(got.Gender, want.Gender), show(got.Gender), show(want.Gender))
	f("BirthDate", sameStr(got.BirthDate, want.BirthDate), show(got.BirthDate), show(want.BirthDate))
	f("Phone", sameStr(got.Phone, want.Phone), show(got.Phone), show(want.Phone))
	f("IDType", sameStr(got.IDType, want.IDType), show(got.IDType), show(want.IDType))
	f("IDNumber", sameStr(got.IDNumber, want.IDNumber), show(got.IDNumber), show(want.IDNumber))
	f("Height", sameInt(got.Height, want.Height), show(got.Height), show(want.Height))
	f("Weight", sameInt(got.Weight, want.Weight), show(got.Weight), show(want.Weight))
	f("BloodType", sameStr(got.BloodType, want.BloodType), show(got.BloodType), show(want.BloodType))
	f("IsDefault", got.IsDefault == want.IsDefault, got.IsDefault, want.IsDefault)
	f("Deleted", got.Deleted == want.Deleted, got.Deleted, want.Deleted)
	f("DeletedAt", sameTimePtr(got.DeletedAt, want.DeletedAt), show(got.DeletedAt), show(want.DeletedAt))
	f("UpdatedAt", sameTime(got.UpdatedAt, want.UpdatedAt), got.UpdatedAt, want.UpdatedAt)
	return d
}

func wantUser(t *testing.T, what string, got, want projections.User) {
	t.Helper()
	for _, d := range diffUser(got, want) {
		t.Errorf("%s: %s", what, d)
	}
}

func wantGroup(t *testing.T, what string, got, want projections.Group) {
	t.Helper()
	for _, d := range diffGroup(got, want) {
		t.Errorf("%s: %s", what, d)
	}
}

func wantMember(t *testing.T, what string, got, want projections.Member) {
	t.Helper()
	for _, d := range diffMember(got, want) {
		t.Errorf("%s: %s", what, d)
	}
}

// ---- cases ----

func testCheckpointZero(t *testing.T, s Store) {
	wantCheckpoint(t, s, "never-ran", events.Position{})
	update(t, s, "other", events.Position{Commit: 5, Prepare: 4}, func(projections.UserTx) error { return nil })
	wantCheckpoint(t, s, "never-ran", events.Position{})
}

func testUpdateAtomic(t *testing.T, s Store) {
	ctx := context.Background()
	u := fullUser(1, 10, "c-10")
	pos := events.Position{Commit: 42, Prepare: 41}
	update(t, s, "users", pos, func(tx projections.UserTx) error { return tx.PutUser(ctx, u) })
	wantCheckpoint(t, s, "users", pos)
	wantUser(t, "after Update", getUser(t, s, 1, 10), u)

	// An Update with no writes still moves the checkpoint.
	next := events.Position{Commit: 43, Prepare: 43}
	update(t, s, "users", next, func(projections.UserTx) error { return nil })
	wantCheckpoint(t, s, "users", next)
}

func testFailedUpdate(t *testing.T, s Store) {
	ctx := context.Background()
	u := fullUser(1, 10, "c-10")
	g := group(1, 10, 100)
	m := member(1, 10, 100, 1000)
	m2 := member(1, 10, 100, 1001)
	pos := events.Position{Commit: 7, Prepare: 7}
	update(t, s, "p", pos, func(tx projections.UserTx) error {
		if err := tx.PutUser(ctx, u); err != nil {
			return err
		}
		if err := tx.PutGroup(ctx, g); err != nil {
			return err
		}
		if err := tx.PutMember(ctx, m); err != nil {
			return err
		}
		return tx.PutMember(ctx, m2)
	})

	boom := errors.New("projector failed")
	err := s.Update(ctx, "p", events.Position{Commit: 8, Prepare: 8}, func(tx projections.UserTx) error {
		u2 := u
		u2.Name, u2.ChannelUserID, u2.Nickname = "changed", "c-changed", nil
		if err := tx.PutUser(ctx, u2); err != nil {
			return err
		}
		if err := tx.PutUser(ctx, fullUser(1, 11, "c-11")); err != nil {
			return err
		}
		g2 := g
		g2.Name, g2.Dissolved = "changed", true
		if err := tx.PutGroup(ctx, g2); err != nil {
			return err
		}
		if err := tx.PutGroup(ctx, group(1, 10, 101)); err != nil {
			return err
		}
		if err := tx.DeleteMember(ctx, m.MemberID, at(99)); err != nil {
			return err
		}
		m3 := m2
		m3.Name, m3.Height = "changed", nil
		if err := tx.PutMember(ctx, m3); err != nil {
			return err
		}
		if err := tx.PutMember(ctx, member(1, 10, 100, 1002)); err != nil {
			return err
		}
		return fmt.Errorf("apply event: %w", boom)
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update error = %v, want one wrapping the fn's error", err)
	}

	wantCheckpoint(t, s, "p", pos)
	wantUser(t, "user after failed Update", getUser(t, s, 1, 10), u)
	got, err := s.UserByChannelID(ctx, 1, "c-10")
	if err != nil {
		t.Fatalf("UserByChannelID(old channel id) after failed Update: %v", err)
	}
	wantUser(t, "user by channel id after failed Update", got, u)
	_, err = s.UserByChannelID(ctx, 1, "c-changed")
	wantNotFound(t, "UserByChannelID(channel id of failed Update)", err)
	_, err = s.User(ctx, 1, 11)
	wantNotFound(t, "User inserted by failed Update", err)

	gs := groups(t, s, 1, 10)
	if len(gs) != 1 {
		t.Fatalf("groups after failed Update = %v, want only group 100", groupIDs(gs))
	}
	wantG := g
	wantG.MemberCount = 2
	wantGroup(t, "group after failed Update", gs[0], wantG)

	ms := members(t, s, 1, 10, time.Time{})
	if !equalIDs(memberIDs(ms), []int64{1000, 1001}) {
		t.Fatalf("members after failed Update = %v, want [1000 1001]", memberIDs(ms))
	}
	wantMember(t, "member 1000 after failed Update", ms[0], m)
	wantMember(t, "member 1001 after failed Update", ms[1], m2)

	// The store is still usable after a failed Update.
	update(t, s, "p", events.Position{Commit: 9, Prepare: 9}, func(tx projections.UserTx) error {
		return tx.PutUser(ctx, fullUser(1, 11, "c-11"))
	})
	getUser(t, s, 1, 11)
	wantCheckpoint(t, s, "p", events.Position{Commit: 9, Prepare: 9})
}

func testCheckpointsPerProjection(t *testing.T, s Store) {
	a := events.Position{Commit: 100, Prepare: 99}
	b := events.Position{Commit: 5, Prepare: 3}
	noop := func(projections.UserTx) error { return nil }
	update(t, s, "a", a, noop)
	update(t, s, "b", b, noop)
	wantCheckpoint(t, s, "a", a)
	wantCheckpoint(t, s, "b", b)
	wantCheckpoint(t, s, "c", events.Position{})

	// Moving one leaves the other alone, and moving back is allowed
	// (a rebuild may restart a projection from an earlier position).
	a2 := events.Position{Commit: 1, Prepare: 1}
	update(t, s, "a", a2, noop)
	wantCheckpoint(t, s, "a", a2)
	wantCheckpoint(t, s, "b", b)

	// A failed Update of one projection does not touch any checkpoint.
	err := s.Update(context.Background(), "b", events.Position{Commit: 6, Prepare: 6}, func(projections.UserTx) error {
		return errors.New("no")
	})
	if err == nil {
		t.Fatal("Update with failing fn returned nil")
	}
	wantCheckpoint(t, s, "a", a2)
	wantCheckpoint(t, s, "b", b)

	// Names are compared exactly.
	wantCheckpoint(t, s, "A", events.Position{})
	wantCheckpoint(t, s, "a ", events.Position{})
}

func testCheckpointRange(t *testing.T, s Store) {
	noop := func(projections.UserTx) error { return nil }
	for _, p := range []events.Position{
		{Commit: 1<<63 - 1, Prepare: 1<<63 - 2},
		{Commit: 1 << 63, Prepare: 1<<63 + 1},
		{Commit: ^uint64(0), Prepare: ^uint64(0) - 1},
		{Commit: 0, Prepare: 1},
	} {
		update(t, s, "range", p, noop)
		wantCheckpoint(t, s, "range", p)
	}
}

func testUserLookups(t *testing.T, s Store) {
	ctx := context.Background()
	u1 := fullUser(1, 10, "shared-channel-id")
	u2 := fullUser(2, 20, "shared-channel-id") // same partner id in another app
	u2.Name = "Other app"
	put(t, s, []projections.User{u1, u2}, nil, nil)

	wantUser(t, "User(1,10)", getUser(t, s, 1, 10), u1)
	wantUser(t, "User(2,20)", getUser(t, s, 2, 20), u2)

	got, err := s.UserByChannelID(ctx, 1, "shared-channel-id")
	if err != nil {
		t.Fatalf("UserByChannelID(1): %v", err)
	}
	wantUser(t, "UserByChannelID(1)", got, u1)
	got, err = s.UserByChannelID(ctx, 2, "shared-channel-id")
	if err != nil {
		t.Fatalf("UserByChannelID(2): %v", err)
	}
	wantUser(t, "UserByChannelID(2)", got, u2)

	// Tenancy: another app cannot see the user.
	_, err = s.User(ctx, 2, 10)
	wantNotFound(t, "User of another app", err)
	_, err = s.User(ctx, 3, 20)
	wantNotFound(t, "User of an unknown app", err)
	_, err = s.User(ctx, 1, 999)
	wantNotFound(t, "unknown User", err)
	_, err = s.UserByChannelID(ctx, 3, "shared-channel-id")
	wantNotFound(t, "UserByChannelID of another app", err)
	_, err = s.UserByChannelID(ctx, 1, "Shared-Channel-ID")
	wantNotFound(t, "UserByChannelID is case-sensitive", err)
	_, err = s.UserByChannelID(ctx, 1, "")
	wantNotFound(t, "UserByChannelID empty", err)
}

func testPutUserReplaces(t *testing.T, s Store) {
	ctx := context.Background()
	u := fullUser(1, 10, "c-old")
	put(t, s, []projections.User{u}, nil, nil)

	repl := projections.User{
		AppID:         1,
		OpenUserID:    10,
		ChannelUserID: "c-new",
		Name:          "Renamed",
		Gender:        "",
		Status:        "ACTIVE",
		RegisteredAt:  at(5),
		UpdatedAt:     at(6),
	}
	put(t, s, []projections.User{repl}, nil, nil)
	wantUser(t, "replaced user", getUser(t, s, 1, 10), repl)

	got, err := s.UserByChannelID(ctx, 1, "c-new")
	if err != nil {
		t.Fatalf("UserByChannelID(new): %v", err)
	}
	wantUser(t, "replaced user by channel id", got, repl)
	_, err = s.UserByChannelID(ctx, 1, "c-old")
	wantNotFound(t, "UserByChannelID(old channel id after replace)", err)

	// Moving the user to another app moves the tenancy with it.
	moved := repl
	moved.AppID = 2
	put(t, s, []projections.User{moved}, nil, nil)
	_, err = s.User(ctx, 1, 10)
	wantNotFound(t, "User in the old app after move", err)
	_, err = s.UserByChannelID(ctx, 1, "c-new")
	wantNotFound(t, "UserByChannelID in the old app after move", err)
	wantUser(t, "moved user", getUser(t, s, 2, 10), moved)

	// The old channel id is free for another user.
	other := fullUser(1, 11, "c-old")
	put(t, s, []projections.User{other}, nil, nil)
	got, err = s.UserByChannelID(ctx, 1, "c-old")
	if err != nil {
		t.Fatalf("UserByChannelID(reused): %v", err)
	}
	wantUser(t, "user holding a reused channel id", got, other)
}

func testUserRoundTrip(t *testing.T, s Store) {
	ctx := context.Background()
	full := fullUser(1, 1<<62, "渠道-ユーザー-🙂")
	full.RegisteredAt = time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	full.UpdatedAt = time.Date(2038, 1, 19, 3, 14, 8, 1000, time.FixedZone("CST", 8*3600))
	empty := projections.User{
		AppID:         -3,
		OpenUserID:    -5,
		ChannelUserID: "x",
		Nickname:      ptr(""), // set but empty is not nil
		Avatar:        nil,
		Phone:         ptr(""),
		Email:         nil,
		BirthDate:     ptr(""),
		RegisteredAt:  at(0),
		UpdatedAt:     at(0),
	}
	put(t, s, []projections.User{full, empty}, nil, nil)

	for _, want := range []projections.User{full, empty} {
		got := getUser(t, s, want.AppID, want.OpenUserID)
		wantUser(t, fmt.Sprintf("User(%d)", want.OpenUserID), got, want)
		got, err := s.UserByChannelID(ctx, want.AppID, want.ChannelUserID)
		if err != nil {
			t.Fatalf("UserByChannelID(%q): %v", want.ChannelUserID, err)
		}
		wantUser(t, fmt.Sprintf("UserByChannelID(%q)", want.ChannelUserID), got, want)
	}

	// The store owns its copy: changing what was read or written later
	// does not change the stored row.
	got := getUser(t, s, full.AppID, full.OpenUserID)
	*got.Nickname = "mutated"
	wantUser(t, "User after caller mutated a result", getUser(t, s, full.AppID, full.OpenUserID), full)
	got, err := s.UserByChannelID(ctx, full.AppID, full.ChannelUserID)
	if err != nil {
		t.Fatal(err)
	}
	*got.Email = "mutated"
	wantUser(t, "User after caller mutated a UserByChannelID result", getUser(t, s, full.AppID, full.OpenUserID), full)
}

func testGroups(t *testing.T, s Store) {
	const app, owner = int64(1), int64(10)
	g3, g1, g2 := group(app, owner, 300), group(app, owner, 100), group(app, owner, 200)
	dissolved := group(app, owner, 150)
	dissolved.Dissolved = true
	otherOwner := group(app, 11, 50)
	otherApp := group(2, owner, 60)
	g2.MemberCount = 99 // ignored on write

	live := func(gid, id int64) projections.Member { return member(app, owner, gid, id) }
	gone := func(gid, id int64) projections.Member {
		m := member(app, owner, gid, id)
		m.Deleted, m.DeletedAt = true, ptr(at(30))
		return m
	}
	put(t, s, nil,
		[]projections.Group{g3, g1, dissolved, otherOwner, g2, otherApp},
		[]projections.Member{
			live(100, 1), live(100, 2), gone(100, 3),
			live(200, 4),
			gone(300, 5),
			live(150, 6),
			member(app, 11, 50, 7),
		})

	gs := groups(t, s, app, owner)
	if !equalIDs(groupIDs(gs), []int64{100, 200, 300}) {
		t.Fatalf("Groups = %v, want [100 200 300]", groupIDs(gs))
	}
	for i, want := range []struct {
		g     projections.Group
		count int
	}{{g1, 2}, {g2, 1}, {g3, 0}} {
		w := want.g
		w.MemberCount = want.count
		wantGroup(t, fmt.Sprintf("Groups[%d]", i), gs[i], w)
	}

	if gs := groups(t, s, 2, 11); len(gs) != 0 {
		t.Errorf("Groups of another app = %v, want none", groupIDs(gs))
	}
	if gs := groups(t, s, app, 999); len(gs) != 0 {
		t.Errorf("Groups of unknown user = %v, want none", groupIDs(gs))
	}
	if gs := groups(t, s, 2, owner); !equalIDs(groupIDs(gs), []int64{60}) {
		t.Errorf("Groups(app 2) = %v, want [60]", groupIDs(gs))
	}

	// Counts follow member writes; dissolving hides the group.
	ctx := context.Background()
	update(t, s, "p", events.Position{Commit: 2, Prepare: 2}, func(tx projections.UserTx) error {
		if err := tx.DeleteMember(ctx, 1, at(40)); err != nil {
			return err
		}
		m := live(300, 8)
		if err := tx.PutMember(ctx, m); err != nil {
			return err
		}
		// Move member 4 from group 200 to group 300.
		if err := tx.PutMember(ctx, live(300, 4)); err != nil {
			return err
		}
		d := g2
		d.Dissolved = true
		return tx.PutGroup(ctx, d)
	})
	gs = groups(t, s, app, owner)
	if !equalIDs(groupIDs(gs), []int64{100, 300}) {
		t.Fatalf("Groups after dissolve = %v, want [100 300]", groupIDs(gs))
	}
	if gs[0].MemberCount != 1 || gs[1].MemberCount != 2 {
		t.Errorf("MemberCount after writes = %d, %d, want 1, 2", gs[0].MemberCount, gs[1].MemberCount)
	}
}

func testGroupRoundTrip(t *testing.T, s Store) {
	g := projections.Group{
		AppID:         9,
		OpenUserID:    1 << 40,
		FamilyGroupID: 1<<63 - 1,
		AppGroupID:    -42,
		Name:          "Famille Müller — 李家 🏠",
		CreatedAt:     time.Date(2020, 2, 29, 0, 0, 0, 1000, time.UTC),
		UpdatedAt:     time.Date(2021, 3, 1, 12, 0, 0, 999999000, time.FixedZone("X", -7*3600)),
	}
	empty := projections.Group{AppID: 9, OpenUserID: 1 << 40, FamilyGroupID: 1, CreatedAt: at(0), UpdatedAt: at(0)}
	put(t, s, nil, []projections.Group{g, empty}, nil)
	gs := groups(t, s, 9, 1<<40)
	if !equalIDs(groupIDs(gs), []int64{1, 1<<63 - 1}) {
		t.Fatalf("Groups = %v", groupIDs(gs))
	}
	wantGroup(t, "empty group", gs[0], empty)
	wantGroup(t, "full group", gs[1], g)
}

func testMembers(t *testing.T, s Store) {
	const app, owner = int64(1), int64(10)
	m5, m1, m3 := member(app, owner, 100, 5), member(app, owner, 100, 1), member(app, owner, 200, 3)
	deleted := member(app, owner, 100, 2)
	deleted.Deleted, deleted.DeletedAt = true, ptr(at(25))
	inDissolved := member(app, owner, 300, 4) // members of a dissolved group still list
	dissolved := group(app, owner, 300)
	dissolved.Dissolved = true
	put(t, s, nil,
		[]projections.Group{group(app, owner, 100), group(app, owner, 200), dissolved},
		[]projections.Member{m5, deleted, m1, inDissolved, m3,
			member(app, 11, 500, 6), member(2, owner, 600, 7)})

	ms := members(t, s, app, owner, time.Time{})
	if !equalIDs(memberIDs(ms), []int64{1, 3, 4, 5}) {
		t.Fatalf("Members = %v, want [1 3 4 5]", memberIDs(ms))
	}
	for i, want := range []projections.Member{m1, m3, inDissolved, m5} {
		wantMember(t, fmt.Sprintf("Members[%d]", i), ms[i], want)
	}
	if ms := members(t, s, 2, 11, time.Time{}); len(ms) != 0 {
		t.Errorf("Members of another app = %v, want none", memberIDs(ms))
	}
	if ms := members(t, s, 2, owner, time.Time{}); !equalIDs(memberIDs(ms), []int64{7}) {
		t.Errorf("Members(app 2) = %v, want [7]", memberIDs(ms))
	}
	if ms := members(t, s, app, 999, time.Time{}); len(ms) != 0 {
		t.Errorf("Members of unknown user = %v, want none", memberIDs(ms))
	}
}

func testMembersUpdatedAfter(t *testing.T, s Store) {
	const app, owner = int64(1), int64(10)
	var ms []projections.Member
	for i := int64(1); i <= 5; i++ {
		m := member(app, owner, 100, 10-i) // ids 9..5, times ascending
		m.UpdatedAt = at(int(i))           // one microsecond apart
		ms = append(ms, m)
	}
	gone := member(app, owner, 100, 20)
	gone.UpdatedAt, gone.Deleted = at(100), true
	put(t, s, nil, nil, append(ms, gone))

	check := func(after time.Time, want []int64) {
		t.Helper()
		got := memberIDs(members(t, s, app, owner, after))
		if !equalIDs(got, want) {
			t.Errorf("Members(updatedAfter=%v) = %v, want %v", after.Format(time.RFC3339Nano), got, want)
		}
	}
	check(time.Time{}, []int64{5, 6, 7, 8, 9})
	check(at(0), []int64{5, 6, 7, 8, 9})
	check(at(2), []int64{5, 6, 7})                                   // strictly after: at(2) itself excluded
	check(at(2).In(time.FixedZone("CST", 8*3600)), []int64{5, 6, 7}) // same instant, other zone
	check(at(5), nil)
	check(at(1000), nil)
	check(time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), []int64{5, 6, 7, 8, 9})
}

func testMemberRoundTrip(t *testing.T, s Store) {
	full := projections.Member{
		AppID:         3,
		OpenUserID:    33,
		MemberID:      1<<63 - 1,
		AppUserID:     "外部-ID-ü-🙂",
		AppGroupID:    -1,
		FamilyGroupID: 1 << 50,
		Name:          "Zoë 王小明",
		Relationship:  "配偶",
		Gender:        ptr("unknown"),
		BirthDate:     ptr("1900-01-01"),
		Phone:         ptr("+1-555-0100"),
		IDType:        ptr("PASSPORT"),
		IDNumber:      ptr("E12345678"),
		Height:        ptr(int64(0)), // zero is set, not nil
		Weight:        ptr(int64(1<<62 + 7)),
		BloodType:     ptr("AB-"),
		IsDefault:     true,
		Deleted:       false,
		DeletedAt:     ptr(time.Date(2023, 7, 1, 1, 2, 3, 4000, time.FixedZone("Y", 5*3600+1800))),
		UpdatedAt:     time.Date(2023, 7, 1, 1, 2, 3, 5000, time.UTC),
	}
	bare := projections.Member{
		AppID:         3,
		OpenUserID:    33,
		MemberID:      -9,
		FamilyGroupID: 1,
		Gender:        ptr(""),
		Height:        ptr(int64(-1)),
		UpdatedAt:     at(0),
	}
	put(t, s, nil, nil, []projections.Member{full, bare})
	ms := members(t, s, 3, 33, time.Time{})
	if !equalIDs(memberIDs(ms), []int64{-9, 1<<63 - 1}) {
		t.Fatalf("Members = %v", memberIDs(ms))
	}
	wantMember(t, "bare member", ms[0], bare)
	wantMember(t, "full member", ms[1], full)

	// Replacing sets pointers back to nil.
	repl := full
	repl.Gender, repl.BirthDate, repl.Phone, repl.IDType, repl.IDNumber = nil, nil, nil, nil, nil
	repl.Height, repl.Weight, repl.BloodType, repl.DeletedAt = nil, nil, nil, nil
	repl.IsDefault, repl.Name = false, "renamed"
	put(t, s, nil, nil, []projections.Member{repl})
	ms = members(t, s, 3, 33, time.Time{})
	if len(ms) != 2 {
		t.Fatalf("Members after replace = %v", memberIDs(ms))
	}
	wantMember(t, "replaced member", ms[1], repl)

	// Results are copies.
	*ms[0].Height = 12345
	ms = members(t, s, 3, 33, time.Time{})
	wantMember(t, "member after caller mutated a result", ms[0], bare)
}

func testDeleteMember(t *testing.T, s Store) {
	ctx := context.Background()
	const app, owner = int64(1), int64(10)
	g := group(app, owner, 100)
	m1, m2 := member(app, owner, 100, 1), member(app, owner, 100, 2)
	put(t, s, nil, []projections.Group{g}, []projections.Member{m1, m2})

	del := at(500)
	update(t, s, "p", events.Position{Commit: 2, Prepare: 2}, func(tx projections.UserTx) error {
		if err := tx.DeleteMember(ctx, 1, del); err != nil {
			return err
		}
		// A missing member is not an error.
		return tx.DeleteMember(ctx, 424242, del)
	})
	ms := members(t, s, app, owner, time.Time{})
	if !equalIDs(memberIDs(ms), []int64{2}) {
		t.Fatalf("Members after delete = %v, want [2]", memberIDs(ms))
	}
	if gs := groups(t, s, app, owner); len(gs) != 1 || gs[0].MemberCount != 1 {
		t.Fatalf("Groups after delete = %+v, want one group with 1 member", gs)
	}
	wantCheckpoint(t, s, "p", events.Position{Commit: 2, Prepare: 2})

	if r, ok := s.(MemberReader); ok {
		got, err := r.Member(ctx, app, 1)
		if err != nil {
			t.Fatalf("Member(deleted): %v", err)
		}
		want := m1
		want.Deleted, want.DeletedAt, want.UpdatedAt = true, ptr(del), del
		wantMember(t, "deleted member", got, want)
		_, err = r.Member(ctx, 2, 1)
		wantNotFound(t, "Member of another app", err)
		_, err = r.Member(ctx, app, 424242)
		wantNotFound(t, "unknown Member", err)
	} else {
		t.Log("store does not implement storetest.MemberReader: deleted rows not inspected")
	}

	// Deleting twice is harmless.
	update(t, s, "p", events.Position{Commit: 3, Prepare: 3}, func(tx projections.UserTx) error {
		return tx.DeleteMember(ctx, 1, at(600))
	})
	if ms := members(t, s, app, owner, time.Time{}); !equalIDs(memberIDs(ms), []int64{2}) {
		t.Fatalf("Members after second delete = %v, want [2]", memberIDs(ms))
	}

	// A later PutMember with Deleted=false restores the row as written.
	restored := m1
	restored.UpdatedAt = at(700)
	update(t, s, "p", events.Position{Commit: 4, Prepare: 4}, func(tx projections.UserTx) error {
		return tx.PutMember(ctx, restored)
	})
	ms = members(t, s, app, owner, time.Time{})
	if !equalIDs(memberIDs(ms), []int64{1, 2}) {
		t.Fatalf("Members after restore = %v, want [1 2]", memberIDs(ms))
	}
	wantMember(t, "restored member", ms[0], restored)

	// Order within one Update counts: a Put then a Delete leaves it deleted.
	update(t, s, "p", events.Position{Commit: 5, Prepare: 5}, func(tx projections.UserTx) error {
		if err := tx.PutMember(ctx, member(app, owner, 100, 3)); err != nil {
			return err
		}
		return tx.DeleteMember(ctx, 3, at(800))
	})
	ms = members(t, s, app, owner, time.Time{})
	if !equalIDs(memberIDs(ms), []int64{1, 2}) {
		t.Fatalf("Members after put+delete = %v, want [1 2]", memberIDs(ms))
	}
	if gs := groups(t, s, app, owner); len(gs) != 1 || gs[0].MemberCount != 2 {
		t.Fatalf("Groups after put+delete = %+v, want one group with 2 members", gs)
	}
	if r, ok := s.(MemberReader); ok {
		got, err := r.Member(ctx, app, 3)
		if err != nil {
			t.Fatalf("Member(3): %v", err)
		}
		if !got.Deleted || !sameTimePtr(got.DeletedAt, ptr(at(800))) || !sameTime(got.UpdatedAt, at(800)) {
			t.Errorf("member deleted in the Update that put it = %+v", got)
		}
	}
}

func testReset(t *testing.T, s Store) {
	ctx := context.Background()
	put(t, s,
		[]projections.User{fullUser(1, 10, "c")},
		[]projections.Group{group(1, 10, 100)},
		[]projections.Member{member(1, 10, 100, 1)})
	update(t, s, "other", events.Position{Commit: 9, Prepare: 9}, func(projections.UserTx) error { return nil })

	if err := s.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	_, err := s.User(ctx, 1, 10)
	wantNotFound(t, "User after Reset", err)
	_, err = s.UserByChannelID(ctx, 1, "c")
	wantNotFound(t, "UserByChannelID after Reset", err)
	if gs := groups(t, s, 1, 10); len(gs) != 0 {
		t.Errorf("Groups after Reset = %v", groupIDs(gs))
	}
	if ms := members(t, s, 1, 10, time.Time{}); len(ms) != 0 {
		t.Errorf("Members after Reset = %v", memberIDs(ms))
	}
	wantCheckpoint(t, s, "fixture", events.Position{})
	wantCheckpoint(t, s, "other", events.Position{})

	// The store is usable after Reset, and the old rows do not come back.
	put(t, s, []projections.User{fullUser(1, 10, "c")}, []projections.Group{group(1, 10, 100)}, nil)
	if gs := groups(t, s, 1, 10); len(gs) != 1 || gs[0].MemberCount != 0 {
		t.Errorf("Groups after Reset and rebuild = %+v, want one empty group", gs)
	}
	wantCheckpoint(t, s, "fixture", events.Position{Commit: 1, Prepare: 1})
}

func testConcurrentUpdates(t *testing.T, s Store) {
	ctx := context.Background()
	const writers, rounds = 4, 20
	errs := make(chan error, writers*rounds)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			proj := fmt.Sprintf("proj-%d", w)
			owner := int64(1000 + w)
			for r := range rounds {
				pos := events.Position{Commit: uint64(r + 1), Prepare: uint64(r + 1)}
				err := s.Update(ctx, proj, pos, func(tx projections.UserTx) error {
					u := fullUser(1, owner, fmt.Sprintf("w%d", w))
					u.UpdatedAt = at(r)
					if err := tx.PutUser(ctx, u); err != nil {
						return err
					}
					gid := owner*100 + int64(r%3)
					if err := tx.PutGroup(ctx, group(1, owner, gid)); err != nil {
						return err
					}
					m := member(1, owner, gid, owner*1000+int64(r))
					if err := tx.PutMember(ctx, m); err != nil {
						return err
					}
					if r%4 == 3 {
						return tx.DeleteMember(ctx, owner*1000+int64(r-1), at(r))
					}
					return nil
				})
				if err != nil {
					errs <- fmt.Errorf("%s round %d: %w", proj, r, err)
					return
				}
				// Readers run alongside writers.
				if _, err := s.Groups(ctx, 1, owner); err != nil {
					errs <- fmt.Errorf("%s round %d Groups: %w", proj, r, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	for w := range writers {
		proj := fmt.Sprintf("proj-%d", w)
		owner := int64(1000 + w)
		wantCheckpoint(t, s, proj, events.Position{Commit: rounds, Prepare: rounds})
		u := getUser(t, s, 1, owner)
		if u.ChannelUserID != fmt.Sprintf("w%d", w) || !sameTime(u.UpdatedAt, at(rounds-1)) {
			t.Errorf("user of %s = %+v", proj, u)
		}
		var want []int64
		deleted := map[int]bool{}
		for r := range rounds {
			if r%4 == 3 {
				deleted[r-1] = true
			}
		}
		for r := range rounds {
			if !deleted[r] {
				want = append(want, owner*1000+int64(r))
			}
		}
		sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
		if got := memberIDs(members(t, s, 1, owner, time.Time{})); !equalIDs(got, want) {
			t.Errorf("members of %s = %v, want %v", proj, got, want)
		}
		total := 0
		gs := groups(t, s, 1, owner)
		for _, g := range gs {
			total += g.MemberCount
		}
		if len(gs) != 3 || total != len(want) {
			t.Errorf("groups of %s = %d groups with %d members, want 3 with %d", proj, len(gs), total, len(want))
		}
	}
}

func testTxReads(t *testing.T, s Store) {
	ctx := context.Background()
	u := fullUser(1, 10, "c-10")
	g := group(1, 10, 100)
	g.Dissolved = true // Tx.Group sees dissolved groups too
	update(t, s, "p", events.Position{Commit: 1, Prepare: 1}, func(tx projections.UserTx) error {
		_, err := tx.User(ctx, 10)
		wantNotFound(t, "Tx.User before PutUser", err)
		_, err = tx.Group(ctx, 100)
		wantNotFound(t, "Tx.Group before PutGroup", err)

		if err := tx.PutUser(ctx, u); err != nil {
			return err
		}
		got, err := tx.User(ctx, 10)
		if err != nil {
			return fmt.Errorf("Tx.User after PutUser: %w", err)
		}
		wantUser(t, "Tx.User after PutUser", got, u)

		// Read, change, write, read again: the projector's partial update.
		got.Name, got.Nickname = "renamed", nil
		if err := tx.PutUser(ctx, got); err != nil {
			return err
		}
		again, err := tx.User(ctx, 10)
		if err != nil {
			return err
		}
		wantUser(t, "Tx.User after second PutUser", again, got)

		if err := tx.PutGroup(ctx, g); err != nil {
			return err
		}
		for id := int64(1); id <= 3; id++ {
			if err := tx.PutMember(ctx, member(1, 10, 100, id)); err != nil {
				return err
			}
		}
		if err := tx.DeleteMember(ctx, 2, at(50)); err != nil {
			return err
		}
		gotG, err := tx.Group(ctx, 100)
		if err != nil {
			return fmt.Errorf("Tx.Group after PutGroup: %w", err)
		}
		wantG := g
		wantG.MemberCount = 2
		wantGroup(t, "Tx.Group after writes", gotG, wantG)
		return nil
	})

	want := u
	want.Name, want.Nickname = "renamed", nil
	wantUser(t, "User after commit", getUser(t, s, 1, 10), want)
	if gs := groups(t, s, 1, 10); len(gs) != 0 {
		t.Errorf("Groups = %v, want none (the group is dissolved)", groupIDs(gs))
	}

	// A later Update reads the committed rows, whatever their app; a
	// not-found read handled by fn does not spoil the transaction.
	other := fullUser(2, 20, "c-20")
	put(t, s, []projections.User{other}, nil, nil)
	update(t, s, "p", events.Position{Commit: 2, Prepare: 2}, func(tx projections.UserTx) error {
		got, err := tx.User(ctx, 10)
		if err != nil {
			return err
		}
		wantUser(t, "Tx.User of committed row", got, want)
		got, err = tx.User(ctx, 20)
		if err != nil {
			return err
		}
		wantUser(t, "Tx.User of another app", got, other)
		if _, err := tx.Group(ctx, 999); !errors.Is(err, projections.ErrNotFound) {
			return fmt.Errorf("Tx.Group(999) = %v, want ErrNotFound", err)
		}
		ng := group(1, 10, 999)
		if err := tx.PutGroup(ctx, ng); err != nil {
			return err
		}
		*got.Nickname = "mutated" // results are copies
		return nil
	})
	wantUser(t, "other user after a Tx result was mutated", getUser(t, s, 2, 20), other)
	if gs := groups(t, s, 1, 10); !equalIDs(groupIDs(gs), []int64{999}) {
		t.Errorf("Groups after not-found read and PutGroup = %v, want [999]", groupIDs(gs))
	}
	wantCheckpoint(t, s, "p", events.Position{Commit: 2, Prepare: 2})
}

func testTxReadsAfterFailure(t *testing.T, s Store) {
	ctx := context.Background()
	u := fullUser(1, 10, "c-10")
	g := group(1, 10, 100)
	put(t, s, []projections.User{u}, []projections.Group{g}, []projections.Member{member(1, 10, 100, 1)})

	boom := errors.New("boom")
	err := s.Update(ctx, "p", events.Position{Commit: 5, Prepare: 5}, func(tx projections.UserTx) error {
		changed := u
		changed.Name = "changed"
		if err := tx.PutUser(ctx, changed); err != nil {
			return err
		}
		if err := tx.DeleteMember(ctx, 1, at(60)); err != nil {
			return err
		}
		got, err := tx.User(ctx, 10)
		if err != nil {
			return err
		}
		if got.Name != "changed" {
			t.Errorf("Tx.User inside the failing Update: Name = %q, want changed", got.Name)
		}
		gotG, err := tx.Group(ctx, 100)
		if err != nil {
			return err
		}
		if gotG.MemberCount != 0 {
			t.Errorf("Tx.Group inside the failing Update: MemberCount = %d, want 0", gotG.MemberCount)
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want boom", err)
	}
	update(t, s, "p", events.Position{Commit: 6, Prepare: 6}, func(tx projections.UserTx) error {
		got, err := tx.User(ctx, 10)
		if err != nil {
			return err
		}
		wantUser(t, "Tx.User after failed Update", got, u)
		gotG, err := tx.Group(ctx, 100)
		if err != nil {
			return err
		}
		wantG := g
		wantG.MemberCount = 1
		wantGroup(t, "Tx.Group after failed Update", gotG, wantG)
		return nil
	})
}

// Two users of one app can never share a channel id: the write that tries
// fails its Update, which then changes nothing, in every store alike.
func testChannelConflict(t *testing.T, s Store) {
	ctx := context.Background()
	a := fullUser(1, 10, "taken")
	put(t, s, []projections.User{a}, nil, nil)
	pos := checkpoint(t, s, "fixture")
	err := s.Update(ctx, "fixture", events.Position{Commit: 99, Prepare: 99}, func(tx projections.UserTx) error {
		if err := tx.PutUser(ctx, fullUser(1, 11, "free")); err != nil {
			return err
		}
		// A store may report the conflict here or when the Update commits.
		return tx.PutUser(ctx, fullUser(1, 12, "taken"))
	})
	if err == nil {
		t.Fatal("Update giving two users of one app the same channel id succeeded")
	}
	wantCheckpoint(t, s, "fixture", pos)
	_, err = s.User(ctx, 1, 11)
	wantNotFound(t, "user written before the conflict", err)
	_, err = s.User(ctx, 1, 12)
	wantNotFound(t, "conflicting user", err)
	got, err := s.UserByChannelID(ctx, 1, "taken")
	if err != nil {
		t.Fatal(err)
	}
	wantUser(t, "holder of the channel id", got, a)
}

// fillFamilies writes one row into every family, each through its own Update.
func fillFamilies(t *testing.T, s Store) {
	t.Helper()
	put(t, s, []projections.User{fullUser(1, 10, "c")}, nil, nil)
	putDeliveries(t, s, dlv(1, 1))
	putReports(t, s, report(1, 10, 1, "2024-03-05"))
	putGoods(t, s, goodsOf(1))
	updateBenefits(t, s, func(tx projections.BenefitTx) error { return tx.PutCard(context.Background(), cardOf(1, 1, 11)) })
}

// familyRows reports which families still hold their fixture row.
func familyRows(t *testing.T, s Store) map[projections.Family]bool {
	t.Helper()
	ctx := context.Background()
	_, uerr := s.User(ctx, 1, 10)
	_, _, derr := s.Delivery(ctx, 1, dlv(1, 1).DeliveryID)
	_, rerr := s.Report(ctx, 1, 1)
	gs, gerr := s.GoodsList(ctx)
	_, cerr := s.CardByNumber(ctx, 1, cardNumber(1))
	if gerr != nil {
		t.Fatal(gerr)
	}
	return map[projections.Family]bool{
		projections.FamilyUsers: uerr == nil, projections.FamilyDeliveries: derr == nil, projections.FamilyReports: rerr == nil,
		projections.FamilyOrders: len(gs) == 1, projections.FamilyBenefits: cerr == nil,
	}
}

// testResetFamily: a family's reset empties its rows and its checkpoint and
// nothing of any other family, so one family can be rebuilt while the others
// keep serving.
func testResetFamily(t *testing.T, s Store) {
	ctx := context.Background()
	for _, reset := range projections.Families {
		if err := s.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		fillFamilies(t, s)
		pos := events.Position{Commit: 42, Prepare: 42}
		for _, f := range projections.Families {
			update(t, s, string(f), pos, func(projections.UserTx) error { return nil })
		}
		if err := s.ResetFamily(ctx, reset); err != nil {
			t.Fatalf("ResetFamily(%s): %v", reset, err)
		}
		for f, present := range familyRows(t, s) {
			if present == (f == reset) {
				t.Errorf("after ResetFamily(%s): %s rows present = %v", reset, f, present)
			}
			want := pos
			if f == reset {
				want = events.Position{}
			}
			wantCheckpoint(t, s, string(f), want)
		}
	}
	if err := s.ResetFamily(ctx, "no-such-family"); err == nil {
		t.Error("ResetFamily of an unknown family succeeded")
	}
}

// testFamiliesConcurrently: every family's Update runs at once with the
// others (the race detector watches the stores' locks), and each ends at its
// own checkpoint.
func testFamiliesConcurrently(t *testing.T, s Store) {
	ctx := context.Background()
	const rounds = 20
	var wg sync.WaitGroup
	errs := make(chan error, 5*rounds)
	run := func(fn func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= rounds; i++ {
				if err := fn(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	at := func(i int) events.Position { return events.Position{Commit: uint64(i), Prepare: uint64(i)} }
	run(func(i int) error {
		return s.Update(ctx, "users", at(i), func(tx projections.UserTx) error {
			return tx.PutUser(ctx, fullUser(1, int64(i), fmt.Sprintf("c-%d", i)))
		})
	})
	run(func(i int) error {
		return s.UpdateDeliveries(ctx, "deliveries", at(i), func(tx projections.DeliveryTx) error { return tx.PutDelivery(ctx, dlv(1, i)) })
	})
	run(func(i int) error {
		return s.UpdateReports(ctx, "reports", at(i), func(tx projections.ReportTx) error {
			return tx.PutReport(ctx, report(1, 10, int64(i), "2024-03-05"))
		})
	})
	run(func(i int) error {
		return s.UpdateOrders(ctx, "orders", at(i), func(tx projections.OrderTx) error { return tx.PutGoods(ctx, goodsOf(int64(i))) })
	})
	run(func(i int) error {
		return s.UpdateBenefits(ctx, "benefits", at(i), func(tx projections.BenefitTx) error { return tx.PutCard(ctx, cardOf(1, i, int64(100+i))) })
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, f := range projections.Families {
		wantCheckpoint(t, s, string(f), at(rounds))
	}
	if ms := reportsOfDay(t, s, 1, 10, "2024-03-05"); len(ms) != rounds {
		t.Errorf("reports after concurrent family updates: %d, want %d", len(ms), rounds)
	}
}
