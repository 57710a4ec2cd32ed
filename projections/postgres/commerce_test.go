package postgres

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/healthtech/partner-open-platform/projections"
)

// planQuery is a statement whose plan must read one index range in the order
// it returns rows: never a sort, never a scan of the table.
type planQuery struct {
	name  string
	sql   string
	args  []any
	index string   // the index the rows come from
	also  []string // further indexes the plan must use (the items of an order or a card)
	cond  string   // a bound the index must apply, not a filter, when set
	// exact: every condition is an index condition, none a filter; false
	// where a lookup by key then checks the tenant.
	exact bool
}

// wantPlans EXPLAINs each query with custom and with generic plans (a
// prepared statement reused by the pool gets the latter) and checks it.
func wantPlans(t *testing.T, conn *pgxpool.Conn, qs []planQuery) {
	t.Helper()
	ctx := context.Background()
	// On an empty table a sequential or bitmap scan (and a sort of its few
	// rows) is cheapest; forbid both to see which index can give the rows in
	// order.
	for _, set := range []string{`SET enable_seqscan = off`, `SET enable_bitmapscan = off`} {
		if _, err := conn.Exec(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		if _, err := conn.Exec(ctx, `SET plan_cache_mode = `+mode); err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			rows, _ := conn.Query(ctx, "EXPLAIN "+q.sql, q.args...)
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatalf("%s (%s): EXPLAIN: %v", q.name, mode, err)
			}
			plan := strings.Join(lines, "\n")
			for _, index := range append([]string{q.index}, q.also...) {
				if !strings.Contains(plan, " using "+index+" ") {
					t.Errorf("%s (%s) does not use %s:\n%s", q.name, mode, index, plan)
				}
			}
			if strings.Contains(plan, "Sort") || strings.Contains(plan, "Seq Scan") {
				t.Errorf("%s (%s) sorts or scans the table:\n%s", q.name, mode, plan)
			}
			if q.exact && strings.Contains(plan, "Filter:") {
				t.Errorf("%s (%s) filters rows an index should exclude:\n%s", q.name, mode, plan)
			}
			if q.cond != "" && !slices.ContainsFunc(lines, func(l string) bool {
				_, c, ok := strings.Cut(l, "Index Cond: ")
				return ok && strings.Contains(c, q.cond)
			}) {
				t.Errorf("%s (%s): index condition lacks %q:\n%s", q.name, mode, q.cond, plan)
			}
		}
	}
}

func planConn(t *testing.T) *pgxpool.Conn {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, MigratedDB(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	return conn
}

// The order listings walk the primary key or the app, status or app-status
// index from After, and read each order's items from the items' primary key.
func TestOrderQueriesUseTheirIndexes(t *testing.T) {
	t.Parallel()
	conn := planConn(t)
	orders := func(name string, f projections.OrderFilter, index string) planQuery {
		sql, args := ordersQuery(f)
		return planQuery{name: name, sql: sql, args: args, index: index, also: []string{"order_items_pkey"},
			cond: "order_id > ", exact: true}
	}
	wantPlans(t, conn, []planQuery{
		orders("Orders", projections.OrderFilter{After: 5, Limit: 10}, "orders_pkey"),
		orders("Orders(app)", projections.OrderFilter{AppID: 1, After: 5, Limit: 10}, "orders_app_idx"),
		orders("Orders(status)", projections.OrderFilter{Status: "SHIPPED", After: 5, Limit: 10}, "orders_status_idx"),
		orders("Orders(app, status)", projections.OrderFilter{AppID: 1, Status: "SHIPPED", After: 5, Limit: 10}, "orders_app_status_idx"),
	})

	// An empty table's defaults tie the unique code index with the app
	// index; with rows and statistics the planner weighs them as it would
	// in production, and the code must win whether or not the app is given.
	if _, err := conn.Exec(context.Background(), `
INSERT INTO orders (order_id, order_code, app_id, third_order_id, contact_person, contact_phone, address,
    logistics_type, postage_policy, postage_amount, status, order_source, cooperation_type, order_time,
    created_at, updated_at)
SELECT i, 'ORD-' || i, 1 + i % 3, 't-' || i, '', '', '', '', '', 0,
    (ARRAY['PENDING_REVIEW', 'APPROVED', 'SHIPPED', 'REJECTED'])[1 + i % 4], '', '', now(), now(), now()
FROM generate_series(1, 3000) i;
INSERT INTO order_items (order_id, item_id, goods_id, goods_code, goods_name, quantity, unit_price,
    total_price, shipping_status, device_sns)
SELECT i / 2, i, 1, 'G', 'g', 1, 1, 1, 'PENDING_SHIPMENT', '{}' FROM generate_series(2, 6001) i;
ANALYZE orders, order_items`); err != nil {
		t.Fatal(err)
	}
	wantPlans(t, conn, []planQuery{
		{name: "OrderByCode(any app)", sql: `SELECT ` + orderColumns + ` FROM orders o WHERE o.order_code = $1`,
			args: []any{"ORD-1"}, index: "orders_code_key", also: []string{"order_items_pkey"}, exact: true},
		{name: "OrderByCode(app)", sql: `SELECT ` + orderColumns + ` FROM orders o WHERE o.order_code = $1 AND o.app_id = $2`,
			args: []any{"ORD-1", int64(1)}, index: "orders_code_key", also: []string{"order_items_pkey"}},
	})
}

// The fulfillment listings walk the primary key or the provider, issuer or
// card index from After; a combination of filters walks one of them.
func TestBenefitQueriesUseTheirIndexes(t *testing.T) {
	t.Parallel()
	conn := planConn(t)
	records := func(name string, f projections.FulfillmentFilter, index string) planQuery {
		sql, args := fulfillmentsQuery(f)
		return planQuery{name: name, sql: sql, args: args, index: index, cond: "record_id > ", exact: true}
	}
	qs := []planQuery{
		records("Fulfillments", projections.FulfillmentFilter{After: 5, Limit: 10}, "fulfillments_pkey"),
		records("Fulfillments(provider)", projections.FulfillmentFilter{ProviderID: 1, After: 5, Limit: 10}, "fulfillments_provider_idx"),
		records("Fulfillments(issuer)", projections.FulfillmentFilter{IssuerAppID: 1, After: 5, Limit: 10}, "fulfillments_issuer_idx"),
		records("Fulfillments(card)", projections.FulfillmentFilter{CardNumber: "620000000000001", After: 5, Limit: 10}, "fulfillments_card_idx"),
		{name: "Providers(app)", sql: providersOfAppQuery, args: []any{int64(1)}, index: "service_providers_app_idx", exact: true},
		{name: "CardByNumber", sql: `SELECT ` + cardColumns + ` FROM cards c WHERE c.card_number = $1 AND c.issuer_app_id = $2`,
			args: []any{"620000000000001", int64(1)}, index: "cards_pkey", also: []string{"card_items_card_idx"}},
	}
	wantPlans(t, conn, qs)

	// Combinations: whichever single index the planner picks (here with the
	// generic plans wantPlans left set), it walks it in order from After and
	// filters the rest, never sorts.
	for _, f := range []projections.FulfillmentFilter{
		{ProviderID: 1, IssuerAppID: 2},
		{ProviderID: 1, CardNumber: "620000000000001"},
		{IssuerAppID: 2, CardNumber: "620000000000001"},
		{ProviderID: 1, IssuerAppID: 2, CardNumber: "620000000000001"},
	} {
		f.After, f.Limit = 5, 10
		sql, args := fulfillmentsQuery(f)
		ctx := context.Background()
		rows, _ := conn.Query(ctx, "EXPLAIN "+sql, args...)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%+v: EXPLAIN: %v", f, err)
		}
		plan := strings.Join(lines, "\n")
		if !strings.Contains(plan, " using fulfillments_") {
			t.Errorf("Fulfillments(%+v) uses no fulfillments index:\n%s", f, plan)
		}
		if strings.Contains(plan, "Sort") || strings.Contains(plan, "Seq Scan") {
			t.Errorf("Fulfillments(%+v) sorts or scans the table:\n%s", f, plan)
		}
	}

	// An app's providers: each provider's index walked for at most one page,
	// then one sort of at most providers × limit rows, never the table.
	sql, args := fulfillmentsQuery(projections.FulfillmentFilter{ProviderAppID: 1, After: 5, Limit: 10})
	rows, _ := conn.Query(context.Background(), "EXPLAIN "+sql, args...)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("ProviderAppID: EXPLAIN: %v", err)
	}
	plan := strings.Join(lines, "\n")
	for _, index := range []string{"service_providers_app_idx", "fulfillments_provider_idx"} {
		if !strings.Contains(plan, index) {
			t.Errorf("Fulfillments(ProviderAppID) does not use %s:\n%s", index, plan)
		}
	}
	if strings.Contains(plan, "Seq Scan") || !strings.Contains(plan, "Limit") {
		t.Errorf("Fulfillments(ProviderAppID) scans a table or reads unbounded:\n%s", plan)
	}
}
