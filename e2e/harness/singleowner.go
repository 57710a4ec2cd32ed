package harness

import (
	"context"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
)

func Head(t testing.TB, p *Platform) events.Position {
	t.Helper()
	h, err := p.Node.StoredEvents.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h
}
