package postgres

import (
	"context"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/keys"
	"github.com/healthtech/partner-open-platform/keys/keystest"
)

func TestConformance(t *testing.T) {
	keystest.Run(t, func(t *testing.T) keys.Backend {
		s, err := Open(context.Background(), pgtest.New(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
