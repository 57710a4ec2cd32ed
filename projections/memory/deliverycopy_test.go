package memory

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/projections"
)

// A delivery's event projected through the deliveries projector copies its
// rendered body once, into the tail its row keeps: 200 deliveries of 64 KB
// bodies allocate about 200 times 64 KB, not one copy for the Delivery,
// another for the store and then the tail, and its batch's undo keeps it
// without an allocation of its own. The rows read back whole.
func TestAProjectedDeliveryCopiesItsBodyOnce(t *testing.T) {
	const n, size = 200, 64 << 10
	ctx := context.Background()
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := New()
	p := projections.DeliveriesProjector(s)
	created := make([]events.Envelope, n)
	bodies := make([][]byte, n)
	for i := range created {
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		bodies[i] = fmt.Appendf(nil, `{"event":"user.profile.updated","delivery_id":"%s","app_id":1,"data":{"open_user_id":%d,"nickname":"%s"}}`,
			id, i+1, strings.Repeat("x", size))
		created[i] = createdAt(id, string(bodies[i]), uint64(i+1), base)
		created[i].Payload.(*catalog.DeliveryCreated).SourceStream = fmt.Sprintf("user-%d", i+1)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := p.Apply(ctx, created, created[n-1].Position); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	per := float64(after.TotalAlloc-before.TotalAlloc) / n
	t.Logf("%.0f bytes, %.2f allocations per delivery of a %d-byte body", per, float64(after.Mallocs-before.Mallocs)/n, len(bodies[0]))
	if per > 1.5*float64(len(bodies[0])) {
		t.Errorf("%.0f bytes allocated per delivery of a %d-byte body: the body was copied more than once", per, len(bodies[0]))
	}
	// The batch's undo keeps the deliveries in chunks: neither the
	// delivery written nor the row it replaced goes to the heap alone
	// (10.5 allocations per delivery; 12.4 with each on the heap).
	if allocs := float64(after.Mallocs-before.Mallocs) / n; allocs > 11.5 {
		t.Errorf("%.2f allocations per delivery, want at most 11.5", allocs)
	}
	for i, want := range bodies {
		got, _, err := s.Delivery(ctx, 1, fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Body) != string(want) || got.Subject != fmt.Sprintf("user-%d", i+1) {
			t.Fatalf("delivery %d reads back body %.80q… subject %q", i, got.Body, got.Subject)
		}
	}
}
