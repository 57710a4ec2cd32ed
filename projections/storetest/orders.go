package storetest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/projections"
)

// orderCases are the cases of the orders sub-suite.
var orderCases = []testCase{
	{"GoodsRoundTripAndOrder", testGoods},
	{"GoodsCodeUnique", testGoodsCodeUnique},
	{"OrderRoundTrip", testOrderRoundTrip},
	{"PutOrderReplacesOrderAndItems", testPutOrderReplaces},
	{"OrderTxReadsSeeOwnWrites", testOrderTxReads},
	{"FailedUpdateChangesNoOrders", testFailedUpdateOrders},
	{"OrderTenancyAndUniqueCode", testOrderTenancy},
	{"OrdersFiltersOrderAndPaging", testOrdersFilters},
	{"OrdersLimits", testOrdersLimits},
	{"UserOrders", testUserOrders},
}

// testUserOrders finds a user's orders in any app, its own writes included,
// and none for a user without orders or an order without a user.
func testUserOrders(t *testing.T, s Store) {
	a, b, c, none := orderOf(1, 10, "PENDING_REVIEW"), orderOf(2, 11, "APPROVED"), orderOf(1, 12, "SHIPPED"), orderOf(1, 13, "APPROVED")
	a.UserID, b.UserID, c.UserID, none.UserID = ptr(int64(7)), ptr(int64(7)), ptr(int64(8)), nil
	putOrders(t, s, a, c, none)
	write(t, ordersOf(s), func(tx projections.OrderTx) error {
		if err := tx.PutOrder(ctx, b); err != nil {
			return err
		}
		for user, want := range map[int64][]int64{7: {10, 11}, 8: {12}, 9: {}} {
			got, err := tx.UserOrders(ctx, user)
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				t.Errorf("UserOrders(%d) = %v, want %v", user, got, want)
			}
		}
		return nil
	})
}

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

func putGoods(t *testing.T, s Store, rows ...projections.Goods) {
	t.Helper()
	putRows(t, ordersOf(s), projections.OrderTx.PutGoods, rows...)
}

func putOrders(t *testing.T, s Store, rows ...projections.Order) {
	t.Helper()
	putRows(t, ordersOf(s), projections.OrderTx.PutOrder, rows...)
}

// orderModel is what Orders must answer, computed the obvious way.
type orderModel map[int64]projections.Order

func (m orderModel) put(rows ...projections.Order) {
	for _, o := range rows {
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
	if gs := must(s.GoodsList(ctx))(t); len(gs) != 0 {
		t.Fatalf("GoodsList of an empty store = %v", ids(gs))
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
	wantRows(t, "GoodsList", must(s.GoodsList(ctx))(t), want)

	// Replacing changes every field, and frees the old code for others.
	repl := projections.Goods{GoodsID: 10, GoodsCode: "G-NEW", GoodsName: "renamed", Active: !g1.Active,
		CreatedAt: at(70), UpdatedAt: at(71)}
	taker := goodsOf(20)
	taker.GoodsCode = g1.GoodsCode
	putGoods(t, s, repl, taker)
	want = []projections.Goods{bare, repl, taker, g3, full}
	wantRows(t, "GoodsList after replace", must(s.GoodsList(ctx))(t), want)

	// Putting the same goods twice is harmless, inside one Update or across two.
	putGoods(t, s, repl, repl)
	putGoods(t, s, repl)
	wantRows(t, "GoodsList after identical puts", must(s.GoodsList(ctx))(t), want)

	// Inside a transaction, inactive goods included.
	write(t, ordersOf(s), func(tx projections.OrderTx) error {
		for _, w := range want {
			got, err := tx.Goods(ctx, w.GoodsID)
			if err != nil {
				return fmt.Errorf("Tx.Goods(%d): %w", w.GoodsID, err)
			}
			wantRow(t, fmt.Sprintf("Tx.Goods(%d)", w.GoodsID), got, w)
		}
		_, err := tx.Goods(ctx, 424242)
		wantNotFound(t, "Tx.Goods(unknown)", err)
		return nil
	})

	// Results are the caller's own.
	gs := must(s.GoodsList(ctx))(t)
	gs[0].GoodsName = "mutated"
	wantRows(t, "GoodsList after a caller mutated a result", must(s.GoodsList(ctx))(t), want)
}

// No two goods share a code: the write that tries fails its Update, which
// then changes nothing, in every store alike.
func testGoodsCodeUnique(t *testing.T, s Store) {
	a := goodsOf(1)
	putGoods(t, s, a)
	pos := must(s.Checkpoint(ctx, "orders"))(t)
	err := try(ordersOf(s), func(tx projections.OrderTx) error {
		if err := tx.PutGoods(ctx, goodsOf(2)); err != nil {
			return err
		}
		b := goodsOf(3)
		b.GoodsCode = a.GoodsCode

		return tx.PutGoods(ctx, b)
	})

	if err == nil {
		t.Fatal("Update giving two goods the same code succeeded")
	}
	wantCheckpoint(t, s, "orders", pos)
	wantRows(t, "GoodsList after the conflict", must(s.GoodsList(ctx))(t), []projections.Goods{a})

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
	wantRows(t, "GoodsList after a code changed hands", must(s.GoodsList(ctx))(t), []projections.Goods{renamed, other, taker})
}

// roundTripOrders are the round trip's orders: full sets every field to
// awkward values (extreme numbers, non-ASCII text, items out of ItemID
// order), bare leaves every pointer nil and has no items, zeroes sets
// zero values (not nil).
func roundTripOrders() (full, bare, zeroes projections.Order) {
	cst := time.FixedZone("CST", 8*3600)
	full = projections.Order{
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
	bare = projections.Order{ // every pointer nil, no items
		OrderID:   5,
		OrderCode: "b",
		AppID:     1 << 40,
		OrderTime: at(0),
		CreatedAt: at(0),
		UpdatedAt: at(0),
	}
	zeroes = projections.Order{ // zero values are set, not nil
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
	return full, bare, zeroes
}

// testOrderRoundTrip: given the round trip's orders written in one
// transaction by a caller that reuses its buffers once PutOrder returns,
// every read answers them field for field, and the store keeps its own
// copies of what it read and wrote.
func testOrderRoundTrip(t *testing.T, s Store) {
	full, bare, zeroes := roundTripOrders()

	write(t, ordersOf(s), func(tx projections.OrderTx) error {
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

	t.Run("ReadsAnswerEveryField", func(t *testing.T) {
		for _, want := range []projections.Order{full, bare, zeroes} {
			want = sortedItems(want)
			what := fmt.Sprintf("order %d", want.OrderID)
			wantRow(t, what+" by code", must(s.OrderByCode(ctx, want.AppID, want.OrderCode))(t), want)
			wantRow(t, what+" by code, any app", must(s.OrderByCode(ctx, 0, want.OrderCode))(t), want)
		}
		wantRows(t, "Orders(app)", must(s.Orders(ctx, projections.OrderFilter{AppID: 1 << 40}))(t),
			[]projections.Order{bare, zeroes, sortedItems(full)})

		wantRows(t, "Orders(status)", must(s.Orders(ctx, projections.OrderFilter{Status: full.Status}))(t),
			[]projections.Order{sortedItems(full)})
	})
	t.Run("TxReadIsACopy", func(t *testing.T) {
		// Inside a transaction too; what it reads is a copy.
		write(t, ordersOf(s), func(tx projections.OrderTx) error {
			got, err := tx.Order(ctx, full.OrderID)
			if err != nil {
				return err
			}
			wantRow(t, "Tx.Order", got, sortedItems(full))
			got.Items[1].DeviceSNs[0], got.Items[0].Quantity = "mutated", 42
			*got.UserID, *got.ShippedAt = 1, at(9)
			got.Items = append(got.Items, projections.OrderItem{ItemID: 77})
			return nil
		})
	})
	t.Run("ReadResultsAreCopies", func(t *testing.T) {
		// The store owns its copies: changing what was read changes nothing.
		got := must(s.OrderByCode(ctx, 0, full.OrderCode))(t)
		got.Items[1].DeviceSNs[1] = "mutated"
		got.Items[2].ShippingStatus = "mutated"
		*got.AreaCode, *got.TrackingNumber = "mutated", "mutated"
		for _, o := range must(s.Orders(ctx, projections.OrderFilter{AppID: 1 << 40}))(t) {
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
		wantRow(t, "order after callers mutated results", must(s.OrderByCode(ctx, 0, full.OrderCode))(t), sortedItems(full))
		wantRow(t, "zeroes after callers mutated results", must(s.OrderByCode(ctx, 0, zeroes.OrderCode))(t), zeroes)
	})
}

func testPutOrderReplaces(t *testing.T, s Store) {
	o := orderOf(1, 7, "APPROVED")
	o.Items = append(o.Items, projections.OrderItem{ItemID: 73, GoodsID: 3, GoodsCode: "G-0003", Quantity: 1,
		ShippingStatus: "PENDING_SHIPMENT", DeviceSNs: []string{"x", "y"}})
	neighbour := orderOf(1, 8, "APPROVED")
	putOrders(t, s, o, neighbour)
	wantRow(t, "order before replace", must(s.OrderByCode(ctx, 1, o.OrderCode))(t), sortedItems(o))

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
	wantRow(t, "replaced order", must(s.OrderByCode(ctx, 2, repl.OrderCode))(t), sortedItems(repl))
	_, err := s.OrderByCode(ctx, 0, o.OrderCode)
	wantNotFound(t, "OrderByCode(old code after replace)", err)
	wantRow(t, "neighbour after replace", must(s.OrderByCode(ctx, 1, neighbour.OrderCode))(t), sortedItems(neighbour))
	wantRows(t, "Orders(app 1) after the order moved", must(s.Orders(ctx, projections.OrderFilter{AppID: 1}))(t),
		[]projections.Order{sortedItems(neighbour)})

	wantRows(t, "Orders(app 2, SHIPPED)", must(s.Orders(ctx, projections.OrderFilter{AppID: 2, Status: "SHIPPED"}))(t),
		[]projections.Order{sortedItems(repl)})

	if l := must(s.Orders(ctx, projections.OrderFilter{Status: "APPROVED"}))(t); !slices.Equal(ids(l), []int64{8}) {
		t.Errorf("Orders(APPROVED) after the order moved = %v, want [8]", ids(l))
	}

	// Only the serial numbers' order changes.
	swapped := repl
	swapped.Items = slices.Clone(repl.Items)
	swapped.Items[1].DeviceSNs = []string{"z", "y", "x"}
	putOrders(t, s, swapped)
	wantRow(t, "order with reordered serial numbers", must(s.OrderByCode(ctx, 2, repl.OrderCode))(t), sortedItems(swapped))

	// No items at all (nil as an empty list).
	empty := repl
	empty.Items = nil
	putOrders(t, s, empty)
	got := must(s.OrderByCode(ctx, 2, repl.OrderCode))(t)
	wantRow(t, "order without items", got, empty)

	// And back: the removed ids can be used again.
	putOrders(t, s, o)
	wantRow(t, "order put back", must(s.OrderByCode(ctx, 1, o.OrderCode))(t), sortedItems(o))

	// An order cannot list one ItemID twice.
	pos := must(s.Checkpoint(ctx, "orders"))(t)
	dup := o
	dup.Status = "dup"
	dup.Items = append(slices.Clone(o.Items), projections.OrderItem{ItemID: o.Items[0].ItemID, ShippingStatus: "dup"})
	if err := try(ordersOf(s), func(tx projections.OrderTx) error { return tx.PutOrder(ctx, dup) }); err == nil {
		t.Error("PutOrder with a repeated ItemID succeeded")
	}
	wantCheckpoint(t, s, "orders", pos)
	wantRow(t, "order after the refused PutOrder", must(s.OrderByCode(ctx, 1, o.OrderCode))(t), sortedItems(o))
}

func testOrderTxReads(t *testing.T, s Store) {
	g := goodsOf(1)
	o := orderOf(1, 10, "PENDING_REVIEW")
	write(t, ordersOf(s), func(tx projections.OrderTx) error {
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
		wantRow(t, "Tx.Goods after PutGoods", gotG, g)
		gotG.Active, gotG.GoodsName = !gotG.Active, "renamed"
		if err := tx.PutGoods(ctx, gotG); err != nil {
			return err
		}
		again, err := tx.Goods(ctx, g.GoodsID)
		if err != nil {
			return err
		}
		wantRow(t, "Tx.Goods after second PutGoods", again, gotG)
		g = gotG

		if err := tx.PutOrder(ctx, o); err != nil {
			return err
		}
		got, err := tx.Order(ctx, o.OrderID)
		if err != nil {
			return fmt.Errorf("Tx.Order after PutOrder: %w", err)
		}
		wantRow(t, "Tx.Order after PutOrder", got, sortedItems(o))

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
		wantRow(t, "Tx.Order after second PutOrder", wantAgain, got)
		o = got
		return nil
	})

	wantRow(t, "order after commit", must(s.OrderByCode(ctx, 1, o.OrderCode))(t), o)
	wantRows(t, "goods after commit", must(s.GoodsList(ctx))(t), []projections.Goods{g})

	// Read models are separate transactions (each its own Update and
	// checkpoint): no case writes two read models at once.

	// A later transaction reads committed rows of any app; a not-found read
	// handled by fn does not spoil it.
	other := orderOf(2, 20, "REJECTED")
	putOrders(t, s, other)
	third := orderOf(3, 30, "APPROVED")
	write(t, ordersOf(s), func(tx projections.OrderTx) error {
		got, err := tx.Order(ctx, other.OrderID)
		if err != nil {
			return err
		}
		wantRow(t, "Tx.Order of another app", got, sortedItems(other))
		if _, err := tx.Order(ctx, 424242); !errors.Is(err, projections.ErrNotFound) {
			return fmt.Errorf("Tx.Order(424242) = %v, want ErrNotFound", err)
		}
		if _, err := tx.Goods(ctx, 424242); !errors.Is(err, projections.ErrNotFound) {
			return fmt.Errorf("Tx.Goods(424242) = %v, want ErrNotFound", err)
		}
		return tx.PutOrder(ctx, third)
	})

	wantRow(t, "order put after a not-found read", must(s.OrderByCode(ctx, 3, third.OrderCode))(t), sortedItems(third))
}

func testFailedUpdateOrders(t *testing.T, s Store) {
	g := goodsOf(1)
	a, b := orderOf(1, 10, "APPROVED"), orderOf(1, 11, "PENDING_REVIEW")
	u := fullUser(1, 10, "c-10")
	writeAt(t, usersOf(s), "users", nextPos(), func(tx projections.UserTx) error { return tx.PutUser(ctx, u) })
	m := orderModel{}
	m.put(a, b)
	failedUpdate(t, s, ordersOf(s), func(tx projections.OrderTx) error {
		return firstErr(tx.PutGoods(ctx, g), tx.PutOrder(ctx, a), tx.PutOrder(ctx, b))
	}, func(tx projections.OrderTx) error {
		g2 := g
		g2.GoodsCode, g2.GoodsName, g2.Active = "G-CHANGED", "changed", !g.Active
		a2 := a
		a2.OrderCode, a2.AppID, a2.Status, a2.UserID, a2.ShippedAt = "ORD-CHANGED", 2, "SHIPPED", nil, nil
		a2.Items = []projections.OrderItem{{ItemID: a.Items[0].ItemID, DeviceSNs: []string{"changed"}}, {ItemID: 999}}
		b2 := b
		b2.Items = nil
		c := orderOf(1, 12, "APPROVED")
		c.OrderCode = a.OrderCode // the freed code, taken by a new order
		if err := firstErr(tx.PutGoods(ctx, g2), tx.PutGoods(ctx, goodsOf(2)), tx.PutOrder(ctx, a2), tx.PutOrder(ctx, b2), tx.PutOrder(ctx, c)); err != nil {
			return err
		}
		wantRow(t, "Tx.Order inside the failing Update", must(tx.Order(ctx, a.OrderID))(t), sortedItems(a2))
		wantRow(t, "Tx.Goods inside the failing Update", must(tx.Goods(ctx, g.GoodsID))(t), g2)
		return nil
	}, func(when string) {
		wantRow(t, "user "+when, must(s.User(ctx, 1, 10))(t), u)
		wantRows(t, "GoodsList "+when, must(s.GoodsList(ctx))(t), []projections.Goods{g})
		wantRow(t, "order a "+when, must(s.OrderByCode(ctx, 1, a.OrderCode))(t), sortedItems(a))
		wantRow(t, "order b "+when, must(s.OrderByCode(ctx, 1, b.OrderCode))(t), sortedItems(b))
		_, err := s.OrderByCode(ctx, 0, "ORD-CHANGED")
		wantNotFound(t, "OrderByCode(code of the failed Update) "+when, err)
		for _, f := range []projections.OrderFilter{{}, {AppID: 1}, {Status: "APPROVED"}, {AppID: 1, Status: "PENDING_REVIEW"}, {AppID: 2}, {Status: "SHIPPED"}} {
			wantRows(t, fmt.Sprintf("Orders(%+v) %s", f, when), must(s.Orders(ctx, f))(t), m.list(f))
		}
	})

	// The store is still usable, and the failed Update's writes do not count:
	// the code it freed is still a's, the goods code it took is free.
	c := orderOf(1, 12, "APPROVED")
	c.OrderCode = a.OrderCode
	if err := try(ordersOf(s), func(tx projections.OrderTx) error { return tx.PutOrder(ctx, c) }); err == nil {
		t.Error("PutOrder taking the code the failed Update freed succeeded")
	}
	g3 := goodsOf(3)
	g3.GoodsCode = "G-CHANGED"
	putGoods(t, s, g3)
	putOrders(t, s, orderOf(1, 12, "APPROVED"))
	if l := must(s.Orders(ctx, projections.OrderFilter{AppID: 1}))(t); !slices.Equal(ids(l), []int64{10, 11, 12}) {
		t.Errorf("Orders(app 1) after a later Update = %v, want [10 11 12]", ids(l))
	}
}

func testOrderTenancy(t *testing.T, s Store) {
	o1, o2 := orderOf(1, 1, "APPROVED"), orderOf(2, 2, "APPROVED")
	o1.OrderCode, o2.OrderCode = "ORD-abc", "ORD-def"
	putOrders(t, s, o1, o2)
	wantRow(t, "OrderByCode(1, o1)", must(s.OrderByCode(ctx, 1, o1.OrderCode))(t), sortedItems(o1))
	wantRow(t, "OrderByCode(2, o2)", must(s.OrderByCode(ctx, 2, o2.OrderCode))(t), sortedItems(o2))
	wantRow(t, "OrderByCode(any app, o1)", must(s.OrderByCode(ctx, 0, o1.OrderCode))(t), sortedItems(o1))
	wantRow(t, "OrderByCode(any app, o2)", must(s.OrderByCode(ctx, 0, o2.OrderCode))(t), sortedItems(o2))
	for _, c := range []struct {
		app  int64
		code string
	}{{2, o1.OrderCode}, {1, o2.OrderCode}, {3, o1.OrderCode}, {-1, o1.OrderCode},
		{1, "ORD-ABC"}, {1, "ORD-ab"}, {1, o1.OrderCode + " "}, {1, ""}, {0, ""}, {0, "ORD-xyz"}} {
		o, err := s.OrderByCode(ctx, c.app, c.code)
		wantNotFound(t, fmt.Sprintf("OrderByCode(%d, %q)", c.app, c.code), err)
		if err != nil && o.OrderID != 0 {
			t.Errorf("OrderByCode(%d, %q) returned data with its error: %+v", c.app, c.code, o)
		}
	}
	wantRows(t, "Orders(app 1)", must(s.Orders(ctx, projections.OrderFilter{AppID: 1}))(t), []projections.Order{sortedItems(o1)})
	wantRows(t, "Orders(app 2)", must(s.Orders(ctx, projections.OrderFilter{AppID: 2}))(t), []projections.Order{sortedItems(o2)})
	if l := must(s.Orders(ctx, projections.OrderFilter{AppID: 3}))(t); len(l) != 0 {
		t.Errorf("Orders(app 3) = %v, want none", ids(l))
	}

	// Order codes are unique across apps: the Update that reuses one fails
	// and changes nothing.
	pos := must(s.Checkpoint(ctx, "orders"))(t)
	err := try(ordersOf(s), func(tx projections.OrderTx) error {
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
	if l := must(s.Orders(ctx, projections.OrderFilter{}))(t); !slices.Equal(ids(l), []int64{1, 2}) {
		t.Errorf("Orders after the conflict = %v, want [1 2]", ids(l))
	}

	// Moving an order to another app moves its tenancy with it.
	moved := o1
	moved.AppID = 2
	putOrders(t, s, moved)
	_, err = s.OrderByCode(ctx, 1, o1.OrderCode)
	wantNotFound(t, "OrderByCode in the old app after a move", err)
	wantRow(t, "OrderByCode in the new app", must(s.OrderByCode(ctx, 2, o1.OrderCode))(t), sortedItems(moved))
}

// orderFixture puts 30 orders over three apps and four statuses, in an order
// unlike their ids', and returns the model.
func orderFixture(t *testing.T, s Store) orderModel {
	t.Helper()
	m := orderModel{}
	var rows []projections.Order
	for n := range 30 {
		o := orderOf(int64(1+n%3), int64(3*n+1), orderStatuses[(n/3)%len(orderStatuses)])
		if n%4 == 0 {
			o.Items = nil
		}
		rows = append(rows, o)
	}
	// Newest first, in two transactions, so the indexes are not built by appends.
	slices.Reverse(rows)
	putOrders(t, s, rows[:17]...)
	putOrders(t, s, rows[17:]...)
	m.put(rows...)
	return m
}

func testOrdersFilters(t *testing.T, s Store) {
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
		wantRows(t, fmt.Sprintf("Orders(%+v)", f), must(s.Orders(ctx, f))(t), m.list(f))
	}

	// The model itself, on cases worked out by hand.
	wantIDs := func(what string, f projections.OrderFilter, want []int64) {
		t.Helper()
		if got := ids(must(s.Orders(ctx, f))(t)); !slices.Equal(got, want) {
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
		wantPaging(t, lister(t, s.Orders), f, m.list(all))
	}

	// Changing an order's app and status moves it between the lists.
	moved := m[4]
	moved.AppID, moved.Status = 3, "SHIPPED"
	moved.Items = moved.Items[:0]
	putOrders(t, s, moved)
	m.put(moved)
	for _, f := range filters {
		wantRows(t, fmt.Sprintf("Orders(%+v) after a move", f), must(s.Orders(ctx, f))(t), m.list(f))
	}
}

func testOrdersLimits(t *testing.T, s Store) {
	const n = 1005
	all := make([]projections.Order, n)
	for i := range all {
		o := orderOf(7, int64(i+1), "APPROVED")
		o.Items = nil
		all[i] = o
	}
	putOrders(t, s, all...)
	wantLimits(t, lister(t, s.Orders), []projections.OrderFilter{{AppID: 7}, {}, {Status: "APPROVED"}}, all)
}
