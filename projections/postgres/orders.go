package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/projections"
)

// ---- goods ----

const goodsColumns = `goods_id, goods_code, goods_name, active, created_at, updated_at`

func scanGoods(row pgx.Row) (projections.Goods, error) {
	var g projections.Goods
	err := row.Scan(&g.GoodsID, &g.GoodsCode, &g.GoodsName, &g.Active, &g.CreatedAt, &g.UpdatedAt)
	g.CreatedAt, g.UpdatedAt = g.CreatedAt.UTC(), g.UpdatedAt.UTC()
	return g, err
}

// GoodsList reads the whole catalog in key order: it is small, and partners need all of it.
func (s *Store) GoodsList(ctx context.Context) ([]projections.Goods, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+goodsColumns+` FROM goods ORDER BY goods_id`)
	gs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (projections.Goods, error) {
		return scanGoods(row)
	})
	if err != nil {
		return nil, fmt.Errorf("projections/postgres: goods: %w", err)
	}
	return gs, nil
}

// ---- orders ----

// orderColumns reads an order with its items in one statement, so a reader
// never sees an order row and an item set of different commits (two
// statements would each take their own snapshot). The items come as one JSON
// array whose keys are OrderItem's field names, in ItemID order.
const orderColumns = `o.order_id, o.order_code, o.app_id, o.third_order_id, o.user_id, o.contact_person,
    o.contact_phone, o.address, o.area_code, o.area_text, o.logistics_type, o.postage_policy,
    o.postage_amount, o.status, o.order_source, o.cooperation_type, o.order_time, o.reject_reason,
    o.logistics_company, o.tracking_number, o.shipped_at, o.created_at, o.updated_at,
    (SELECT coalesce(json_agg(json_build_object(
            'ItemID', i.item_id, 'GoodsID', i.goods_id, 'GoodsCode', i.goods_code,
            'GoodsName', i.goods_name, 'Quantity', i.quantity, 'UnitPrice', i.unit_price,
            'TotalPrice', i.total_price, 'ShippingStatus', i.shipping_status, 'DeviceSNs', i.device_sns)
            ORDER BY i.item_id), '[]')
       FROM order_items i WHERE i.order_id = o.order_id)`

func scanOrder(row pgx.Row) (projections.Order, error) {
	var o projections.Order
	err := row.Scan(&o.OrderID, &o.OrderCode, &o.AppID, &o.ThirdOrderID, &o.UserID, &o.ContactPerson,
		&o.ContactPhone, &o.Address, &o.AreaCode, &o.AreaText, &o.LogisticsType, &o.PostagePolicy,
		&o.PostageAmount, &o.Status, &o.OrderSource, &o.CooperationType, &o.OrderTime, &o.RejectReason,
		&o.LogisticsCompany, &o.TrackingNumber, &o.ShippedAt, &o.CreatedAt, &o.UpdatedAt, &o.Items)
	o.OrderTime, o.CreatedAt, o.UpdatedAt = o.OrderTime.UTC(), o.CreatedAt.UTC(), o.UpdatedAt.UTC()
	if o.ShippedAt != nil {
		*o.ShippedAt = o.ShippedAt.UTC()
	}
	// Never nil, whatever the JSON decoder makes of an empty array.
	if o.Items == nil {
		o.Items = []projections.OrderItem{}
	}
	for i := range o.Items {
		if o.Items[i].DeviceSNs == nil {
			o.Items[i].DeviceSNs = []string{}
		}
	}
	return o, err
}

func collectOrders(rows pgx.Rows) ([]projections.Order, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (projections.Order, error) {
		return scanOrder(row)
	})
}

// OrderByCode enforces tenancy in the query (appID 0: operators), so no caller can forget it.
func (s *Store) OrderByCode(ctx context.Context, appID int64, code string) (projections.Order, error) {
	var row pgx.Row
	if appID == 0 {
		row = s.pool.QueryRow(ctx, `SELECT `+orderColumns+` FROM orders o WHERE o.order_code = $1`, code)
	} else {
		row = s.pool.QueryRow(ctx, `SELECT `+orderColumns+` FROM orders o WHERE o.order_code = $1 AND o.app_id = $2`,
			code, appID)
	}
	o, err := scanOrder(row)
	return o, notFound(err, "order %q of app %d", code, appID)
}

// Orders is one index range scan in id order, so a page costs its rows, not the table's.
func (s *Store) Orders(ctx context.Context, f projections.OrderFilter) ([]projections.Order, error) {
	sql, args := ordersQuery(f)
	rows, _ := s.pool.Query(ctx, sql, args...)
	list, err := collectOrders(rows)
	if err != nil {
		return nil, fmt.Errorf("projections/postgres: orders: %w", err)
	}
	return list, nil
}

// ordersQuery builds one statement per combination of filters rather than
// "$n IS NULL OR ...", so each gets a plan that walks the primary key or the
// (app_id), (status) or (app_id, status) index from f.After.
func ordersQuery(f projections.OrderFilter) (string, []any) {
	var b strings.Builder
	args := []any{f.After}
	b.WriteString(`SELECT ` + orderColumns + ` FROM orders o
WHERE o.order_id > $1`)
	and := func(cond string, v any) {
		args = append(args, v)
		fmt.Fprintf(&b, "\n  AND "+cond, len(args))
	}
	if f.AppID != 0 {
		and("o.app_id = $%d", f.AppID)
	}
	if f.Status != "" {
		and("o.status = $%d", f.Status)
	}
	args = append(args, clampLimit(f.Limit))
	fmt.Fprintf(&b, "\nORDER BY o.order_id\nLIMIT $%d", len(args))
	return b.String(), args
}

// ---- writes ----

// Goods reads goods as this transaction sees them, inactive included.
func (t *tx) Goods(ctx context.Context, goodsID int64) (projections.Goods, error) {
	if err := t.check(ctx); err != nil {
		return projections.Goods{}, err
	}
	g, err := scanGoods(t.queryRow(ctx, true, `SELECT `+goodsColumns+` FROM goods WHERE goods_id = $1`, goodsID))
	return g, notFound(err, "goods %d", goodsID)
}

// Order reads an order as this transaction sees it, whatever its app.
func (t *tx) Order(ctx context.Context, orderID int64) (projections.Order, error) {
	if err := t.check(ctx); err != nil {
		return projections.Order{}, err
	}
	o, err := scanOrder(t.queryRow(ctx, true, `SELECT `+orderColumns+` FROM orders o WHERE o.order_id = $1`, orderID))
	return o, notFound(err, "order %d", orderID)
}

// UserOrders reads the user's order ids (a scan of orders: erasures are rare).
func (t *tx) UserOrders(ctx context.Context, userID int64) ([]int64, error) {
	if err := t.check(ctx); err != nil {
		return nil, err
	}
	if err := t.flush(ctx); err != nil {
		return nil, err
	}
	rows, err := t.db.Query(ctx, `SELECT order_id FROM orders WHERE user_id = $1 ORDER BY order_id`, userID)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if ids == nil {
		ids = []int64{}
	}
	return ids, err
}

const upsertGoods = `
INSERT INTO goods (` + goodsColumns + `)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (goods_id) DO UPDATE SET
    goods_code = EXCLUDED.goods_code,
    goods_name = EXCLUDED.goods_name,
    active = EXCLUDED.active,
    created_at = EXCLUDED.created_at,
    updated_at = EXCLUDED.updated_at`

func (t *tx) PutGoods(ctx context.Context, g projections.Goods) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	t.queue(upsertGoods, g.GoodsID, g.GoodsCode, g.GoodsName, g.Active, g.CreatedAt, g.UpdatedAt)
	return nil
}

const upsertOrder = `
INSERT INTO orders (order_id, order_code, app_id, third_order_id, user_id, contact_person,
    contact_phone, address, area_code, area_text, logistics_type, postage_policy,
    postage_amount, status, order_source, cooperation_type, order_time, reject_reason,
    logistics_company, tracking_number, shipped_at, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)
ON CONFLICT (order_id) DO UPDATE SET
    order_code = EXCLUDED.order_code,
    app_id = EXCLUDED.app_id,
    third_order_id = EXCLUDED.third_order_id,
    user_id = EXCLUDED.user_id,
    contact_person = EXCLUDED.contact_person,
    contact_phone = EXCLUDED.contact_phone,
    address = EXCLUDED.address,
    area_code = EXCLUDED.area_code,
    area_text = EXCLUDED.area_text,
    logistics_type = EXCLUDED.logistics_type,
    postage_policy = EXCLUDED.postage_policy,
    postage_amount = EXCLUDED.postage_amount,
    status = EXCLUDED.status,
    order_source = EXCLUDED.order_source,
    cooperation_type = EXCLUDED.cooperation_type,
    order_time = EXCLUDED.order_time,
    reject_reason = EXCLUDED.reject_reason,
    logistics_company = EXCLUDED.logistics_company,
    tracking_number = EXCLUDED.tracking_number,
    shipped_at = EXCLUDED.shipped_at,
    created_at = EXCLUDED.created_at,
    updated_at = EXCLUDED.updated_at`

const insertOrderItem = `
INSERT INTO order_items (order_id, item_id, goods_id, goods_code, goods_name, quantity,
    unit_price, total_price, shipping_status, device_sns)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`

// PutOrder queues the order, the delete of its items and the insert of each
// new one, so the item set is replaced whole; a repeated ItemID fails the
// primary key.
func (t *tx) PutOrder(ctx context.Context, o projections.Order) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	t.queue(upsertOrder, o.OrderID, o.OrderCode, o.AppID, o.ThirdOrderID, opt(o.UserID), o.ContactPerson,
		o.ContactPhone, o.Address, opt(o.AreaCode), opt(o.AreaText), o.LogisticsType, o.PostagePolicy,
		o.PostageAmount, o.Status, o.OrderSource, o.CooperationType, o.OrderTime, opt(o.RejectReason),
		opt(o.LogisticsCompany), opt(o.TrackingNumber), opt(o.ShippedAt), o.CreatedAt, o.UpdatedAt)
	t.queue(`DELETE FROM order_items WHERE order_id = $1`, o.OrderID)
	for _, it := range o.Items {
		// The list is copied (and never NULL): the caller may reuse it before the batch is sent.
		sns := append(make([]string, 0, len(it.DeviceSNs)), it.DeviceSNs...)
		t.queue(insertOrderItem, o.OrderID, it.ItemID, it.GoodsID, it.GoodsCode, it.GoodsName, it.Quantity,
			it.UnitPrice, it.TotalPrice, it.ShippingStatus, sns)
	}
	return nil
}
