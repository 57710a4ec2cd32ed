package openapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/healthtech/partner-open-platform/commandapi"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/openapi"
	"github.com/healthtech/partner-open-platform/internal/openapi/openapitest"
	"github.com/healthtech/partner-open-platform/queryapi"
	"github.com/healthtech/partner-open-platform/webhooks"
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

func TestWebhookRoutesDocumentTheirOutcomes(t *testing.T) {
	doc := openapitest.Doc(t)
	cases := []struct {
		method, path string
		statuses     []int
	}{
		{http.MethodPatch, "/admin/v1/apps/{appId}", []int{200, 400, 404, 409, 413, 422, 503}},
		{http.MethodGet, "/admin/v1/deliveries", []int{200, 422}},
		{http.MethodGet, "/admin/v1/deliveries/{deliveryId}", []int{200, 404}},
		{http.MethodPost, "/admin/v1/deliveries/{deliveryId}/resend", []int{202, 404, 413}},
		{http.MethodPost, "/admin/v1/apps/{appId}/deliveries/resend", []int{202, 422}},
		{http.MethodGet, "/open/v1/webhooks/deliveries", []int{200}},
		{http.MethodGet, "/open/v1/webhooks/deliveries/{deliveryId}", []int{200, 404}},
		{http.MethodPost, "/open/v1/webhooks/deliveries/{deliveryId}/resend", []int{202, 404}},
		{http.MethodGet, "/open/v1/webhooks/events", []int{200}},
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

// partnerVisible is one payload of every event type in the catalog, filled
// so that every optional part of a webhook body appears.
func partnerVisible() []events.Payload {
	member := catalog.Member{MemberID: 3001, AppUserID: "kid", AppGroupID: 12, FamilyGroupID: 2001, Name: "Kid", Relationship: "SON"}
	return []events.Payload{
		&catalog.IDBlockReserved{Kind: "user", First: 1, Last: 50},
		&catalog.AppCreated{AppID: 7, Name: "partner"},
		&catalog.AppSecretRotated{AppID: 7},
		&catalog.AppWebhookConfigured{AppID: 7, WebhookURL: "https://example.com/hook"},
		&catalog.ChannelUserBound{OpenUserID: 1001, ChannelUserID: "u-1"},
		&catalog.UserRegistered{OpenUserID: 1001, ChannelUserID: "u-1"},
		&catalog.UserProfileUpdated{ChannelUserID: "u-1", OpenUserID: 1001, Changed: []string{"name", "nickname", "gender", "avatar", "phone", "email", "birth_date"}},
		&catalog.FamilyGroupUpserted{ChannelUserID: "u-1", OpenUserID: 1001, FamilyGroupID: 2001, AppGroupID: 12, Name: "Home", Created: true},
		&catalog.FamilyGroupUpserted{ChannelUserID: "u-1", OpenUserID: 1001, FamilyGroupID: 2001, AppGroupID: 12, Name: "Trip"},
		&catalog.FamilyGroupDissolved{ChannelUserID: "u-1", OpenUserID: 1001, FamilyGroupID: 2001, AppGroupID: 12, DeletedMemberIDs: []int64{3001, 3002}},
		&catalog.FamilyGroupDissolved{ChannelUserID: "u-1", OpenUserID: 1001, FamilyGroupID: 2002, AppGroupID: 13},
		&catalog.FamilyMemberCreated{ChannelUserID: "u-1", OpenUserID: 1001, Member: member},
		&catalog.FamilyMemberUpdated{ChannelUserID: "u-1", OpenUserID: 1001, Member: member, Changed: []string{
			"app_group_id", "name", "relationship", "gender", "birth_date", "phone", "height", "weight", "blood_type", "is_default"}},
		&catalog.FamilyMemberDeleted{ChannelUserID: "u-1", OpenUserID: 1001, MemberID: 3001, AppUserID: "kid", FamilyGroupID: 2001},
		&catalog.DeliveryCreated{DeliveryID: "d", AppID: 7},
		&catalog.DeliveryAttempted{DeliveryID: "d", Attempt: 1},
		&catalog.DeliveryResendRequested{DeliveryID: "d"},
	}
}

// The webhook bodies the dispatcher renders are exactly what
// ChannelUserWebhook and x-webhooks describe, and x-webhooks lists exactly
// the events partners receive.
func TestWebhookBodiesMatchTheDocument(t *testing.T) {
	doc := openapitest.Doc(t)
	schema := doc.Components.Schemas["ChannelUserWebhook"]
	if schema == nil || schema.Value == nil {
		t.Fatal("components.schemas.ChannelUserWebhook missing")
	}
	hooks, _ := doc.Extensions["x-webhooks"].(map[string]any)
	if len(hooks) == 0 {
		t.Fatal("x-webhooks missing")
	}
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	rendered := map[string]bool{}
	for i, p := range partnerVisible() {
		env := events.Envelope{
			Recorded: events.Recorded{ID: fmt.Sprintf("evt-%d", i), Type: p.EventType()},
			Payload:  p, Metadata: events.Metadata{AppID: 7, OccurredAt: time.Date(2024, 5, 1, 0, 30, 0, 0, time.UTC)},
		}
		r, ok := webhooks.Render(env, loc)
		if !ok {
			if _, documented := hooks[p.EventType()]; documented {
				t.Errorf("%s is in x-webhooks but partners never receive it", p.EventType())
			}
			continue
		}
		rendered[r.Event] = true
		var body any
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		if err := schema.Value.VisitJSON(body, openapi3.MultiErrors()); err != nil {
			t.Errorf("%s body %s does not match ChannelUserWebhook: %v", r.Event, r.Body, err)
		}
		if _, documented := hooks[r.Event]; !documented {
			t.Errorf("%s is sent but not in x-webhooks", r.Event)
		}
	}
	var enum []string
	for _, v := range doc.Components.Schemas["ChannelUserEvent"].Value.Enum {
		enum = append(enum, fmt.Sprint(v))
	}
	for name := range hooks {
		if !rendered[name] {
			t.Errorf("x-webhooks documents %s, which is never sent", name)
		}
		if !slices.Contains(enum, name) {
			t.Errorf("ChannelUserEvent lacks %s", name)
		}
	}
	if len(enum) != len(hooks) {
		t.Errorf("ChannelUserEvent %v, x-webhooks has %d events", enum, len(hooks))
	}
}

// Every $ref in x-webhooks must resolve: the loader does not check
// extensions, and each entry must carry the four signature headers.
func TestXWebhooksReferencesResolve(t *testing.T) {
	doc := openapitest.Doc(t)
	hooks, _ := doc.Extensions["x-webhooks"].(map[string]any)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				if k == "$ref" {
					ref, _ := child.(string)
					if !resolves(doc, ref) {
						t.Errorf("%s: $ref %q does not resolve", path, ref)
					}
					continue
				}
				walk(path+"/"+k, child)
			}
		case []any:
			for i, child := range v {
				walk(fmt.Sprintf("%s/%d", path, i), child)
			}
		}
	}
	walk("x-webhooks", hooks)
	for name, hook := range hooks {
		post, _ := hook.(map[string]any)["post"].(map[string]any)
		if post == nil {
			t.Errorf("x-webhooks %s: no post operation", name)
			continue
		}
		raw, _ := json.Marshal(post["parameters"])
		for _, h := range []string{"WebhookIdHeader", "WebhookEventHeader", "WebhookTimestampHeader", "WebhookSignatureHeader"} {
			if !strings.Contains(string(raw), "#/components/parameters/"+h) {
				t.Errorf("x-webhooks %s: header parameter %s missing", name, h)
			}
		}
	}
}

func resolves(doc *openapi3.T, ref string) bool {
	name, ok := strings.CutPrefix(ref, "#/components/")
	if !ok {
		return false
	}
	kind, name, _ := strings.Cut(name, "/")
	switch kind {
	case "schemas":
		return doc.Components.Schemas[name] != nil
	case "parameters":
		return doc.Components.Parameters[name] != nil
	case "headers":
		return doc.Components.Headers[name] != nil
	case "responses":
		return doc.Components.Responses[name] != nil
	}
	return false
}
