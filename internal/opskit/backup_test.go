package opskit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

// operator calls a node's admin API the way platformctl does.
type operator struct {
	t     *testing.T
	n     *node.Node
	token string
}

func (o operator) call(method, path string, body any) (int, json.RawMessage) {
	o.t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Authorization", "Bearer "+o.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	o.n.Handler.ServeHTTP(rec, req)
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &env)
	return rec.Code, env.Data
}

func (o operator) must(method, path string, body any) json.RawMessage {
	o.t.Helper()
	code, data := o.call(method, path, body)
	if code >= 300 {
		o.t.Fatalf("%s %s: %d %s", method, path, code, data)
	}
	return data
}

// seed writes a little of everything an operator creates: apps (one with a
// rotated secret), goods, a deactivated one.
func seed(o operator, tag string) {
	o.t.Helper()
	for i := range 3 {
		o.must("POST", "/admin/v1/apps", map[string]any{"name": fmt.Sprintf("%s app %d", tag, i)})
	}
	o.must("POST", "/admin/v1/apps/1/rotate-secret", nil)
	for i := range 2 {
		o.must("POST", "/admin/v1/goods", map[string]any{"goods_code": fmt.Sprintf("%s-G%d", tag, i), "goods_name": "Monitor " + tag})
	}
	o.must("POST", "/admin/v1/goods/"+tag+"-G1/deactivate", nil)
}

// reads is what the operator sees: the apps, the goods and the log.
type reads struct{ apps, goods, events string }

func (o operator) reads() reads {
	o.t.Helper()
	waitReady(o.t, o.n.Handler)
	return reads{
		apps:   string(o.must("GET", "/admin/v1/apps", nil)),
		goods:  string(o.must("GET", "/admin/v1/goods", nil)),
		events: string(o.must("GET", "/admin/v1/events?limit=1000", nil)),
	}
}

type logEvent struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Stream   string `json:"stream"`
	Position struct {
		Commit uint64 `json:"commit"`
	} `json:"position"`
}

func (o operator) log() []logEvent {
	o.t.Helper()
	var page struct {
		Events []logEvent `json:"events"`
	}
	if err := json.Unmarshal(o.must("GET", "/admin/v1/events?limit=1000", nil), &page); err != nil {
		o.t.Fatal(err)
	}
	return page.Events
}

// continues checks that a node on a restored copy goes on from the log it
// was given: a new write lands after every restored event, no event is
// lost or repeated, and the new app's id is a new one.
func continues(t *testing.T, before []logEvent, o operator) {
	t.Helper()
	var app struct {
		AppID int64 `json:"app_id"`
	}
	if err := json.Unmarshal(o.must("POST", "/admin/v1/apps", map[string]any{"name": "after restore"}), &app); err != nil {
		t.Fatal(err)
	}
	// Nodes reserve ids in blocks, so the id need not be 4, but it must be
	// none of the restored apps'.
	if app.AppID <= 3 {
		t.Errorf("the first app created after the restore has id %d, which a restored app has", app.AppID)
	}
	after := o.log()
	if len(after) <= len(before) {
		t.Fatalf("log after the write has %d events, before %d", len(after), len(before))
	}
	for i, e := range before {
		if after[i].ID != e.ID || after[i].Position != e.Position {
			t.Fatalf("event %d changed across the restore: %+v, was %+v", i, after[i], e)
		}
	}
	ids := map[string]bool{}
	last := uint64(0)
	for _, e := range after {
		if ids[e.ID] {
			t.Errorf("event %s appears twice", e.ID)
		}
		ids[e.ID] = true
		if e.Position.Commit <= last && last != 0 {
			t.Errorf("positions do not increase: %d after %d", e.Position.Commit, last)
		}
		last = e.Position.Commit
	}
	if !slices.ContainsFunc(after[len(before):], func(e logEvent) bool { return e.Type == "app.created" }) {
		t.Errorf("the new write's app.created is not after the restored events: %+v", after[len(before):])
	}
}

func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv(pgtest.EnvRequire) == "1" {
			t.Fatalf("%s is not installed (Debian: postgresql-client)", name)
		}
		t.Skipf("%s is not installed (Debian: postgresql-client)", name)
	}
	return p
}

// TestPostgresDumpRestoresANode follows docs/operations.md#backups-and-restores
// for the Postgres configuration: pg_dump of the running platform's database,
// pg_restore into a new database, a new node on it serves the same reads
// and continues the log.
func TestPostgresDumpRestoresANode(t *testing.T) {
	src := pgtest.New(t)
	pgDump, pgRestore := requireTool(t, "pg_dump"), requireTool(t, "pg_restore")
	cfg := func(url, id string) node.Config {
		return node.Config{DataDir: t.TempDir(), EventStoreURL: url, PostgresURL: url, NodeID: id,
			AdminToken: "adm_backupTest", MasterKey: strings.Repeat("ab", 32), InternalToken: "int_backupTest",
			LeaseTTL: 2 * time.Second, Logger: quiet()}
	}
	a, err := node.Open(context.Background(), cfg(src, "node-a"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	oa := operator{t, a, a.AdminToken}
	seed(oa, "PG")
	want := oa.reads()
	wantLog := oa.log()

	// The dump is taken while node A runs (and keeps its leases).
	dump := filepath.Join(t.TempDir(), "platform.dump")
	if out, err := exec.Command(pgDump, "--format=custom", "--no-owner", "--file", dump, "--dbname", src).CombinedOutput(); err != nil {
		t.Fatalf("pg_dump: %v\n%s", err, out)
	}
	dst := pgtest.New(t)
	if out, err := exec.Command(pgRestore, "--no-owner", "--exit-on-error", "--dbname", dst, dump).CombinedOutput(); err != nil {
		t.Fatalf("pg_restore: %v\n%s", err, out)
	}

	b, err := node.Open(context.Background(), cfg(dst, "node-b"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ob := operator{t, b, b.AdminToken}
	if got := ob.reads(); got != want {
		t.Fatalf("the restored node reads\n%+v\nthe source read\n%+v", got, want)
	}
	continues(t, wantLog, ob)
}
