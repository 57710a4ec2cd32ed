package openapi_test

import (
	"context"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/healthtech/partner-open-platform/commandapi"
	"github.com/healthtech/partner-open-platform/internal/openapi"
	"github.com/healthtech/partner-open-platform/internal/openapi/openapitest"
	"github.com/healthtech/partner-open-platform/queryapi"
)

func TestDocumentIsValidOpenAPI303(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapi.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.0.3" {
		t.Fatalf("openapi version %q, want 3.0.3", doc.OpenAPI)
	}
}

// nodeRoutes are the routes internal/node registers itself (node.router);
// internal/node imports this package, so they are listed by hand here.
var nodeRoutes = []string{"GET /healthz", "GET /readyz", "GET /metrics", "GET /openapi.yaml"}

var httprouterParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)

func handlerRoutes() []string {
	var out []string
	var routes []commandapi.Route
	routes = append(routes, (&commandapi.API{}).Routes()...)
	routes = append(routes, (&queryapi.API{}).Routes()...)
	for _, r := range routes {
		out = append(out, r.Method+" "+httprouterParam.ReplaceAllString(r.Path, "{$1}"))
	}
	out = append(out, nodeRoutes...)
	slices.Sort(out)
	return out
}

func documentedRoutes(doc *openapi3.T) []string {
	var out []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			out = append(out, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(out)
	return out
}

func TestEveryHandlerRouteIsDocumentedAndViceVersa(t *testing.T) {
	doc := openapitest.Doc(t)
	have, want := documentedRoutes(doc), handlerRoutes()
	for _, r := range want {
		if _, found := slices.BinarySearch(have, r); !found {
			t.Errorf("route %s is served but not in openapi.yaml", r)
		}
	}
	for _, r := range have {
		if _, found := slices.BinarySearch(want, r); !found {
			t.Errorf("route %s is in openapi.yaml but not served", r)
		}
	}
}

// Every operation must say how it authenticates and list the failures its
// handler can produce, so partners can rely on the document alone.
func TestOperationsDocumentSecurityAndErrors(t *testing.T) {
	doc := openapitest.Doc(t)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			name := method + " " + path
			if op.Security == nil {
				t.Errorf("%s: no security requirement (use [] for none)", name)
				continue
			}
			var want []int
			switch {
			case strings.HasPrefix(path, "/open/"):
				want = []int{400, 401, 413, 422, 500, 503}
				requireScheme(t, name, *op.Security, "AppId", "Timestamp", "Signature")
			case strings.HasPrefix(path, "/admin/"):
				want = []int{401, 500}
				requireScheme(t, name, *op.Security, "AdminToken")
			case path == "/metrics":
			default:
				want = []int{500}
			}
			for _, status := range want {
				if op.Responses.Status(status) == nil {
					t.Errorf("%s: status %d not documented", name, status)
				}
			}
			for code, ref := range op.Responses.Map() {
				if path == "/metrics" {
					continue
				}
				if ref.Value.Headers["X-Request-Id"] == nil {
					t.Errorf("%s %s: no X-Request-Id header", name, code)
				}
			}
		}
	}
}

func requireScheme(t *testing.T, op string, reqs openapi3.SecurityRequirements, names ...string) {
	t.Helper()
	if len(reqs) != 1 {
		t.Errorf("%s: %d security alternatives, want 1", op, len(reqs))
		return
	}
	for _, n := range names {
		if _, ok := reqs[0][n]; !ok {
			t.Errorf("%s: security lacks %s", op, n)
		}
	}
	if len(reqs[0]) != len(names) {
		t.Errorf("%s: security %v, want exactly %v", op, reqs[0], names)
	}
}

func TestChannelUserWritesDocumentTheirOutcomes(t *testing.T) {
	doc := openapitest.Doc(t)
	cases := []struct {
		method, path string
		statuses     []int
	}{
		{http.MethodPost, "/open/v1/channel/users", []int{200, 201, 409}},
		{http.MethodGet, "/open/v1/channel/users/{openUserId}", []int{200, 404}},
		{http.MethodPatch, "/open/v1/channel/users/{openUserId}", []int{200, 404, 409}},
		{http.MethodPost, "/open/v1/channel/users/{openUserId}/family-groups", []int{200, 201, 404, 409}},
		{http.MethodDelete, "/open/v1/channel/users/{openUserId}/family-groups/{groupId}", []int{200, 404, 409}},
		{http.MethodPost, "/open/v1/channel/users/{openUserId}/family-members", []int{200, 201, 404, 409}},
		{http.MethodDelete, "/open/v1/channel/users/{openUserId}/family-members/{memberId}", []int{200, 404, 409}},
	}
	for _, c := range cases {
		op := doc.Paths.Find(c.path).GetOperation(c.method)
		if op == nil {
			t.Errorf("%s %s missing", c.method, c.path)
			continue
		}
		for _, s := range c.statuses {
			if op.Responses.Status(s) == nil {
				t.Errorf("%s %s: status %d not documented", c.method, c.path, s)
			}
		}
	}
}
