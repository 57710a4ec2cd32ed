package queryapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/projections"
)

// commerceRoutes are the order, goods and benefit reads.
func (q *API) commerceRoutes() []httpapi.Route {
	return []httpapi.Route{
		{Method: "GET", Path: "/open/v1/order/detail", Handle: q.partner(projections.ReadModelOrders, q.orderDetail)},
		{Method: "GET", Path: "/admin/v1/goods", Handle: q.admin(q.goodsList)},
		{Method: "GET", Path: "/admin/v1/orders", Handle: q.admin(q.orders)},
		{Method: "GET", Path: "/admin/v1/orders/:orderCode", Handle: q.admin(q.adminOrder)},
		{Method: "GET", Path: "/admin/v1/service-providers", Handle: q.admin(q.providers)},
		{Method: "GET", Path: "/admin/v1/benefit-items", Handle: q.admin(q.benefitItems)},
		{Method: "GET", Path: "/admin/v1/benefit-cards/:cardNumber", Handle: q.admin(q.adminCard)},
		{Method: "GET", Path: "/open/v1/benefit-cards/detail", Handle: q.partner(projections.ReadModelBenefits, q.cardDetail)},
		{Method: "GET", Path: "/open/v1/benefit-cards/fulfillments", Handle: q.partner(projections.ReadModelBenefits, q.fulfillments)},
	}
}

func (q *API) dt(t time.Time) string { return t.In(q.Location).Format(DateTime) }

func (q *API) orderView(o projections.Order) map[string]any {
	items := make([]map[string]any, 0, len(o.Items))
	for _, it := range o.Items {
		sns := it.DeviceSNs
		if sns == nil {
			sns = []string{}
		}
		items = append(items, map[string]any{
			"id": it.ItemID, "goods_id": it.GoodsID, "goods_code": it.GoodsCode, "goods_name": it.GoodsName, "quantity": it.Quantity,
			"unit_price": it.UnitPrice, "total_price": it.TotalPrice, "shipping_status": it.ShippingStatus, "device_sns": sns,
		})
	}
	var shippedAt *string
	if o.ShippedAt != nil {
		s := q.dt(*o.ShippedAt)
		shippedAt = &s
	}
	return map[string]any{
		"order_code": o.OrderCode, "order_time": q.dt(o.OrderTime), "order_status": o.Status, "order_source": o.OrderSource,
		"cooperation_type": o.CooperationType, "user_id": o.UserID, "third_order_id": o.ThirdOrderID, "contact_person": o.ContactPerson,
		"contact_phone": o.ContactPhone, "address": o.Address, "logistics_type": o.LogisticsType, "postage_policy": o.PostagePolicy,
		"area_code": o.AreaCode, "area_text": o.AreaText, "postage_amount": o.PostageAmount, "items": items,
		"created_at": q.dt(o.CreatedAt), "updated_at": q.dt(o.UpdatedAt),
		"logistics_company": o.LogisticsCompany, "tracking_number": o.TrackingNumber, "shipped_at": shippedAt, "reject_reason": o.RejectReason,
	}
}

func (q *API) orderByCode(w http.ResponseWriter, r *http.Request, appID int64, code string) error {
	o, err := q.Orders.OrderByCode(r.Context(), appID, code)
	if errors.Is(err, projections.ErrNotFound) {
		return domain.ErrOrderNotFound
	}
	if err != nil {
		return err
	}
	httpapi.OK(w, http.StatusOK, q.orderView(o))
	return nil
}

func (q *API) orderDetail(w http.ResponseWriter, r *http.Request, _ httprouter.Params, appID int64) error {
	code := r.URL.Query().Get("order_code")
	if code == "" || len(code) > 100 {
		v := &domain.ValidationError{}
		v.Add("order_code", "is required, at most 100 characters")
		return v
	}
	return q.orderByCode(w, r, appID, code)
}

// adminRead waits for the operator's own last writes, then serves.
func (q *API) adminRead(f projections.ReadModel, h func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		err := q.await(r.Context(), 0, f)
		if err == nil {
			err = h(w, r, ps)
		}
		if err != nil {
			httpapi.Error(w, r, err)
		}
	}
}

// adminOrder shows any app's order to an operator, its receiver fields
// redacted unless an auditor reveals them with a reason (an audit fact).
func (q *API) adminOrder(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	q.adminRead(projections.ReadModelOrders, func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
		reveal, reason, err := revealRequest(r)
		if err != nil {
			return err
		}
		o, err := q.Orders.OrderByCode(r.Context(), 0, ps.ByName("orderCode"))
		if errors.Is(err, projections.ErrNotFound) {
			return domain.ErrOrderNotFound
		}
		if err != nil {
			return err
		}
		v := q.orderView(o)
		if err := q.revealOrRedact(w, r, reveal, reason, catalog.AuditRevealOrders, orderSubjects(o), orderCreated, v); err != nil {
			return err
		}
		httpapi.OK(w, http.StatusOK, v)
		return nil
	})(w, r, ps)
}

// The events whose personal paths name the personal fields of the admin
// order and card views (the view's keys are the events' field names).
const (
	orderCreated       = "order.created"
	cardIssued         = "benefit_card.issued"
	providerRegistered = "provider.registered"
)

// orderSubjects names whose data an order's receiver fields are: the order
// stream and, for an order of a channel user, the user.
func orderSubjects(o projections.Order) []string {
	subjects := []string{domain.OrderStream(o.OrderID)}
	if o.UserID != nil && *o.UserID > 0 {
		subjects = append(subjects, domain.UserStream(*o.UserID))
	}
	return subjects
}

// revealOrRedact applies an admin read's reveal to views built from the
// read models: without reveal every personal field of eventType's catalog
// list (catalog.PersonalFields, the one list of what is personal) that has
// a value reads as catalog.Redacted; with it, the reveal is first recorded
// as an audit fact naming subjects, so nothing is shown without its fact.
func (q *API) revealOrRedact(w http.ResponseWriter, r *http.Request, reveal bool, reason, action string, subjects []string, eventType string, views ...map[string]any) error {
	if reveal {
		pos, err := q.Auditor.RecordAccess(r.Context(), catalog.AccessAudited{
			Actor: operatorOf(r.Context()).Actor(), Action: action, Subjects: subjects, Reason: reason,
		}, w.Header().Get(httpapi.RequestIDHeader))
		if err != nil {
			return err
		}
		q.Watermarks.Wrote(0, pos)
		return nil
	}
	fields, _ := catalog.PersonalFields(eventType)
	for _, v := range views {
		for _, f := range fields {
			if val, ok := v[f]; ok && !isEmpty(val) {
				v[f] = catalog.Redacted
			}
		}
	}
	return nil
}

// isEmpty is a view value that shows nothing: null or "".
func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case *string:
		return x == nil || *x == ""
	}
	return false
}

// orderStatuses are the states an order can be in (the document's
// OrderStatus); a status filter naming another is a mistake, refused as
// every enumerated query parameter is.
var orderStatuses = []string{"PENDING_REVIEW", "APPROVED", "REJECTED", "PARTIALLY_SHIPPED", "SHIPPED"}

func (q *API) orders(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	q.adminRead(projections.ReadModelOrders, func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
		var f projections.OrderFilter
		var err error
		if f.Status, err = statusParam(r, orderStatuses); err != nil {
			return err
		}
		if f.AppID, err = httpapi.IntParam(r, "app_id", 0, 0); err != nil {
			return err
		}
		if f.After, err = httpapi.IntParam(r, "after", 0, 0); err != nil {
			return err
		}
		limit, err := httpapi.Limit(r, 100, 1000)
		if err != nil {
			return err
		}
		f.Limit = int(limit)
		reveal, reason, err := revealRequest(r)
		if err != nil {
			return err
		}
		list, err := q.Orders.Orders(r.Context(), f)
		if err != nil {
			return err
		}
		out := make([]map[string]any, 0, len(list))
		subjects := []string{}
		for _, o := range list {
			v := q.orderView(o)
			v["id"], v["app_id"] = o.OrderID, o.AppID
			out = append(out, v)
			subjects = append(subjects, orderSubjects(o)...)
		}
		if err := q.revealOrRedact(w, r, reveal, reason, catalog.AuditRevealOrders, subjects, orderCreated, out...); err != nil {
			return err
		}
		httpapi.OK(w, http.StatusOK, map[string]any{"orders": out})
		return nil
	})(w, r, ps)
}

func (q *API) goodsList(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	q.adminRead(projections.ReadModelOrders, func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
		list, err := q.Orders.GoodsList(r.Context())
		if err != nil {
			return err
		}
		out := make([]map[string]any, 0, len(list))
		for _, g := range list {
			out = append(out, map[string]any{"goods_id": g.GoodsID, "goods_code": g.GoodsCode, "goods_name": g.GoodsName, "active": g.Active, "updated_at": g.UpdatedAt.Format(time.RFC3339)})
		}
		httpapi.OK(w, http.StatusOK, map[string]any{"goods": out})
		return nil
	})(w, r, ps)
}

func (q *API) providers(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	q.adminRead(projections.ReadModelBenefits, func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
		appID, err := httpapi.IntParam(r, "app_id", 0, 0)
		if err != nil {
			return err
		}
		reveal, reason, err := revealRequest(r)
		if err != nil {
			return err
		}
		list, err := q.Benefits.Providers(r.Context(), appID)
		if err != nil {
			return err
		}
		out := make([]map[string]any, 0, len(list))
		subjects := []string{}
		for _, p := range list {
			items := p.AllowedItemIDs
			if items == nil {
				items = []int64{}
			}
			out = append(out, map[string]any{"provider_id": p.ProviderID, "app_id": p.AppID, "name": p.Name, "type": p.Type, "contact": p.Contact,
				"points_code": p.PointsCode, "status": p.Status, "allowed_benefit_item_ids": items})
			subjects = append(subjects, domain.ProviderStream(p.ProviderID))
		}
		// The contact is a person's name or phone: redacted unless an
		// auditor reveals it with a reason (an audit fact).
		if err := q.revealOrRedact(w, r, reveal, reason, catalog.AuditRevealProviders, subjects, providerRegistered, out...); err != nil {
			return err
		}
		httpapi.OK(w, http.StatusOK, map[string]any{"service_providers": out})
		return nil
	})(w, r, ps)
}

func (q *API) benefitItems(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	q.adminRead(projections.ReadModelBenefits, func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
		list, err := q.Benefits.BenefitItems(r.Context())
		if err != nil {
			return err
		}
		out := make([]map[string]any, 0, len(list))
		for _, b := range list {
			out = append(out, map[string]any{"benefit_item_id": b.BenefitItemID, "name": b.Name, "status": b.Status})
		}
		httpapi.OK(w, http.StatusOK, map[string]any{"benefit_items": out})
		return nil
	})(w, r, ps)
}

func (q *API) cardView(c projections.Card) map[string]any {
	items := make([]map[string]any, 0, len(c.Items))
	for _, it := range c.Items {
		items = append(items, map[string]any{"user_benefit_item_id": it.UserBenefitItemID, "benefit_item_id": it.BenefitItemID, "total_quantity": it.Total, "remaining_quantity": it.Remaining})
	}
	return map[string]any{"card_number": c.CardNumber, "issuer_app_id": c.IssuerAppID, "holder_name": c.HolderName, "holder_phone": c.HolderPhone,
		"expires_at": q.dt(c.ExpiresAt), "items": items}
}

func (q *API) card(w http.ResponseWriter, r *http.Request, issuer int64, number string) error {
	c, err := q.Benefits.CardByNumber(r.Context(), issuer, number)
	if errors.Is(err, projections.ErrNotFound) {
		return domain.ErrCardNotFound
	}
	if err != nil {
		return err
	}
	httpapi.OK(w, http.StatusOK, q.cardView(c))
	return nil
}

// adminCard shows any card to an operator, its holder fields redacted
// unless an auditor reveals them with a reason (an audit fact).
func (q *API) adminCard(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	q.adminRead(projections.ReadModelBenefits, func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
		reveal, reason, err := revealRequest(r)
		if err != nil {
			return err
		}
		c, err := q.Benefits.CardByNumber(r.Context(), 0, ps.ByName("cardNumber"))
		if errors.Is(err, projections.ErrNotFound) {
			return domain.ErrCardNotFound
		}
		if err != nil {
			return err
		}
		v := q.cardView(c)
		if err := q.revealOrRedact(w, r, reveal, reason, catalog.AuditRevealCard, []string{domain.CardStream(c.CardNumber)}, cardIssued, v); err != nil {
			return err
		}
		httpapi.OK(w, http.StatusOK, v)
		return nil
	})(w, r, ps)
}

// cardDetail shows an issuer its own card (other apps' cards are CARD_NOT_FOUND).
func (q *API) cardDetail(w http.ResponseWriter, r *http.Request, _ httprouter.Params, appID int64) error {
	return q.card(w, r, appID, r.URL.Query().Get("card_number"))
}

// fulfillments lists the caller's records: as provider (default) or as card issuer (role=issuer).
func (q *API) fulfillments(w http.ResponseWriter, r *http.Request, _ httprouter.Params, appID int64) error {
	f := projections.FulfillmentFilter{}
	var err error
	if f.After, err = httpapi.IntParam(r, "after", 0, 0); err != nil {
		return err
	}
	limit, err := httpapi.Limit(r, 100, 1000)
	if err != nil {
		return err
	}
	f.Limit = int(limit)
	var list []projections.Fulfillment
	switch r.URL.Query().Get("role") {
	case "issuer":
		f.IssuerAppID = appID
		list, err = q.Benefits.Fulfillments(r.Context(), f)
	case "", "provider":
		// One page over all the app's providers, in record order, so paging
		// by the last fulfillment_record_id sees every record once.
		f.ProviderAppID = appID
		list, err = q.Benefits.Fulfillments(r.Context(), f)
	default:
		v := &domain.ValidationError{}
		v.Add("role", "must be provider or issuer")
		return v
	}
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(list))
	for _, x := range list {
		out = append(out, map[string]any{
			"fulfillment_record_id": x.RecordID, "card_number": httpapi.MaskCard(x.CardNumber), "benefit_item_name": x.BenefitItemName,
			"current_usage_quantity": x.Quantity, "status": x.Status, "points_code": x.PointsCode, "initiated_at": q.dt(x.InitiatedAt),
			"rating": x.Rating, "service_provider_id": x.ProviderID, "remark": x.Remark,
		})
	}
	httpapi.OK(w, http.StatusOK, map[string]any{"fulfillments": out})
	return nil
}
