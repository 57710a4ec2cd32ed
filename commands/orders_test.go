package commands

import (
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Given/When/Then of the goods, order-key and order decisions.

var goodsBP = catalog.GoodsCreated{GoodsID: 3, GoodsCode: "BP1", GoodsName: "BP monitor"}

func TestCreateGoodsDecision(t *testing.T) {
	c := createGoods{GoodsID: 3, Code: "BP1", Name: "BP monitor"}
	got, err := decideCreateGoods(given(t, &goodsState{}), c)
	then(t, got, err, goodsBP)

	got, err = decideCreateGoods(given(t, &goodsState{}, goodsBP), c)
	thenError(t, got, err, domain.ErrGoodsCodeTaken)
}

func TestChangeGoodsDecision(t *testing.T) {
	st := func() *goodsState { return given(t, &goodsState{}, goodsBP) }
	got, err := decideChangeGoods(st(), changeGoods{Code: "BP1", Name: ptr("BP monitor 2"), Active: ptr(false)})
	then(t, got, err,
		catalog.GoodsUpdated{GoodsID: 3, GoodsCode: "BP1", GoodsName: "BP monitor 2"},
		catalog.GoodsActivation{GoodsID: 3, GoodsCode: "BP1", Active: false})

	got, err = decideChangeGoods(st(), changeGoods{Code: "BP1", Name: ptr("BP monitor"), Active: ptr(true)})
	then(t, got, err) // the same name and state again decide nothing

	got, err = decideChangeGoods(given(t, &goodsState{}, goodsBP, catalog.GoodsActivation{GoodsID: 3, GoodsCode: "BP1"}), changeGoods{Code: "BP1", Active: ptr(true)})
	then(t, got, err, catalog.GoodsActivation{GoodsID: 3, GoodsCode: "BP1", Active: true})

	got, err = decideChangeGoods(given(t, &goodsState{}), changeGoods{Code: "BP1", Active: ptr(true)})
	thenError(t, got, err, domain.ErrGoodsNotFound)
}

var orderNow = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func orderCmd() placeOrder {
	in := OrderInput{ThirdOrderID: "T1", ContactPerson: "Li", ContactPhone: "13800138000", Address: "Beijing",
		Items: []OrderItemIn{{GoodsCode: "BP1", Quantity: 2, UnitPrice: 150}}, UserID: ptr[int64](5)}
	if err := in.validate(); err != nil { // fills the defaults
		panic(err)
	}
	return placeOrder{AppID: 1, In: in, Hash: in.hash(), OrderID: 40, ItemIDs: []int64{41}, Now: orderNow}
}

// created40 is what orderCmd creates.
func created40() catalog.OrderCreated {
	c := orderCmd()
	return catalog.OrderCreated{
		OrderID: 40, OrderCode: "PO2026112140", AppID: 1, ThirdOrderID: "T1", UserID: ptr[int64](5),
		ContactPerson: "Li", ContactPhone: "13800138000", Address: "Beijing", LogisticsType: "EXPRESS_DELIVERY", PostagePolicy: "FREE_SHIPPING",
		OrderSource: "API_INTERFACE", CooperationType: "PURCHASE", OrderTime: orderNow, RequestHash: c.Hash,
		Items: []catalog.OrderLine{{ItemID: 41, GoodsID: 3, GoodsCode: "BP1", GoodsName: "BP monitor", Quantity: 2, UnitPrice: 150, TotalPrice: 300}},
	}
}

func TestCreateOrderDecision(t *testing.T) {
	goods := []goodsState{*given(t, &goodsState{}, goodsBP)}
	got, err := decideCreateOrder(given(t, &orderState{}), 40, goods, orderCmd())
	then(t, got, err, created40())

	t.Run("GOODS_NOT_FOUND", func(t *testing.T) {
		got, err := decideCreateOrder(given(t, &orderState{}), 40, []goodsState{{}}, orderCmd())
		thenError(t, got, err, domain.ErrGoodsNotFound)
		inactive := []goodsState{*given(t, &goodsState{}, goodsBP, catalog.GoodsActivation{GoodsID: 3, GoodsCode: "BP1"})}
		got, err = decideCreateOrder(given(t, &orderState{}), 40, inactive, orderCmd())
		thenError(t, got, err, domain.ErrGoodsNotFound)
		if err := checkOrderGoods(inactive, orderCmd().In.Items); err == nil {
			t.Fatal("the early goods check accepted deactivated goods")
		}
	})
	t.Run("USER_NOT_FOUND", func(t *testing.T) {
		if err := checkOrderUser(given(t, newUserState(), registered(1, 5)), 1); err != nil {
			t.Fatalf("own user refused: %v", err)
		}
		for name, st := range map[string]*userState{
			"never registered": given(t, newUserState()),
			"another app's":    given(t, newUserState(), registered(2, 5)),
		} {
			if err := checkOrderUser(st, 1); err != domain.ErrUserNotFound {
				t.Fatalf("%s: %v, want USER_NOT_FOUND", name, err)
			}
		}
	})
	t.Run("DUPLICATE_THIRD_ORDER_ID", func(t *testing.T) {
		other := created40()
		other.RequestHash = "another request"
		got, err := decideCreateOrder(given(t, &orderState{}, other), 40, goods, orderCmd())
		thenError(t, got, err, domain.ErrDuplicateThirdOrder)
	})
	t.Run("same request again", func(t *testing.T) {
		st := given(t, &orderState{}, created40())
		got, err := decideCreateOrder(st, 40, goods, orderCmd())
		then(t, got, err)
		if c, err := replayOrder(st, orderCmd().Hash); err != nil || c == nil || c.OrderCode != "PO2026112140" {
			t.Fatalf("replay %+v %v", c, err)
		}
	})
}

func TestClaimOrderKeyDecision(t *testing.T) {
	then(t, decideClaimOrderKey(given(t, &orderKeyState{}), orderCmd()), nil, catalog.OrderKeyClaimed{AppID: 1, ThirdOrderID: "T1", OrderID: 40})
	claimed := given(t, &orderKeyState{}, catalog.OrderKeyClaimed{AppID: 1, ThirdOrderID: "T1", OrderID: 7})
	then(t, decideClaimOrderKey(claimed, orderCmd()), nil)
	if claimed.orderID != 7 {
		t.Fatalf("claimed key names order %d, want 7", claimed.orderID)
	}
}

func TestCreateOrderRejectsBadInput(t *testing.T) {
	base := func() OrderInput { return orderCmd().In }
	cases := map[string]struct {
		edit  func(*OrderInput)
		field string
	}{
		"third_order_id": {func(in *OrderInput) { in.ThirdOrderID = "" }, "third_order_id"},
		"contact_phone":  {func(in *OrderInput) { in.ContactPhone = "12345" }, "contact_phone"},
		"no items":       {func(in *OrderInput) { in.Items = nil }, "items"},
		"quantity":       {func(in *OrderInput) { in.Items[0].Quantity = 0 }, "items[0].quantity"},
		"unit_price":     {func(in *OrderInput) { in.Items[0].UnitPrice = -1 }, "items[0].unit_price"},
		"logistics_type": {func(in *OrderInput) { in.LogisticsType = "DRONE" }, "logistics_type"},
		"user_id":        {func(in *OrderInput) { in.UserID = ptr[int64](0) }, "user_id"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			in := base()
			in.Items = append([]OrderItemIn(nil), in.Items...)
			c.edit(&in)
			thenInvalid(t, in.validate(), c.field)
		})
	}
}

// orderIn is order 40 after the given events.
func orderIn(t *testing.T, more ...events.Payload) *orderState {
	return given(t, &orderState{}, append([]events.Payload{created40()}, more...)...)
}

var approved40 = catalog.OrderReviewed{OrderID: 40, AppID: 1, Approved: true, By: "op"}

func TestReviewOrderDecision(t *testing.T) {
	c := reviewOrder{Code: "PO2026112140", Approve: true, By: "op"}
	got, err := decideReviewOrder(orderIn(t), c)
	then(t, got, err, approved40)

	reject := reviewOrder{Code: "PO2026112140", Reason: ptr("out of stock"), By: "op"}
	got, err = decideReviewOrder(orderIn(t), reject)
	then(t, got, err, catalog.OrderReviewed{OrderID: 40, AppID: 1, Reason: ptr("out of stock"), By: "op"})

	for name, st := range map[string]*orderState{
		"approved": orderIn(t, approved40),
		"rejected": orderIn(t, catalog.OrderReviewed{OrderID: 40, AppID: 1, By: "op"}),
		"shipped":  orderIn(t, approved40, catalog.OrderShipped{OrderID: 40, Items: []catalog.ShippedLine{{ItemID: 41}}, Complete: true}),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := decideReviewOrder(st, c)
			thenError(t, got, err, domain.ErrIllegalTransition)
		})
	}
	got, err = decideReviewOrder(given(t, &orderState{}), c)
	thenError(t, got, err, domain.ErrOrderNotFound)
	got, err = decideReviewOrder(orderIn(t), reviewOrder{Code: "PO2026112240", Approve: true})
	thenError(t, got, err, domain.ErrOrderNotFound) // a code of another day names no order
}

// twoLines is an approved order of two lines (items 41 and 42).
func twoLines(t *testing.T, more ...events.Payload) *orderState {
	c := created40()
	c.Items = append(c.Items, catalog.OrderLine{ItemID: 42, GoodsID: 3, GoodsCode: "BP1", GoodsName: "BP monitor", Quantity: 1, UnitPrice: 150, TotalPrice: 150})
	return given(t, &orderState{}, append([]events.Payload{c, approved40}, more...)...)
}

func TestShipOrderDecision(t *testing.T) {
	ship := func(appID int64, items ...ShipmentItem) shipOrder {
		return shipOrder{AppID: appID, Code: "PO2026112140", Shipment: Shipment{LogisticsCompany: "SF", TrackingNumber: "SF1", Items: items}, Source: "operator", Now: orderNow}
	}
	shipped := func(complete bool, lines ...catalog.ShippedLine) catalog.OrderShipped {
		return catalog.OrderShipped{OrderID: 40, OrderCode: "PO2026112140", AppID: 1, ThirdOrderID: "T1", LogisticsCompany: "SF", TrackingNumber: "SF1",
			Items: lines, ShippedAt: orderNow, Complete: complete, Source: "operator"}
	}
	line41 := catalog.ShippedLine{ItemID: 41, GoodsCode: "BP1", Quantity: 2, DeviceSNs: []string{"SN1"}}
	line42 := catalog.ShippedLine{ItemID: 42, GoodsCode: "BP1", Quantity: 1, DeviceSNs: []string{}}

	got, err := decideShipOrder(twoLines(t), ship(0, ShipmentItem{ItemID: 41, DeviceSNs: []string{"SN1"}}))
	then(t, got, err, shipped(false, line41))

	partly := twoLines(t, shipped(false, line41))
	if partly.status != OrderPartiallyShipped {
		t.Fatalf("status %s after a partial shipment", partly.status)
	}
	got, err = decideShipOrder(partly, ship(1)) // no items named: the rest
	then(t, got, err, shipped(true, line42))

	got, err = decideShipOrder(twoLines(t), ship(0))
	then(t, got, err, shipped(true, catalog.ShippedLine{ItemID: 41, GoodsCode: "BP1", Quantity: 2, DeviceSNs: []string{}}, line42))

	refusals := map[string]struct {
		st   *orderState
		c    shipOrder
		want error
	}{
		"pending review":        {orderIn(t), ship(0), domain.ErrIllegalTransition},
		"rejected":              {orderIn(t, catalog.OrderReviewed{OrderID: 40, AppID: 1}), ship(0), domain.ErrIllegalTransition},
		"shipped":               {twoLines(t, shipped(true, line41, line42)), ship(0), domain.ErrIllegalTransition},
		"item shipped before":   {partly, ship(0, ShipmentItem{ItemID: 41}), domain.ErrIllegalTransition},
		"item named twice":      {twoLines(t), ship(0, ShipmentItem{ItemID: 42}, ShipmentItem{ItemID: 42}), domain.ErrIllegalTransition},
		"item not in order":     {twoLines(t), ship(0, ShipmentItem{ItemID: 99}), domain.ErrShipmentDoesNotMatch},
		"more serials than qty": {twoLines(t), ship(0, ShipmentItem{ItemID: 42, DeviceSNs: []string{"a", "b"}}), domain.ErrShipmentDoesNotMatch},
		"another app's order":   {twoLines(t), ship(2), domain.ErrOrderNotFound},
		"no order":              {given(t, &orderState{}), ship(0), domain.ErrOrderNotFound},
	}
	for name, c := range refusals {
		t.Run(name, func(t *testing.T) {
			got, err := decideShipOrder(c.st, c.c)
			thenError(t, got, err, c.want)
		})
	}
}

func TestSandboxApprovalDecision(t *testing.T) {
	got, err := decideSandboxApproval(orderIn(t), 1, "PO2026112140")
	then(t, got, err, catalog.OrderReviewed{OrderID: 40, AppID: 1, Approved: true, By: "sandbox_test"})
	got, err = decideSandboxApproval(orderIn(t, approved40), 1, "PO2026112140")
	then(t, got, err) // already reviewed: nothing to do
	got, err = decideSandboxApproval(orderIn(t), 2, "PO2026112140")
	thenError(t, got, err, domain.ErrOrderNotFound)
}
