// Package postgres keeps webhook delivery claims in Postgres, so that the
// nodes sharing one database send each delivery from one node at a time.
// Lapsing uses the database's clock alone, so the nodes' clocks may differ.
package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/internal/pgmigrate"
	"github.com/healthtech/partner-open-platform/webhooks"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*/*.sql
var migrationFiles embed.FS

// migrationLock is the read-model store's schema lock (projections/postgres):
// this part is recorded in the same schema_versions table, so both must
// create and write it under one lock.
const migrationLock int64 = 0x726561646d6f646c

// Claims is webhooks.Claims in the table webhook_delivery_claims.
type Claims struct {
	pool  *pgxpool.Pool
	owned bool // Close closes pool (Open made it)
}

var _ webhooks.Claims = (*Claims)(nil)

// Open connects to url and brings the claims table up to date.
func Open(ctx context.Context, url string) (*Claims, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("webhook claims: %w", err)
	}
	c, err := New(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	c.owned = true
	return c, nil
}

// New brings the claims table up to date over a pool the caller already
// has (a node's read-model pool), so a node keeps one pool per database.
func New(ctx context.Context, pool *pgxpool.Pool) (*Claims, error) {
	files, err := fs.Sub(migrationFiles, "migrations")
	if err == nil {
		s := pgmigrate.Schema{Files: files, Parts: []string{"webhook_claims"}, Table: "schema_versions", Lock: migrationLock}
		err = s.Apply(ctx, pool)
	}
	if err != nil {
		return nil, fmt.Errorf("webhook claims: %w", err)
	}
	return &Claims{pool: pool}, nil
}

// Close releases the connections of a pool Open made.
func (c *Claims) Close() error {
	if c.owned {
		c.pool.Close()
	}
	return nil
}

// claimSQL inserts a row per free id and takes over rows whose claim
// lapsed; a row another claim holds is left alone and not returned. Ids are
// de-duplicated (one statement may not touch a row twice) and sorted, so
// concurrent claimers lock rows in one order and cannot deadlock.
const claimSQL = `
INSERT INTO webhook_delivery_claims AS c (delivery_id, owner, token, until)
SELECT id, $2, $3, now() + $4 * interval '1 microsecond'
FROM (SELECT DISTINCT unnest($1::text[]) AS id) ids
ORDER BY id
ON CONFLICT (delivery_id) DO UPDATE
SET owner = excluded.owner, token = excluded.token, until = excluded.until
WHERE c.until <= now()
RETURNING delivery_id`

// Claim implements webhooks.Claims.
func (c *Claims) Claim(ctx context.Context, owner string, ids []string, ttl time.Duration) ([]webhooks.Claim, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	token := webhooks.NewClaimToken()
	rows, err := c.pool.Query(ctx, claimSQL, ids, owner, token, ttl.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("webhook claims: claim: %w", err)
	}
	defer rows.Close()
	var out []webhooks.Claim
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("webhook claims: claim: %w", err)
		}
		out = append(out, webhooks.Claim{DeliveryID: id, Token: token})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("webhook claims: claim: %w", err)
	}
	return out, nil
}

// Release implements webhooks.Claims.
func (c *Claims) Release(ctx context.Context, claims []webhooks.Claim) error {
	if len(claims) == 0 {
		return nil
	}
	// Sorted like claims, for the same lock order.
	sorted := slices.SortedFunc(slices.Values(claims), func(a, b webhooks.Claim) int { return strings.Compare(a.DeliveryID, b.DeliveryID) })
	ids, tokens := make([]string, len(sorted)), make([]string, len(sorted))
	for i, cl := range sorted {
		ids[i], tokens[i] = cl.DeliveryID, cl.Token
	}
	_, err := c.pool.Exec(ctx, `
DELETE FROM webhook_delivery_claims c
USING unnest($1::text[], $2::text[]) AS r(id, token)
WHERE c.delivery_id = r.id AND c.token = r.token`, ids, tokens)
	if err != nil {
		return fmt.Errorf("webhook claims: release: %w", err)
	}
	return nil
}
