package node_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/node"
	noncebolt "github.com/healthtech/partner-open-platform/internal/nonces/bolt"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// twoNodes opens two nodes on one Postgres event store and one Postgres
// read-model store, each with its own data directory and the same master key
// and operator token, as a cluster runs them; tweak adjusts both configs.
func twoNodes(t *testing.T, tweak func(*node.Config)) (a, b *platform) {
	t.Helper()
	db := nodeDB(t)
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	cfg := func() node.Config {
		c := node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db, MasterKey: hex.EncodeToString(key), AdminToken: "adm_cluster_test"}
		if tweak != nil {
			tweak(&c)
		}
		return c
	}
	return start(t, cfg()), start(t, cfg())
}

const probe = "/open/v1/channel/users/0?channel_user_id=nobody"

// An app created, its secret rotated, suspended and resumed through node A
// is seen by node B on the very next request: no wait, no retry.
func TestClusterAppChangesApplyOnEveryNodeAtOnce(t *testing.T) {
	t.Parallel()
	pa, pb := twoNodes(t, nil)
	onA := pa.createApp("partner")
	onB := onA.on(pb)
	onB.expect("POST", "/open/v1/channel/users", registerBody("c-1"), http.StatusCreated, "0")
	onB.expect("GET", probe, nil, http.StatusNotFound, "USER_NOT_FOUND")

	res := pa.admin("POST", fmt.Sprintf("/admin/v1/apps/%d/rotate-secret", onA.ID), nil)
	if res.Status != http.StatusOK {
		t.Fatalf("rotate on A: %d %s", res.Status, res.Raw)
	}
	var rotated struct {
		Secret string `json:"app_secret"`
	}
	res.data(t, &rotated)
	onB.expect("GET", probe, nil, http.StatusUnauthorized, "HTTP_401") // the old secret, on B
	onB.Secret = rotated.Secret
	onB.expect("GET", probe, nil, http.StatusNotFound, "USER_NOT_FOUND")

	if res := pa.admin("POST", fmt.Sprintf("/admin/v1/apps/%d/suspend", onA.ID), map[string]any{"reason": "unpaid"}); res.Status != http.StatusOK {
		t.Fatalf("suspend on A: %d %s", res.Status, res.Raw)
	}
	onB.expect("GET", probe, nil, http.StatusForbidden, "APP_SUSPENDED")
	if res := pa.admin("POST", fmt.Sprintf("/admin/v1/apps/%d/resume", onA.ID), nil); res.Status != http.StatusOK {
		t.Fatalf("resume on A: %d %s", res.Status, res.Raw)
	}
	onB.expect("GET", probe, nil, http.StatusNotFound, "USER_NOT_FOUND")
}

// An OAuth token issued through node A is accepted by node B at once, and
// refused there as soon as A has acknowledged its revocation; an uploader
// registered through A ingests through B.
func TestClusterTokensApplyOnEveryNodeAtOnce(t *testing.T) {
	t.Parallel()
	pa, pb := twoNodes(t, nil)
	a := pa.createApp("partner")
	status, tok := pa.oauth("/oauth/token", url.Values{"grant_type": {"client_credentials"}}, a.Key, a.Secret)
	if status != http.StatusOK {
		t.Fatalf("token on A: %d %v", status, tok)
	}
	access := tok["access_token"].(string)
	daily := func(p *platform) response {
		req, _ := http.NewRequest("GET", p.srv.URL+"/v1/health/daily-report?open_user_id=424242", nil)
		req.Header.Set("Authorization", "Bearer "+access)
		req.Header.Set("X-App-Key", a.Key)
		return p.send(req)
	}
	// USER_NOT_FOUND: the token was accepted, the user does not exist.
	expectCode(t, "token issued on A, used on B", daily(pb), http.StatusNotFound, "USER_NOT_FOUND")
	if status, body := pa.oauth("/oauth/revoke", url.Values{"token": {access}}, a.Key, a.Secret); status != http.StatusOK {
		t.Fatalf("revoke on A: %d %v", status, body)
	}
	expectCode(t, "token revoked on A, used on B", daily(pb), http.StatusUnauthorized, "INVALID_TOKEN")

	up := pa.uploader("wearables")
	if res := pb.ingest(up, "POST", "/admin/v1/health-reports", reportBody(424242, "")); res.Status == http.StatusUnauthorized {
		t.Fatalf("uploader registered on A refused by B: %d %s", res.Status, res.Raw)
	}
}

// A named operator created through node A works on node B at once, and is
// refused there as soon as A has acknowledged its revocation.
func TestClusterOperatorsApplyOnEveryNodeAtOnce(t *testing.T) {
	t.Parallel()
	pa, pb := twoNodes(t, nil)
	id, tok := pa.operator("ops", "admin")
	if res := pb.as(tok, "GET", "/admin/v1/apps", nil); res.Status != http.StatusOK {
		t.Fatalf("operator named on A, on B: %d %s", res.Status, res.Raw)
	}
	if res := pa.admin("POST", fmt.Sprintf("/admin/v1/operators/%d/revoke", id), nil); res.Status != http.StatusOK {
		t.Fatalf("revoke on A: %d %s", res.Status, res.Raw)
	}
	if res := pb.as(tok, "GET", "/admin/v1/apps", nil); res.Status != http.StatusUnauthorized {
		t.Fatalf("operator revoked on A, on B: %d %s", res.Status, res.Raw)
	}
}

// The report pull's limit is one budget for the cluster: pulls spread over
// two nodes get the limit in all, not the limit per node.
func TestClusterReportPullLimitHoldsAcrossNodes(t *testing.T) {
	t.Parallel()
	const limit = 4
	pa, pb := twoNodes(t, func(c *node.Config) { c.ReportPullLimit = limit })
	a := pa.createApp("partner")
	nodes := []*app{a, a.on(pb)}
	for i := range limit {
		res := nodes[i%2].pull(int64(1000 + i))
		if res.Status == http.StatusTooManyRequests {
			t.Fatalf("pull %d of %d refused: %s", i+1, limit, res.Raw)
		}
		if got := res.Header.Get("X-RateLimit-Remaining"); got != fmt.Sprint(limit-1-i) {
			t.Fatalf("pull %d: X-RateLimit-Remaining %s, want %d (one budget over both nodes)", i+1, got, limit-1-i)
		}
	}
	for i, n := range nodes {
		res := n.pull(2000)
		if res.Status != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
			t.Fatalf("pull beyond the limit on node %d: %d %s", i, res.Status, res.Raw)
		}
	}
}

// The scheme M limit is one budget for the cluster as well.
func TestClusterSchemeMLimitHoldsAcrossNodes(t *testing.T) {
	t.Parallel()
	const limit = 6
	pa, pb := twoNodes(t, func(c *node.Config) { c.PartnerRateLimit = limit })
	a := pa.createApp("partner")
	nodes := []*app{a, a.on(pb)}
	for i := range limit {
		nodes[i%2].expect("GET", probe, nil, http.StatusNotFound, "USER_NOT_FOUND")
	}
	for _, n := range nodes {
		res := n.expect("GET", probe, nil, http.StatusTooManyRequests, "HTTP_429")
		if res.Header.Get("Retry-After") == "" || res.Header.Get("X-RateLimit-Limit") != fmt.Sprint(limit) {
			t.Fatalf("429 headers: %v", res.Header)
		}
	}
}

// A scheme H nonce used on node A is refused on node B: the replay guard
// is the shared database's.
func TestClusterNonceUsedOnARefusedOnB(t *testing.T) {
	t.Parallel()
	pa, pb := twoNodes(t, nil)
	a := pa.createApp("partner")
	nonce, now := freshNonce(), time.Now()
	if res := pa.send(a.requestH("GET", "/open/v1/health-reports/77", nil, nonce, now)); res.Status != http.StatusNotFound {
		t.Fatalf("first use on A: %d %s", res.Status, res.Raw)
	}
	res := pb.send(a.on(pb).requestH("GET", "/open/v1/health-reports/77", nil, nonce, now))
	expectCode(t, "the same request replayed on B", res, http.StatusUnauthorized, "INVALID_SIGNATURE")
}

// An embedded node keeps its nonces and signature bindings in its data
// directory: a request replayed after a restart, inside its window, is
// refused, and so is a scheme M signature replayed on another route.
func TestEmbeddedReplayGuardSurvivesRestart(t *testing.T) {
	t.Parallel()
	clock := &shiftClock{}
	cfg := node.Config{DataDir: t.TempDir(), Now: clock.Now}
	p := start(t, cfg)
	a := p.createApp("partner")
	nonce, now := freshNonce(), time.Now()
	if res := p.send(a.requestH("GET", "/open/v1/health-reports/77", nil, nonce, now)); res.Status != http.StatusNotFound {
		t.Fatalf("first use: %d %s", res.Status, res.Raw)
	}
	body := encode(t, registerBody("r-1"))
	write := a.request("POST", "/open/v1/channel/users", body, now)
	if res := p.send(write); res.Status != http.StatusCreated {
		t.Fatalf("register: %d %s", res.Status, res.Raw)
	}
	p.stop()
	clock.Advance(auth.BindingGrace + 100*time.Millisecond) // past the cross-route grace

	p = start(t, cfg)
	a.p = p
	res := p.send(a.requestH("GET", "/open/v1/health-reports/77", nil, nonce, now))
	expectCode(t, "scheme H request replayed after a restart", res, http.StatusUnauthorized, "INVALID_SIGNATURE")
	// The registration's signature, captured and sent to another write route.
	replay, _ := http.NewRequest("POST", p.srv.URL+"/open/v1/channel/users/1/family-groups", bytes.NewReader(body))
	for _, h := range []string{"X-App-Id", "X-Timestamp", "X-Signature", "Content-Type"} {
		replay.Header.Set(h, write.Header.Get(h))
	}
	expectCode(t, "scheme M signature replayed on another route after a restart", p.send(replay), http.StatusUnauthorized, "HTTP_401")
}

// An embedded node upgraded from a release that kept nonces in bbolt
// (data/nonces.db) refuses the nonces that file held, and removes it once
// they are carried over to data/nonces.log.
func TestEmbeddedReplayGuardKeepsTheBoltFilesNonces(t *testing.T) {
	cfg := node.Config{DataDir: t.TempDir()}
	p := start(t, cfg)
	a := p.createApp("partner")
	p.stop()
	if err := os.Remove(filepath.Join(cfg.DataDir, "nonces.log")); err != nil {
		t.Fatal(err)
	}
	old, err := noncebolt.Open(filepath.Join(cfg.DataDir, "nonces.db"))
	if err != nil {
		t.Fatal(err)
	}
	nonce, now := freshNonce(), time.Now()
	if fresh, err := old.Use(t.Context(), fmt.Sprint("h:", a.ID), "n:"+nonce, now.Add(5*time.Minute)); err != nil || !fresh {
		t.Fatalf("use in the old file: %v, %v", fresh, err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	p = start(t, cfg)
	a.p = p
	res := p.send(a.requestH("GET", "/open/v1/health-reports/77", nil, nonce, now))
	expectCode(t, "scheme H nonce of the old file replayed after the upgrade", res, http.StatusUnauthorized, "INVALID_SIGNATURE")
	if res := p.send(a.requestH("GET", "/open/v1/health-reports/77", nil, freshNonce(), now)); res.Status != http.StatusNotFound {
		t.Fatalf("a fresh nonce after the upgrade: %d %s", res.Status, res.Raw)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "nonces.db")); !os.IsNotExist(err) {
		t.Fatalf("the old nonce file is still there after its import: %v", err)
	}
}

// Nodes sharing a database must share the operator token: a node that
// would make up a token of its own refuses to start and says what to set;
// one given the others' token starts.
func TestClusterRefusesAMadeUpOperatorToken(t *testing.T) {
	t.Parallel()
	db := nodeDB(t)
	first := start(t, node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db})
	key := keyOf(t, first)
	cfg := node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db, MasterKey: key, Logger: quietLogger()}
	for range 2 { // and again: the refused start left no token behind to be mistaken for a rotation
		if n, err := node.Open(t.Context(), cfg); err == nil {
			n.Close()
			t.Fatal("a node with a made-up operator token started beside a node with another")
		} else if !strings.Contains(err.Error(), "PLATFORM_ADMIN_TOKEN") {
			t.Fatalf("refusal does not name PLATFORM_ADMIN_TOKEN: %v", err)
		}
	}
	cfg.AdminToken = first.node.AdminToken
	second := start(t, cfg)
	if res := second.admin("GET", "/admin/v1/apps", nil); res.Status != http.StatusOK {
		t.Fatalf("operator token of the first node on the second: %d %s", res.Status, res.Raw)
	}
}

// Nodes sharing an event store must share the master key: a node given
// another key refuses to start, naming the variable, rather than failing
// every partner whose secret it cannot open.
func TestClusterRefusesAnotherMasterKey(t *testing.T) {
	t.Parallel()
	pa, _ := twoNodes(t, nil)
	pa.createApp("partner")
	other := make([]byte, 32)
	if _, err := rand.Read(other); err != nil {
		t.Fatal(err)
	}
	db := pa.cfg.PostgresURL
	_, err := node.Open(t.Context(), node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db,
		AdminToken: pa.cfg.AdminToken, MasterKey: hex.EncodeToString(other), Logger: quietLogger()})
	if err == nil || !strings.Contains(err.Error(), "PLATFORM_MASTER_KEY") {
		t.Fatalf("a node with another master key: %v, want a refusal naming PLATFORM_MASTER_KEY", err)
	}
}

// keyOf reads the master key a node made up in its data directory.
func keyOf(t *testing.T, p *platform) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.cfg.DataDir, "master.key"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// BenchmarkClusterSchemeMRead measures a signed read on node B of a
// two-node cluster with the default freshness (a head read after every
// lookup arrives) against a staleness bound of an hour (no head reads), in
// the same run: the price of "changes apply on every node at once".
func BenchmarkClusterSchemeMRead(b *testing.B) {
	for _, c := range []struct {
		name      string
		staleness time.Duration
	}{{"staleness-1h", time.Hour}, {"staleness-0", 0}} {
		b.Run(c.name, func(b *testing.B) {
			db := pgtest.New(b)
			key := make([]byte, 32)
			if _, err := rand.Read(key); err != nil {
				b.Fatal(err)
			}
			cfg := func() node.Config {
				return node.Config{DataDir: b.TempDir(), EventStoreURL: db, PostgresURL: db, MasterKey: hex.EncodeToString(key),
					AdminToken: "adm_bench", DirectoryStaleness: c.staleness, PartnerRateLimit: -1}
			}
			pa, pb := start(b, cfg()), start(b, cfg())
			onB := pa.createApp("partner").on(pb)
			onB.expect("GET", probe, nil, http.StatusNotFound, "USER_NOT_FOUND")
			for b.Loop() {
				if res := onB.do("GET", probe, nil); res.Status != http.StatusNotFound {
					b.Fatalf("%d %s", res.Status, res.Raw)
				}
			}
		})
	}
}
