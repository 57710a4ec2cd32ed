package commands

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
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
}

// NewOrders builds the handler.
func NewOrders(store events.Store, reg *events.Registry, ids *Allocator, now func() time.Time) *Orders {
	return &Orders{streams: streams{store, reg}, ids: ids, now: now}
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
	res, err := o.append(ctx, domain.GoodsStream(code), 0, meta, catalog.GoodsCreated{GoodsID: id, GoodsCode: code, GoodsName: name})
	if events.IsConflict(err) {
		return 0, events.Position{}, domain.ErrGoodsCodeTaken
	}
	return id, res.Position, err
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
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var g goodsState
		version, pos, err := o.load(ctx, domain.GoodsStream(code), g.apply)
		if err != nil {
			return events.Position{}, err
		}
		if g.id == 0 {
			return events.Position{}, domain.ErrGoodsNotFound
		}
		var ps []events.Payload
		if name != nil && *name != g.name {
			ps = append(ps, catalog.GoodsUpdated{GoodsID: g.id, GoodsCode: code, GoodsName: *name})
		}
		if active != nil && *active != g.active {
			ps = append(ps, catalog.GoodsActivation{GoodsID: g.id, GoodsCode: code, Active: *active})
		}
		if len(ps) == 0 {
			return pos, nil
		}
		res, err := o.append(ctx, domain.GoodsStream(code), version, meta, ps...)
		if events.IsConflict(err) {
			continue
		}
		return res.Position, err
	}
	return events.Position{}, domain.ErrContention
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

// orderState is an order as decisions see it.
type orderState struct {
	created *catalog.OrderCreated
	status  string
	shipped map[int64]bool
}

func (s *orderState) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.OrderCreated:
		s.created, s.status, s.shipped = p, OrderPendingReview, map[int64]bool{}
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

// CreateOrder records a purchase order in PENDING_REVIEW. A repeated
// third_order_id of the same app never creates a second order: the same
// request again answers with the existing order, a different one is refused.
func (o *Orders) CreateOrder(ctx context.Context, appID int64, in OrderInput, meta Meta) (OrderResult, error) {
	if err := in.validate(); err != nil {
		return OrderResult{}, err
	}
	hash := in.hash()
	key := domain.OrderKeyStream(appID, in.ThirdOrderID)
	if res, found, err := o.existingOrder(ctx, key, hash); found || err != nil {
		return res, err
	}
	if in.UserID != nil {
		user := newUserState()
		if _, _, err := o.load(ctx, domain.UserStream(*in.UserID), user.apply); err != nil {
			return OrderResult{}, err
		}
		if !user.registered || user.appID != appID {
			return OrderResult{}, domain.ErrUserNotFound
		}
	}
	lines := make([]catalog.OrderLine, len(in.Items))
	for i, it := range in.Items {
		var g goodsState
		if _, _, err := o.load(ctx, domain.GoodsStream(it.GoodsCode), g.apply); err != nil {
			return OrderResult{}, err
		}
		if g.id == 0 || !g.active {
			return OrderResult{}, fmt.Errorf("%w: %s", domain.ErrGoodsNotFound, it.GoodsCode)
		}
		lines[i] = catalog.OrderLine{GoodsID: g.id, GoodsCode: it.GoodsCode, GoodsName: g.name, Quantity: it.Quantity, UnitPrice: it.UnitPrice, TotalPrice: it.UnitPrice * it.Quantity}
	}
	meta.AppID = appID
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var orderID int64
		if _, _, err := o.load(ctx, key, func(env events.Envelope) {
			if c, ok := env.Payload.(*catalog.OrderKeyClaimed); ok {
				orderID = c.OrderID
			}
		}); err != nil {
			return OrderResult{}, err
		}
		if orderID != 0 {
			var st orderState
			_, pos, err := o.load(ctx, domain.OrderStream(orderID), st.apply)
			if err != nil {
				return OrderResult{}, err
			}
			if st.created != nil {
				if st.created.RequestHash != hash {
					return OrderResult{}, domain.ErrDuplicateThirdOrder
				}
				return OrderResult{OrderID: orderID, OrderCode: st.created.OrderCode, OrderTime: st.created.OrderTime, Position: pos}, nil
			}
		} else {
			id, err := o.ids.Next(ctx, "order")
			if err != nil {
				return OrderResult{}, err
			}
			if _, err := o.append(ctx, key, 0, meta, catalog.OrderKeyClaimed{AppID: appID, ThirdOrderID: in.ThirdOrderID, OrderID: id}); events.IsConflict(err) {
				continue
			} else if err != nil {
				return OrderResult{}, err
			}
			orderID = id
		}
		now := o.now().UTC().Truncate(time.Second)
		for i := range lines {
			id, err := o.ids.Next(ctx, "order_item")
			if err != nil {
				return OrderResult{}, err
			}
			lines[i].ItemID = id
		}
		ev := catalog.OrderCreated{
			OrderID: orderID, OrderCode: OrderCode(orderID, now), AppID: appID, ThirdOrderID: in.ThirdOrderID, UserID: in.UserID,
			ContactPerson: in.ContactPerson, ContactPhone: in.ContactPhone, Address: in.Address, AreaCode: in.AreaCode, AreaText: in.AreaText,
			LogisticsType: in.LogisticsType, PostagePolicy: in.PostagePolicy, OrderSource: "API_INTERFACE", CooperationType: "PURCHASE",
			OrderTime: now, Items: lines, RequestHash: hash,
		}
		res, err := o.append(ctx, domain.OrderStream(orderID), 0, meta, ev)
		if events.IsConflict(err) {
			continue
		}
		if err != nil {
			return OrderResult{}, err
		}
		return OrderResult{OrderID: orderID, OrderCode: ev.OrderCode, OrderTime: now, Created: true, Position: res.Position}, nil
	}
	return OrderResult{}, domain.ErrContention
}

// existingOrder answers a repeated third_order_id: the same request gets
// the existing order, a different one domain.ErrDuplicateThirdOrder.
func (o *Orders) existingOrder(ctx context.Context, key, hash string) (OrderResult, bool, error) {
	var orderID int64
	if _, _, err := o.load(ctx, key, func(env events.Envelope) {
		if c, ok := env.Payload.(*catalog.OrderKeyClaimed); ok {
			orderID = c.OrderID
		}
	}); err != nil || orderID == 0 {
		return OrderResult{}, false, err
	}
	var st orderState
	_, pos, err := o.load(ctx, domain.OrderStream(orderID), st.apply)
	if err != nil || st.created == nil {
		return OrderResult{}, false, err
	}
	if st.created.RequestHash != hash {
		return OrderResult{}, true, domain.ErrDuplicateThirdOrder
	}
	return OrderResult{OrderID: orderID, OrderCode: st.created.OrderCode, OrderTime: st.created.OrderTime, Position: pos}, true, nil
}

// transition loads an order by code, lets decide produce events, and appends them.
func (o *Orders) transition(ctx context.Context, appID int64, code string, meta Meta, decide func(*orderState) ([]events.Payload, error)) (events.Position, error) {
	id, ok := OrderIDFromCode(code)
	if !ok {
		return events.Position{}, domain.ErrOrderNotFound
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var st orderState
		version, _, err := o.load(ctx, domain.OrderStream(id), st.apply)
		if err != nil {
			return events.Position{}, err
		}
		if st.created == nil || st.created.OrderCode != code || (appID != 0 && st.created.AppID != appID) {
			return events.Position{}, domain.ErrOrderNotFound
		}
		ps, err := decide(&st)
		if err != nil {
			return events.Position{}, err
		}
		meta.AppID = st.created.AppID
		res, err := o.append(ctx, domain.OrderStream(id), version, meta, ps...)
		if events.IsConflict(err) {
			continue
		}
		return res.Position, err
	}
	return events.Position{}, domain.ErrContention
}

// Review approves or rejects an order waiting for review.
func (o *Orders) Review(ctx context.Context, code string, approve bool, reason *string, meta Meta) (events.Position, error) {
	if reason != nil && len([]rune(*reason)) > 200 {
		v := &domain.ValidationError{}
		v.Add("reason", "must be at most 200 characters")
		return events.Position{}, v
	}
	return o.transition(ctx, 0, code, meta, func(st *orderState) ([]events.Payload, error) {
		if st.status != OrderPendingReview {
			return nil, fmt.Errorf("%w: %s order cannot be reviewed", domain.ErrIllegalTransition, st.status)
		}
		return []events.Payload{catalog.OrderReviewed{OrderID: st.created.OrderID, AppID: st.created.AppID, Approved: approve, Reason: reason, By: meta.Actor}}, nil
	})
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

// Ship records a shipment of an approved order's items; when every item has
// shipped the order is SHIPPED, and the partner is notified by webhook.
// appID 0 is the operator or the internal callback; otherwise only the
// app's own order (the sandbox test route).
func (o *Orders) Ship(ctx context.Context, appID int64, code string, s Shipment, source string, meta Meta) (events.Position, error) {
	if err := s.validate(); err != nil {
		return events.Position{}, err
	}
	return o.transition(ctx, appID, code, meta, func(st *orderState) ([]events.Payload, error) {
		if st.status != OrderApproved && st.status != OrderPartiallyShipped {
			return nil, fmt.Errorf("%w: %s order cannot ship", domain.ErrIllegalTransition, st.status)
		}
		byID := map[int64]catalog.OrderLine{}
		for _, l := range st.created.Items {
			byID[l.ItemID] = l
		}
		items := s.Items
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
			LogisticsCompany: s.LogisticsCompany, TrackingNumber: s.TrackingNumber, Items: lines, ShippedAt: o.now().UTC(), Complete: complete, Source: source,
		}}, nil
	})
}

// ApproveForSandboxTest approves a sandbox app's own pending order so the
// shipment test route can run the real state machine end to end.
func (o *Orders) ApproveForSandboxTest(ctx context.Context, appID int64, code string, meta Meta) error {
	_, err := o.transition(ctx, appID, code, meta, func(st *orderState) ([]events.Payload, error) {
		if st.status != OrderPendingReview {
			return nil, errAlreadyReviewed
		}
		return []events.Payload{catalog.OrderReviewed{OrderID: st.created.OrderID, AppID: st.created.AppID, Approved: true, By: "sandbox_test"}}, nil
	})
	if errors.Is(err, errAlreadyReviewed) {
		return nil
	}
	return err
}

var errAlreadyReviewed = errors.New("already reviewed")
