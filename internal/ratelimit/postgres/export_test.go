package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Open (tests only) connects to the database whose read-model migrations created
// rate_buckets (projections/postgres.Open applies them).
func Open(ctx context.Context, url string) (*Store, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("ratelimit/postgres: %w", err)
	}
	return &Store{pool: pool, owned: true}, nil
}
