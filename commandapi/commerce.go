package commandapi

import (
	"bytes"
	"net/http"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// DateTime is the spec's Y-m-d H:i:s layout of order and verify-use times.
const DateTime = "2006-01-02 15:04:05"

func (a *API) commerceRoutes() []Route {
	return []Route{
		{Method: "POST", Path: "/admin/v1/goods", Handle: a.admin(a.createGoods)},
		{Method: "PATCH", Path: "/admin/v1/goods/:goodsCode", Handle: a.admin(a.changeGoods)},
		{Method: "POST", Path: "/admin/v1/goods/:goodsCode/deactivate", Handle: a.admin(a.goodsActivation(false))},
		{Method: "POST", Path: "/admin/v1/goods/:goodsCode/activate", Handle: a.admin(a.goodsActivation(true))},
		{Method: "POST", Path: "/open/v1/order/create", Handle: a.partner(a.createOrder)},
		{Method: "POST", Path: "/admin/v1/orders/:orderCode/approve", Handle: a.admin(a.reviewOrder(true))},
		{Method: "POST", Path: "/admin/v1/orders/:orderCode/reject", Handle: a.admin(a.reviewOrder(false))},
		{Method: "POST", Path: "/admin/v1/orders/:orderCode/ship", Handle: a.admin(a.shipOrder)},
		{Method: "POST", Path: "/open/internal/order/shipped-callback", Handle: a.internal(a.shippedCallback)},
		{Method: "POST", Path: "/open/v1/order/shipped-callback-test", Handle: a.partner(a.shippedCallbackTest)},
		{Method: "POST", Path: "/admin/v1/apps/:appId/review", Handle: a.admin(a.reviewApp)},
		{Method: "PUT", Path: "/admin/v1/apps/:appId/scopes", Handle: a.admin(a.declareScopes)},
		{Method: "POST", Path: "/admin/v1/service-providers", Handle: a.admin(a.registerProvider)},
		{Method: "POST", Path: "/open/v1/service-providers", Handle: a.partner(a.registerOwnProvider)},
		{Method: "POST", Path: "/admin/v1/service-providers/:providerId/review", Handle: a.admin(a.reviewProvider)},
		{Method: "PUT", Path: "/admin/v1/service-providers/:providerId/benefit-items", Handle: a.admin(a.configureProviderItems)},
		{Method: "POST", Path: "/admin/v1/benefit-items", Handle: a.admin(a.createBenefitItem)},
		{Method: "POST", Path: "/admin/v1/benefit-items/:itemId/suspend", Handle: a.admin(a.benefitItemStatus(commands.ItemSuspended))},
		{Method: "POST", Path: "/admin/v1/benefit-items/:itemId/activate", Handle: a.admin(a.benefitItemStatus(commands.ItemActive))},
		{Method: "POST", Path: "/admin/v1/benefit-cards", Handle: a.admin(a.issueCardsAsOperator)},
		{Method: "POST", Path: "/open/v1/benefit-cards/batch-issue", Handle: a.partner(a.batchIssue)},
		{Method: "POST", Path: "/open/v1/benefit-cards/verify-use", Handle: a.partner(a.verifyUse)},
		{Method: "POST", Path: "/open/v1/benefit-cards/fulfillments/:recordId/rating", Handle: a.partner(a.rateFulfillment)},
	}
}

// internal authenticates the platform's own services (the shipping system).
func (a *API) internal(h func(*call) error) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !auth.SameSecret(a.InternalToken, strings.TrimSpace(tok)) {
			httpapi.Error(w, r, &httpapi.Problem{Status: http.StatusUnauthorized, Code: "HTTP_401", Message: "internal token missing or wrong"})
			return
		}
		a.run(w, r, ps, h, commands.Meta{Actor: "internal"})
	}
}

func (a *API) createGoods(c *call) error {
	var code, name string
	if err := c.decode(func(o *httpapi.Object) { code, name = o.RequiredString("goods_code"), o.RequiredString("goods_name") }); err != nil {
		return err
	}
	id, pos, err := a.Orders.CreateGoods(c.r.Context(), code, name, c.meta)
	if err != nil {
		return err
	}
	a.Watermarks.Wrote(0, pos)
	httpapi.OK(c.w, http.StatusCreated, map[string]any{"goods_id": id, "goods_code": code, "goods_name": name})
	return nil
}

func (a *API) changeGoods(c *call) error {
	var name *string
	var active *bool
	if err := c.decode(func(o *httpapi.Object) { name, active = o.String("goods_name").Ptr(), o.Bool("active").Ptr() }); err != nil {
		return err
	}
	pos, err := a.Orders.ChangeGoods(c.r.Context(), c.ps.ByName("goodsCode"), name, active, c.meta)
	if err != nil {
		return err
	}
	a.Watermarks.Wrote(0, pos)
	httpapi.OK(c.w, http.StatusOK, nil)
	return nil
}

func (a *API) goodsActivation(active bool) func(*call) error {
	return func(c *call) error {
		pos, err := a.Orders.ChangeGoods(c.r.Context(), c.ps.ByName("goodsCode"), nil, &active, c.meta)
		if err != nil {
			return err
		}
		a.Watermarks.Wrote(0, pos)
		httpapi.OK(c.w, http.StatusOK, map[string]any{"goods_code": c.ps.ByName("goodsCode"), "active": active})
		return nil
	}
}

func (a *API) createOrder(c *call) error {
	var in commands.OrderInput
	if err := c.decode(func(o *httpapi.Object) {
		in = commands.OrderInput{
			ThirdOrderID: o.RequiredString("third_order_id"), ContactPerson: o.RequiredString("contact_person"),
			ContactPhone: o.RequiredString("contact_phone"), Address: o.RequiredString("address"),
			UserID: o.Int("user_id").Ptr(), AreaCode: o.String("area_code").Ptr(), AreaText: o.String("area_text").Ptr(),
			LogisticsType: o.String("logistics_type").Value, PostagePolicy: o.String("postage_policy").Value,
		}
		if !o.Has("items") {
			o.RequiredString("items")
		}
		for _, it := range o.Array("items", 100) {
			in.Items = append(in.Items, commands.OrderItemIn{GoodsCode: it.RequiredString("goods_code"), Quantity: it.RequiredInt("quantity"), UnitPrice: it.RequiredInt("unit_price")})
		}
	}); err != nil {
		return err
	}
	res, err := a.Orders.CreateOrder(c.r.Context(), c.app.AppID, in, c.meta)
	if err != nil {
		return err
	}
	c.answer(res.Position, res.Created, map[string]any{
		"id": res.OrderID, "order_code": res.OrderCode, "order_time": res.OrderTime.In(a.Location).Format(DateTime), "created": res.Created,
	})
	return nil
}

func (a *API) reviewOrder(approve bool) func(*call) error {
	return func(c *call) error {
		var reason *string
		if len(bytes.TrimSpace(c.body)) > 0 { // the body is optional, as suspend's
			if err := c.decode(func(o *httpapi.Object) { reason = o.String("reason").Ptr() }); err != nil {
				return err
			}
		}
		pos, err := a.Orders.Review(c.r.Context(), c.ps.ByName("orderCode"), approve, reason, c.meta)
		if err != nil {
			return err
		}
		a.Watermarks.Wrote(0, pos)
		status := commands.OrderRejected
		if approve {
			status = commands.OrderApproved
		}
		httpapi.OK(c.w, http.StatusOK, map[string]any{"order_code": c.ps.ByName("orderCode"), "order_status": status})
		return nil
	}
}

func shipment(o *httpapi.Object) commands.Shipment {
	s := commands.Shipment{LogisticsCompany: o.RequiredString("logistics_company"), TrackingNumber: o.RequiredString("tracking_number")}
	for _, it := range o.Array("items", 100) {
		s.Items = append(s.Items, commands.ShipmentItem{ItemID: it.RequiredInt("item_id"), DeviceSNs: it.Strings("device_sns")})
	}
	return s
}

func (a *API) ship(c *call, appID int64, code string, s commands.Shipment, source string) error {
	pos, err := a.Orders.Ship(c.r.Context(), appID, code, s, source, c.meta)
	if err != nil {
		return err
	}
	a.Watermarks.Wrote(appID, pos)
	httpapi.OK(c.w, http.StatusOK, map[string]any{"order_code": code, "shipped": true})
	return nil
}

func (a *API) shipOrder(c *call) error {
	var s commands.Shipment
	if err := c.decode(func(o *httpapi.Object) { s = shipment(o) }); err != nil {
		return err
	}
	return a.ship(c, 0, c.ps.ByName("orderCode"), s, "operator")
}

// shippedCallback is the shipping system's confirmation (internal credential).
func (a *API) shippedCallback(c *call) error {
	var code string
	var s commands.Shipment
	if err := c.decode(func(o *httpapi.Object) { code, s = o.RequiredString("order_code"), shipment(o) }); err != nil {
		return err
	}
	return a.ship(c, 0, code, s, "internal")
}

// shippedCallbackTest lets a sandbox partner see the shipment webhook of its
// own order: it approves the order if still pending and ships every item.
func (a *API) shippedCallbackTest(c *call) error {
	if c.app.Environment != commands.EnvSandbox {
		return domain.ErrSandboxOnly
	}
	var code string
	if err := c.decode(func(o *httpapi.Object) { code = o.RequiredString("order_code") }); err != nil {
		return err
	}
	if err := a.Orders.ApproveForSandboxTest(c.r.Context(), c.app.AppID, code, c.meta); err != nil {
		return err
	}
	s := commands.Shipment{LogisticsCompany: "SANDBOX-EXPRESS", TrackingNumber: "SBX" + time.Now().Format("20060102150405")}
	return a.ship(c, c.app.AppID, code, s, "sandbox_test")
}

func (a *API) reviewApp(c *call) error {
	ids, err := c.ids("appId")
	if err != nil {
		return err
	}
	approve, notes, err := c.review()
	if err != nil {
		return err
	}
	decision := map[bool]string{true: "approve", false: "reject"}[approve]
	creds, err := a.Apps.Review(c.r.Context(), ids[0], approve, notes, c.meta)
	if err != nil {
		return err
	}
	if err := a.waitApps(c.r.Context(), creds.Position); err != nil {
		return err
	}
	out := map[string]any{"app_id": ids[0], "decision": decision}
	if decision == "approve" {
		out["production"] = map[string]any{"app_id": creds.AppID, "app_key": creds.AppKey, "app_secret": creds.AppSecret, "webhook_secret": creds.WebhookSecret, "environment": creds.Environment}
	}
	httpapi.OK(c.w, http.StatusOK, out)
	return nil
}

func (a *API) declareScopes(c *call) error {
	ids, err := c.ids("appId")
	if err != nil {
		return err
	}
	var scopes []string
	if err := c.decode(func(o *httpapi.Object) { scopes = o.Strings("scopes") }); err != nil {
		return err
	}
	granted, pos, err := a.Apps.DeclareScopes(c.r.Context(), ids[0], scopes, c.meta)
	if err != nil {
		return err
	}
	if err := a.waitApps(c.r.Context(), pos); err != nil {
		return err
	}
	httpapi.OK(c.w, http.StatusOK, map[string]any{"app_id": ids[0], "scopes": granted})
	return nil
}

func providerInput(o *httpapi.Object) commands.ProviderInput {
	return commands.ProviderInput{Name: o.RequiredString("name"), Type: o.RequiredString("type"), Contact: o.RequiredString("contact"), PointsCode: o.String("points_code").Ptr()}
}

func (a *API) registerProvider(c *call) error {
	var in commands.ProviderInput
	if err := c.decode(func(o *httpapi.Object) {
		in = providerInput(o)
		in.AppID = o.RequiredInt("app_id")
	}); err != nil {
		return err
	}
	if _, ok := a.SchemeM.Apps.ByID(in.AppID); !ok {
		return domain.ErrAppNotFound
	}
	return a.provider(c, in)
}

func (a *API) registerOwnProvider(c *call) error {
	var in commands.ProviderInput
	if err := c.decode(func(o *httpapi.Object) { in = providerInput(o) }); err != nil {
		return err
	}
	in.AppID = c.app.AppID
	return a.provider(c, in)
}

func (a *API) provider(c *call, in commands.ProviderInput) error {
	id, pos, err := a.Benefits.RegisterProvider(c.r.Context(), in, c.meta)
	if err != nil {
		return err
	}
	a.Watermarks.Wrote(in.AppID, pos)
	a.Watermarks.Wrote(0, pos)
	httpapi.OK(c.w, http.StatusCreated, map[string]any{"provider_id": id, "status": commands.ProviderPending})
	return nil
}

func (a *API) reviewProvider(c *call) error {
	ids, err := c.ids("providerId")
	if err != nil {
		return err
	}
	approve, notes, err := c.review()
	if err != nil {
		return err
	}
	decision := map[bool]string{true: "approve", false: "reject"}[approve]
	pos, err := a.Benefits.ReviewProvider(c.r.Context(), ids[0], approve, notes, c.meta)
	if err != nil {
		return err
	}
	a.Watermarks.Wrote(0, pos)
	httpapi.OK(c.w, http.StatusOK, map[string]any{"provider_id": ids[0], "decision": decision})
	return nil
}

func (a *API) configureProviderItems(c *call) error {
	ids, err := c.ids("providerId")
	if err != nil {
		return err
	}
	var items []int64
	if err := c.decode(func(o *httpapi.Object) { items = o.Ints("allowed_benefit_item_ids") }); err != nil {
		return err
	}
	pos, err := a.Benefits.ConfigureItems(c.r.Context(), ids[0], items, c.meta)
	if err != nil {
		return err
	}
	a.Watermarks.Wrote(0, pos)
	httpapi.OK(c.w, http.StatusOK, map[string]any{"provider_id": ids[0], "allowed_benefit_item_ids": items})
	return nil
}

func (a *API) createBenefitItem(c *call) error {
	var name string
	if err := c.decode(func(o *httpapi.Object) { name = o.RequiredString("name") }); err != nil {
		return err
	}
	id, pos, err := a.Benefits.CreateItem(c.r.Context(), name, c.meta)
	if err != nil {
		return err
	}
	a.Watermarks.Wrote(0, pos)
	httpapi.OK(c.w, http.StatusCreated, map[string]any{"benefit_item_id": id, "name": name, "status": commands.ItemActive})
	return nil
}

func (a *API) benefitItemStatus(status string) func(*call) error {
	return func(c *call) error {
		ids, err := c.ids("itemId")
		if err != nil {
			return err
		}
		pos, err := a.Benefits.SetItemStatus(c.r.Context(), ids[0], status, c.meta)
		if err != nil {
			return err
		}
		a.Watermarks.Wrote(0, pos)
		httpapi.OK(c.w, http.StatusOK, map[string]any{"benefit_item_id": ids[0], "status": status})
		return nil
	}
}

func (a *API) cardInput(o *httpapi.Object) commands.CardInput {
	in := commands.CardInput{CardNumber: o.String("card_number").Value, HolderName: o.RequiredString("holder_name"), HolderPhone: o.String("holder_phone").Ptr()}
	if t := o.Time("expires_at", a.Location); t.Set && !t.Null {
		in.ExpiresAt = t.Value
	} else {
		o.RequiredString("expires_at")
	}
	for _, it := range o.Array("items", 100) {
		in.Items = append(in.Items, commands.CardItemInput{BenefitItemID: it.RequiredInt("benefit_item_id"), Quantity: it.RequiredInt("quantity")})
	}
	return in
}

func (a *API) issue(c *call, batch commands.CardBatch) error {
	issued, err := a.Benefits.IssueBatch(c.r.Context(), batch, c.meta)
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(issued))
	for _, card := range issued {
		items := make([]map[string]any, 0, len(card.Items))
		for _, l := range card.Items {
			items = append(items, map[string]any{"user_benefit_item_id": l.UserBenefitItemID, "benefit_item_id": l.BenefitItemID, "quantity": l.Quantity})
		}
		out = append(out, map[string]any{"card_number": card.CardNumber, "items": items})
		a.Watermarks.Wrote(batch.IssuerAppID, card.Position)
	}
	httpapi.OK(c.w, http.StatusCreated, map[string]any{"cards": out})
	return nil
}

func (a *API) issueCardsAsOperator(c *call) error {
	var batch commands.CardBatch
	if err := c.decode(func(o *httpapi.Object) {
		batch.IssuerAppID = o.RequiredInt("issuer_app_id")
		batch.BatchID = o.String("batch_id").Value
		for _, it := range o.Array("cards", 100) {
			batch.Cards = append(batch.Cards, a.cardInput(it))
		}
	}); err != nil {
		return err
	}
	if _, ok := a.SchemeM.Apps.ByID(batch.IssuerAppID); !ok {
		return domain.ErrAppNotFound
	}
	return a.issue(c, batch)
}

// batchIssue is for approved CHANNEL_PARTNER providers, who issue their own
// cards with numbers the platform assigns (a chosen number could only be
// refused by revealing that another issuer's card holds it).
func (a *API) batchIssue(c *call) error {
	ok, err := a.Benefits.IsChannelPartner(c.r.Context(), c.app.AppID)
	if err != nil {
		return err
	}
	if !ok {
		return domain.ErrProviderUnauthorized
	}
	batch := commands.CardBatch{IssuerAppID: c.app.AppID, PlatformNumbers: true}
	if err := c.decode(func(o *httpapi.Object) {
		batch.BatchID = o.String("batch_id").Value
		for _, it := range o.Array("cards", 100) {
			batch.Cards = append(batch.Cards, a.cardInput(it))
		}
	}); err != nil {
		return err
	}
	return a.issue(c, batch)
}

// maskPhone masks an optional phone; none masks to "".
func maskPhone(p *string) string {
	if p == nil {
		return ""
	}
	return httpapi.MaskPhone(*p)
}

func (a *API) verifyUse(c *call) error {
	var in commands.VerifyInput
	if err := c.decode(func(o *httpapi.Object) {
		in = commands.VerifyInput{
			CardNumber: o.RequiredString("card_number"), UserBenefitItemID: o.Int("user_benefit_item_id").Ptr(), BenefitItemID: o.Int("benefit_item_id").Ptr(),
			Quantity: quantityOr1(o.Int("quantity")), PointsCode: o.String("points_code").Ptr(), ServiceProviderID: o.Int("service_provider_id").Ptr(),
			Remark: o.String("remark").Ptr(),
		}
	}); err != nil {
		return err
	}
	v, err := a.Benefits.Verify(c.r.Context(), c.app.AppID, in, c.meta)
	if err != nil {
		return err
	}
	c.config.Watermarks.Wrote(c.app.AppID, v.Position)
	httpapi.OK(c.w, http.StatusOK, map[string]any{
		"fulfillment_record_id": v.RecordID, "card_number_masked": httpapi.MaskCard(v.CardNumber), "benefit_item_name": v.BenefitItemName,
		"quantity_used": v.Quantity, "remaining_quantity": v.Remaining,
		"user_info":   map[string]any{"name_masked": httpapi.MaskName(v.HolderName), "phone_masked": maskPhone(v.HolderPhone)},
		"verified_at": v.At.In(a.Location).Format(DateTime),
	})
	return nil
}

func (a *API) rateFulfillment(c *call) error {
	ids, err := c.ids("recordId")
	if err != nil {
		return err
	}
	var rating int64
	if err := c.decode(func(o *httpapi.Object) { rating = o.RequiredInt("rating") }); err != nil {
		return err
	}
	pos, err := a.Benefits.Rate(c.r.Context(), c.app.AppID, ids[0], int(rating), c.meta)
	if err != nil {
		return err
	}
	c.config.Watermarks.Wrote(c.app.AppID, pos)
	httpapi.OK(c.w, http.StatusOK, map[string]any{"fulfillment_record_id": ids[0], "rating": rating})
	return nil
}

// quantityOr1 applies the spec's default of 1 when quantity is not sent.
func quantityOr1(f domain.Field[int64]) int64 {
	if !f.Set || f.Null {
		return 1
	}
	return f.Value
}

// review reads a review body: {decision: approve|reject, notes?}.
func (c *call) review() (approve bool, notes string, err error) {
	var decision string
	if err := c.decode(func(o *httpapi.Object) { decision, notes = o.RequiredString("decision"), o.String("notes").Value }); err != nil {
		return false, "", err
	}
	if decision != "approve" && decision != "reject" {
		v := &domain.ValidationError{}
		v.Add("decision", "must be approve or reject")
		return false, "", v
	}
	return decision == "approve", notes, nil
}
