package process

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// TestKill9WithACreationsClaimHeldDeliversOnce: on the Postgres event store
// and read models in one database, a delivery is claimed for the node's
// sender by the append that creates it. The node is SIGKILLed while the
// delivery's POST is open (its claim held, its outcome not recorded); the
// restarted node takes the dead node's claim over and delivers the same
// delivery id and body, once.
func TestKill9WithACreationsClaimHeldDeliversOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the platform binary")
	}
	type hit struct{ id, body string }
	hits := make(chan hit, 10)
	hang := make(chan struct{})
	var answered atomic.Bool
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hits <- hit{r.Header.Get("X-Webhook-Id"), string(b)}
		if answered.CompareAndSwap(false, true) {
			<-hang // the first is never answered: the node dies with the POST open
		}
	}))
	defer rcv.Close()
	defer close(hang)
	db := pgtest.New(t)
	env := []string{"PLATFORM_EVENTSTORE_URL=" + db, "PLATFORM_POSTGRES_URL=" + db, "PLATFORM_PORTAL_BASE_URL=http://127.0.0.1",
		"PLATFORM_WEBHOOK_ALLOW_LOOPBACK=1"}
	dir := t.TempDir()
	s := startServer(t, dir, env...)
	s.patchedUserWebhook(rcv.URL)
	var sent hit
	select {
	case sent = <-hits:
	case <-time.After(10 * time.Second):
		t.Fatal("no attempt")
	}
	s.kill()
	startServer(t, dir, env...)
	select {
	case again := <-hits:
		if again != sent {
			t.Fatalf("after kill -9 the delivery changed:\n%+v\n%+v", again, sent)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the delivery never came after the restart")
	}
	select {
	case extra := <-hits:
		t.Fatalf("delivered again after success: %+v", extra)
	case <-time.After(3 * time.Second):
	}
}
