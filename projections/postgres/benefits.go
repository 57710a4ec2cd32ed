package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/projections"
)

// ---- benefit items ----

const benefitItemColumns = `benefit_item_id, name, status, created_at, updated_at`

func scanBenefitItem(row pgx.Row) (projections.BenefitItem, error) {
	var b projections.BenefitItem
	err := row.Scan(&b.BenefitItemID, &b.Name, &b.Status, &b.CreatedAt, &b.UpdatedAt)
	b.CreatedAt, b.UpdatedAt = b.CreatedAt.UTC(), b.UpdatedAt.UTC()
	return b, err
}

// BenefitItems reads the whole list in key order: it is small, and every reader needs all of it.
func (s *Store) BenefitItems(ctx context.Context) ([]projections.BenefitItem, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+benefitItemColumns+` FROM benefit_items ORDER BY benefit_item_id`)
	bs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (projections.BenefitItem, error) {
		return scanBenefitItem(row)
	})
	if err != nil {
		return nil, fmt.Errorf("projections/postgres: benefit items: %w", err)
	}
	return bs, nil
}

// ---- providers ----

const providerColumns = `provider_id, app_id, name, type, contact, points_code, status, allowed_item_ids,
    created_at, updated_at, developer_id, review_notes`

func scanProvider(row pgx.Row) (projections.ServiceProvider, error) {
	var p projections.ServiceProvider
	err := row.Scan(&p.ProviderID, &p.AppID, &p.Name, &p.Type, &p.Contact, &p.PointsCode, &p.Status,
		&p.AllowedItemIDs, &p.CreatedAt, &p.UpdatedAt, &p.DeveloperID, &p.ReviewNotes)
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	if p.AllowedItemIDs == nil {
		p.AllowedItemIDs = []int64{}
	}
	return p, err
}

const providersOfAppQuery = `SELECT ` + providerColumns + ` FROM service_providers
WHERE app_id = $1
ORDER BY provider_id`

// Providers reads one range of service_providers_app_idx (appID 0: operators, the whole table in key order).
func (s *Store) Providers(ctx context.Context, appID int64) ([]projections.ServiceProvider, error) {
	var rows pgx.Rows
	if appID == 0 {
		rows, _ = s.pool.Query(ctx, `SELECT `+providerColumns+` FROM service_providers ORDER BY provider_id`)
	} else {
		rows, _ = s.pool.Query(ctx, providersOfAppQuery, appID)
	}
	ps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (projections.ServiceProvider, error) {
		return scanProvider(row)
	})
	if err != nil {
		return nil, fmt.Errorf("projections/postgres: providers of app %d: %w", appID, err)
	}
	return ps, nil
}

// DeveloperProviders reads one range of service_providers_developer_idx.
func (s *Store) DeveloperProviders(ctx context.Context, developerID int64) ([]projections.ServiceProvider, error) {
	if developerID == 0 {
		return nil, nil
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+providerColumns+` FROM service_providers WHERE developer_id = $1 ORDER BY provider_id`, developerID)
	ps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (projections.ServiceProvider, error) {
		return scanProvider(row)
	})
	if err != nil {
		return nil, fmt.Errorf("projections/postgres: providers of developer %d: %w", developerID, err)
	}
	return ps, nil
}

// ---- cards ----

// cardColumns reads a card with its items in one statement, so a reader
// never sees a card row and an item set of different commits. The items come
// as one JSON array whose keys are CardItem's field names, in
// UserBenefitItemID order.
const cardColumns = `c.card_number, c.issuer_app_id, c.holder_name, c.holder_phone, c.expires_at,
    c.created_at, c.updated_at,
    (SELECT coalesce(json_agg(json_build_object(
            'UserBenefitItemID', i.user_benefit_item_id, 'BenefitItemID', i.benefit_item_id,
            'Total', i.total, 'Remaining', i.remaining)
            ORDER BY i.user_benefit_item_id), '[]')
       FROM card_items i WHERE i.card_number = c.card_number)`

func scanCard(row pgx.Row) (projections.Card, error) {
	var c projections.Card
	err := row.Scan(&c.CardNumber, &c.IssuerAppID, &c.HolderName, &c.HolderPhone, &c.ExpiresAt,
		&c.CreatedAt, &c.UpdatedAt, &c.Items)
	c.ExpiresAt, c.CreatedAt, c.UpdatedAt = c.ExpiresAt.UTC(), c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	if c.Items == nil {
		c.Items = []projections.CardItem{}
	}
	return c, err
}

// CardByNumber enforces tenancy in the query (issuerAppID 0: operators), so no caller can forget it.
func (s *Store) CardByNumber(ctx context.Context, issuerAppID int64, number string) (projections.Card, error) {
	var row pgx.Row
	if issuerAppID == 0 {
		row = s.pool.QueryRow(ctx, `SELECT `+cardColumns+` FROM cards c WHERE c.card_number = $1`, number)
	} else {
		row = s.pool.QueryRow(ctx, `SELECT `+cardColumns+` FROM cards c WHERE c.card_number = $1 AND c.issuer_app_id = $2`,
			number, issuerAppID)
	}
	c, err := scanCard(row)
	return c, notFound(err, "card of issuer %d", issuerAppID) // the card number stays out of errors and logs
}

// ---- fulfillments ----

const fulfillmentColumns = `record_id, card_number, issuer_app_id, user_benefit_item_id, benefit_item_id,
    benefit_item_name, provider_id, provider_app_id, quantity, status, points_code, remark, initiated_at,
    rating, updated_at`

func scanFulfillment(row pgx.Row) (projections.Fulfillment, error) {
	var r projections.Fulfillment
	err := row.Scan(&r.RecordID, &r.CardNumber, &r.IssuerAppID, &r.UserBenefitItemID, &r.BenefitItemID,
		&r.BenefitItemName, &r.ProviderID, &r.ProviderAppID, &r.Quantity, &r.Status, &r.PointsCode, &r.Remark,
		&r.InitiatedAt, &r.Rating, &r.UpdatedAt)
	r.InitiatedAt, r.UpdatedAt = r.InitiatedAt.UTC(), r.UpdatedAt.UTC()
	return r, err
}

// Fulfillments is one index range scan in record order, so a page costs its rows, not the table's.
func (s *Store) Fulfillments(ctx context.Context, f projections.FulfillmentFilter) ([]projections.Fulfillment, error) {
	sql, args := fulfillmentsQuery(f)
	rows, _ := s.pool.Query(ctx, sql, args...)
	rs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (projections.Fulfillment, error) {
		return scanFulfillment(row)
	})
	if err != nil {
		return nil, fmt.Errorf("projections/postgres: fulfillments: %w", err)
	}
	return rs, nil
}

// fulfillmentsQuery builds one statement per combination of filters rather
// than "$n IS NULL OR ...", so each gets a plan that walks the primary key or
// the provider, issuer or card index from f.After. ProviderAppID walks the
// provider index of each of the app's providers for at most one page and
// merges them: one page in record order, whatever the number of providers.
func fulfillmentsQuery(f projections.FulfillmentFilter) (string, []any) {
	var b strings.Builder
	args := []any{f.After, clampLimit(f.Limit)}
	b.WriteString(`SELECT ` + fulfillmentColumns + ` FROM fulfillments
WHERE fulfillments.record_id > $1`)
	and := func(cond string, v any) {
		args = append(args, v)
		fmt.Fprintf(&b, "\n  AND "+cond, len(args))
	}
	if f.ProviderID != 0 {
		and("fulfillments.provider_id = $%d", f.ProviderID)
	}
	if f.IssuerAppID != 0 {
		and("fulfillments.issuer_app_id = $%d", f.IssuerAppID)
	}
	if f.CardNumber != "" {
		and("fulfillments.card_number = $%d", f.CardNumber)
	}
	if f.ProviderAppID == 0 {
		b.WriteString("\nORDER BY fulfillments.record_id\nLIMIT $2")
		return b.String(), args
	}
	and("fulfillments.provider_app_id = $%d", f.ProviderAppID)
	app := len(args)
	inner := b.String()
	b.Reset()
	fmt.Fprintf(&b, `SELECT f.* FROM service_providers p CROSS JOIN LATERAL (
%s
  AND fulfillments.provider_id = p.provider_id
ORDER BY fulfillments.record_id
LIMIT $2) f
WHERE p.app_id = $%d
ORDER BY f.record_id
LIMIT $2`, inner, app)
	return b.String(), args
}

// ---- writes ----

// BenefitItem reads a benefit item as this transaction sees it, whatever its status.
func (t *tx) BenefitItem(ctx context.Context, id int64) (projections.BenefitItem, error) {
	if err := t.check(ctx); err != nil {
		return projections.BenefitItem{}, err
	}
	b, err := scanBenefitItem(t.queryRow(ctx, true, `SELECT `+benefitItemColumns+` FROM benefit_items WHERE benefit_item_id = $1`, id))
	return b, notFound(err, "benefit item %d", id)
}

// Provider reads a provider as this transaction sees it, whatever its app.
func (t *tx) Provider(ctx context.Context, id int64) (projections.ServiceProvider, error) {
	if err := t.check(ctx); err != nil {
		return projections.ServiceProvider{}, err
	}
	p, err := scanProvider(t.queryRow(ctx, true, `SELECT `+providerColumns+` FROM service_providers WHERE provider_id = $1`, id))
	return p, notFound(err, "provider %d", id)
}

// Card reads a card as this transaction sees it, whatever its issuer.
func (t *tx) Card(ctx context.Context, number string) (projections.Card, error) {
	if err := t.check(ctx); err != nil {
		return projections.Card{}, err
	}
	c, err := scanCard(t.queryRow(ctx, true, `SELECT `+cardColumns+` FROM cards c WHERE c.card_number = $1`, number))
	return c, notFound(err, "card")
}

// Fulfillment reads a record as this transaction sees it.
func (t *tx) Fulfillment(ctx context.Context, id int64) (projections.Fulfillment, error) {
	if err := t.check(ctx); err != nil {
		return projections.Fulfillment{}, err
	}
	r, err := scanFulfillment(t.queryRow(ctx, true, `SELECT `+fulfillmentColumns+` FROM fulfillments WHERE record_id = $1`, id))
	return r, notFound(err, "fulfillment %d", id)
}

const upsertBenefitItem = `
INSERT INTO benefit_items (` + benefitItemColumns + `)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (benefit_item_id) DO UPDATE SET
    name = EXCLUDED.name,
    status = EXCLUDED.status,
    created_at = EXCLUDED.created_at,
    updated_at = EXCLUDED.updated_at`

func (t *tx) PutBenefitItem(ctx context.Context, b projections.BenefitItem) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	t.queue(upsertBenefitItem, b.BenefitItemID, b.Name, b.Status, b.CreatedAt, b.UpdatedAt)
	return nil
}

const upsertProvider = `
INSERT INTO service_providers (` + providerColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (provider_id) DO UPDATE SET
    app_id = EXCLUDED.app_id,
    name = EXCLUDED.name,
    type = EXCLUDED.type,
    contact = EXCLUDED.contact,
    points_code = EXCLUDED.points_code,
    status = EXCLUDED.status,
    allowed_item_ids = EXCLUDED.allowed_item_ids,
    created_at = EXCLUDED.created_at,
    updated_at = EXCLUDED.updated_at,
    developer_id = EXCLUDED.developer_id,
    review_notes = EXCLUDED.review_notes`

// PutProvider stores AllowedItemIDs as the ascending set the port promises,
// whatever order or repeats the writer gave, as the memory store does.
func (t *tx) PutProvider(ctx context.Context, p projections.ServiceProvider) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	// A copy (never NULL): the caller may reuse its slice before the batch is sent.
	ids := append(make([]int64, 0, len(p.AllowedItemIDs)), p.AllowedItemIDs...)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	t.queue(upsertProvider, p.ProviderID, p.AppID, p.Name, p.Type, p.Contact, opt(p.PointsCode), p.Status,
		ids, p.CreatedAt, p.UpdatedAt, p.DeveloperID, p.ReviewNotes)
	return nil
}

const upsertCard = `
INSERT INTO cards (card_number, issuer_app_id, holder_name, holder_phone, expires_at, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (card_number) DO UPDATE SET
    issuer_app_id = EXCLUDED.issuer_app_id,
    holder_name = EXCLUDED.holder_name,
    holder_phone = EXCLUDED.holder_phone,
    expires_at = EXCLUDED.expires_at,
    created_at = EXCLUDED.created_at,
    updated_at = EXCLUDED.updated_at`

const insertCardItem = `
INSERT INTO card_items (user_benefit_item_id, card_number, benefit_item_id, total, remaining)
VALUES ($1, $2, $3, $4, $5)`

// PutCard queues the card, the delete of its items and the insert of each
// new one, so the item set is replaced whole; an item another card holds (or
// a repeated one) fails the primary key.
func (t *tx) PutCard(ctx context.Context, c projections.Card) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	t.queue(upsertCard, c.CardNumber, c.IssuerAppID, c.HolderName, opt(c.HolderPhone), c.ExpiresAt,
		c.CreatedAt, c.UpdatedAt)
	t.queue(`DELETE FROM card_items WHERE card_number = $1`, c.CardNumber)
	for _, it := range c.Items {
		t.queue(insertCardItem, it.UserBenefitItemID, c.CardNumber, it.BenefitItemID, it.Total, it.Remaining)
	}
	return nil
}

const upsertFulfillment = `
INSERT INTO fulfillments (` + fulfillmentColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
ON CONFLICT (record_id) DO UPDATE SET
    card_number = EXCLUDED.card_number,
    issuer_app_id = EXCLUDED.issuer_app_id,
    user_benefit_item_id = EXCLUDED.user_benefit_item_id,
    benefit_item_id = EXCLUDED.benefit_item_id,
    benefit_item_name = EXCLUDED.benefit_item_name,
    provider_id = EXCLUDED.provider_id,
    provider_app_id = EXCLUDED.provider_app_id,
    quantity = EXCLUDED.quantity,
    status = EXCLUDED.status,
    points_code = EXCLUDED.points_code,
    remark = EXCLUDED.remark,
    initiated_at = EXCLUDED.initiated_at,
    rating = EXCLUDED.rating,
    updated_at = EXCLUDED.updated_at`

func (t *tx) PutFulfillment(ctx context.Context, r projections.Fulfillment) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	t.queue(upsertFulfillment, r.RecordID, r.CardNumber, r.IssuerAppID, r.UserBenefitItemID, r.BenefitItemID,
		r.BenefitItemName, r.ProviderID, r.ProviderAppID, r.Quantity, r.Status, opt(r.PointsCode), opt(r.Remark),
		r.InitiatedAt, opt(r.Rating), r.UpdatedAt)
	return nil
}
