package postgres

import (
	"context"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/storetest"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// open gives t a store on a fresh database of the test server.
func open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), pgtest.New(t))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) events.Store { return open(t) })
}
