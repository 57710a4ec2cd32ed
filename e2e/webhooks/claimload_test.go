package webhooks_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

// On Postgres, with the event store in the read models' database, the
// sender reads a delivery's stream in the round trip that claims it, not
// with a read of its own before the POST: counted through a proxy that sees
// every statement the node sends, N signed PATCHes (one user.profile.updated
// webhook each, all delivered, each body in clear) cost at most about N
// reads of one stream (the PATCHes' loads of their user, which a user the
// node has loaded skips), where the sender's own reads made them 2N; the
// claims' statements carry the delivery streams instead. Each first
// attempt here fails: the first is posted from the delivery as created
// (creation claimed it for this node's sender), the retry from what its
// claim read, each in clear.
func TestSenderReadsADeliveryWithItsClaim(t *testing.T) {
	t.Parallel()
	stmts, a, rcv, user := countedUser(t, "claimload", node.Config{WebhookSchedule: []time.Duration{10 * time.Millisecond}})
	streamReads := harness.Has("WHERE stream = $1 AND revision >= $2")
	claimReads := harness.Has("stream = ANY($1::text[])")
	reads0, claims0, got0 := stmts.Count(streamReads), stmts.Count(claimReads), len(rcv.WaitFor(1))

	const n = 10
	rcv.FailFirstAttempts(http.StatusServiceUnavailable)
	for i := range n {
		a.Expect("PATCH", user, map[string]any{"nickname": fmt.Sprintf("claimload-%d", i)}, http.StatusOK, "0")
	}
	// Each delivery's body is sealed in the log: posted in clear, it is
	// the webhook's JSON naming the changed field, at both attempts.
	attempts := map[string]int{}
	for k := got0 + 2*n; len(attempts) < n || !allTwice(attempts); k++ {
		clear(attempts)
		for _, w := range rcv.WaitFor(k) {
			if w.Event != "user.profile.updated" {
				continue
			}
			if !json.Valid(w.Body) || !bytes.Contains(w.Body, []byte(`"nickname"`)) {
				t.Fatalf("webhook %s posted %q, want its JSON in clear", w.ID, w.Body)
			}
			attempts[w.ID]++
		}
	}
	reads, claims := stmts.Count(streamReads)-reads0, stmts.Count(claimReads)-claims0
	t.Logf("%d deliveries, two attempts each: %d single-stream reads, %d claims reading their streams", n, reads, claims)
	if reads > n+n/2 {
		t.Errorf("%d PATCHes and their deliveries' %d attempts read a single stream %d times, want at most about %d (the PATCHes' loads alone)", n, 2*n, reads, n)
	}
	if claims == 0 {
		t.Errorf("no retry's claim read its delivery's stream")
	}
}

// countedUser starts a node (cfg, with its event store and read models in
// one database of its own, reached through a counting proxy) with an app
// whose webhook goes to a receiver and one registered user, whose path it
// returns; the registration's webhook is delivered and the read models
// caught up before it returns. The receiver checks signatures with the
// app's secret and accepts each delivery at its first attempt unless told
// otherwise.
func countedUser(t *testing.T, name string, cfg node.Config) (*harness.Statements, *harness.App, *harness.Receiver, string) {
	t.Helper()
	stmts, proxied := harness.CountStatements(t, harness.NodeDB(t))
	cfg.DataDir, cfg.EventStoreURL, cfg.PostgresURL, cfg.WebhookAllowLoopback = t.TempDir(), proxied, proxied, true
	p := harness.Start(t, cfg)
	rcv := harness.NewReceiver(t)
	a := p.CreateApp(name)
	rcv.Secret = a.WebhookSecret
	p.ConfigureWebhook(a, rcv.Srv.URL)
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody(name+"-1"), http.StatusCreated, "0").Data(t, &reg)
	rcv.WaitFor(1)
	if err := p.Node.WaitCaughtUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	return stmts, a, rcv, fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
}

// allTwice says whether every delivery was attempted twice.
func allTwice(attempts map[string]int) bool {
	for _, k := range attempts {
		if k < 2 {
			return false
		}
	}
	return true
}
