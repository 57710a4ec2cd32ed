package proc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/internal/kafkatest"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
	"github.com/healthtech/partner-open-platform/projections"
)

// Cluster is several nodes sharing one Postgres database (event store and
// read models), Kafka topics of their own, the master key and the tokens.
type Cluster struct {
	T          testing.TB
	DB         string
	Nodes      []*Node
	AdminToken string
	Client     *Client
}

// Options are the per-run knobs of Start.
type Options struct {
	Nodes         int
	RetrySchedule string // PLATFORM_WEBHOOK_RETRY_SCHEDULE
	Kafka         bool   // use the real broker (else the dispatcher follows the store)
}

// Start starts the nodes and waits until each is ready. Without a
// Postgres server (or, when kafka is asked for, a broker) it skips, or fails
// where CI requires them (internal/pgtest, internal/kafkatest).
func Start(t *testing.T, opt Options) *Cluster {
	t.Helper()
	db := pgtest.New(t)
	c := &Cluster{T: t, DB: db, AdminToken: "adm_chaos_" + RandomHex(t, 12)}
	env := NodeEnv(db, RandomHex(t, 32), c.AdminToken, "int_chaos_"+RandomHex(t, 12),
		"PLATFORM_WEBHOOK_ALLOW_LOOPBACK=1", "PLATFORM_WEBHOOK_RETRY_SCHEDULE="+opt.RetrySchedule)
	if opt.Kafka {
		brokers := kafkatest.Brokers(t)
		// Fresh topics of this run, deleted at the end; the nodes find them
		// (they create missing ones with 6 partitions, as in production).
		env = append(env,
			"PLATFORM_KAFKA_BROKERS="+strings.Join(brokers, ","),
			"PLATFORM_KAFKA_INTERNAL_TOPIC="+kafkatest.Topic(t, brokers, "chaos.internal", 6),
			"PLATFORM_KAFKA_TOPIC="+kafkatest.Topic(t, brokers, "chaos.analytics", 6))
	}
	logs := t.TempDir()
	bin := Program(t)
	for i := range opt.Nodes {
		c.Nodes = append(c.Nodes, NewNode(t, i, bin, env, logs))
	}
	t.Cleanup(func() {
		for _, n := range c.Nodes {
			n.Kill()
		}
	})
	// The first node alone runs the migrations; the others then start together.
	for i, n := range c.Nodes {
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := n.WaitReady(60 * time.Second); err != nil {
				t.Fatalf("%v; log:\n%s", err, n.LogTail(8000))
			}
		}
	}
	for _, n := range c.Nodes[1:] {
		if err := n.WaitReady(60 * time.Second); err != nil {
			t.Fatalf("%v; log:\n%s", err, n.LogTail(8000))
		}
	}
	c.Client = NewClient(c.Nodes)
	return c
}

// Admin sends an operator request to node 0 (or the next live node) and
// fails the test unless it answers want.
func (c *Cluster) Admin(method, path string, body any, want int, into any) {
	c.T.Helper()
	var raw []byte
	if body != nil {
		raw = MustJSON(body)
	}
	r := c.Client.Send("admin", 0, -1, Bearer(c.AdminToken, method, path, raw))
	if r.Status != want {
		c.T.Fatalf("%s %s: want %d, got %s", method, path, want, r)
	}
	if into != nil {
		if err := r.Data(into); err != nil {
			c.T.Fatal(err)
		}
	}
}

// PartnerCall sends a scheme M request to node 0 and fails unless it answers want.
func (c *Cluster) PartnerCall(p Creds, method, path string, body any, want int, into any) {
	c.T.Helper()
	var raw []byte
	if body != nil {
		raw = MustJSON(body)
	}
	r := c.Client.Send("setup", 0, -1, SignedM(p, method, path, raw))
	if r.Status != want {
		c.T.Fatalf("%s %s: want %d, got %s", method, path, want, r)
	}
	if into != nil {
		if err := r.Data(into); err != nil {
			c.T.Fatal(err)
		}
	}
}

var allPartnerScopes = []string{"channel_users", "orders", "health_reports", "daily_report", "webhooks", "benefits", "plugin"}

// CreatePartner creates an app with every scope through the admin API.
func (c *Cluster) CreatePartner(name string) Partner {
	c.T.Helper()
	var p Partner
	c.Admin("POST", "/admin/v1/apps", map[string]any{"name": name, "scopes": allPartnerScopes}, http.StatusCreated, &p)
	return p
}

// AwaitEverywhere polls a signed read on every node until it answers 200:
// what an app created through one node needs before it works on the others.
func (c *Cluster) AwaitEverywhere(p Creds, path string, timeout time.Duration) time.Duration {
	c.T.Helper()
	start := time.Now()
	for i := range c.Nodes {
		for {
			r := c.Client.Send("setup", i, -1, SignedM(p, "GET", path, nil))
			if r.Status == http.StatusOK && r.Node == i {
				break
			}
			if time.Since(start) > timeout {
				c.T.Fatalf("app %d does not work on node %d after %v: %s", p.AppID, i, timeout, r)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return time.Since(start)
}

// AdminDeliveries lists every delivery of an app through the operator API.
func (c *Cluster) AdminDeliveries(node int, appID int64) ([]map[string]any, error) {
	var out []map[string]any
	after := ""
	for range 1000 {
		path := fmt.Sprintf("/admin/v1/deliveries?app_id=%d&limit=1000", appID)
		if after != "" {
			path += "&after=" + after
		}
		r := c.Client.Send("final", node, -1, Bearer(c.AdminToken, "GET", path, nil))
		if r.Status != http.StatusOK {
			return nil, fmt.Errorf("list deliveries: %s", r)
		}
		var page struct {
			Deliveries []map[string]any `json:"deliveries"`
			Next       *string          `json:"next_cursor"`
		}
		if err := r.Data(&page); err != nil {
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
func (c *Cluster) projectionStats(node int) ([]map[string]any, error) {
	r := c.Client.Send("final", node, -1, Bearer(c.AdminToken, "GET", "/admin/v1/projections", nil))
	if r.Status != http.StatusOK {
		return nil, fmt.Errorf("projections: %s", r)
	}
	var out struct {
		Projections []map[string]any `json:"projections"`
	}
	if err := r.Data(&out); err != nil {
		return nil, err
	}
	return out.Projections, nil
}

// WaitProjections waits until every projection (every read model
// when readModelsOnly) is ready, caught up and not rebuilding on at least one
// node, with its progress counted from since or later (zero: any time). One
// node is enough: with single-owner projections only the owner may be
// following a read model, and the shared read models are what every node serves.
func (c *Cluster) WaitProjections(since time.Time, readModelsOnly bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	readModels := map[string]bool{}
	for _, f := range projections.ReadModels {
		readModels[string(f)] = true
	}
	for {
		done := map[string]bool{}
		var notes []string
		for i := range c.Nodes {
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

// LeaseHolder reads who holds a lease, from the cluster's database.
func (c *Cluster) LeaseHolder(t *testing.T, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var holder string
	if err := conn.QueryRow(ctx, `SELECT holder FROM leases WHERE name = $1`, name).Scan(&holder); err != nil {
		t.Fatalf("lease %s: %v", name, err)
	}
	return holder
}

// NodeOf is the node whose process a lease holder names (its default node
// id is hostname-pid-random), or -1.
func (c *Cluster) NodeOf(holder string) int {
	for i, n := range c.Nodes {
		n.mu.Lock()
		cmd := n.cmd
		n.mu.Unlock()
		if cmd != nil && strings.Contains(holder, "-"+strconv.Itoa(cmd.Process.Pid)+"-") {
			return i
		}
	}
	return -1
}
