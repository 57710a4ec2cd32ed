package domain_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/healthtech/partner-open-platform/"

// The layers of ../shared/design/ARCHITECTURE.md, as package paths of this
// module. A path names the package and every package below it.
var (
	// writeSide decides commands and appends events (the webhook delivery
	// aggregate and dispatcher included).
	writeSide = []string{"commands", "commandapi", "webhooks", "internal/idempotency"}
	// readModels are the projections and their stores.
	readModels = []string{"projections"}
	// edges serve HTTP over both sides, or wire the node together.
	edges = []string{"commandapi", "queryapi", "portal", "internal/node", "cmd"}
)

func join(sets ...[]string) []string { return slices.Concat(sets...) }

// layerRules is every dependency rule of the architecture, checked on the
// transitive dependencies (go list -deps), so a detour through another
// package breaks a rule as surely as a direct import.
var layerRules = []struct {
	why  string
	pkgs []string // patterns for go list
	// only, when set, lists the only packages of this module the packages'
	// code may use (exact paths: an adapter below events is not the schema);
	// their tests may use more, as fixtures.
	only []string
	// forbid lists what neither the packages nor (unless fixtures) their tests may use.
	forbid []string
	// fixtures: the packages' tests may use adapters the code may not.
	fixtures bool
}{
	{
		why:    "webhooks never imports the read models: the dispatcher consumes its own ports (DueQueue, Progress)",
		pkgs:   []string{"webhooks/..."},
		forbid: join(readModels, []string{"queryapi", "commandapi", "internal/node"}),
	},
	{
		why:    "the query side never imports the write side",
		pkgs:   []string{"queryapi/..."},
		forbid: writeSide,
	},
	{
		why:    "the read models depend on neither the write side nor the edges",
		pkgs:   []string{"projections/..."},
		forbid: join(writeSide, edges),
	},
	{
		why:  "the write side decides without reading the asynchronous read models",
		pkgs: []string{"commands/..."},
		// A test replays an old log into the users read model, to show
		// that reads of it still work.
		fixtures: true,
		forbid:   join(readModels, []string{"queryapi", "commandapi", "webhooks"}),
	},
	{
		why:  "the shared edge (HTTP plumbing, auth schemes) takes its words from below both sides",
		pkgs: []string{"internal/httpapi", "internal/auth"},
		// The auth tests run the schemes against the binding stores, which
		// live in the read-model stores.
		fixtures: true,
		forbid:   join(readModels, writeSide, edges, []string{"events/subscribe", "relay", "privacy"}),
	},
	{
		why:  "the words both sides share depend on nothing but the event-store port (and the JSON codec, a leaf, through it)",
		pkgs: []string{"domain"},
		only: []string{"domain", "events", "events/jsoncodec"},
	},
	{
		why:  "the event schema depends on nothing above it",
		pkgs: []string{"events", "events/catalog"},
		only: []string{"events", "events/catalog", "events/jsoncodec", "domain"},
	},
	{
		why: "the webhook event catalog is a contract both sides and the edges read: it knows the event schema, nothing above it " +
			"(its tests render through the webhooks package as fixtures)",
		pkgs: []string{"internal/eventtypes"},
		only: []string{"internal/eventtypes", "events", "events/catalog", "events/jsoncodec", "domain"},
	},
	{
		why:  "the JSON codec is a leaf every layer may use: it knows JSON, nothing of the platform",
		pkgs: []string{"events/jsoncodec"},
		only: []string{"events/jsoncodec"},
	},
	{
		why:  "the log's wire format on Kafka is part of the event schema's layer: it knows the log, nothing above it",
		pkgs: []string{"events/kafka"},
		only: []string{"events/kafka", "events", "events/jsoncodec", "domain"},
	},
	{
		why:    "the subscription runtime belongs to neither side: it follows the log for both",
		pkgs:   []string{"events/subscribe"},
		forbid: join(readModels, writeSide, edges, []string{"internal/httpapi", "internal/auth", "relay", "privacy"}),
	},
}

// under reports whether pkg is path or a package below it.
func under(pkg string, paths []string) bool {
	for _, p := range paths {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			return true
		}
	}
	return false
}

// deps lists the module's packages the patterns depend on (go list -deps),
// themselves included; with tests, their test files' dependencies too.
func deps(t *testing.T, tests bool, patterns ...string) []string {
	t.Helper()
	args := []string{"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}"}
	if tests {
		args = append(args, "-test")
	}
	for _, p := range patterns {
		args = append(args, module+p)
	}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var in []string
	for _, line := range strings.Split(string(out), "\n") {
		// A test variant reads "pkg [pkg.test]"; the generated test main "pkg.test".
		path, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		if !strings.HasPrefix(path, module) || strings.HasSuffix(path, ".test") {
			continue
		}
		path = strings.TrimSuffix(strings.TrimPrefix(path, module), "_test")
		if !slices.Contains(in, path) {
			in = append(in, path)
		}
	}
	return in
}

// TestLayers checks every rule of the architecture's layers with go list -deps.
func TestLayers(t *testing.T) {
	for _, r := range layerRules {
		t.Run(strings.Join(r.pkgs, "+"), func(t *testing.T) {
			own := make([]string, len(r.pkgs))
			for i, p := range r.pkgs {
				own[i] = strings.TrimSuffix(p, "/...")
			}
			for _, d := range deps(t, r.only == nil && !r.fixtures, r.pkgs...) {
				if under(d, own) {
					continue
				}
				if under(d, r.forbid) || (r.only != nil && !slices.Contains(r.only, d)) {
					t.Errorf("%s depend on %s: %s", strings.Join(r.pkgs, ", "), d, r.why)
				}
			}
		})
	}
}

// TestLayerCheckSeesViolations guards the check itself: packages known to
// cross the lines (an edge, which may use everything) are reported.
func TestLayerCheckSeesViolations(t *testing.T) {
	node := deps(t, false, "internal/node")
	for _, want := range []string{"projections", "webhooks", "commands", "queryapi", "events/subscribe"} {
		if !slices.ContainsFunc(node, func(d string) bool { return under(d, []string{want}) }) {
			t.Errorf("internal/node's dependencies %v miss %s: the layer check reads them wrong", node, want)
		}
	}
	webhooks := deps(t, true, "webhooks")
	if !slices.Contains(webhooks, "events") || !slices.Contains(webhooks, "domain") {
		t.Errorf("webhooks' dependencies %v miss events or domain", webhooks)
	}
}
