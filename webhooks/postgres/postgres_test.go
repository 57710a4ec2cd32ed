package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/webhooks"
	"github.com/healthtech/partner-open-platform/webhooks/claimstest"
	"github.com/healthtech/partner-open-platform/webhooks/postgres"
)

func TestConformance(t *testing.T) {
	claimstest.Run(t, func(t *testing.T) (webhooks.Claims, webhooks.Claims) {
		db := pgtest.New(t)
		open := func() webhooks.Claims {
			c, err := postgres.Open(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		return open(), open()
	})
	claimstest.RunNodeBound(t, func(t *testing.T, grace time.Duration) (webhooks.Claims, webhooks.Claims, func(webhooks.Claims)) {
		db := pgtest.New(t)
		open := func() webhooks.Claims {
			c, err := postgres.Open(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			c.DeadGrace = grace
			t.Cleanup(func() { c.Close() })
			return c
		}
		return open(), open(), func(c webhooks.Claims) { c.(*postgres.Claims).Close() }
	})
}
