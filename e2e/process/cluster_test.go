package process

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/kafkatest"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/projections"
)

// This file holds the multi-node harness shared by the chaos test and the
// throughput measurement: platform processes (the real main(), see
// TestMain) on one Postgres event store, Postgres read models and the real
// Kafka broker, a client that spreads signed requests over them, and a
// webhook receiver that records every attempt.

// clusterNode is one platform process of a cluster; it can be SIGKILLed and
// restarted on the same address and data directory.
type clusterNode struct {
	idx     int
	bin     []string // the program and its arguments
	addr    string
	base    string
	dir     string
	env     []string
	logPath string

	mu      sync.Mutex
	cmd     *exec.Cmd
	logf    *os.File
	done    chan struct{}
	killing bool
	starts  int
	// died lists exits the harness did not cause (crashes), with their time.
	died []string
	// drained takes the node out of the client's rotation, as a load
	// balancer does with a terminating instance.
	drained atomic.Bool
}

// newNode is node i of a run: it runs bin with env on a free loopback
// address and a data directory of its own, logging to node<i>.log in logs.
func newNode(t testing.TB, i int, bin, env []string, logs string) *clusterNode {
	addr := freeAddr(t)
	return &clusterNode{idx: i, bin: bin, addr: addr, base: "http://" + addr, dir: t.TempDir(), env: env,
		logPath: filepath.Join(logs, fmt.Sprintf("node%d.log", i))}
}

// start launches the process; it does not wait for readiness.
func (n *clusterNode) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("node %d already running", n.idx)
	}
	f, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	n.starts++
	fmt.Fprintf(f, "\n==== harness: start #%d of node %d at %s ====\n", n.starts, n.idx, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(n.bin[0], n.bin[1:]...)
	cmd.Env = append(os.Environ(), "PLATFORM_ADDR="+n.addr, "PLATFORM_DATA_DIR="+n.dir, "PLATFORM_ESDB_URL=")
	cmd.Env = append(cmd.Env, n.env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	done := make(chan struct{})
	n.cmd, n.logf, n.done, n.killing = cmd, f, done, false
	go func() {
		err := cmd.Wait()
		n.mu.Lock()
		if !n.killing {
			n.died = append(n.died, fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), err))
			n.cmd = nil
		}
		n.mu.Unlock()
		close(done)
	}()
	return nil
}

// kill SIGKILLs the process (no shutdown code runs) and waits for it.
func (n *clusterNode) kill() {
	n.mu.Lock()
	cmd, done, f := n.cmd, n.done, n.logf
	n.killing = true
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
	fmt.Fprintf(f, "\n==== harness: SIGKILL of node %d at %s ====\n", n.idx, time.Now().Format(time.RFC3339Nano))
	f.Close()
}

// stop sends SIGINT and waits for the process to exit (the platform drains
// its HTTP server and stops its followers), SIGKILLing it after timeout; it
// reports whether the process stopped by itself in time.
func (n *clusterNode) stop(timeout time.Duration) bool {
	n.mu.Lock()
	cmd, done, f := n.cmd, n.done, n.logf
	n.killing = true
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil {
		return true
	}
	_ = cmd.Process.Signal(os.Interrupt)
	stopped := true
	select {
	case <-done:
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		stopped = false
	}
	fmt.Fprintf(f, "\n==== harness: node %d stopped (SIGINT) at %s ====\n", n.idx, time.Now().Format(time.RFC3339Nano))
	f.Close()
	return stopped
}

// running reports whether the process is alive.
func (n *clusterNode) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil
}

// waitReady polls /readyz until it answers 200, the process dies, or timeout.
func (n *clusterNode) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := http.Client{Timeout: 2 * time.Second}
	last := "no answer"
	for time.Now().Before(deadline) {
		if !n.running() {
			return fmt.Errorf("node %d exited before it was ready", n.idx)
		}
		res, err := client.Get(n.base + "/readyz")
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", res.StatusCode, b)
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("node %d not ready after %v (last /readyz: %s)", n.idx, timeout, last)
}

// exits lists the exits the harness did not cause (crashes), with their time.
func (n *clusterNode) exits() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.died...)
}

// logTail returns the end of the node's log (all its runs), for failures.
func (n *clusterNode) logTail(max int) string {
	b, err := os.ReadFile(n.logPath)
	if err != nil {
		return err.Error()
	}
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// cluster is several nodes sharing one Postgres database (event store and
// read models), Kafka topics of their own, the master key and the tokens.
type cluster struct {
	t          testing.TB
	db         string
	nodes      []*clusterNode
	adminToken string
	client     *clusterClient
}

// clusterOptions are the per-run knobs of startCluster.
type clusterOptions struct {
	nodes         int
	retrySchedule string // PLATFORM_WEBHOOK_RETRY_SCHEDULE
	kafka         bool   // use the real broker (else the dispatcher follows the store)
}

// envRaceNodes, set to 1, runs the nodes as a race-enabled build, so the
// race detector watches them too; they are then several times slower.
const envRaceNodes = "PLATFORM_TEST_CLUSTER_RACE"

// platformProgram is the program the cluster's nodes run: the plain build
// of cmd/platform (the cluster tests load the nodes, and a race-enabled
// node is several times slower on these 2-core machines), or the
// race-enabled one with envRaceNodes.
func platformProgram(t *testing.T) []string {
	t.Helper()
	return []string{platformBinary(t, os.Getenv(envRaceNodes) == "1")}
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// startCluster starts the nodes and waits until each is ready. Without a
// Postgres server (or, when kafka is asked for, a broker) it skips, or fails
// where CI requires them (internal/pgtest, internal/kafkatest).
func startCluster(t *testing.T, opt clusterOptions) *cluster {
	t.Helper()
	db := pgtest.New(t)
	c := &cluster{t: t, db: db, adminToken: "adm_chaos_" + randomHex(t, 12)}
	env := nodeEnv(db, randomHex(t, 32), c.adminToken, "int_chaos_"+randomHex(t, 12),
		"PLATFORM_WEBHOOK_ALLOW_LOOPBACK=1", "PLATFORM_WEBHOOK_RETRY_SCHEDULE="+opt.retrySchedule)
	if opt.kafka {
		brokers := kafkatest.Brokers(t)
		// Fresh topics of this run, deleted at the end; the nodes find them
		// (they create missing ones with 6 partitions, as in production).
		env = append(env,
			"PLATFORM_KAFKA_BROKERS="+strings.Join(brokers, ","),
			"PLATFORM_KAFKA_INTERNAL_TOPIC="+kafkatest.Topic(t, brokers, "chaos.internal", 6),
			"PLATFORM_KAFKA_TOPIC="+kafkatest.Topic(t, brokers, "chaos.analytics", 6))
	}
	logs := t.TempDir()
	bin := platformProgram(t)
	for i := range opt.nodes {
		c.nodes = append(c.nodes, newNode(t, i, bin, env, logs))
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.kill()
		}
	})
	// The first node alone runs the migrations; the others then start together.
	for i, n := range c.nodes {
		if err := n.start(); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := n.waitReady(60 * time.Second); err != nil {
				t.Fatalf("%v; log:\n%s", err, n.logTail(8000))
			}
		}
	}
	for _, n := range c.nodes[1:] {
		if err := n.waitReady(60 * time.Second); err != nil {
			t.Fatalf("%v; log:\n%s", err, n.logTail(8000))
		}
	}
	c.client = newClient(c.nodes)
	return c
}

// reply is what the client observed of one request.
type reply struct {
	kind    string
	node    int // the node that answered (or was last tried)
	status  int
	raw     []byte
	err     error // the request may have reached the node: outcome unknown
	down    bool  // no node accepted the connection: nothing was sent
	latency time.Duration
	env     struct {
		Code    any             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
}

func (r *reply) code() string { return fmt.Sprint(r.env.Code) }

// unknown is true when the write may or may not have happened: the
// connection broke after sending (a killed node), or the node failed with
// 5xx (which never promises that nothing was written).
func (r *reply) unknown() bool { return r.err != nil || r.status >= 500 }

func (r *reply) data(into any) error {
	if err := json.Unmarshal(r.env.Data, into); err != nil {
		return fmt.Errorf("%s: decode data %s: %w", r.kind, r.env.Data, err)
	}
	return nil
}

func (r *reply) String() string {
	switch {
	case r.down:
		return fmt.Sprintf("%s: no node reachable", r.kind)
	case r.err != nil:
		return fmt.Sprintf("%s via node %d: %v", r.kind, r.node, r.err)
	}
	raw := r.raw
	if len(raw) > 400 {
		raw = raw[:400]
	}
	return fmt.Sprintf("%s via node %d: %d %s", r.kind, r.node, r.status, raw)
}

// clusterClient sends each request to a chosen node and, when that node
// refuses the connection (it is down: nothing was sent), to the next one,
// as a load balancer would.
type clusterClient struct {
	nodes []*clusterNode
	hc    *http.Client
	rr    atomic.Uint64
}

// newClient spreads requests over nodes.
func newClient(nodes []*clusterNode) *clusterClient {
	return &clusterClient{nodes: nodes, hc: &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second, DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
	}}}
}

// next picks the next node round-robin.
func (c *clusterClient) next() int { return int(c.rr.Add(1) % uint64(len(c.nodes))) }

// other picks a node other than n (round-robin among the others).
func (c *clusterClient) other(n int) int {
	if len(c.nodes) == 1 {
		return n
	}
	return (n + 1 + int(c.rr.Add(1)%uint64(len(c.nodes)-1))) % len(c.nodes)
}

func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// send builds the request for a node's base URL and sends it to node first,
// then to the others while connections are refused. avoid, when >= 0, is a
// node never used (a read-after-write must not go back to the writer).
func (c *clusterClient) send(kind string, first, avoid int, build func(base string) (*http.Request, error)) *reply {
	r := &reply{kind: kind, node: first}
	for i := range len(c.nodes) {
		n := (first + i) % len(c.nodes)
		if n == avoid || c.nodes[n].drained.Load() {
			continue
		}
		req, err := build(c.nodes[n].base)
		if err != nil {
			r.err = err
			return r
		}
		start := time.Now()
		res, err := c.hc.Do(req)
		r.node = n
		if err != nil {
			if isDialError(err) {
				continue
			}
			r.err, r.latency = err, time.Since(start)
			return r
		}
		r.raw, err = io.ReadAll(res.Body)
		res.Body.Close()
		r.raw = bytes.TrimSpace(r.raw)
		r.status, r.latency = res.StatusCode, time.Since(start)
		if err != nil {
			r.err = err
			return r
		}
		if bytes.HasPrefix(bytes.TrimSpace(r.raw), []byte("{")) {
			_ = json.Unmarshal(r.raw, &r.env)
		}
		return r
	}
	r.down = true
	return r
}

// partner is an app's credentials as the operator receives them.
type partner struct {
	creds
	WebhookSecret string `json:"webhook_secret"`
}

// signedM builds a scheme M request (see stamp for the timestamp rule).
func signedM(c creds, method, path string, body []byte) func(base string) (*http.Request, error) {
	return func(base string) (*http.Request, error) {
		ts, sig := stamp(c, method+" "+path, string(body))
		req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-App-Id", strconv.FormatInt(c.AppID, 10))
		req.Header.Set("X-Timestamp", ts)
		req.Header.Set("X-Signature", sig)
		return req, nil
	}
}

var chaosNonces atomic.Int64

// signedH builds a scheme H request with a fresh nonce, written from the spec.
func signedH(c creds, method, uri string) func(base string) (*http.Request, error) {
	return func(base string) (*http.Request, error) {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		nonce := fmt.Sprintf("chaos-%d-%d", time.Now().UnixNano(), chaosNonces.Add(1))
		sum := sha256.Sum256(nil)
		m := hmac.New(sha256.New, []byte(c.Secret))
		m.Write([]byte(method + "\n" + uri + "\n" + ts + "\n" + nonce + "\n" + hex.EncodeToString(sum[:])))
		req, err := http.NewRequest(method, base+uri, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("X-App-Key", c.Key)
		req.Header.Set("X-Timestamp", ts)
		req.Header.Set("X-Nonce", nonce)
		req.Header.Set("X-Signature", hex.EncodeToString(m.Sum(nil)))
		return req, nil
	}
}

// bearer builds an operator (or uploader) request.
func bearer(token, method, path string, body []byte) func(base string) (*http.Request, error) {
	return func(base string) (*http.Request, error) {
		req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		return req, nil
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// admin sends an operator request to node 0 (or the next live node) and
// fails the test unless it answers want.
func (c *cluster) admin(method, path string, body any, want int, into any) {
	c.t.Helper()
	var raw []byte
	if body != nil {
		raw = mustJSON(body)
	}
	r := c.client.send("admin", 0, -1, bearer(c.adminToken, method, path, raw))
	if r.status != want {
		c.t.Fatalf("%s %s: want %d, got %s", method, path, want, r)
	}
	if into != nil {
		if err := r.data(into); err != nil {
			c.t.Fatal(err)
		}
	}
}

// partnerCall sends a scheme M request to node 0 and fails unless it answers want.
func (c *cluster) partnerCall(p creds, method, path string, body any, want int, into any) {
	c.t.Helper()
	var raw []byte
	if body != nil {
		raw = mustJSON(body)
	}
	r := c.client.send("setup", 0, -1, signedM(p, method, path, raw))
	if r.status != want {
		c.t.Fatalf("%s %s: want %d, got %s", method, path, want, r)
	}
	if into != nil {
		if err := r.data(into); err != nil {
			c.t.Fatal(err)
		}
	}
}

var allPartnerScopes = []string{"channel_users", "orders", "health_reports", "daily_report", "webhooks", "benefits", "plugin"}

// createPartner creates an app with every scope through the admin API.
func (c *cluster) createPartner(name string) partner {
	c.t.Helper()
	var p partner
	c.admin("POST", "/admin/v1/apps", map[string]any{"name": name, "scopes": allPartnerScopes}, http.StatusCreated, &p)
	return p
}

// awaitEverywhere polls a signed read on every node until it answers 200:
// what an app created through one node needs before it works on the others.
func (c *cluster) awaitEverywhere(p creds, path string, timeout time.Duration) time.Duration {
	c.t.Helper()
	start := time.Now()
	for i := range c.nodes {
		for {
			r := c.client.send("setup", i, -1, signedM(p, "GET", path, nil))
			if r.status == http.StatusOK && r.node == i {
				break
			}
			if time.Since(start) > timeout {
				c.t.Fatalf("app %d does not work on node %d after %v: %s", p.AppID, i, timeout, r)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return time.Since(start)
}

// hookAttempt is one webhook request as the receiver saw it.
type hookAttempt struct {
	ID, Event  string
	Body       []byte
	BodyID     string // delivery_id in the body
	Start, End time.Time
	Status     int // 0 while the request is being answered
	Verified   bool
}

// hookReceiver is the partner's webhook endpoint: it verifies signatures,
// records the start and end of every request, and, chosen by a hash of the
// delivery id, answers some slowly and fails some once to force retries.
type hookReceiver struct {
	srv       *httptest.Server
	secret    string
	slow      time.Duration
	failOnce  uint32 // 1 in failOnce deliveries fail their first attempt (0: none)
	slowEvery uint32 // 1 in slowEvery answers slowly (0: none)

	mu       sync.Mutex
	attempts map[string][]*hookAttempt
	total    int
	last     time.Time
	first    time.Time
}

func newHookReceiver(t testing.TB, failOnce, slowEvery uint32, slow time.Duration) *hookReceiver {
	h := &hookReceiver{attempts: map[string][]*hookAttempt{}, failOnce: failOnce, slowEvery: slowEvery, slow: slow}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

// setSecret sets the webhook secret signatures are verified with.
func (h *hookReceiver) setSecret(secret string) {
	h.mu.Lock()
	h.secret = secret
	h.mu.Unlock()
}

// url is the receiver's base URL.
func (h *hookReceiver) url() string { return h.srv.URL }

func idHash(id string) uint32 {
	f := fnv.New32a()
	f.Write([]byte(id))
	return f.Sum32()
}

func (h *hookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	a := &hookAttempt{Start: time.Now(), ID: req.Header.Get("X-Webhook-Id"), Event: req.Header.Get("X-Webhook-Event")}
	a.Body, _ = io.ReadAll(req.Body)
	var b struct {
		DeliveryID string `json:"delivery_id"`
	}
	_ = json.Unmarshal(a.Body, &b)
	a.BodyID = b.DeliveryID
	ts := req.Header.Get("X-Webhook-Timestamp")
	h.mu.Lock()
	secret := h.secret
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(a.Body)
	got, _ := hex.DecodeString(req.Header.Get("X-Webhook-Signature"))
	sec, _ := strconv.ParseInt(ts, 10, 64)
	a.Verified = hmac.Equal(got, m.Sum(nil)) && time.Since(time.Unix(sec, 0)).Abs() <= 300*time.Second
	prior := len(h.attempts[a.ID])
	h.attempts[a.ID] = append(h.attempts[a.ID], a)
	h.total++
	if h.first.IsZero() {
		h.first = a.Start
	}
	h.mu.Unlock()

	hash := idHash(a.ID)
	status := http.StatusOK
	switch {
	case !a.Verified:
		status = http.StatusUnauthorized
	case h.failOnce > 0 && prior == 0 && hash%h.failOnce == 0:
		status = http.StatusServiceUnavailable
	case h.slowEvery > 0 && (hash/7)%h.slowEvery == 0:
		time.Sleep(h.slow)
	}
	// The end is taken before the answer leaves: a sender that waits for
	// the answer can only start the next attempt after it.
	end := time.Now()
	h.mu.Lock()
	a.End, a.Status = end, status
	h.last = end
	h.mu.Unlock()
	w.WriteHeader(status)
}

// snapshot copies the attempts recorded so far.
func (h *hookReceiver) snapshot() (map[string][]hookAttempt, int, time.Time, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string][]hookAttempt, len(h.attempts))
	for id, as := range h.attempts {
		for _, a := range as {
			out[id] = append(out[id], *a)
		}
		sort.Slice(out[id], func(i, j int) bool { return out[id][i].Start.Before(out[id][j].Start) })
	}
	return out, h.total, h.first, h.last
}

// delivered counts delivery ids answered 2xx at least once.
func (h *hookReceiver) delivered() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, as := range h.attempts {
		for _, a := range as {
			if a.Status/100 == 2 && !a.End.IsZero() {
				n++
				break
			}
		}
	}
	return n
}

// adminDeliveries lists every delivery of an app through the operator API.
func (c *cluster) adminDeliveries(node int, appID int64) ([]map[string]any, error) {
	var out []map[string]any
	after := ""
	for range 1000 {
		path := fmt.Sprintf("/admin/v1/deliveries?app_id=%d&limit=1000", appID)
		if after != "" {
			path += "&after=" + after
		}
		r := c.client.send("final", node, -1, bearer(c.adminToken, "GET", path, nil))
		if r.status != http.StatusOK {
			return nil, fmt.Errorf("list deliveries: %s", r)
		}
		var page struct {
			Deliveries []map[string]any `json:"deliveries"`
			Next       *string          `json:"next_cursor"`
		}
		if err := r.data(&page); err != nil {
			return nil, err
		}
		out = append(out, page.Deliveries...)
		if page.Next == nil || len(page.Deliveries) == 0 {
			return out, nil
		}
		after = *page.Next
	}
	return nil, errors.New("list deliveries: more than 1000 pages")
}

// projectionStats reads a node's projections listing.
func (c *cluster) projectionStats(node int) ([]map[string]any, error) {
	r := c.client.send("final", node, -1, bearer(c.adminToken, "GET", "/admin/v1/projections", nil))
	if r.status != http.StatusOK {
		return nil, fmt.Errorf("projections: %s", r)
	}
	var out struct {
		Projections []map[string]any `json:"projections"`
	}
	if err := r.data(&out); err != nil {
		return nil, err
	}
	return out.Projections, nil
}

// waitProjections waits until every projection (every read model
// when readModelsOnly) is ready, caught up and not rebuilding on at least one
// node, with its progress counted from since or later (zero: any time). One
// node is enough: with single-owner projections only the owner may be
// following a read model, and the shared read models are what every node serves.
func (c *cluster) waitProjections(since time.Time, readModelsOnly bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	readModels := map[string]bool{}
	for _, f := range projections.ReadModels {
		readModels[string(f)] = true
	}
	for {
		done := map[string]bool{}
		var notes []string
		for i := range c.nodes {
			stats, err := c.projectionStats(i)
			if err != nil {
				notes = append(notes, err.Error())
				continue
			}
			for _, s := range stats {
				name, _ := s["name"].(string)
				if readModelsOnly && !readModels[name] {
					continue
				}
				started, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(s["since"]))
				if s["ready"] == true && s["caught_up"] == true && s["rebuilding"] != true && !started.Before(since) {
					done[name] = true
				} else if _, seen := done[name]; !seen {
					done[name] = false
					notes = append(notes, fmt.Sprintf("node %d %s ready=%v caught_up=%v rebuilding=%v since=%v last_error=%v",
						i, name, s["ready"], s["caught_up"], s["rebuilding"], s["since"], s["last_error"]))
				}
			}
		}
		var waiting []string
		for name, ok := range done {
			if !ok {
				waiting = append(waiting, name)
			}
		}
		if readModelsOnly {
			for name := range readModels {
				if _, seen := done[name]; !seen {
					waiting = append(waiting, name+" (listed by no node)")
				}
			}
		}
		if len(waiting) == 0 && len(done) > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			sort.Strings(waiting)
			return fmt.Errorf("after %v, no node has %s ready and caught up: %s", timeout, strings.Join(waiting, ", "), strings.Join(notes, "; "))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// idleFor reports whether the receiver has had no request for d.
func (h *hookReceiver) idleFor(d time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last.IsZero() || time.Since(h.last) >= d
}
