package commands

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Order and item states. The state machine:
//
//	PENDING_REVIEW --approve--> APPROVED --ship(some items)--> PARTIALLY_SHIPPED --ship(rest)--> SHIPPED
//	PENDING_REVIEW --reject---> REJECTED                      APPROVED --ship(all items)-----> SHIPPED
//
// Items go PENDING_SHIPMENT --> SHIPPED when a shipment includes them.
const (
	OrderPendingReview    = "PENDING_REVIEW"
	OrderApproved         = "APPROVED"
	OrderRejected         = "REJECTED"
	OrderPartiallyShipped = "PARTIALLY_SHIPPED"
	OrderShipped          = "SHIPPED"
	ItemPendingShipment   = "PENDING_SHIPMENT"
	ItemShipped           = "SHIPPED"
)

// OrderCode renders the platform order code: PO, the creation day, the id.
func OrderCode(id int64, at time.Time) string {
	return "PO" + at.UTC().Format("20060102") + strconv.FormatInt(id, 10)
}

// OrderIDFromCode recovers the id an order code carries, so a command finds
// the order's stream without a read-model lookup.
func OrderIDFromCode(code string) (int64, bool) {
	if len(code) < 11 || code[:2] != "PO" {
		return 0, false
	}
	id, err := strconv.ParseInt(code[10:], 10, 64)
	return id, err == nil && id > 0
}

// Orders handles goods and purchase orders.
type Orders struct {
	streams
	ids *Allocator
	now func() time.Time
	// Recently used aggregates, read incrementally (aggregates.go).
	users  *aggregateCache[*orderUser]
	goods  *aggregateCache[*goodsState]
	orders *aggregateCache[*orderState]
}

// NewOrders builds the handler.
func NewOrders(store events.Store, reg *events.Registry, ids *Allocator, now func() time.Time) *Orders {
	return (&Orders{streams: streams{store, reg}, ids: ids, now: now}).WithAggregateCache(DefaultAggregateCache)
}

// WithAggregateCache bounds how many users, goods and orders stay loaded
// between commands (0 replays every stream from revision 0).
func (o *Orders) WithAggregateCache(n int) *Orders {
	o.users = newAggregateCache(func() *orderUser { return &orderUser{} }, n)
	o.goods = newAggregateCache(func() *goodsState { return &goodsState{} }, n)
	o.orders = newAggregateCache(func() *orderState { return &orderState{} }, n)
	return o
}

// goodsState is one goods code's aggregate.
type goodsState struct {
	id     int64
	name   string
	active bool
}

func (g *goodsState) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.GoodsCreated:
		g.id, g.name, g.active = p.GoodsID, p.GoodsName, true
	case *catalog.GoodsUpdated:
		g.name = p.GoodsName
	case *catalog.GoodsActivation:
		g.active = p.Active
	}
}

// createGoods is CreateGoods with the goods id allocated up front.
type createGoods struct {
	GoodsID    int64
	Code, Name string
}

// decideCreateGoods adds goods under a code no goods hold yet.
func decideCreateGoods(g *goodsState, c createGoods) ([]events.Payload, error) {
	if g.id != 0 {
		return nil, domain.ErrGoodsCodeTaken
	}
	return []events.Payload{catalog.GoodsCreated{GoodsID: c.GoodsID, GoodsCode: c.Code, GoodsName: c.Name}}, nil
}

// changeGoods renames goods (Name non-nil) and/or sets whether they can be ordered (Active non-nil).
type changeGoods struct {
	Code   string
	Name   *string
	Active *bool
}

// decideChangeGoods records only what differs; nothing different decides nothing.
func decideChangeGoods(g *goodsState, c changeGoods) ([]events.Payload, error) {
	if g.id == 0 {
		return nil, domain.ErrGoodsNotFound
	}
	var ps []events.Payload
	if c.Name != nil && *c.Name != g.name {
		ps = append(ps, catalog.GoodsUpdated{GoodsID: g.id, GoodsCode: c.Code, GoodsName: *c.Name})
	}
	if c.Active != nil && *c.Active != g.active {
		ps = append(ps, catalog.GoodsActivation{GoodsID: g.id, GoodsCode: c.Code, Active: *c.Active})
	}
	return ps, nil
}

// CreateGoods adds goods to the catalog.
func (o *Orders) CreateGoods(ctx context.Context, code, name string, meta Meta) (int64, events.Position, error) {
	v := &domain.ValidationError{}
	r := rules{v: v}
	if r.required("goods_code", code) {
		r.maxLen("goods_code", code, 50)
	}
	if r.required("goods_name", name) {
		r.maxLen("goods_name", name, 100)
	}
	if err := v.Err(); err != nil {
		return 0, events.Position{}, err
	}
	id, err := o.ids.Next(ctx, "goods")
	if err != nil {
		return 0, events.Position{}, err
	}
	c := createGoods{GoodsID: id, Code: code, Name: name}
	pos, err := o.goodsCommand(ctx, code, meta, func(g *goodsState) ([]events.Payload, error) { return decideCreateGoods(g, c) })
	if err != nil {
		return 0, events.Position{}, err
	}
	return id, pos, nil
}

// goodsCommand runs decide on one goods code's stream through the command
// shell; deciding nothing answers the stream's position.
func (o *Orders) goodsCommand(ctx context.Context, code string, meta Meta, decide func(*goodsState) ([]events.Payload, error)) (events.Position, error) {
	return execute(ctx, o.streams, readBack[*goodsState]{o.goods}, domain.GoodsStream(code), &meta, decide)
}

// ChangeGoods renames goods (name non-nil) and/or changes whether they can be ordered.
func (o *Orders) ChangeGoods(ctx context.Context, code string, name *string, active *bool, meta Meta) (events.Position, error) {
	if name != nil {
		v := &domain.ValidationError{}
		r := rules{v: v}
		if r.required("goods_name", *name) {
			r.maxLen("goods_name", *name, 100)
		}
		if err := v.Err(); err != nil {
			return events.Position{}, err
		}
	}
	c := changeGoods{Code: code, Name: name, Active: active}
	return o.goodsCommand(ctx, code, meta, func(g *goodsState) ([]events.Payload, error) { return decideChangeGoods(g, c) })
}

// OrderInput is a purchase order as the partner submits it.
type OrderInput struct {
	ThirdOrderID  string        `json:"third_order_id"`
	ContactPerson string        `json:"contact_person"`
	ContactPhone  string        `json:"contact_phone"`
	Address       string        `json:"address"`
	Items         []OrderItemIn `json:"items"`
	UserID        *int64        `json:"user_id"`
	AreaCode      *string       `json:"area_code"`
	AreaText      *string       `json:"area_text"`
	LogisticsType string        `json:"logistics_type"`
	PostagePolicy string        `json:"postage_policy"`
}

// OrderItemIn is one requested line.
type OrderItemIn struct {
	GoodsCode string `json:"goods_code"`
	Quantity  int64  `json:"quantity"`
	UnitPrice int64  `json:"unit_price"`
}

// MaxOrderItems bounds one order (the spec does not show a maximum).
const MaxOrderItems = 100

var (
	logisticsTypes  = set("EXPRESS_DELIVERY", "NO_LOGISTICS", "SELF_PICKUP")
	postagePolicies = set("FREE_SHIPPING", "PAID_SHIPPING", "NO_SHIPPING")
)

func (in *OrderInput) validate() error {
	v := &domain.ValidationError{}
	r := rules{v: v}
	if r.required("third_order_id", in.ThirdOrderID) {
		r.maxLen("third_order_id", in.ThirdOrderID, 100)
	}
	if r.required("contact_person", in.ContactPerson) {
		r.maxLen("contact_person", in.ContactPerson, 50)
	}
	if r.required("contact_phone", in.ContactPhone) {
		r.mobile("contact_phone", in.ContactPhone)
	}
	if r.required("address", in.Address) {
		r.maxLen("address", in.Address, 200)
	}
	if in.UserID != nil && *in.UserID < 1 {
		v.Add("user_id", "must be at least 1")
	}
	if in.AreaCode != nil {
		r.maxLen("area_code", *in.AreaCode, 20)
	}
	if in.AreaText != nil {
		r.maxLen("area_text", *in.AreaText, 100)
	}
	if in.LogisticsType == "" {
		in.LogisticsType = "EXPRESS_DELIVERY"
	}
	r.oneOf("logistics_type", in.LogisticsType, logisticsTypes, "EXPRESS_DELIVERY, NO_LOGISTICS, SELF_PICKUP")
	if in.PostagePolicy == "" {
		in.PostagePolicy = "FREE_SHIPPING"
	}
	r.oneOf("postage_policy", in.PostagePolicy, postagePolicies, "FREE_SHIPPING, PAID_SHIPPING, NO_SHIPPING")
	switch {
	case len(in.Items) == 0:
		v.Add("items", "must have at least 1 element")
	case len(in.Items) > MaxOrderItems:
		v.Add("items", "must have at most "+strconv.Itoa(MaxOrderItems)+" elements")
	}
	for i, it := range in.Items {
		p := fmt.Sprintf("items[%d].", i)
		if r.required(p+"goods_code", it.GoodsCode) {
			r.maxLen(p+"goods_code", it.GoodsCode, 50)
		}
		if it.Quantity < 1 || it.Quantity > 100000 {
			v.Add(p+"quantity", "must be between 1 and 100000")
		}
		if it.UnitPrice < 0 || it.UnitPrice > 1e12 {
			v.Add(p+"unit_price", "must be between 0 and 1000000000000 cents")
		}
	}
	return v.Err()
}

// hash identifies the request's content for the duplicate check.
func (in OrderInput) hash() string {
	b, _ := json.Marshal(in)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// OrderResult answers an order creation.
type OrderResult struct {
	OrderID   int64
	OrderCode string
	OrderTime time.Time
	Created   bool
	Position  events.Position
}

// orderState is an order as decisions see it. It holds none of the
// receiver's personal fields (catalog.PersonalFields of order.created): no
// decision reads them, so the orders' cache keeps nothing an erasure would
// have to reach, whichever node destroys the key and whenever this node
// learns of it.
type orderState struct {
	created *catalog.OrderCreated // personal fields blanked
	status  string
	shipped map[int64]bool
}

func (s *orderState) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.OrderCreated:
		created := *p
		created.ContactPerson, created.ContactPhone, created.Address, created.AreaText = "", "", "", nil
		s.created, s.status, s.shipped = &created, OrderPendingReview, map[int64]bool{}
	case *catalog.OrderReviewed:
		s.status = OrderRejected
		if p.Approved {
			s.status = OrderApproved
		}
	case *catalog.OrderShipped:
		for _, l := range p.Items {
			s.shipped[l.ItemID] = true
		}
		s.status = OrderPartiallyShipped
		if p.Complete {
			s.status = OrderShipped
		}
	}
}

// orderKeyState is one (app, third_order_id) claim.
type orderKeyState struct{ orderID int64 }

func (s *orderKeyState) apply(env events.Envelope) {
	if c, ok := env.Payload.(*catalog.OrderKeyClaimed); ok {
		s.orderID = c.OrderID
	}
}

// placeOrder is CreateOrder with everything its decisions need: the ids
// allocated up front, the time and the request's content hash.
type placeOrder struct {
	AppID   int64
	In      OrderInput
	Hash    string
	OrderID int64   // the order's id if its third_order_id is not claimed yet
	ItemIDs []int64 // one per line
	Now     time.Time
}

// checkOrderUser refuses an order for a user the app does not have.
func checkOrderUser(user *userState, appID int64) error {
	if !user.registered || user.appID != appID {
		return domain.ErrUserNotFound
	}
	return nil
}

// checkOrderGoods refuses an order naming goods (goods[i] for line i) that
// are missing or deactivated.
func checkOrderGoods(goods []goodsState, items []OrderItemIn) error {
	for i, it := range items {
		if g := goods[i]; g.id == 0 || !g.active {
			return fmt.Errorf("%w: %s", domain.ErrGoodsNotFound, it.GoodsCode)
		}
	}
	return nil
}

// replayOrder answers a third_order_id whose order exists: the same request
// gets that order, a different one domain.ErrDuplicateThirdOrder; nil while
// the order is not created yet.
func replayOrder(st *orderState, hash string) (created *catalog.OrderCreated, err error) {
	if st.created == nil {
		return nil, nil
	}
	if st.created.RequestHash != hash {
		return nil, domain.ErrDuplicateThirdOrder
	}
	return st.created, nil
}

// decideClaimOrderKey claims the third_order_id for the new order id; an
// already claimed key decides nothing (its order id is the key's).
func decideClaimOrderKey(key *orderKeyState, c placeOrder) []events.Payload {
	if key.orderID != 0 {
		return nil
	}
	return []events.Payload{catalog.OrderKeyClaimed{AppID: c.AppID, ThirdOrderID: c.In.ThirdOrderID, OrderID: c.OrderID}}
}

// decideCreateOrder creates the order the key claimed, pending review,
// its lines priced as requested and named as the goods (goods[i] for line i).
func decideCreateOrder(st *orderState, orderID int64, goods []goodsState, c placeOrder) ([]events.Payload, error) {
	if created, err := replayOrder(st, c.Hash); err != nil || created != nil {
		return nil, err
	}
	in := c.In
	if err := checkOrderGoods(goods, in.Items); err != nil {
		return nil, err
	}
	lines := make([]catalog.OrderLine, len(in.Items))
	for i, it := range in.Items {
		lines[i] = catalog.OrderLine{ItemID: c.ItemIDs[i], GoodsID: goods[i].id, GoodsCode: it.GoodsCode, GoodsName: goods[i].name, Quantity: it.Quantity, UnitPrice: it.UnitPrice, TotalPrice: it.UnitPrice * it.Quantity}
	}
	return []events.Payload{catalog.OrderCreated{
		OrderID: orderID, OrderCode: OrderCode(orderID, c.Now), AppID: c.AppID, ThirdOrderID: in.ThirdOrderID, UserID: in.UserID,
		ContactPerson: in.ContactPerson, ContactPhone: in.ContactPhone, Address: in.Address, AreaCode: in.AreaCode, AreaText: in.AreaText,
		LogisticsType: in.LogisticsType, PostagePolicy: in.PostagePolicy, OrderSource: "API_INTERFACE", CooperationType: "PURCHASE",
		OrderTime: c.Now, Items: lines, RequestHash: c.Hash,
	}}, nil
}

// CreateOrder records a purchase order in PENDING_REVIEW. A repeated
// third_order_id of the same app never creates a second order: the same
// request again answers with the existing order, a different one is refused.
func (o *Orders) CreateOrder(ctx context.Context, appID int64, in OrderInput, meta Meta) (OrderResult, error) {
	if err := in.validate(); err != nil {
		return OrderResult{}, err
	}
	c := placeOrder{AppID: appID, In: in, Hash: in.hash()}
	key := domain.OrderKeyStream(appID, in.ThirdOrderID)
	if res, found, err := o.existingOrder(ctx, key, c.Hash); found || err != nil {
		return res, err
	}
	if in.UserID != nil {
		u, _, _, err := o.users.load(ctx, o.streams, domain.UserStream(*in.UserID))
		if err != nil {
			return OrderResult{}, err
		}
		if err := checkOrderUser(&userState{registered: u.registered, appID: u.appID}, appID); err != nil {
			return OrderResult{}, err
		}
	}
	goods := make([]goodsState, len(in.Items))
	for i, it := range in.Items {
		g, _, _, err := o.goods.load(ctx, o.streams, domain.GoodsStream(it.GoodsCode))
		if err != nil {
			return OrderResult{}, err
		}
		goods[i] = *g
	}
	if err := checkOrderGoods(goods, in.Items); err != nil {
		return OrderResult{}, err // before ids are allocated
	}
	var err error
	if c.OrderID, err = o.ids.Next(ctx, "order"); err != nil {
		return OrderResult{}, err
	}
	c.ItemIDs = make([]int64, len(in.Items))
	for i := range c.ItemIDs {
		if c.ItemIDs[i], err = o.ids.Next(ctx, "order_item"); err != nil {
			return OrderResult{}, err
		}
	}
	meta.AppID = appID
	var out OrderResult
	res, appended, err := executeParts(ctx, o.streams, &meta, func() ([]decided, error) {
		var k orderKeyState
		if _, _, err := o.load(ctx, key, k.apply); err != nil {
			return nil, err
		}
		orderID := k.orderID
		if claim := decideClaimOrderKey(&k, c); claim != nil {
			// The key and the new order in one append: a loser of the race
			// for the key finds the winner's order created with its claim.
			c.Now = o.now().UTC().Truncate(time.Second)
			ps, err := decideCreateOrder(&orderState{}, c.OrderID, goods, c)
			if err != nil {
				return nil, err
			}
			ev := ps[0].(catalog.OrderCreated)
			out = OrderResult{OrderID: c.OrderID, OrderCode: ev.OrderCode, OrderTime: ev.OrderTime}
			return []decided{{stream: key, ps: claim}, {stream: domain.OrderStream(c.OrderID), ps: ps}}, nil
		}
		// Claimed with no order yet (a claim of a store without atomic
		// multi-stream appends, cut short by a crash): complete it.
		var st orderState
		version, pos, err := o.load(ctx, domain.OrderStream(orderID), st.apply)
		if err != nil {
			return nil, err
		}
		if created, err := replayOrder(&st, c.Hash); err != nil {
			return nil, err
		} else if created != nil {
			out = OrderResult{OrderID: orderID, OrderCode: created.OrderCode, OrderTime: created.OrderTime, Position: pos}
			return nil, nil
		}
		c.Now = o.now().UTC().Truncate(time.Second)
		ps, err := decideCreateOrder(&st, orderID, goods, c)
		if err != nil {
			return nil, err
		}
		ev := ps[0].(catalog.OrderCreated)
		out = OrderResult{OrderID: orderID, OrderCode: ev.OrderCode, OrderTime: ev.OrderTime}
		return []decided{{stream: domain.OrderStream(orderID), version: version, ps: ps}}, nil
	})
	if err != nil {
		return OrderResult{}, err
	}
	if appended {
		out.Created, out.Position = true, res.Position
	}
	return out, nil
}

// existingOrder answers a repeated third_order_id: the same request gets
// the existing order, a different one domain.ErrDuplicateThirdOrder.
func (o *Orders) existingOrder(ctx context.Context, key, hash string) (OrderResult, bool, error) {
	var k orderKeyState
	if _, _, err := o.load(ctx, key, k.apply); err != nil || k.orderID == 0 {
		return OrderResult{}, false, err
	}
	var st orderState
	_, pos, err := o.load(ctx, domain.OrderStream(k.orderID), st.apply)
	if err != nil {
		return OrderResult{}, false, err
	}
	created, err := replayOrder(&st, hash)
	if err != nil {
		return OrderResult{}, true, err
	}
	if created == nil {
		return OrderResult{}, false, nil
	}
	return OrderResult{OrderID: k.orderID, OrderCode: created.OrderCode, OrderTime: created.OrderTime, Position: pos}, true, nil
}

// visible refuses an order that does not exist under this code or, for an
// app (appID non-zero), is not the app's own.
func (s *orderState) visible(code string, appID int64) error {
	if s.created == nil || s.created.OrderCode != code || (appID != 0 && s.created.AppID != appID) {
		return domain.ErrOrderNotFound
	}
	return nil
}

// transition loads an order by code, lets decide produce events, and
// appends them; deciding nothing answers the stream's position.
func (o *Orders) transition(ctx context.Context, code string, meta Meta, decide func(*orderState) ([]events.Payload, error)) (events.Position, error) {
	id, ok := OrderIDFromCode(code)
	if !ok {
		return events.Position{}, domain.ErrOrderNotFound
	}
	return execute(ctx, o.streams, readBack[*orderState]{o.orders}, domain.OrderStream(id), &meta, func(st *orderState) ([]events.Payload, error) {
		ps, err := decide(st)
		if len(ps) > 0 {
			meta.AppID = st.created.AppID
		}
		return ps, err
	})
}

// reviewOrder is the operator's review of an order.
type reviewOrder struct {
	Code    string
	Approve bool
	Reason  *string
	By      string
}

// decideReviewOrder approves or rejects an order waiting for review.
func decideReviewOrder(st *orderState, c reviewOrder) ([]events.Payload, error) {
	if err := st.visible(c.Code, 0); err != nil {
		return nil, err
	}
	if st.status != OrderPendingReview {
		return nil, fmt.Errorf("%w: %s order cannot be reviewed", domain.ErrIllegalTransition, st.status)
	}
	return []events.Payload{catalog.OrderReviewed{OrderID: st.created.OrderID, AppID: st.created.AppID, Approved: c.Approve, Reason: c.Reason, By: c.By}}, nil
}

// Review approves or rejects an order waiting for review.
func (o *Orders) Review(ctx context.Context, code string, approve bool, reason *string, meta Meta) (events.Position, error) {
	if reason != nil && len([]rune(*reason)) > 200 {
		v := &domain.ValidationError{}
		v.Add("reason", "must be at most 200 characters")
		return events.Position{}, v
	}
	c := reviewOrder{Code: code, Approve: approve, Reason: reason, By: meta.Actor}
	return o.transition(ctx, code, meta, func(st *orderState) ([]events.Payload, error) { return decideReviewOrder(st, c) })
}

// Shipment is what a shipping confirmation reports.
type Shipment struct {
	LogisticsCompany string
	TrackingNumber   string
	Items            []ShipmentItem // empty: every item not yet shipped
}

// ShipmentItem names an order item and the device serial numbers shipped for it.
type ShipmentItem struct {
	ItemID    int64
	DeviceSNs []string
}

func (s Shipment) validate() error {
	v := &domain.ValidationError{}
	r := rules{v: v}
	if r.required("logistics_company", s.LogisticsCompany) {
		r.maxLen("logistics_company", s.LogisticsCompany, 50)
	}
	if r.required("tracking_number", s.TrackingNumber) {
		r.maxLen("tracking_number", s.TrackingNumber, 64)
	}
	for i, it := range s.Items {
		for j, sn := range it.DeviceSNs {
			r.maxLen(fmt.Sprintf("items[%d].device_sns[%d]", i, j), sn, 64)
		}
	}
	return v.Err()
}

// shipOrder is a shipment confirmation as decided: appID 0 is the operator
// or the internal callback, otherwise only the app's own order may ship.
type shipOrder struct {
	AppID    int64
	Code     string
	Shipment Shipment
	Source   string
	Now      time.Time
}

// decideShipOrder ships the named items (or every item not yet shipped) of
// an approved order; the order is SHIPPED when no item is left.
func decideShipOrder(st *orderState, c shipOrder) ([]events.Payload, error) {
	if err := st.visible(c.Code, c.AppID); err != nil {
		return nil, err
	}
	if st.status != OrderApproved && st.status != OrderPartiallyShipped {
		return nil, fmt.Errorf("%w: %s order cannot ship", domain.ErrIllegalTransition, st.status)
	}
	byID := map[int64]catalog.OrderLine{}
	for _, l := range st.created.Items {
		byID[l.ItemID] = l
	}
	items := c.Shipment.Items
	if len(items) == 0 {
		for _, l := range st.created.Items {
			if !st.shipped[l.ItemID] {
				items = append(items, ShipmentItem{ItemID: l.ItemID})
			}
		}
	}
	seen := map[int64]bool{}
	var lines []catalog.ShippedLine
	for _, it := range items {
		l, ok := byID[it.ItemID]
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: item %d is not in the order", domain.ErrShipmentDoesNotMatch, it.ItemID)
		case st.shipped[it.ItemID] || seen[it.ItemID]:
			return nil, fmt.Errorf("%w: item %d already shipped", domain.ErrIllegalTransition, it.ItemID)
		case int64(len(it.DeviceSNs)) > l.Quantity:
			return nil, fmt.Errorf("%w: item %d has %d serial numbers for quantity %d", domain.ErrShipmentDoesNotMatch, it.ItemID, len(it.DeviceSNs), l.Quantity)
		}
		seen[it.ItemID] = true
		sns := it.DeviceSNs
		if sns == nil {
			sns = []string{}
		}
		lines = append(lines, catalog.ShippedLine{ItemID: l.ItemID, GoodsCode: l.GoodsCode, Quantity: l.Quantity, DeviceSNs: sns})
	}
	complete := len(st.shipped)+len(lines) == len(st.created.Items)
	return []events.Payload{catalog.OrderShipped{
		OrderID: st.created.OrderID, OrderCode: st.created.OrderCode, AppID: st.created.AppID, ThirdOrderID: st.created.ThirdOrderID,
		LogisticsCompany: c.Shipment.LogisticsCompany, TrackingNumber: c.Shipment.TrackingNumber, Items: lines, ShippedAt: c.Now, Complete: complete, Source: c.Source,
	}}, nil
}

// Ship records a shipment of an approved order's items; when every item has
// shipped the order is SHIPPED, and the partner is notified by webhook.
// appID 0 is the operator or the internal callback; otherwise only the
// app's own order (the sandbox test route).
func (o *Orders) Ship(ctx context.Context, appID int64, code string, s Shipment, source string, meta Meta) (events.Position, error) {
	if err := s.validate(); err != nil {
		return events.Position{}, err
	}
	return o.transition(ctx, code, meta, func(st *orderState) ([]events.Payload, error) {
		return decideShipOrder(st, shipOrder{AppID: appID, Code: code, Shipment: s, Source: source, Now: o.now().UTC()})
	})
}

// decideSandboxApproval approves a sandbox app's own pending order; an
// order already reviewed decides nothing.
func decideSandboxApproval(st *orderState, appID int64, code string) ([]events.Payload, error) {
	if err := st.visible(code, appID); err != nil {
		return nil, err
	}
	if st.status != OrderPendingReview {
		return nil, nil
	}
	return []events.Payload{catalog.OrderReviewed{OrderID: st.created.OrderID, AppID: st.created.AppID, Approved: true, By: "sandbox_test"}}, nil
}

// ApproveForSandboxTest approves a sandbox app's own pending order so the
// shipment test route can run the real state machine end to end.
func (o *Orders) ApproveForSandboxTest(ctx context.Context, appID int64, code string, meta Meta) error {
	_, err := o.transition(ctx, code, meta, func(st *orderState) ([]events.Payload, error) { return decideSandboxApproval(st, appID, code) })
	return err
}
