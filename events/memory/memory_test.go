package memory_test

import (
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/events/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) events.Store {
		s := memory.New()
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
