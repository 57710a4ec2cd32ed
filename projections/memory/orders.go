package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/healthtech/partner-open-platform/projections"
)

// orderIndexes holds the goods, the orders (each with its items) and the
// indexes their reads use, so an order listing walks one sorted id list from
// its After and never scans every order.
type orderIndexes struct {
	goods       map[int64]projections.Goods // by GoodsID
	goodsIDs    []int64                     // sorted
	goodsByCode map[string]int64            // GoodsCode -> GoodsID

	orders          map[int64]projections.Order // by OrderID, Items sorted by ItemID
	orderIDs        []int64                     // sorted
	orderByCode     map[string]int64            // OrderCode -> OrderID
	appOrders       map[int64][]int64           // AppID -> OrderIDs, sorted
	statusOrders    map[string][]int64          // Status -> OrderIDs, sorted
	appStatusOrders map[appStatusKey][]int64    // (AppID, Status) -> OrderIDs, sorted
}

type appStatusKey struct {
	app    int64
	status string
}

// initOrders empties the orders read model; a paged image of it being
// read then fails (paging.gen).
func (s *Store) initOrders() {
	s.ordersPaging.gen++
	s.orderIndexes = newOrderIndexes()
}

func newOrderIndexes() orderIndexes {
	return orderIndexes{
		goods:           map[int64]projections.Goods{},
		goodsByCode:     map[string]int64{},
		orders:          map[int64]projections.Order{},
		orderByCode:     map[string]int64{},
		appOrders:       map[int64][]int64{},
		statusOrders:    map[string][]int64{},
		appStatusOrders: map[appStatusKey][]int64{},
	}
}

// addToList and dropFromList keep a map of sorted id lists without empty lists.
func addToList[K comparable](m map[K][]int64, k K, id int64) { m[k] = insertID(m[k], id) }

func dropFromList[K comparable](m map[K][]int64, k K, id int64) {
	if ids := removeID(m[k], id); len(ids) == 0 {
		delete(m, k)
	} else {
		m[k] = ids
	}
}

// after is the index of the first id in the sorted ids strictly greater than id.
func after(ids []int64, id int64) int {
	return sort.Search(len(ids), func(i int) bool { return ids[i] > id })
}

// ConflictError refuses a write that would give a key the Postgres store
// keeps unique (a goods code, an order code, an order's item id, a card's
// user benefit item id) to a second row, so that both stores fail the same
// projector bug the same way.
type ConflictError struct {
	Key    string // the unique key, as the Postgres column is named
	Value  string // the contested value
	Holder string // the row holding it
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("projections/memory: %s %q is held by %s", e.Key, e.Value, e.Holder)
}

// setGoods replaces cur (if had) by next (if keep) in the rows and indexes;
// the undo of a write is the same call with the sides swapped.
func (s *Store) setGoods(cur projections.Goods, had bool, next projections.Goods, keep bool) {
	if had {
		s.goodsCOW.keepIn(s.goods, cur.GoodsID)
		delete(s.goods, cur.GoodsID)
		delete(s.goodsByCode, cur.GoodsCode)
		if !keep {
			s.goodsIDs = removeID(s.goodsIDs, cur.GoodsID)
		}
	}
	if keep {
		s.goodsCOW.keepIn(s.goods, next.GoodsID)
		s.goods[next.GoodsID] = next
		s.goodsByCode[next.GoodsCode] = next.GoodsID
		if !had {
			s.goodsIDs = insertID(s.goodsIDs, next.GoodsID)
		}
	}
}

// setOrder replaces cur (if had) by next (if keep), touching only the
// indexes whose key changed; the undo of a write is the same call with the
// sides swapped.
func (s *Store) setOrder(cur projections.Order, had bool, next projections.Order, keep bool) {
	same := had && keep // a replace of the same OrderID
	if had {
		s.ordersCOW.keepIn(s.orders, cur.OrderID)
		delete(s.orders, cur.OrderID)
		delete(s.orderByCode, cur.OrderCode)
		if !same {
			s.orderIDs = removeID(s.orderIDs, cur.OrderID)
		}
		if !same || cur.AppID != next.AppID {
			dropFromList(s.appOrders, cur.AppID, cur.OrderID)
		}
		if !same || cur.Status != next.Status {
			dropFromList(s.statusOrders, cur.Status, cur.OrderID)
		}
		if !same || cur.AppID != next.AppID || cur.Status != next.Status {
			dropFromList(s.appStatusOrders, appStatusKey{cur.AppID, cur.Status}, cur.OrderID)
		}
	}
	if keep {
		s.ordersCOW.keepIn(s.orders, next.OrderID)
		s.orders[next.OrderID] = next
		s.orderByCode[next.OrderCode] = next.OrderID
		if !same {
			s.orderIDs = insertID(s.orderIDs, next.OrderID)
		}
		if !same || cur.AppID != next.AppID {
			addToList(s.appOrders, next.AppID, next.OrderID)
		}
		if !same || cur.Status != next.Status {
			addToList(s.statusOrders, next.Status, next.OrderID)
		}
		if !same || cur.AppID != next.AppID || cur.Status != next.Status {
			addToList(s.appStatusOrders, appStatusKey{next.AppID, next.Status}, next.OrderID)
		}
	}
}

// ---- reads ----

// OrderByCode enforces tenancy in the lookup (appID 0: operators), so no caller can forget it.
func (s *Store) OrderByCode(ctx context.Context, appID int64, code string) (projections.Order, error) {
	if err := ctx.Err(); err != nil {
		return projections.Order{}, err
	}
	s.ordersMu.RLock()
	defer s.ordersMu.RUnlock()
	id, ok := s.orderByCode[code]
	if !ok {
		return projections.Order{}, projections.ErrNotFound
	}
	o := s.orders[id]
	if appID != 0 && o.AppID != appID {
		return projections.Order{}, projections.ErrNotFound
	}
	return copyOrder(o), nil
}

// Orders walks the narrowest id index from f.After, so a page costs its rows, not every order.
func (s *Store) Orders(ctx context.Context, f projections.OrderFilter) ([]projections.Order, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit := clampLimit(f.Limit)
	s.ordersMu.RLock()
	defer s.ordersMu.RUnlock()
	var ids []int64
	switch {
	case f.AppID != 0 && f.Status != "":
		ids = s.appStatusOrders[appStatusKey{f.AppID, f.Status}]
	case f.AppID != 0:
		ids = s.appOrders[f.AppID]
	case f.Status != "":
		ids = s.statusOrders[f.Status]
	default:
		ids = s.orderIDs
	}
	ids = ids[after(ids, f.After):]
	ids = ids[:min(len(ids), limit)]
	out := make([]projections.Order, len(ids))
	for i, id := range ids {
		out[i] = copyOrder(s.orders[id])
	}
	return out, nil
}

// GoodsList reads the sorted ids, so the catalog comes in GoodsID order without a sort.
func (s *Store) GoodsList(ctx context.Context) ([]projections.Goods, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.ordersMu.RLock()
	defer s.ordersMu.RUnlock()
	out := make([]projections.Goods, len(s.goodsIDs))
	for i, id := range s.goodsIDs {
		out[i] = s.goods[id]
	}
	return out, nil
}

// ---- writes ----

// Goods reads goods as this transaction sees them, inactive included.
func (t *tx) Goods(ctx context.Context, goodsID int64) (projections.Goods, error) {
	if err := t.check(ctx); err != nil {
		return projections.Goods{}, err
	}
	g, ok := t.s.goods[goodsID]
	if !ok {
		return projections.Goods{}, projections.ErrNotFound
	}
	return g, nil
}

// Order reads an order as this transaction sees it, whatever its app.
func (t *tx) Order(ctx context.Context, orderID int64) (projections.Order, error) {
	if err := t.check(ctx); err != nil {
		return projections.Order{}, err
	}
	o, ok := t.s.orders[orderID]
	if !ok {
		return projections.Order{}, projections.ErrNotFound
	}
	return copyOrder(o), nil
}

// UserOrders scans the orders: erasures are rare.
func (t *tx) UserOrders(ctx context.Context, userID int64) ([]int64, error) {
	if err := t.check(ctx); err != nil {
		return nil, err
	}
	ids := []int64{}
	for id, o := range t.s.orders {
		if o.UserID != nil && *o.UserID == userID {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

func (t *tx) PutGoods(ctx context.Context, g projections.Goods) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	g.CreatedAt, g.UpdatedAt = normTime(g.CreatedAt), normTime(g.UpdatedAt)
	if holder, taken := s.goodsByCode[g.GoodsCode]; taken && holder != g.GoodsID {
		return &ConflictError{Key: "goods_code", Value: g.GoodsCode, Holder: "goods " + strconv.FormatInt(holder, 10)}
	}
	old, had := s.goods[g.GoodsID]
	s.setGoods(old, had, g, true)
	if !t.owned {
		t.undo = append(t.undo, func() { s.setGoods(g, true, old, had) })
	}
	return nil
}

func (t *tx) PutOrder(ctx context.Context, o projections.Order) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	o = normOrder(o)
	if holder, taken := s.orderByCode[o.OrderCode]; taken && holder != o.OrderID {
		return &ConflictError{Key: "order_code", Value: o.OrderCode, Holder: "order " + strconv.FormatInt(holder, 10)}
	}
	for i := 1; i < len(o.Items); i++ {
		if o.Items[i].ItemID == o.Items[i-1].ItemID {
			return &ConflictError{Key: "item_id", Value: strconv.FormatInt(o.Items[i].ItemID, 10),
				Holder: "another item of order " + strconv.FormatInt(o.OrderID, 10)}
		}
	}
	old, had := s.orders[o.OrderID]
	s.setOrder(old, had, o, true)
	if !t.owned {
		t.undo = append(t.undo, func() { s.setOrder(o, true, old, had) })
	}
	return nil
}

// ---- copies and normalisation ----

// copyStrings copies a list, never returning nil, as the Postgres store reads an empty text[].
func copyStrings(ss []string) []string { return append(make([]string, 0, len(ss)), ss...) }

// copyOrder gives the caller its own pointers, items and serial numbers;
// Items is never nil, as the Postgres store reads an empty item set.
func copyOrder(o projections.Order) projections.Order {
	o.UserID = cloneInt(o.UserID)
	o.AreaCode, o.AreaText, o.RejectReason = cloneStr(o.AreaCode), cloneStr(o.AreaText), cloneStr(o.RejectReason)
	o.LogisticsCompany, o.TrackingNumber = cloneStr(o.LogisticsCompany), cloneStr(o.TrackingNumber)
	o.ShippedAt = cloneTime(o.ShippedAt)
	items := make([]projections.OrderItem, len(o.Items))
	for i, it := range o.Items {
		it.DeviceSNs = copyStrings(it.DeviceSNs)
		items[i] = it
	}
	o.Items = items
	return o
}

func normOrder(o projections.Order) projections.Order {
	o = copyOrder(o)
	o.OrderTime, o.CreatedAt, o.UpdatedAt = normTime(o.OrderTime), normTime(o.CreatedAt), normTime(o.UpdatedAt)
	o.ShippedAt = normTimePtr(o.ShippedAt)
	slices.SortStableFunc(o.Items, func(a, b projections.OrderItem) int { return cmp.Compare(a.ItemID, b.ItemID) })
	return o
}
