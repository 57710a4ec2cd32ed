package projections

import (
	"context"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// Goods is a catalog entry partners order by goods_code.
type Goods struct {
	GoodsID   int64
	GoodsCode string
	GoodsName string
	Active    bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Order is the read model of a purchase order with its items.
type Order struct {
	OrderID          int64
	OrderCode        string
	AppID            int64
	ThirdOrderID     string
	UserID           *int64
	ContactPerson    string
	ContactPhone     string
	Address          string
	AreaCode         *string
	AreaText         *string
	LogisticsType    string
	PostagePolicy    string
	PostageAmount    int64 // cents
	Status           string
	OrderSource      string
	CooperationType  string
	OrderTime        time.Time
	RejectReason     *string
	LogisticsCompany *string
	TrackingNumber   *string
	ShippedAt        *time.Time
	CreatedAt        time.Time
	UpdatedAt        time.Time
	Items            []OrderItem // ordered by ItemID
}

// OrderItem is one line of an order.
type OrderItem struct {
	ItemID         int64
	GoodsID        int64
	GoodsCode      string
	GoodsName      string
	Quantity       int64
	UnitPrice      int64 // cents
	TotalPrice     int64 // cents, UnitPrice × Quantity
	ShippingStatus string
	DeviceSNs      []string // serial numbers shipped for this line, in order
}

// OrderFilter selects orders for operators; zero fields match all.
type OrderFilter struct {
	AppID  int64
	Status string
	After  int64 // OrderID strictly greater
	Limit  int   // <= 0: 100; capped at 1000
}

// OrderTx is the part of a read-model transaction the order projector writes.
type OrderTx interface {
	// PutGoods inserts or replaces goods keyed by GoodsID.
	PutGoods(ctx context.Context, g Goods) error
	// Goods reads goods inside the transaction (ErrNotFound if absent).
	Goods(ctx context.Context, goodsID int64) (Goods, error)
	// PutOrder inserts or replaces an order and all its items (items not in o.Items are removed).
	PutOrder(ctx context.Context, o Order) error
	// Order reads an order with its items inside the transaction (ErrNotFound if absent).
	Order(ctx context.Context, orderID int64) (Order, error)
	// UserOrders lists the ids of a channel user's orders (any app), in
	// id order, as the transaction sees them: user.erased blanks their
	// receiver fields.
	UserOrders(ctx context.Context, userID int64) ([]int64, error)
}

// OrderStore is what the order and goods reads need.
type OrderStore interface {
	Checkpoints
	// UpdateOrders runs fn in one transaction with the named checkpoint.
	UpdateOrders(ctx context.Context, projection string, pos events.Position, fn func(OrderTx) error) error
	// OrderByCode returns the order if it belongs to appID (0: any app); else ErrNotFound.
	OrderByCode(ctx context.Context, appID int64, code string) (Order, error)
	// Orders lists orders by filter, ordered by OrderID.
	Orders(ctx context.Context, f OrderFilter) ([]Order, error)
	// GoodsList returns the catalog ordered by GoodsID, inactive included.
	GoodsList(ctx context.Context) ([]Goods, error)
}
