// Package postgres keeps the rate limits' token buckets in Postgres, so that
// every node sharing the database admits a partner's limit once in all, not
// once per node.
//
// Each decision is one statement: an INSERT ... ON CONFLICT DO UPDATE on the
// bucket's row that refills it for the time elapsed since it was last
// written, takes what it can and returns the level. The conflict takes the
// row lock, so concurrent decisions on one key, from any node, are applied
// one after another to the latest row and can never both spend the same
// token. The table (rate_buckets) is created by the read-model store's
// migrations (projections/postgres, part "cluster").
package postgres

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/healthtech/partner-open-platform/internal/ratelimit"
)

// Store is a pool over the shared buckets; Bucket makes one limit over it.
type Store struct {
	pool  *pgxpool.Pool
	owned bool // Close closes pool (Open made it)
}

// New uses a pool the caller already has (a node's read-model pool), so a
// node keeps one pool per database.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Close releases the connections of a pool Open made.
func (s *Store) Close() error {
	if s.owned {
		s.pool.Close()
	}
	return nil
}

// Bucket is one named limit of limit requests per period per key, shared by
// every node that uses the same name on the same database.
type Bucket struct {
	store  *Store
	name   string
	limit  int
	period time.Duration
	// Now replaces the database's clock (tests); nil: the database's
	// clock_timestamp(), one clock for every node, whatever their drift.
	Now func() time.Time
}

// Bucket builds the limit called name (e.g. "report_pull"); nodes must give
// one name the same limit and period, or each decides with its own.
func (s *Store) Bucket(name string, limit int, period time.Duration) *Bucket {
	return &Bucket{store: s, name: name, limit: limit, period: period}
}

// takeQuery refills the bucket for the time since it was written (never
// negative: a statement that waited for the row lock may have read its clock
// before the write it waited for), adds the tokens given back, caps at the
// capacity, and grants min(want, whole tokens), recording the grant in the
// row so that RETURNING can say it. A new key starts full.
//
// $1 name, $2 key, $3 capacity, $4 tokens per second, $5 want, $6 back,
// $7 now (NULL: the database's clock).
var takeQuery = TakeWhen("true")

// TakeWhen is takeQuery's statement taking only when gate (an SQL
// condition, e.g. on an earlier common table expression of the same
// statement) holds; with the same parameters $1 to $7, it returns
// (tokens, granted), or no row when gate is false. A caller that combines
// the decision with other work of its request in one statement
// (projections/postgres, the report pull) uses it so that the bucket's
// arithmetic stays here.
func TakeWhen(gate string) string {
	return strings.NewReplacer(
		"REFILL", `least($3::float8, b.tokens + $6::float8 + greatest(0, extract(epoch FROM EXCLUDED.at - b.at))::float8 * $4::float8)`,
		"GATE", gate,
	).Replace(`
INSERT INTO rate_buckets AS b (name, key, tokens, granted, at)
SELECT $1::text, $2::text, $3::float8 - least($5::float8, floor($3::float8)), least($5::float8, floor($3::float8))::int,
       coalesce($7::timestamptz, clock_timestamp())
WHERE GATE
ON CONFLICT (name, key) DO UPDATE SET
    tokens  = REFILL - least($5::float8, floor(REFILL)),
    granted = least($5::float8, floor(REFILL))::int,
    at      = greatest(b.at, EXCLUDED.at)
RETURNING tokens, granted`)
}

// TakeWhenFrom is TakeWhen with its seven parameters numbered from first
// ($first to $first+6) instead of $1 to $7, for a statement whose own
// parameters come before them.
func TakeWhenFrom(gate string, first int) string {
	return param.ReplaceAllStringFunc(TakeWhen(gate), func(p string) string {
		n, _ := strconv.Atoi(p[1:])
		return "$" + strconv.Itoa(n+first-1)
	})
}

var param = regexp.MustCompile(`\$[0-9]+`)

// Spec returns the bucket's name, limit, period and clock (nil: the
// database's), for a caller that takes from it with TakeWhen.
func (b *Bucket) Spec() ratelimit.BucketSpec {
	return ratelimit.BucketSpec{Name: b.name, Limit: b.limit, Period: b.period, Now: b.Now}
}

// Take implements ratelimit.Taker on the shared row of (name, key).
func (b *Bucket) Take(ctx context.Context, key string, want, back int) (ratelimit.Grant, error) {
	var now *time.Time
	if b.Now != nil {
		t := b.Now()
		now = &t
	}
	var g ratelimit.Grant
	rate := ratelimit.Rate(b.limit, b.period)
	err := b.store.pool.QueryRow(ctx, takeQuery, b.name, key, b.limit, rate, max(want, 0), max(back, 0), now).Scan(&g.Tokens, &g.Granted)
	if err != nil {
		return ratelimit.Grant{}, fmt.Errorf("ratelimit/postgres: take from the %s bucket of %q: %w", b.name, key, err)
	}
	return g, nil
}

// Allow takes one token: the decision of one request.
func (b *Bucket) Allow(ctx context.Context, key string) (ratelimit.Decision, error) {
	g, err := b.Take(ctx, key, 1, 0)
	if err != nil {
		return ratelimit.Decision{}, err
	}
	return ratelimit.Decide(g, 1, b.limit, b.period), nil
}
