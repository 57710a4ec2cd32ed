package domain_test

import (
	"go/parser"
	"go/token"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/healthtech/partner-open-platform/"

// TestLayers keeps the vocabulary below both sides: the query side never
// depends on the write side, the HTTP plumbing depends on neither, and the
// domain words depend on nothing but the event-store port. Dependencies are
// transitive (go list -deps), so a detour through another package fails too.
func TestLayers(t *testing.T) {
	rules := []struct {
		pkg       string
		forbidden []string
	}{
		{"domain", []string{"commands", "projections", "webhooks", "queryapi", "commandapi", "internal/httpapi", "internal/auth", "events/catalog"}},
		{"queryapi", []string{"commands", "webhooks", "commandapi"}},
		{"internal/httpapi", []string{"commands", "projections", "webhooks"}},
		{"internal/auth", []string{"commands", "projections", "webhooks"}},
		{"projections", []string{"commands", "webhooks", "queryapi", "commandapi"}},
		{"commands", []string{"projections", "webhooks", "queryapi", "commandapi"}},
	}
	for _, r := range rules {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+r.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", r.pkg, err, out)
		}
		deps := map[string]bool{}
		for _, d := range strings.Fields(string(out)) {
			deps[strings.TrimPrefix(d, module)] = true
		}
		for _, f := range r.forbidden {
			if deps[f] {
				t.Errorf("%s depends on %s", r.pkg, f)
			}
		}
	}
}

// TestDeliveryAggregateSpeaksDomain: the delivery aggregate takes its status
// and outcome words from domain, not from the read model it feeds.
func TestDeliveryAggregateSpeaksDomain(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../webhooks/delivery.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range f.Imports {
		if strings.Contains(imp.Path.Value, module+"projections") {
			t.Errorf("webhooks/delivery.go imports %s", imp.Path.Value)
		}
	}
}
