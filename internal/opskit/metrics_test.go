package opskit

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	yaml "github.com/oasdiff/yaml3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/healthtech/partner-open-platform/internal/node"
	"github.com/healthtech/partner-open-platform/internal/pgtest"
)

func repoFile(t *testing.T, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{"..", ".."}, parts...)...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func loadRules(t *testing.T) alertRules {
	t.Helper()
	var r alertRules
	dec := yaml.NewDecoder(bytes.NewReader(repoFile(t, "deploy", "prometheus", "alerts.yml")))
	dec.KnownFields(true)
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	return r
}

type dashboard struct {
	UID    string `json:"uid"`
	Panels []struct {
		ID      int    `json:"id"`
		Type    string `json:"type"`
		Title   string `json:"title"`
		GridPos struct {
			H, W, X, Y int
		} `json:"gridPos"`
		Datasource *struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal(repoFile(t, "deploy", "grafana", "partner-open-platform.json"), &d); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	return d
}

// metricRef finds metric names in PromQL: the platform's own and the Go
// client's process and runtime collectors.
var metricRef = regexp.MustCompile(`\b((?:platform|process|go)_[a-z0-9_]+)\b`)

// queried maps each metric a rule or panel queries to where it is used;
// a histogram's _bucket, _sum and _count series count as the histogram.
func queried(t *testing.T) map[string][]string {
	t.Helper()
	uses := map[string][]string{}
	add := func(expr, where string) {
		for _, m := range metricRef.FindAllString(expr, -1) {
			uses[m] = append(uses[m], where)
		}
	}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			add(r.Expr, "alert "+r.Alert)
		}
	}
	d := loadDashboard(t)
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			add(tg.Expr, "panel "+p.Title)
		}
	}
	for _, v := range d.Templating.List {
		add(v.Definition, "variable "+v.Name)
	}
	return uses
}

var descName = regexp.MustCompile(`fqName: "([^"]+)"`)

// served returns the metric names in a node's /metrics answer, each
// histogram also under its _bucket, _sum and _count names, plus the names
// its registry describes that have no sample yet (a labelled vector before
// its first observation).
func served(t *testing.T, n *node.Node, h http.Handler) (inOutput, registered map[string]bool) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	inOutput = map[string]bool{}
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			inOutput[f[2]] = true
			if f[3] == "histogram" || f[3] == "summary" {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					inOutput[f[2]+s] = true
				}
			}
		}
	}
	registered = map[string]bool{}
	ch := make(chan *prometheus.Desc)
	go func() { n.Metrics.Registry.Describe(ch); close(ch) }()
	for d := range ch {
		if m := descName.FindStringSubmatch(d.String()); m != nil {
			for _, s := range []string{"", "_bucket", "_sum", "_count"} {
				registered[m[1]+s] = true
			}
		}
	}
	return inOutput, registered
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// exercise makes the node observe a request, an append and a projection
// batch, so the labelled vectors they feed have samples.
func exercise(t *testing.T, n *node.Node) {
	t.Helper()
	body := strings.NewReader(`{"name":"metrics app"}`)
	req := httptest.NewRequest("POST", "/admin/v1/apps", body)
	req.Header.Set("Authorization", "Bearer "+n.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	n.Handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK && rec.Code != http.StatusCreated {
		t.Fatalf("create app: %d %s", rec.Code, rec.Body)
	}
	waitReady(t, n.Handler)
}

// TestRulesAndDashboardNameServedMetrics: every metric the alerting rules
// and the dashboard query is one a node serves, so a renamed metric fails
// here rather than leaving an alert that never fires or an empty panel. An
// embedded node serves most; the erasure purge's metrics exist only with
// Postgres read models, so a node on Postgres serves those (skipped, and
// named, when no test Postgres is configured).
func TestRulesAndDashboardNameServedMetrics(t *testing.T) {
	uses := queried(t)
	if len(uses) < 15 {
		t.Fatalf("only %d metrics found in the rules and dashboard: %v", len(uses), uses)
	}
	n, err := node.Open(context.Background(), node.Config{DataDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	exercise(t, n)
	out, reg := served(t, n, n.Handler)

	var pgOut, pgReg map[string]bool
	if os.Getenv(pgtest.EnvURL) != "" || os.Getenv(pgtest.EnvRequire) == "1" {
		pn, err := node.Open(context.Background(), node.Config{DataDir: t.TempDir(), PostgresURL: pgtest.New(t), Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		defer pn.Close()
		pgOut, pgReg = served(t, pn, pn.Handler)
	}

	names := make([]string, 0, len(uses))
	for m := range uses {
		names = append(names, m)
	}
	sort.Strings(names)
	var unobserved, pgOnly []string
	for _, m := range names {
		switch {
		case out[m]:
		case reg[m]:
			unobserved = append(unobserved, m)
		case pgOut[m] || pgReg[m]:
			pgOnly = append(pgOnly, m)
		case pgOut == nil && strings.HasPrefix(m, "platform_erasure_purge"):
			t.Logf("%s: served with Postgres read models only; not checked without %s", m, pgtest.EnvURL)
		default:
			t.Errorf("%s (used by %s) is not served by a node", m, strings.Join(uses[m], ", "))
		}
	}
	t.Logf("served with samples: %d; registered, no sample yet in this run: %v; on Postgres only: %v", len(names)-len(unobserved)-len(pgOnly), unobserved, pgOnly)
}

// The runbook of every alert is a section of docs/operations.md, and every
// alert says how urgent it is and what it means.
func TestAlertsLinkTheirRunbooks(t *testing.T) {
	ops := string(repoFile(t, "docs", "operations.md"))
	anchors := map[string]bool{}
	for _, line := range strings.Split(ops, "\n") {
		if strings.HasPrefix(line, "#") {
			anchors[githubAnchor(strings.TrimLeft(line, "# "))] = true
		}
	}
	seen := map[string]bool{}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s has a rule with no alert name (recording rules belong elsewhere)", g.Name)
				continue
			}
			if seen[r.Alert] {
				t.Errorf("alert %s defined twice", r.Alert)
			}
			seen[r.Alert] = true
			switch r.Labels["severity"] {
			case "page", "warning", "info":
			default:
				t.Errorf("%s: severity %q, want page, warning or info", r.Alert, r.Labels["severity"])
			}
			if r.Annotations["summary"] == "" {
				t.Errorf("%s has no summary", r.Alert)
			}
			url := r.Annotations["runbook_url"]
			file, anchor, _ := strings.Cut(url, "#")
			if file != "docs/operations.md" || !anchors[anchor] {
				t.Errorf("%s: runbook_url %q is not a section of docs/operations.md", r.Alert, url)
			}
			if anchor != strings.ToLower(r.Alert) {
				t.Errorf("%s: runbook_url %q, want the section named after the alert", r.Alert, url)
			}
		}
	}
}

// githubAnchor is the fragment GitHub gives a heading.
func githubAnchor(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	var b strings.Builder
	for _, r := range h {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// The dashboard imports as it is: panels with unique ids inside the
// 24-column grid, every query on the data-source variable.
func TestDashboardIsImportable(t *testing.T) {
	d := loadDashboard(t)
	if d.UID == "" {
		t.Error("no uid: re-imports would duplicate the dashboard")
	}
	ids := map[int]bool{}
	queries := 0
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.X < 0 || p.GridPos.W <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q outside the grid: %+v", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q does not use the ${datasource} variable", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		queries += len(p.Targets)
	}
	if queries < 20 {
		t.Errorf("%d queries, want the dashboard to cover the platform's metrics", queries)
	}
}
