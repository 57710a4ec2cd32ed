package memory_test

import (
	"testing"

	"github.com/healthtech/partner-open-platform/webhooks"
	"github.com/healthtech/partner-open-platform/webhooks/claimstest"
	"github.com/healthtech/partner-open-platform/webhooks/memory"
)

func TestConformance(t *testing.T) {
	claimstest.Run(t, func(t *testing.T) (webhooks.Claims, webhooks.Claims) {
		c := memory.NewClaims()
		return c, c
	})
}
