package storetest

import (
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/projections"
)

// The stable error classes of the delivery log: a delivery's last class and
// each attempt's class are kept as written, and replaced with the row.
func testErrorClasses(t *testing.T, s Store) {
	ds := deliveryStore(t, s)
	x := dlv(1, 1)
	x.Status, x.Attempts = domain.DeliveryRetrying, 2
	x.LastError, x.LastErrorClass = ptr("tls: failed to verify certificate: x509: certificate signed by unknown authority"), ptr(domain.ErrorClassTLS)
	putDeliveries(t, ds, x)
	a1 := projections.Attempt{DeliveryID: x.DeliveryID, Attempt: 1, At: at(10), LatencyMS: 3,
		Error: ptr("dial tcp 203.0.113.7:443: connect: connection refused"), ErrorClass: ptr(domain.ErrorClassConnectionRefused), Outcome: "retry"}
	a2 := projections.Attempt{DeliveryID: x.DeliveryID, Attempt: 2, At: at(20), StatusCode: ptr(503), LatencyMS: 4,
		ErrorClass: ptr(domain.ErrorClassHTTPStatus), Outcome: "retry"}
	addAttempts(t, ds, a1, a2)
	got, as := getDelivery(t, ds, 1, x.DeliveryID)
	wantDelivery(t, "delivery with a class", got, x)
	wantAttempts(t, "attempts with classes", as, []projections.Attempt{a1, a2})

	// A later attempt that succeeded clears the class.
	x.Status, x.Attempts, x.LastStatus, x.LastError, x.LastErrorClass = domain.DeliveryDelivered, 3, ptr(200), nil, nil
	putDeliveries(t, ds, x)
	a2.ErrorClass = nil
	addAttempts(t, ds, a2)
	got, as = getDelivery(t, ds, 1, x.DeliveryID)
	wantDelivery(t, "delivery after success", got, x)
	wantAttempts(t, "attempt #2 replaced without class", as, []projections.Attempt{a1, a2})
	if l := listDeliveries(t, ds, domain.DeliveryFilter{AppID: 1}); len(l) == 1 {
		wantDelivery(t, "listed delivery", l[0], x)
	}
}
