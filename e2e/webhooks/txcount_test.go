package webhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// maxIdleTxPerSecond bounds the Postgres transactions an idle node commits
// per second. An idle transaction costs about 0.27 ms of CPU, the
// platform's and its Postgres server's together (bench.sh's webhook-cost
// idle row), so the 2 ms/s an idle node may spend would allow 7 a second if
// nothing else ran; the runtime and Postgres's own background processes
// take most of it, hence 5: one lease renewal statement per third of the
// lease TTL (it reads the balancer's load too), the read models' progress
// checks in one statement every 30 s, the safety polls every 30 s, and the
// pool's pings, which grow on a loaded machine (1.1-1.7 a second measured
// alone, 3.9 beside a package of parallel tests).
const maxIdleTxPerSecond = 5

// maxTxPerDelivery bounds the Postgres transactions one delivered webhook
// costs at a low rate, where no two deliveries share a transaction. What
// is left (docs/postgres-cost.md): three appends (the PATCH, the
// delivery's creation, which also claims it for the sender, and the
// attempt's outcome, which also releases the claim), the read models'
// applies (about three), the scheme M route binding, and the sender's
// timed scans (at most one a second while a delivery is due): measured
// 8.3-8.7 on a loaded machine.
// The bound leaves room for a loaded machine's smaller batches; the goal of
// 5 needs deliveries created in the write's own transaction, which this
// bound does not claim.
const maxTxPerDelivery = 20

// statsSettle is how long a count takes at most to reach
// pg_stat_database: a backend publishes at most once a second, and one
// that went idle with counts unpublished does within ten seconds.
const statsSettle = 11 * time.Second

// TestPostgresTransactionsPerWebhook counts (never times) what webhooks
// cost Postgres, on a database of its own: the database's committed and
// rolled-back transactions (pg_stat_database, read over a connection to
// another database) over an idle stretch give the idle rate; over N PATCHes
// at 10/s (one user.profile.updated webhook each, all delivered) and the
// settling wait after them, less the idle rate over the same time, they
// give the transactions per delivery. Each count is read after a wait
// long enough for every backend to have published what came before.
//
// Not parallel: counts depend on how often work shares a transaction, so
// it runs before the package's parallel tests load the machine.
func TestPostgresTransactionsPerWebhook(t *testing.T) {
	db := harness.NodeDB(t)
	admin, name := adminOf(t, db)
	p := harness.Start(t, node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db, WebhookAllowLoopback: true})
	rcv := harness.NewReceiver(t)
	a := p.CreateApp("txcount")
	rcv.Secret = a.WebhookSecret // each delivered at its first attempt
	p.ConfigureWebhook(a, rcv.Srv.URL)
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("tx-1"), http.StatusCreated, "0").Data(t, &reg)
	user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
	if err := p.Node.WaitCaughtUp(t.Context()); err != nil {
		t.Fatal(err)
	}

	time.Sleep(statsSettle)
	t0, x0 := time.Now(), xacts(t, admin, name)
	time.Sleep(statsSettle)
	t1, x1 := time.Now(), xacts(t, admin, name)
	idle := float64(x1-x0) / t1.Sub(t0).Seconds()

	const n = 20
	for i := range n {
		a.Expect("PATCH", user, map[string]any{"nickname": fmt.Sprintf("n%d", i)}, http.StatusOK, "0")
		time.Sleep(100 * time.Millisecond)
	}
	// The registration's family-group webhook arrives too, in any order.
	for k := n; ; k++ {
		updated := 0
		for _, w := range rcv.WaitFor(k) {
			if w.Event == "user.profile.updated" {
				updated++
			}
		}
		if updated == n {
			break
		}
	}
	time.Sleep(statsSettle)
	t2, x2 := time.Now(), xacts(t, admin, name)
	perDelivery := (float64(x2-x1) - idle*t2.Sub(t1).Seconds()) / n
	t.Logf("idle: %.2f transactions/s; %d deliveries: %.2f transactions each", idle, n, perDelivery)
	if idle > maxIdleTxPerSecond {
		t.Errorf("an idle node committed %.2f Postgres transactions a second, want at most %d", idle, maxIdleTxPerSecond)
	}
	if perDelivery > maxTxPerDelivery {
		t.Errorf("a delivered webhook cost %.2f Postgres transactions, want at most %d", perDelivery, maxTxPerDelivery)
	}
}

// adminOf is a connection to the server's postgres database (whose own
// transactions are not counted) and the name of db's database.
func adminOf(t *testing.T, db string) (admin, name string) {
	t.Helper()
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	name = strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	return u.String(), name
}

// xacts is the database's committed and rolled-back transactions so far.
func xacts(t *testing.T, admin, name string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), harness.WaitBound)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int64
	if err := conn.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
