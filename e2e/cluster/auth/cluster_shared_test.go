package auth_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/node"
	noncebolt "github.com/healthtech/partner-open-platform/internal/nonces/bolt"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// An app created, its secret rotated, suspended and resumed through node A
// is seen by node B on the very next request: no wait, no retry.
func TestClusterAppChangesApplyOnEveryNodeAtOnce(t *testing.T) {
	t.Parallel()
	pa, pb := harness.TwoNodes(t, nil)
	onA := pa.CreateApp("partner")
	onB := onA.On(pb)
	onB.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("c-1"), http.StatusCreated, "0")
	onB.Expect("GET", harness.Probe, nil, http.StatusNotFound, "USER_NOT_FOUND")

	res := pa.Admin("POST", fmt.Sprintf("/admin/v1/apps/%d/rotate-secret", onA.ID), nil)
	if res.Status != http.StatusOK {
		t.Fatalf("rotate on A: %d %s", res.Status, res.Raw)
	}
	var rotated struct {
		Secret string `json:"app_secret"`
	}
	res.Data(t, &rotated)
	onB.Expect("GET", harness.Probe, nil, http.StatusUnauthorized, "HTTP_401") // the old secret, on B
	onB.Secret = rotated.Secret
	onB.Expect("GET", harness.Probe, nil, http.StatusNotFound, "USER_NOT_FOUND")

	if res := pa.Admin("POST", fmt.Sprintf("/admin/v1/apps/%d/suspend", onA.ID), map[string]any{"reason": "unpaid"}); res.Status != http.StatusOK {
		t.Fatalf("suspend on A: %d %s", res.Status, res.Raw)
	}
	onB.Expect("GET", harness.Probe, nil, http.StatusForbidden, "APP_SUSPENDED")
	if res := pa.Admin("POST", fmt.Sprintf("/admin/v1/apps/%d/resume", onA.ID), nil); res.Status != http.StatusOK {
		t.Fatalf("resume on A: %d %s", res.Status, res.Raw)
	}
	onB.Expect("GET", harness.Probe, nil, http.StatusNotFound, "USER_NOT_FOUND")
}

// An OAuth token issued through node A is accepted by node B at once, and
// refused there as soon as A has acknowledged its revocation; an uploader
// registered through A ingests through B.
func TestClusterTokensApplyOnEveryNodeAtOnce(t *testing.T) {
	t.Parallel()
	pa, pb := harness.TwoNodes(t, nil)
	a := pa.CreateApp("partner")
	status, tok := pa.OAuth("/oauth/token", url.Values{"grant_type": {"client_credentials"}}, a.Key, a.Secret)
	if status != http.StatusOK {
		t.Fatalf("token on A: %d %v", status, tok)
	}
	access := tok["access_token"].(string)
	daily := func(p *harness.Platform) harness.Response {
		req, _ := http.NewRequest("GET", p.Srv.URL+"/v1/health/daily-report?open_user_id=424242", nil)
		req.Header.Set("Authorization", "Bearer "+access)
		req.Header.Set("X-App-Key", a.Key)
		return p.Send(req)
	}
	// USER_NOT_FOUND: the token was accepted, the user does not exist.
	harness.ExpectCode(t, "token issued on A, used on B", daily(pb), http.StatusNotFound, "USER_NOT_FOUND")
	if status, body := pa.OAuth("/oauth/revoke", url.Values{"token": {access}}, a.Key, a.Secret); status != http.StatusOK {
		t.Fatalf("revoke on A: %d %v", status, body)
	}
	harness.ExpectCode(t, "token revoked on A, used on B", daily(pb), http.StatusUnauthorized, "INVALID_TOKEN")

	up := pa.Uploader("wearables")
	if res := pb.Ingest(up, "POST", "/admin/v1/health-reports", harness.ReportBody(424242, "")); res.Status == http.StatusUnauthorized {
		t.Fatalf("uploader registered on A refused by B: %d %s", res.Status, res.Raw)
	}
}

// A named operator created through node A works on node B at once, and is
// refused there as soon as A has acknowledged its revocation.
func TestClusterOperatorsApplyOnEveryNodeAtOnce(t *testing.T) {
	t.Parallel()
	pa, pb := harness.TwoNodes(t, nil)
	id, tok := pa.Operator("ops", "admin")
	if res := pb.As(tok, "GET", "/admin/v1/apps", nil); res.Status != http.StatusOK {
		t.Fatalf("operator named on A, on B: %d %s", res.Status, res.Raw)
	}
	if res := pa.Admin("POST", fmt.Sprintf("/admin/v1/operators/%d/revoke", id), nil); res.Status != http.StatusOK {
		t.Fatalf("revoke on A: %d %s", res.Status, res.Raw)
	}
	if res := pb.As(tok, "GET", "/admin/v1/apps", nil); res.Status != http.StatusUnauthorized {
		t.Fatalf("operator revoked on A, on B: %d %s", res.Status, res.Raw)
	}
}

// The report pull's limit is one budget for the cluster: pulls spread over
// two nodes get the limit in all, not the limit per node.
func TestClusterReportPullLimitHoldsAcrossNodes(t *testing.T) {
	t.Parallel()
	const limit = 4
	_, nodes := oneAppOnTwoNodes(t, func(c *node.Config) { c.ReportPullLimit = limit })
	for i := range limit {
		res := nodes[i%2].Pull(int64(1000 + i))
		if res.Status == http.StatusTooManyRequests {
			t.Fatalf("pull %d of %d refused: %s", i+1, limit, res.Raw)
		}
		if got := res.Header.Get("X-RateLimit-Remaining"); got != fmt.Sprint(limit-1-i) {
			t.Fatalf("pull %d: X-RateLimit-Remaining %s, want %d (one budget over both nodes)", i+1, got, limit-1-i)
		}
	}
	for i, n := range nodes {
		res := n.Pull(2000)
		if res.Status != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
			t.Fatalf("pull beyond the limit on node %d: %d %s", i, res.Status, res.Raw)
		}
	}
}

// A report-pull limit raised to 1,200/min or more is leased, 0.1 s of its
// rate (two tokens here) at a time: a node's first pull takes two tokens
// from the app's one shared bucket and its next is answered from its lease
// without writing the bucket's row; the other node leases its own from the
// same row.
func TestClusterRaisedReportPullLimitIsLeased(t *testing.T) {
	t.Parallel()
	const limit = 1200
	pa, nodes := oneAppOnTwoNodes(t, func(c *node.Config) { c.ReportPullLimit = limit })
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pa.Cfg.PostgresURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	bucket := func() (granted int, at time.Time) {
		t.Helper()
		err := conn.QueryRow(ctx, `SELECT granted, at FROM rate_buckets WHERE name = 'report_pull' AND key = $1`,
			strconv.FormatInt(nodes[0].ID, 10)).Scan(&granted, &at)
		if err != nil {
			t.Fatalf("the app's report-pull bucket: %v", err)
		}
		return granted, at
	}
	pull := func(on int) {
		t.Helper()
		res := nodes[on].Pull(987654) // no such report: answered after the limit's decision
		if res.Status != http.StatusNotFound || res.Header.Get("X-RateLimit-Limit") != strconv.Itoa(limit) {
			t.Fatalf("pull on node %d: %d, limit header %q: %s", on, res.Status, res.Header.Get("X-RateLimit-Limit"), res.Raw)
		}
	}
	var renewed time.Time
	for on := range nodes {
		pull(on)
		granted, at := bucket()
		if granted != 2 || !at.After(renewed) {
			t.Fatalf("node %d's first pull: the bucket granted %d at %v (before: %v), want a lease of 2 taken now", on, granted, at, renewed)
		}
		pull(on)
		if _, again := bucket(); !again.Equal(at) {
			t.Fatalf("node %d's second pull wrote the bucket's row (at %v, then %v): want it answered from the lease", on, at, again)
		}
		renewed = at
	}
}

// The scheme M limit is one budget for the cluster as well.
func TestClusterSchemeMLimitHoldsAcrossNodes(t *testing.T) {
	t.Parallel()
	const limit = 6
	_, nodes := oneAppOnTwoNodes(t, func(c *node.Config) { c.PartnerRateLimit = limit })
	for i := range limit {
		nodes[i%2].Expect("GET", harness.Probe, nil, http.StatusNotFound, "USER_NOT_FOUND")
	}
	for _, n := range nodes {
		res := n.Expect("GET", harness.Probe, nil, http.StatusTooManyRequests, "HTTP_429")
		if res.Header.Get("Retry-After") == "" || res.Header.Get("X-RateLimit-Limit") != fmt.Sprint(limit) {
			t.Fatalf("429 headers: %v", res.Header)
		}
	}
}

// Signed writes share the scheme M budget across nodes too, through
// leases of one token at this limit: the limit's writes are admitted over
// both nodes and no more; a refused write appends nothing and answers the
// spec's HTTP_429 with its headers, and so does its identical retry.
func TestClusterSchemeMWriteLimitHoldsAcrossNodes(t *testing.T) {
	t.Parallel()
	const limit = 6
	pa, nodes := oneAppOnTwoNodes(t, func(c *node.Config) { c.PartnerRateLimit = limit })
	for i := range limit {
		nodes[i%2].Expect("POST", "/open/v1/channel/users", harness.RegisterBody(fmt.Sprintf("w-%d", i)), http.StatusCreated, "0")
	}
	before := pa.EventCount()
	for i, n := range nodes {
		body := harness.RegisterBody(fmt.Sprintf("over-%d", i))
		req := n.Request("POST", "/open/v1/channel/users", body, time.Now())
		raw := harness.Encode(t, body)
		for try := range 2 {
			again, err := http.NewRequest("POST", req.URL.String(), bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			again.Header = req.Header.Clone()
			res := n.P.Send(again)
			harness.ExpectCode(t, fmt.Sprintf("write over the limit on node %d, try %d", i, try), res, http.StatusTooManyRequests, "HTTP_429")
			if res.Header.Get("Retry-After") == "" || res.Header.Get("X-RateLimit-Limit") != fmt.Sprint(limit) || res.Header.Get("X-RateLimit-Remaining") != "0" {
				t.Fatalf("429 headers: %v", res.Header)
			}
		}
	}
	if got := pa.EventCount(); got != before {
		t.Fatalf("refused writes appended %d events", got-before)
	}
}

// A scheme H nonce used on node A is refused on node B: the replay guard
// is the shared database's.
func TestClusterNonceUsedOnARefusedOnB(t *testing.T) {
	t.Parallel()
	pa, pb := harness.TwoNodes(t, nil)
	a := pa.CreateApp("partner")
	nonce, now := harness.FreshNonce(), time.Now()
	if res := pa.Send(a.RequestH("GET", "/open/v1/health-reports/77", nil, nonce, now)); res.Status != http.StatusNotFound {
		t.Fatalf("first use on A: %d %s", res.Status, res.Raw)
	}
	res := pb.Send(a.On(pb).RequestH("GET", "/open/v1/health-reports/77", nil, nonce, now))
	harness.ExpectCode(t, "the same request replayed on B", res, http.StatusUnauthorized, "INVALID_SIGNATURE")
}

// An embedded node keeps its nonces and signature bindings in its data
// directory: a request replayed after a restart, inside its window, is
// refused, and so is a scheme M signature replayed on another route.
func TestEmbeddedReplayGuardSurvivesRestart(t *testing.T) {
	t.Parallel()
	clock := &harness.ShiftClock{}
	cfg := node.Config{DataDir: t.TempDir(), Now: clock.Now}
	p := harness.Start(t, cfg)
	a := p.CreateApp("partner")
	nonce, now := harness.FreshNonce(), time.Now()
	if res := p.Send(a.RequestH("GET", "/open/v1/health-reports/77", nil, nonce, now)); res.Status != http.StatusNotFound {
		t.Fatalf("first use: %d %s", res.Status, res.Raw)
	}
	body := harness.Encode(t, harness.RegisterBody("r-1"))
	write := a.Request("POST", "/open/v1/channel/users", body, now)
	if res := p.Send(write); res.Status != http.StatusCreated {
		t.Fatalf("register: %d %s", res.Status, res.Raw)
	}
	p.Stop()
	clock.Advance(auth.BindingGrace + 100*time.Millisecond) // past the cross-route grace

	p = harness.Start(t, cfg)
	a.P = p
	res := p.Send(a.RequestH("GET", "/open/v1/health-reports/77", nil, nonce, now))
	harness.ExpectCode(t, "scheme H request replayed after a restart", res, http.StatusUnauthorized, "INVALID_SIGNATURE")
	// The registration's signature, captured and sent to another write route.
	replay, _ := http.NewRequest("POST", p.Srv.URL+"/open/v1/channel/users/1/family-groups", bytes.NewReader(body))
	for _, h := range []string{"X-App-Id", "X-Timestamp", "X-Signature", "Content-Type"} {
		replay.Header.Set(h, write.Header.Get(h))
	}
	harness.ExpectCode(t, "scheme M signature replayed on another route after a restart", p.Send(replay), http.StatusUnauthorized, "HTTP_401")
}

// An embedded node upgraded from a release that kept nonces in bbolt
// (data/nonces.db) refuses the nonces that file held, and removes it once
// they are carried over to data/nonces.log.
func TestEmbeddedReplayGuardKeepsTheBoltFilesNonces(t *testing.T) {
	cfg := node.Config{DataDir: t.TempDir()}
	p := harness.Start(t, cfg)
	a := p.CreateApp("partner")
	p.Stop()
	if err := os.Remove(filepath.Join(cfg.DataDir, "nonces.log")); err != nil {
		t.Fatal(err)
	}
	old, err := noncebolt.Open(filepath.Join(cfg.DataDir, "nonces.db"))
	if err != nil {
		t.Fatal(err)
	}
	nonce, now := harness.FreshNonce(), time.Now()
	if fresh, err := old.Use(t.Context(), fmt.Sprint("h:", a.ID), "n:"+nonce, now.Add(5*time.Minute)); err != nil || !fresh {
		t.Fatalf("use in the old file: %v, %v", fresh, err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	p = harness.Start(t, cfg)
	a.P = p
	res := p.Send(a.RequestH("GET", "/open/v1/health-reports/77", nil, nonce, now))
	harness.ExpectCode(t, "scheme H nonce of the old file replayed after the upgrade", res, http.StatusUnauthorized, "INVALID_SIGNATURE")
	if res := p.Send(a.RequestH("GET", "/open/v1/health-reports/77", nil, harness.FreshNonce(), now)); res.Status != http.StatusNotFound {
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
	db := harness.NodeDB(t)
	first := harness.Start(t, node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db})
	key := keyOf(t, first)
	cfg := node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db, MasterKey: key, Logger: harness.QuietLogger()}
	for range 2 { // and again: the refused start left no token behind to be mistaken for a rotation
		if n, err := node.Open(t.Context(), cfg); err == nil {
			n.Close()
			t.Fatal("a node with a made-up operator token started beside a node with another")
		} else if !strings.Contains(err.Error(), "PLATFORM_ADMIN_TOKEN") {
			t.Fatalf("refusal does not name PLATFORM_ADMIN_TOKEN: %v", err)
		}
	}
	cfg.AdminToken = first.Node.AdminToken
	second := harness.Start(t, cfg)
	if res := second.Admin("GET", "/admin/v1/apps", nil); res.Status != http.StatusOK {
		t.Fatalf("operator token of the first node on the second: %d %s", res.Status, res.Raw)
	}
}

// Nodes sharing an event store must share the master key: a node given
// another key refuses to start, naming the variable, rather than failing
// every partner whose secret it cannot open.
func TestClusterRefusesAnotherMasterKey(t *testing.T) {
	t.Parallel()
	pa, _ := harness.TwoNodes(t, nil)
	pa.CreateApp("partner")
	other := make([]byte, 32)
	if _, err := rand.Read(other); err != nil {
		t.Fatal(err)
	}
	db := pa.Cfg.PostgresURL
	_, err := node.Open(t.Context(), node.Config{DataDir: t.TempDir(), EventStoreURL: db, PostgresURL: db,
		AdminToken: pa.Cfg.AdminToken, MasterKey: hex.EncodeToString(other), Logger: harness.QuietLogger()})
	if err == nil || !strings.Contains(err.Error(), "PLATFORM_MASTER_KEY") {
		t.Fatalf("a node with another master key: %v, want a refusal naming PLATFORM_MASTER_KEY", err)
	}
}

// keyOf reads the master key a node made up in its data directory.
func keyOf(t *testing.T, p *harness.Platform) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(p.Cfg.DataDir, "master.key"))
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
			pa, pb := harness.Start(b, cfg()), harness.Start(b, cfg())
			onB := pa.CreateApp("partner").On(pb)
			onB.Expect("GET", harness.Probe, nil, http.StatusNotFound, "USER_NOT_FOUND")
			for b.Loop() {
				if res := onB.Do("GET", harness.Probe, nil); res.Status != http.StatusNotFound {
					b.Fatalf("%d %s", res.Status, res.Raw)
				}
			}
		})
	}
}

// oneAppOnTwoNodes starts two nodes sharing one database, configured by
// tweak, and returns the first node and one app as seen through each node.
func oneAppOnTwoNodes(t *testing.T, tweak func(*node.Config)) (*harness.Platform, []*harness.App) {
	pa, pb := harness.TwoNodes(t, tweak)
	a := pa.CreateApp("partner")
	return pa, []*harness.App{a, a.On(pb)}
}
