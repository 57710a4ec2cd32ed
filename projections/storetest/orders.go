package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// The goods and order cases of Run. Every read-model store is also the
// order store, and its Update transaction is also a projections.OrderTx, so
// a store without them fails these cases.

// ---- order fixtures ----

// orderStatuses are the statuses the order fixtures cycle through.
var orderStatuses = []string{"PENDING_REVIEW", "APPROVED", "SHIPPED", "REJECTED"}

// goodsOf is goods id with a code derived from it.
func goodsOf(id int64) projections.Goods {
	return projections.Goods{
		GoodsID:   id,
		GoodsCode: fmt.Sprintf("G-%04d", id),
		GoodsName: fmt.Sprintf("血压计 model %d", id),
		Active:    id%2 == 0,
		CreatedAt: at(int(id)),
		UpdatedAt: at(int(id) + 1),
	}
}

// orderOf is order id of app in status, with two items (ids 10id+2 and
// 10id+1, in that order) and the pointers a shipped order has set.
func orderOf(app, id int64, status string) projections.Order {
	return projections.Order{
		OrderID:          id,
		OrderCode:        fmt.Sprintf("ORD-%06d", id),
		AppID:            app,
		ThirdOrderID:     fmt.Sprintf("third-%d", id),
		UserID:           ptr(id + 1000),
		ContactPerson:    "李四",
		ContactPhone:     "13800138000",
		Address:          "上海市 浦东新区 1 号",
		AreaCode:         ptr("310115"),
		LogisticsType:    "EXPRESS",
		PostagePolicy:    "PAID_BY_BUYER",
		PostageAmount:    1200,
		Status:           status,
		OrderSource:      "API",
		CooperationType:  "DISTRIBUTION",
		OrderTime:        at(int(id)),
		LogisticsCompany: ptr("SF"),
		TrackingNumber:   ptr(fmt.Sprintf("SF%d", id)),
		ShippedAt:        ptr(at(int(id) + 5)),
		CreatedAt:        at(int(id) + 1),
		UpdatedAt:        at(int(id) + 2),
		Items: []projections.OrderItem{
			{ItemID: 10*id + 2, GoodsID: 2, GoodsCode: "G-0002", GoodsName: "血氧仪", Quantity: 1, UnitPrice: 19900,
				TotalPrice: 19900, ShippingStatus: "PENDING_SHIPMENT", DeviceSNs: []string{}},
			{ItemID: 10*id + 1, GoodsID: 1, GoodsCode: "G-0001", GoodsName: "血压计", Quantity: 3, UnitPrice: 100,
				TotalPrice: 300, ShippingStatus: "SHIPPED", DeviceSNs: []string{fmt.Sprintf("SN-%d-b", id), fmt.Sprintf("SN-%d-a", id)}},
		},
	}
}

// sortedItems is o as the stores return it: its items in ItemID order.
func sortedItems(o projections.Order) projections.Order {
	o.Items = slices.Clone(o.Items)
	slices.SortStableFunc(o.Items, func(a, b projections.OrderItem) int { return cmp.Compare(a.ItemID, b.ItemID) })
	return o
}

// ---- order helpers ----

func orderStore(t *testing.T, s Store) projections.OrderStore {
	t.Helper()
	os, ok := s.(projections.OrderStore)
	if !ok {
		t.Fatalf("%T does not implement projections.OrderStore", s)
	}
	return os
}

func updateOrders(t *testing.T, s Store, fn func(projections.OrderTx) error) {
	t.Helper()
	if err := s.UpdateOrders(context.Background(), "orders", nextPos(), fn); err != nil {
		t.Fatalf("UpdateOrders: %v", err)
	}
}

// tryUpdateOrders is updateOrders for an Update expected to fail.
func tryUpdateOrders(s Store, fn func(projections.OrderTx) error) error {
	return s.UpdateOrders(context.Background(), "orders", nextPos(), fn)
}

func putGoods(t *testing.T, s Store, gs ...projections.Goods) {
	t.Helper()
	updateOrders(t, s, func(tx projections.OrderTx) error {
		for _, g := range gs {
			if err := tx.PutGoods(context.Background(), g); err != nil {
				return fmt.Errorf("PutGoods %d: %w", g.GoodsID, err)
			}
		}
		return nil
	})
}

func putOrders(t *testing.T, s Store, os ...projections.Order) {
	t.Helper()
	updateOrders(t, s, func(tx projections.OrderTx) error {
		for _, o := range os {
			if err := tx.PutOrder(context.Background(), o); err != nil {
				return fmt.Errorf("PutOrder %d: %w", o.OrderID, err)
			}
		}
		return nil
	})
}

func goodsList(t *testing.T, os projections.OrderStore) []projections.Goods {
	t.Helper()
	gs, err := os.GoodsList(context.Background())
	if err != nil {
		t.Fatalf("GoodsList: %v", err)
	}
	return gs
}

func orderByCode(t *testing.T, os projections.OrderStore, app int64, code string) projections.Order {
	t.Helper()
	o, err := os.OrderByCode(context.Background(), app, code)
	if err != nil {
		t.Fatalf("OrderByCode(%d, %q): %v", app, code, err)
	}
	return o
}

func listOrders(t *testing.T, os projections.OrderStore, f projections.OrderFilter) []projections.Order {
	t.Helper()
	l, err := os.Orders(context.Background(), f)
	if err != nil {
		t.Fatalf("Orders(%+v): %v", f, err)
	}
	return l
}

func goodsIDs(gs []projections.Goods) []int64 {
	ids := make([]int64, len(gs))
	for i, g := range gs {
		ids[i] = g.GoodsID
	}
	return ids
}

func orderIDs(os []projections.Order) []int64 {
	ids := make([]int64, len(os))
	for i, o := range os {
		ids[i] = o.OrderID
	}
	return ids
}

// sameStrings compares lists in order; a nil want is an empty list, and the
// stores never return nil.
func sameStrings(got, want []string) bool { return got != nil && slices.Equal(got, want) }

func diffGoods(got, want projections.Goods) []string {
	var d []string
	f := func(name string, ok bool, g, w any) {
		if !ok {
			d = append(d, fmt.Sprintf("%s: got %v, want %v", name, g, w))
		}
	}
	f("GoodsID", got.GoodsID == want.GoodsID, got.GoodsID, want.GoodsID)
	f("GoodsCode", got.GoodsCode == want.GoodsCode, got.GoodsCode, want.GoodsCode)
	f("GoodsName", got.GoodsName == want.GoodsName, got.GoodsName, want.GoodsName)
	f("Active", got.Active == want.Active, got.Active, want.Active)
	f("CreatedAt", sameTime(got.CreatedAt, want.CreatedAt), got.CreatedAt, want.CreatedAt)
	f("UpdatedAt", sameTime(got.UpdatedAt, want.UpdatedAt), got.UpdatedAt, want.UpdatedAt)
	return d
}

func diffOrderItem(got, want projections.OrderItem) []string {
	var d []string
	f := func(name string, ok bool, g, w any) {
		if !ok {
			d = append(d, fmt.Sprintf("%s: got %v, want %v", name, g, w))
		}
	}
	f("ItemID", got.ItemID == want.ItemID, got.ItemID, want.ItemID)
	f("GoodsID", got.GoodsID == want.GoodsID, got.GoodsID, want.GoodsID)
	f("GoodsCode", got.GoodsCode == want.GoodsCode, got.GoodsCode, want.GoodsCode)
	f("GoodsName", got.GoodsName == want.GoodsName, got.GoodsName, want.GoodsName)
	f("Quantity", got.Quantity == want.Quantity, got.Quantity, want.Quantity)
	f("UnitPrice", got.UnitPrice == want.UnitPrice, got.UnitPrice, want.UnitPrice)
	f("TotalPrice", got.TotalPrice == want.TotalPrice, got.TotalPrice, want.TotalPrice)
	f("ShippingStatus", got.ShippingStatus == want.ShippingStatus, got.ShippingStatus, want.ShippingStatus)
	f("DeviceSNs", sameStrings(got.DeviceSNs, want.DeviceSNs), fmt.Sprintf("%#v", got.DeviceSNs), fmt.Sprintf("%q", want.DeviceSNs))
	return d
}

// diffOrder compares every field; want.Items must be in ItemID order, and
// got.Items must not be nil even when empty.
func diffOrder(got, want projections.Order) []string {
	var d []string
	f := func(name string, ok bool, g, w any) {
		if !ok {
			d = append(d, fmt.Sprintf("%s: got %v, want %v", name, g, w))
		}
	}
	f("OrderID", got.OrderID == want.OrderID, got.OrderID, want.OrderID)
	f("OrderCode", got.OrderCode == want.OrderCode, got.OrderCode, want.OrderCode)
	f("AppID", got.AppID == want.AppID, got.AppID, want.AppID)
	f("ThirdOrderID", got.ThirdOrderID == want.ThirdOrderID, got.ThirdOrderID, want.ThirdOrderID)
	f("UserID", sameInt(got.UserID, want.UserID), show(got.UserID), show(want.UserID))
	f("ContactPerson", got.ContactPerson == want.ContactPerson, got.ContactPerson, want.ContactPerson)
	f("ContactPhone", got.ContactPhone == want.ContactPhone, got.ContactPhone, want.ContactPhone)
	f("Address", got.Address == want.Address, got.Address, want.Address)
	f("AreaCode", sameStr(got.AreaCode, want.AreaCode), show(got.AreaCode), show(want.AreaCode))
	f("AreaText", sameStr(got.AreaText, want.AreaText), show(got.AreaText), show(want.AreaText))
	f("LogisticsType", got.LogisticsType == want.LogisticsType, got.LogisticsType, want.LogisticsType)
	f("PostagePolicy", got.PostagePolicy == want.PostagePolicy, got.PostagePolicy, want.PostagePolicy)
	f("PostageAmount", got.PostageAmount == want.PostageAmount, got.PostageAmount, want.PostageAmount)
	f("Status", got.Status == want.Status, got.Status, want.Status)
	f("OrderSource", got.OrderSource == want.OrderSource, got.OrderSource, want.OrderSource)
	f("CooperationType", got.CooperationType == want.CooperationType, got.CooperationType, want.CooperationType)
	f("OrderTime", sameTime(got.OrderTime, want.OrderTime), got.OrderTime, want.OrderTime)
	f("RejectReason", sameStr(got.RejectReason, want.RejectReason), show(got.RejectReason), show(want.RejectReason))
	f("LogisticsCompany", sameStr(got.LogisticsCompany, want.LogisticsCompany), show(got.LogisticsCompany), show(want.LogisticsCompany))
	f("TrackingNumber", sameStr(got.TrackingNumber, want.TrackingNumber), show(got.TrackingNumber), show(want.TrackingNumber))
	f("ShippedAt", sameTimePtr(got.ShippedAt, want.ShippedAt), show(got.ShippedAt), show(want.ShippedAt))
	f("CreatedAt", sameTime(got.CreatedAt, want.CreatedAt), got.CreatedAt, want.CreatedAt)
	f("UpdatedAt", sameTime(got.UpdatedAt, want.UpdatedAt), got.UpdatedAt, want.UpdatedAt)
	if got.Items == nil || len(got.Items) != len(want.Items) {
		gotIDs := make([]int64, len(got.Items))
		for i, it := range got.Items {
			gotIDs[i] = it.ItemID
		}
		return append(d, fmt.Sprintf("Items: got %d items %v (nil: %v), want %d", len(got.Items), gotIDs, got.Items == nil, len(want.Items)))
	}
	for i := range got.Items {
		for _, x := range diffOrderItem(got.Items[i], want.Items[i]) {
			d = append(d, fmt.Sprintf("Items[%d].%s", i, x))
		}
	}
	return d
}

func wantGoods(t *testing.T, what string, got, want projections.Goods) {
	t.Helper()
	for _, d := range diffGoods(got, want) {
		t.Errorf("%s: %s", what, d)
	}
}

func wantGoodsList(t *testing.T, what string, got, want []projections.Goods) {
	t.Helper()
	if !equalIDs(goodsIDs(got), goodsIDs(want)) {
		t.Errorf("%s = %v, want %v", what, goodsIDs(got), goodsIDs(want))
		return
	}
	for i := range got {
		wantGoods(t, fmt.Sprintf("%s[%d]", what, i), got[i], want[i])
	}
}

func wantOrder(t *testing.T, what string, got, want projections.Order) {
	t.Helper()
	for _, d := range diffOrder(got, want) {
		t.Errorf("%s: %s", what, d)
	}
}

func wantOrders(t *testing.T, what string, got, want []projections.Order) {
	t.Helper()
	if !equalIDs(orderIDs(got), orderIDs(want)) {
		t.Errorf("%s = %v, want %v", what, orderIDs(got), orderIDs(want))
		return
	}
	for i := range got {
		wantOrder(t, fmt.Sprintf("%s[%d]", what, i), got[i], want[i])
	}
}

// orderModel is what Orders must answer, computed the obvious way.
type orderModel map[int64]projections.Order

func (m orderModel) put(os ...projections.Order) {
	for _, o := range os {
		m[o.OrderID] = sortedItems(o)
	}
}

func (m orderModel) list(f projections.OrderFilter) []projections.Order {
	var out []projections.Order
	for _, o := range m {
		if (f.AppID != 0 && o.AppID != f.AppID) || (f.Status != "" && o.Status != f.Status) || o.OrderID <= f.After {
			continue
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b projections.Order) int { return cmp.Compare(a.OrderID, b.OrderID) })
	return out[:min(len(out), limitOf(f.Limit, 100, 1000))]
}

// ---- order cases ----

func testGoods(t *testing.T, s Store) {
	ctx := context.Background()
	os := orderStore(t, s)
	if gs := goodsList(t, os); len(gs) != 0 {
		t.Fatalf("GoodsList of an empty store = %v", goodsIDs(gs))
	}
	full := projections.Goods{
		GoodsID:   1<<63 - 1,
		GoodsCode: "GC-渠道-🙂-\t/ü",
		GoodsName: "Zoë's 血压计 \"pro\"\nline two",
		Active:    true,
		CreatedAt: time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.FixedZone("CST", 8*3600)),
		UpdatedAt: time.Date(2038, 1, 19, 3, 14, 8, 1000, time.UTC),
	}
	bare := projections.Goods{GoodsID: 0, GoodsCode: "", CreatedAt: at(0), UpdatedAt: at(0)} // empty code is a code
	g3, g1 := goodsOf(30), goodsOf(10)
	// Written in an order unlike their ids'.
	putGoods(t, s, g3, full, g1, bare)
	want := []projections.Goods{bare, g1, g3, full}
	wantGoodsList(t, "GoodsList", goodsList(t, os), want)

	// Replacing changes every field, and frees the old code for others.
	repl := projections.Goods{GoodsID: 10, GoodsCode: "G-NEW", GoodsName: "renamed", Active: !g1.Active,
		CreatedAt: at(70), UpdatedAt: at(71)}
	taker := goodsOf(20)
	taker.GoodsCode = g1.GoodsCode
	putGoods(t, s, repl, taker)
	want = []projections.Goods{bare, repl, taker, g3, full}
	wantGoodsList(t, "GoodsList after replace", goodsList(t, os), want)

	// Putting the same goods twice is harmless, inside one Update or across two.
	putGoods(t, s, repl, repl)
	putGoods(t, s, repl)
	wantGoodsList(t, "GoodsList after identical puts", goodsList(t, os), want)

	// Inside a transaction, inactive goods included.
	updateOrders(t, s, func(tx projections.OrderTx) error {
		for _, w := range want {
			got, err := tx.Goods(ctx, w.GoodsID)
			if err != nil {
				return fmt.Errorf("Tx.Goods(%d): %w", w.GoodsID, err)
			}
			wantGoods(t, fmt.Sprintf("Tx.Goods(%d)", w.GoodsID), got, w)
		}
		_, err := tx.Goods(ctx, 424242)
		wantNotFound(t, "Tx.Goods(unknown)", err)
		return nil
	})

	// Results are the caller's own.
	gs := goodsList(t, os)
	gs[0].GoodsName = "mutated"
	wantGoodsList(t, "GoodsList after a caller mutated a result", goodsList(t, os), want)
}

// No two goods share a code: the write that tries fails its Update, which
// then changes nothing, in every store alike.
func testGoodsCodeUnique(t *testing.T, s Store) {
	ctx := context.Background()
	os := orderStore(t, s)
	a := goodsOf(1)
	putGoods(t, s, a)
	pos := checkpoint(t, s, "orders")
	err := tryUpdateOrders(s, func(tx projections.OrderTx) error {
		if err := tx.PutGoods(ctx, goodsOf(2)); err != nil {
			return err
		}
		b := goodsOf(3)
		b.GoodsCode = a.GoodsCode
		// A store may report the conflict here or when the Update commits.
		return tx.PutGoods(ctx, b)
	})
	if err == nil {
		t.Fatal("Update giving two goods the same code succeeded")
	}
	wantCheckpoint(t, s, "orders", pos)
	wantGoodsList(t, "GoodsList after the conflict", goodsList(t, os), []projections.Goods{a})

	// Codes are compared exactly.
	other := goodsOf(4)
	other.GoodsCode = "g-0001"
	putGoods(t, s, other)

	// Within one Update, a code freed by one write can be taken by the next.
	renamed := a
	renamed.GoodsCode = "G-RENAMED"
	taker := goodsOf(5)
	taker.GoodsCode = a.GoodsCode
	putGoods(t, s, renamed, taker)
	wantGoodsList(t, "GoodsList after a code changed hands", goodsList(t, os), []projections.Goods{renamed, other, taker})
}

func testOrderRoundTrip(t *testing.T, s Store) {
	ctx := context.Background()
	os := orderStore(t, s)
	cst := time.FixedZone("CST", 8*3600)
	full := projections.Order{
		OrderID:          1<<63 - 1,
		OrderCode:        "ORD-渠道-🙂-0001",
		AppID:            1 << 40,
		ThirdOrderID:     "third/ü/\"1\"",
		UserID:           ptr(int64(-7)),
		ContactPerson:    "Zoë 王小明",
		ContactPhone:     "+86 138 0013 8000",
		Address:          "北京市\n朝阳区\t1 号 🏠",
		AreaCode:         ptr("110105"),
		AreaText:         ptr("北京 朝阳"),
		LogisticsType:    "EXPRESS",
		PostagePolicy:    "FREE",
		PostageAmount:    1<<62 + 3,
		Status:           "PARTIALLY_SHIPPED",
		OrderSource:      "API",
		CooperationType:  "DROPSHIP",
		OrderTime:        time.Date(2024, 3, 5, 23, 59, 59, 999999000, cst),
		RejectReason:     ptr("地址不全 / incomplete"),
		LogisticsCompany: ptr("顺丰 SF"),
		TrackingNumber:   ptr("SF1234567890"),
		ShippedAt:        ptr(time.Date(2038, 1, 19, 3, 14, 8, 123456000, time.FixedZone("X", -7*3600))),
		CreatedAt:        time.Date(1999, 12, 31, 23, 59, 59, 1000, time.UTC),
		UpdatedAt:        at(3),
		// Written out of ItemID order.
		Items: []projections.OrderItem{
			{ItemID: 3, GoodsID: 1 << 50, GoodsCode: "GC-ü", GoodsName: "血压计 \"pro\"", Quantity: 1<<62 + 1,
				UnitPrice: -1, TotalPrice: 1<<63 - 1, ShippingStatus: "SHIPPED",
				DeviceSNs: []string{"SN-b", "SN-a", "SN-b", "", "序列-🙂"}}, // order and repeats kept
			{ItemID: -1, GoodsID: -2, ShippingStatus: "PENDING_SHIPMENT"}, // nil DeviceSNs read back empty
			{ItemID: 1<<63 - 1, Quantity: 0, DeviceSNs: []string{}},
		},
	}
	bare := projections.Order{ // every pointer nil, no items
		OrderID:   5,
		OrderCode: "b",
		AppID:     1 << 40,
		OrderTime: at(0),
		CreatedAt: at(0),
		UpdatedAt: at(0),
	}
	zeroes := projections.Order{ // zero values are set, not nil
		OrderID:          6,
		OrderCode:        "z",
		AppID:            1 << 40,
		UserID:           ptr(int64(0)),
		AreaCode:         ptr(""),
		AreaText:         ptr(""),
		OrderTime:        at(0),
		RejectReason:     ptr(""),
		LogisticsCompany: ptr(""),
		TrackingNumber:   ptr(""),
		ShippedAt:        ptr(time.Time{}.UTC()),
		CreatedAt:        at(0),
		UpdatedAt:        at(0),
		Items:            []projections.OrderItem{},
	}

	updateOrders(t, s, func(tx projections.OrderTx) error {
		// The caller may reuse its buffers once PutOrder returns.
		o := full
		o.Items = slices.Clone(full.Items)
		o.Items[0].DeviceSNs = slices.Clone(full.Items[0].DeviceSNs)
		o.UserID, o.AreaText = ptr(*full.UserID), ptr(*full.AreaText)
		if err := tx.PutOrder(ctx, o); err != nil {
			return err
		}
		o.Items[0].DeviceSNs[0], o.Items[1].GoodsName = "reused", "reused"
		*o.UserID, *o.AreaText = 99, "reused"
		for _, o := range []projections.Order{bare, zeroes} {
			if err := tx.PutOrder(ctx, o); err != nil {
				return err
			}
		}
		return nil
	})

	for _, want := range []projections.Order{full, bare, zeroes} {
		want = sortedItems(want)
		what := fmt.Sprintf("order %d", want.OrderID)
		wantOrder(t, what+" by code", orderByCode(t, os, want.AppID, want.OrderCode), want)
		wantOrder(t, what+" by code, any app", orderByCode(t, os, 0, want.OrderCode), want)
	}
	wantOrders(t, "Orders(app)", listOrders(t, os, projections.OrderFilter{AppID: 1 << 40}),
		[]projections.Order{bare, zeroes, sortedItems(full)})
	wantOrders(t, "Orders(status)", listOrders(t, os, projections.OrderFilter{Status: full.Status}),
		[]projections.Order{sortedItems(full)})

	// Inside a transaction too; what it reads is a copy.
	updateOrders(t, s, func(tx projections.OrderTx) error {
		got, err := tx.Order(ctx, full.OrderID)
		if err != nil {
			return err
		}
		wantOrder(t, "Tx.Order", got, sortedItems(full))
		got.Items[1].DeviceSNs[0], got.Items[0].Quantity = "mutated", 42
		*got.UserID, *got.ShippedAt = 1, at(9)
		got.Items = append(got.Items, projections.OrderItem{ItemID: 77})
		return nil
	})

	// The store owns its copies: changing what was read changes nothing.
	got := orderByCode(t, os, 0, full.OrderCode)
	got.Items[1].DeviceSNs[1] = "mutated"
	got.Items[2].ShippingStatus = "mutated"
	*got.AreaCode, *got.TrackingNumber = "mutated", "mutated"
	for _, o := range listOrders(t, os, projections.OrderFilter{AppID: 1 << 40}) {
		for i := range o.Items {
			o.Items[i].GoodsCode = "mutated"
			if len(o.Items[i].DeviceSNs) > 0 {
				o.Items[i].DeviceSNs[0] = "mutated"
			}
		}
		if o.UserID != nil {
			*o.UserID = 12345
		}
	}
	wantOrder(t, "order after callers mutated results", orderByCode(t, os, 0, full.OrderCode), sortedItems(full))
	wantOrder(t, "zeroes after callers mutated results", orderByCode(t, os, 0, zeroes.OrderCode), zeroes)
}

func testPutOrderReplaces(t *testing.T, s Store) {
	ctx := context.Background()
	os := orderStore(t, s)
	o := orderOf(1, 7, "APPROVED")
	o.Items = append(o.Items, projections.OrderItem{ItemID: 73, GoodsID: 3, GoodsCode: "G-0003", Quantity: 1,
		ShippingStatus: "PENDING_SHIPMENT", DeviceSNs: []string{"x", "y"}})
	neighbour := orderOf(1, 8, "APPROVED")
	putOrders(t, s, o, neighbour)
	wantOrder(t, "order before replace", orderByCode(t, os, 1, o.OrderCode), sortedItems(o))

	// One item goes, one changes (its serial numbers reordered and grown),
	// one is new; every order field changes, pointers back to nil.
	repl := projections.Order{
		OrderID:         o.OrderID,
		OrderCode:       "ORD-RENAMED",
		AppID:           2,
		ThirdOrderID:    "t2",
		ContactPerson:   "p2",
		ContactPhone:    "c2",
		Address:         "a2",
		LogisticsType:   "PICKUP",
		PostagePolicy:   "FREE",
		PostageAmount:   0,
		Status:          "SHIPPED",
		OrderSource:     "PORTAL",
		CooperationType: "CONSIGNMENT",
		OrderTime:       at(80),
		CreatedAt:       at(81),
		UpdatedAt:       at(82),
		Items: []projections.OrderItem{
			{ItemID: 74, GoodsID: 4, GoodsCode: "G-0004", GoodsName: "new", Quantity: 2, UnitPrice: 5, TotalPrice: 10,
				ShippingStatus: "PENDING_SHIPMENT"},
			{ItemID: 73, GoodsID: 3, GoodsCode: "G-0003", Quantity: 1, ShippingStatus: "SHIPPED",
				DeviceSNs: []string{"y", "x", "z"}},
			{ItemID: 71, GoodsID: 1, GoodsCode: "G-0001", GoodsName: "血压计", Quantity: 5, UnitPrice: 100,
				TotalPrice: 500, ShippingStatus: "SHIPPED", DeviceSNs: []string{"SN-7-a"}},
		},
	}
	putOrders(t, s, repl)
	wantOrder(t, "replaced order", orderByCode(t, os, 2, repl.OrderCode), sortedItems(repl))
	_, err := os.OrderByCode(ctx, 0, o.OrderCode)
	wantNotFound(t, "OrderByCode(old code after replace)", err)
	wantOrder(t, "neighbour after replace", orderByCode(t, os, 1, neighbour.OrderCode), sortedItems(neighbour))
	wantOrders(t, "Orders(app 1) after the order moved", listOrders(t, os, projections.OrderFilter{AppID: 1}),
		[]projections.Order{sortedItems(neighbour)})
	wantOrders(t, "Orders(app 2, SHIPPED)", listOrders(t, os, projections.OrderFilter{AppID: 2, Status: "SHIPPED"}),
		[]projections.Order{sortedItems(repl)})
	if l := listOrders(t, os, projections.OrderFilter{Status: "APPROVED"}); !equalIDs(orderIDs(l), []int64{8}) {
		t.Errorf("Orders(APPROVED) after the order moved = %v, want [8]", orderIDs(l))
	}

	// Only the serial numbers' order changes.
	swapped := repl
	swapped.Items = slices.Clone(repl.Items)
	swapped.Items[1].DeviceSNs = []string{"z", "y", "x"}
	putOrders(t, s, swapped)
	wantOrder(t, "order with reordered serial numbers", orderByCode(t, os, 2, repl.OrderCode), sortedItems(swapped))

	// No items at all (nil as an empty list).
	empty := repl
	empty.Items = nil
	putOrders(t, s, empty)
	got := orderByCode(t, os, 2, repl.OrderCode)
	wantOrder(t, "order without items", got, empty)

	// And back: the removed ids can be used again.
	putOrders(t, s, o)
	wantOrder(t, "order put back", orderByCode(t, os, 1, o.OrderCode), sortedItems(o))

	// An order cannot list one ItemID twice.
	pos := checkpoint(t, s, "orders")
	dup := o
	dup.Status = "dup"
	dup.Items = append(slices.Clone(o.Items), projections.OrderItem{ItemID: o.Items[0].ItemID, ShippingStatus: "dup"})
	if err := tryUpdateOrders(s, func(tx projections.OrderTx) error { return tx.PutOrder(ctx, dup) }); err == nil {
		t.Error("PutOrder with a repeated ItemID succeeded")
	}
	wantCheckpoint(t, s, "orders", pos)
	wantOrder(t, "order after the refused PutOrder", orderByCode(t, os, 1, o.OrderCode), sortedItems(o))
}

func testOrderTxReads(t *testing.T, s Store) {
	ctx := context.Background()
	os := orderStore(t, s)
	g := goodsOf(1)
	o := orderOf(1, 10, "PENDING_REVIEW")
	updateOrders(t, s, func(tx projections.OrderTx) error {
		_, err := tx.Goods(ctx, g.GoodsID)
		wantNotFound(t, "Tx.Goods before PutGoods", err)
		_, err = tx.Order(ctx, o.OrderID)
		wantNotFound(t, "Tx.Order before PutOrder", err)

		if err := tx.PutGoods(ctx, g); err != nil {
			return err
		}
		gotG, err := tx.Goods(ctx, g.GoodsID)
		if err != nil {
			return fmt.Errorf("Tx.Goods after PutGoods: %w", err)
		}
		wantGoods(t, "Tx.Goods after PutGoods", gotG, g)
		gotG.Active, gotG.GoodsName = !gotG.Active, "renamed"
		if err := tx.PutGoods(ctx, gotG); err != nil {
			return err
		}
		again, err := tx.Goods(ctx, g.GoodsID)
		if err != nil {
			return err
		}
		wantGoods(t, "Tx.Goods after second PutGoods", again, gotG)
		g = gotG

		if err := tx.PutOrder(ctx, o); err != nil {
			return err
		}
		got, err := tx.Order(ctx, o.OrderID)
		if err != nil {
			return fmt.Errorf("Tx.Order after PutOrder: %w", err)
		}
		wantOrder(t, "Tx.Order after PutOrder", got, sortedItems(o))

		// Read, change, write, read again: the projector's shipment.
		got.Status, got.TrackingNumber = "SHIPPED", ptr("SF-NEW")
		got.Items[1].ShippingStatus = "SHIPPED"
		got.Items[1].DeviceSNs = append(got.Items[1].DeviceSNs, "SN-new-2", "SN-new-1")
		if err := tx.PutOrder(ctx, got); err != nil {
			return err
		}
		// A read changed without a PutOrder changes nothing.
		unsaved, err := tx.Order(ctx, o.OrderID)
		if err != nil {
			return err
		}
		unsaved.Items[0].DeviceSNs = append(unsaved.Items[0].DeviceSNs, "unsaved")
		unsaved.Items = unsaved.Items[:1]
		wantAgain, err := tx.Order(ctx, o.OrderID)
		if err != nil {
			return err
		}
		wantOrder(t, "Tx.Order after second PutOrder", wantAgain, got)
		o = got
		return nil
	})
	wantOrder(t, "order after commit", orderByCode(t, os, 1, o.OrderCode), o)
	wantGoodsList(t, "goods after commit", goodsList(t, os), []projections.Goods{g})

	// Families are separate transactions (each its own Update and
	// checkpoint): no case writes two families at once.

	// A later transaction reads committed rows of any app; a not-found read
	// handled by fn does not spoil it.
	other := orderOf(2, 20, "REJECTED")
	putOrders(t, s, other)
	third := orderOf(3, 30, "APPROVED")
	updateOrders(t, s, func(tx projections.OrderTx) error {
		got, err := tx.Order(ctx, other.OrderID)
		if err != nil {
			return err
		}
		wantOrder(t, "Tx.Order of another app", got, sortedItems(other))
		if _, err := tx.Order(ctx, 424242); !errors.Is(err, projections.ErrNotFound) {
			return fmt.Errorf("Tx.Order(424242) = %v, want ErrNotFound", err)
		}
		if _, err := tx.Goods(ctx, 424242); !errors.Is(err, projections.ErrNotFound) {
			return fmt.Errorf("Tx.Goods(424242) = %v, want ErrNotFound", err)
		}
		return tx.PutOrder(ctx, third)
	})
	wantOrder(t, "order put after a not-found read", orderByCode(t, os, 3, third.OrderCode), sortedItems(third))
}

func testFailedUpdateOrders(t *testing.T, s Store) {
	ctx := context.Background()
	os := orderStore(t, s)
	g := goodsOf(1)
	a, b := orderOf(1, 10, "APPROVED"), orderOf(1, 11, "PENDING_REVIEW")
	u := fullUser(1, 10, "c-10")
	pos := events.Position{Commit: 70, Prepare: 70}
	update(t, s, "users", pos, func(tx projections.UserTx) error { return tx.PutUser(ctx, u) })
	if err := s.UpdateOrders(ctx, "orders", pos, func(ot projections.OrderTx) error {
		if err := ot.PutGoods(ctx, g); err != nil {
			return err
		}
		if err := ot.PutOrder(ctx, a); err != nil {
			return err
		}
		return ot.PutOrder(ctx, b)
	}); err != nil {
		t.Fatal(err)
	}

	boom := errors.New("projector failed")
	err := s.UpdateOrders(ctx, "orders", events.Position{Commit: 80, Prepare: 80}, func(ot projections.OrderTx) error {
		g2 := g
		g2.GoodsCode, g2.GoodsName, g2.Active = "G-CHANGED", "changed", !g.Active
		if err := ot.PutGoods(ctx, g2); err != nil {
			return err
		}
		if err := ot.PutGoods(ctx, goodsOf(2)); err != nil {
			return err
		}
		a2 := a
		a2.OrderCode, a2.AppID, a2.Status, a2.UserID, a2.ShippedAt = "ORD-CHANGED", 2, "SHIPPED", nil, nil
		a2.Items = []projections.OrderItem{{ItemID: a.Items[0].ItemID, DeviceSNs: []string{"changed"}}, {ItemID: 999}}
		if err := ot.PutOrder(ctx, a2); err != nil {
			return err
		}
		b2 := b
		b2.Items = nil
		if err := ot.PutOrder(ctx, b2); err != nil {
			return err
		}
		// The freed code is taken by a new order.
		c := orderOf(1, 12, "APPROVED")
		c.OrderCode = a.OrderCode
		if err := ot.PutOrder(ctx, c); err != nil {
			return err
		}
		got, err := ot.Order(ctx, a.OrderID)
		if err != nil {
			return err
		}
		wantOrder(t, "Tx.Order inside the failing Update", got, sortedItems(a2))
		gotG, err := ot.Goods(ctx, g.GoodsID)
		if err != nil {
			return err
		}
		wantGoods(t, "Tx.Goods inside the failing Update", gotG, g2)
		return fmt.Errorf("apply event: %w", boom)
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update error = %v, want one wrapping the fn's error", err)
	}
	wantCheckpoint(t, s, "orders", pos)
	wantUser(t, "user after failed Update", getUser(t, s, 1, 10), u)
	wantGoodsList(t, "GoodsList after failed Update", goodsList(t, os), []projections.Goods{g})
	wantOrder(t, "order a after failed Update", orderByCode(t, os, 1, a.OrderCode), sortedItems(a))
	wantOrder(t, "order b after failed Update", orderByCode(t, os, 1, b.OrderCode), sortedItems(b))
	_, err = os.OrderByCode(ctx, 0, "ORD-CHANGED")
	wantNotFound(t, "OrderByCode(code of the failed Update)", err)
	for _, f := range []projections.OrderFilter{{}, {AppID: 1}, {Status: "APPROVED"}, {AppID: 1, Status: "PENDING_REVIEW"}} {
		m := orderModel{}
		m.put(a, b)
		wantOrders(t, fmt.Sprintf("Orders(%+v) after failed Update", f), listOrders(t, os, f), m.list(f))
	}
	for _, f := range []projections.OrderFilter{{AppID: 2}, {Status: "SHIPPED"}} {
		if l := listOrders(t, os, f); len(l) != 0 {
			t.Errorf("Orders(%+v) after failed Update = %v, want none", f, orderIDs(l))
		}
	}

	// The store is still usable, and the failed Update's writes do not count:
	// the code it freed is still a's, the goods code it took is free.
	c := orderOf(1, 12, "APPROVED")
	c.OrderCode = a.OrderCode
	if err := tryUpdateOrders(s, func(tx projections.OrderTx) error { return tx.PutOrder(ctx, c) }); err == nil {
		t.Error("PutOrder taking the code the failed Update freed succeeded")
	}
	g3 := goodsOf(3)
	g3.GoodsCode = "G-CHANGED"
	putGoods(t, s, g3)
	putOrders(t, s, orderOf(1, 12, "APPROVED"))
	if l := listOrders(t, os, projections.OrderFilter{AppID: 1}); !equalIDs(orderIDs(l), []int64{10, 11, 12}) {
		t.Errorf("Orders(app 1) after a later Update = %v, want [10 11 12]", orderIDs(l))
	}
}

func testOrderTenancy(t *testing.T, s Store) {
	ctx := context.Background()
	os := orderStore(t, s)
	o1, o2 := orderOf(1, 1, "APPROVED"), orderOf(2, 2, "APPROVED")
	o1.OrderCode, o2.OrderCode = "ORD-abc", "ORD-def"
	putOrders(t, s, o1, o2)
	wantOrder(t, "OrderByCode(1, o1)", orderByCode(t, os, 1, o1.OrderCode), sortedItems(o1))
	wantOrder(t, "OrderByCode(2, o2)", orderByCode(t, os, 2, o2.OrderCode), sortedItems(o2))
	wantOrder(t, "OrderByCode(any app, o1)", orderByCode(t, os, 0, o1.OrderCode), sortedItems(o1))
	wantOrder(t, "OrderByCode(any app, o2)", orderByCode(t, os, 0, o2.OrderCode), sortedItems(o2))
	for _, c := range []struct {
		app  int64
		code string
	}{{2, o1.OrderCode}, {1, o2.OrderCode}, {3, o1.OrderCode}, {-1, o1.OrderCode},
		{1, "ORD-ABC"}, {1, "ORD-ab"}, {1, o1.OrderCode + " "}, {1, ""}, {0, ""}, {0, "ORD-xyz"}} {
		o, err := os.OrderByCode(ctx, c.app, c.code)
		wantNotFound(t, fmt.Sprintf("OrderByCode(%d, %q)", c.app, c.code), err)
		if err != nil && o.OrderID != 0 {
			t.Errorf("OrderByCode(%d, %q) returned data with its error: %+v", c.app, c.code, o)
		}
	}
	wantOrders(t, "Orders(app 1)", listOrders(t, os, projections.OrderFilter{AppID: 1}), []projections.Order{sortedItems(o1)})
	wantOrders(t, "Orders(app 2)", listOrders(t, os, projections.OrderFilter{AppID: 2}), []projections.Order{sortedItems(o2)})
	if l := listOrders(t, os, projections.OrderFilter{AppID: 3}); len(l) != 0 {
		t.Errorf("Orders(app 3) = %v, want none", orderIDs(l))
	}

	// Order codes are unique across apps: the Update that reuses one fails
	// and changes nothing.
	pos := checkpoint(t, s, "orders")
	err := tryUpdateOrders(s, func(tx projections.OrderTx) error {
		if err := tx.PutOrder(ctx, orderOf(3, 4, "APPROVED")); err != nil {
			return err
		}
		dup := orderOf(3, 3, "APPROVED")
		dup.OrderCode = o1.OrderCode
		return tx.PutOrder(ctx, dup)
	})
	if err == nil {
		t.Fatal("Update giving two orders the same code succeeded")
	}
	wantCheckpoint(t, s, "orders", pos)
	if l := listOrders(t, os, projections.OrderFilter{}); !equalIDs(orderIDs(l), []int64{1, 2}) {
		t.Errorf("Orders after the conflict = %v, want [1 2]", orderIDs(l))
	}

	// Moving an order to another app moves its tenancy with it.
	moved := o1
	moved.AppID = 2
	putOrders(t, s, moved)
	_, err = os.OrderByCode(ctx, 1, o1.OrderCode)
	wantNotFound(t, "OrderByCode in the old app after a move", err)
	wantOrder(t, "OrderByCode in the new app", orderByCode(t, os, 2, o1.OrderCode), sortedItems(moved))
}

// orderFixture puts 30 orders over three apps and four statuses, in an order
// unlike their ids', and returns the model.
func orderFixture(t *testing.T, s Store) orderModel {
	t.Helper()
	m := orderModel{}
	var os []projections.Order
	for n := range 30 {
		o := orderOf(int64(1+n%3), int64(3*n+1), orderStatuses[(n/3)%len(orderStatuses)])
		if n%4 == 0 {
			o.Items = nil
		}
		os = append(os, o)
	}
	// Newest first, in two transactions, so the indexes are not built by appends.
	slices.Reverse(os)
	putOrders(t, s, os[:17]...)
	putOrders(t, s, os[17:]...)
	m.put(os...)
	return m
}

func testOrdersFilters(t *testing.T, s Store) {
	os := orderStore(t, s)
	m := orderFixture(t, s)
	filters := []projections.OrderFilter{
		{},
		{AppID: 1},
		{AppID: 2},
		{AppID: 99},
		{Status: "SHIPPED"},
		{Status: "shipped"}, // exact, not case-folded
		{Status: "SHIP"},    // exact, not a prefix
		{AppID: 2, Status: "APPROVED"},
		{AppID: 3, Status: "REJECTED"},
		{AppID: 3, Status: "none"},
		{After: 40},
		{After: 41},
		{After: 88},
		{After: 1 << 62},
		{After: -1},
		{Limit: 5},
		{AppID: 1, After: 10, Limit: 2},
		{Status: "PENDING_REVIEW", After: 4, Limit: 3},
		{AppID: 2, Status: "SHIPPED", After: 20, Limit: 1},
	}
	for _, f := range filters {
		wantOrders(t, fmt.Sprintf("Orders(%+v)", f), listOrders(t, os, f), m.list(f))
	}

	// The model itself, on cases worked out by hand.
	wantIDs := func(what string, f projections.OrderFilter, want []int64) {
		t.Helper()
		if got := orderIDs(listOrders(t, os, f)); !equalIDs(got, want) {
			t.Errorf("%s: Orders(%+v) = %v, want %v", what, f, got, want)
		}
	}
	wantIDs("app 2, APPROVED", projections.OrderFilter{AppID: 2, Status: "APPROVED"}, []int64{13, 49, 85})
	wantIDs("app 1 after 10", projections.OrderFilter{AppID: 1, After: 10, Limit: 3}, []int64{19, 28, 37})
	wantIDs("after an id no order has", projections.OrderFilter{After: 2, Limit: 2}, []int64{4, 7})

	// Paging with After visits every order once, in order, whatever the page size.
	for _, f := range []projections.OrderFilter{{}, {AppID: 1}, {Status: "SHIPPED"}, {AppID: 3, Status: "PENDING_REVIEW"}} {
		all := f
		all.Limit = 1000
		want := orderIDs(m.list(all))
		for _, limit := range []int{1, 2, 3, 7, 100} {
			var got []int64
			page := f
			page.Limit = limit
			done := false
			for range len(want) + 2 { // one page per order at worst, then the empty one
				l := listOrders(t, os, page)
				if len(l) == 0 {
					done = true
					break
				}
				if len(l) > limit {
					t.Fatalf("%+v: page of %d, limit %d", page, len(l), limit)
				}
				for _, o := range l {
					if o.OrderID <= page.After {
						t.Fatalf("%+v: order %d is not after the cursor", page, o.OrderID)
					}
					got = append(got, o.OrderID)
					page.After = o.OrderID
				}
			}
			if !done {
				t.Fatalf("%+v: paging did not end", f)
			}
			if !equalIDs(got, want) {
				t.Errorf("%+v paged by %d = %v, want %v", f, limit, got, want)
			}
		}
	}

	// Changing an order's app and status moves it between the lists.
	moved := m[4]
	moved.AppID, moved.Status = 3, "SHIPPED"
	moved.Items = moved.Items[:0]
	putOrders(t, s, moved)
	m.put(moved)
	for _, f := range filters {
		wantOrders(t, fmt.Sprintf("Orders(%+v) after a move", f), listOrders(t, os, f), m.list(f))
	}
}

func testOrdersLimits(t *testing.T, s Store) {
	os := orderStore(t, s)
	const n = 1005
	all := make([]projections.Order, n)
	for i := range all {
		o := orderOf(7, int64(i+1), "APPROVED")
		o.Items = nil
		all[i] = o
	}
	putOrders(t, s, all...)
	for _, c := range []struct{ limit, want int }{
		{0, 100}, {-1, 100}, {1, 1}, {999, 999}, {1000, 1000}, {1001, 1000}, {1 << 30, 1000},
	} {
		for _, f := range []projections.OrderFilter{{AppID: 7, Limit: c.limit}, {Limit: c.limit}, {Status: "APPROVED", Limit: c.limit}} {
			got := listOrders(t, os, f)
			if len(got) != c.want || got[0].OrderID != 1 || got[len(got)-1].OrderID != int64(c.want) {
				t.Errorf("Orders(%+v) = %d orders, want the first %d", f, len(got), c.want)
			}
		}
	}
}
