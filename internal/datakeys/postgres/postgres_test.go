package postgres

import (
	"context"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/datakeys"
	"github.com/healthtech/partner-open-platform/internal/datakeys/keystest"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

func TestConformance(t *testing.T) {
	keystest.Run(t, func(t *testing.T) datakeys.Backend {
		s, err := Open(context.Background(), pgtest.New(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
