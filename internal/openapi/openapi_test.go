package openapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/healthtech/partner-open-platform/commandapi"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/internal/openapi/openapitest"
	"github.com/healthtech/partner-open-platform/queryapi"
	"github.com/healthtech/partner-open-platform/webhooks"
)

// openapitest.Doc fails the test unless the document loads and validates.
func TestDocumentIsValidOpenAPI303(t *testing.T) {
	doc := openapitest.Doc(t)
	if doc.OpenAPI != "3.0.3" {
		t.Fatalf("openapi version %q, want 3.0.3", doc.OpenAPI)
	}
}

// nodeRoutes are the routes internal/node registers itself (node.router);
// internal/node imports this package, so they are listed by hand here.
var nodeRoutes = []string{"GET /healthz", "GET /readyz", "GET /metrics", "GET /openapi.yaml", "POST /admin/v1/backup"}

var httprouterParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)

func handlerRoutes() []string {
	var out []string
	var routes []commandapi.Route
	routes = append(routes, (&commandapi.API{}).Routes()...)
	routes = append(routes, (&queryapi.API{}).Routes()...)
	routes = append(routes, (&queryapi.ReportAPI{}).Routes()...)
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
			case path == "/open/v1/health-reports/{openReportId}":
				want = []int{401, 403, 404, 413, 429, 500}
				requireScheme(t, name, *op.Security, "schemeH")
			case strings.HasPrefix(path, "/open/v1/event-types"):
				// The webhook event catalog is public, like this document
				// (docs/event-catalog.md).
				want = []int{200, 422, 500}
				if len(*op.Security) != 0 {
					t.Errorf("%s: security %v, want [] (public)", name, *op.Security)
				}
			case strings.HasPrefix(path, "/open/internal/"):
				want = []int{200, 400, 401, 413, 422, 500, 503}
				requireScheme(t, name, *op.Security, "InternalToken")
			case strings.HasPrefix(path, "/open/"):
				// Every partner route may answer 403 SCOPE_NOT_GRANTED.
				want = []int{400, 401, 403, 413, 422, 500, 503}
				// Scheme M, or scheme H in its place (accepted on every
				// partner route, see docs/authentication.md).
				requireAlternatives(t, name, *op.Security, []string{"AppId", "Timestamp", "Signature"}, []string{"schemeH"})
			case strings.HasPrefix(path, "/admin/v1/health-reports"):
				want = []int{400, 401, 404, 413, 422, 500}
				if method == http.MethodPost {
					want = []int{200, 201, 400, 401, 413, 422, 500}
				}
				requireScheme(t, name, *op.Security, "uploaderBearer")
			case strings.HasPrefix(path, "/admin/"):
				want = []int{401, 500}
				requireScheme(t, name, *op.Security, "AdminToken")
			case path == "/sandbox/mock/measure":
				want = []int{200, 401, 403, 422, 500}
				requireScheme(t, name, *op.Security, "schemeH")
			case path == "/v1/health/daily-report":
				want = []int{200, 401, 403, 404, 422, 500}
				requireScheme(t, name, *op.Security, "oauthBearer")
			case strings.HasPrefix(path, "/oauth/"):
				want = []int{200, 400, 401, 500}
				requireClientAuth(t, name, *op.Security)
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

// requireClientAuth checks the OAuth endpoints' two client authentications:
// HTTP Basic (oauthClient) or credentials in the form (no header scheme).
func requireClientAuth(t *testing.T, op string, reqs openapi3.SecurityRequirements) {
	t.Helper()
	if len(reqs) == 2 && len(reqs[0]) == 1 && len(reqs[1]) == 0 {
		if _, basic := reqs[0]["oauthClient"]; basic {
			return
		}
	}
	t.Errorf("%s: security %v, want [{oauthClient: []}, {}]", op, reqs)
}

// requireAlternatives asserts the operation's security alternatives are
// exactly alts, in order.
func requireAlternatives(t *testing.T, op string, reqs openapi3.SecurityRequirements, alts ...[]string) {
	t.Helper()
	if len(reqs) != len(alts) {
		t.Errorf("%s: %d security alternatives, want %d", op, len(reqs), len(alts))
		return
	}
	for i, names := range alts {
		requireScheme(t, op, reqs[i:i+1], names...)
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

func ptr[T any](v T) *T { return &v }

// partnerVisible is one payload of every event type in the catalog, filled
// so that every optional part of a webhook body appears (and, for nullable
// parts, is also null once).
func partnerVisible() []events.Payload {
	member := catalog.Member{MemberID: 3001, AppUserID: "kid", AppGroupID: 12, FamilyGroupID: 2001, Name: "Kid", Relationship: "SON"}
	measured := catalog.PluginMeasurement{
		MeasurementNo: "PM2024050100000042", SessionID: "0b6f1c9e-2a4d-4c8e-9f1a-7d3e5b2c1a90", AppID: 7, ThirdUserID: ptr("host user 1"),
		PlatformUserID: ptr(int64(1001)), ReportType: "blood_pressure", DeviceKey: "HOME_MULTI_BIO_MONITOR", MeasureMode: "BP", Metadata: ptr("order-9"),
	}
	bare := catalog.PluginMeasurement{MeasurementNo: "PM2024050100000043", SessionID: "s", AppID: 7, ReportType: "spo2", DeviceKey: "HOME_SPO2_RING", MeasureMode: "SPO2"}
	ecg := catalog.PluginMeasurement{MeasurementNo: "PM2024050100000044", SessionID: "e", AppID: 7, ThirdUserID: ptr("t"), ReportType: "ecg", DeviceKey: "HEARTLOG_ECG_RECORDER", MeasureMode: "ECG"}
	at := time.Date(2024, 5, 1, 1, 30, 0, 0, time.UTC)
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
		&catalog.UserErased{AppID: 7, OpenUserID: 1001, Reason: "ticket 7", ErasedBy: "operator:1", ErasedAt: time.Date(2024, 5, 1, 0, 30, 0, 0, time.UTC)},
		&catalog.ErasureAcknowledged{AppID: 7, OpenUserID: 1001, AcknowledgedBy: "app:7"},
		&catalog.DeliveryCreated{DeliveryID: "d", AppID: 7},
		&catalog.DeliveryAttempted{DeliveryID: "d", Attempt: 1},
		&catalog.DeliveryResendRequested{DeliveryID: "d"},
		&catalog.ReportCreated{ReportID: 5001, AppID: 7, OpenUserID: 1001, ChannelUserID: "u-1", OpenMemberID: ptr(int64(3001)),
			RequestReportID: ptr("R-1"), ReportType: ptr("BLOOD_PRESSURE"), InterpretationDetail: `{"risk_level":"low"}`,
			UploadedAt: at, ExaminedAt: &at, RawData: `{"indicators":[]}`, UploadedBy: "uploader:1"},
		&catalog.ReportCreated{ReportID: 5002, AppID: 7, OpenUserID: 1001, ChannelUserID: "u-1", UploadedAt: at, RawData: `{}`, UploadedBy: "operator"},
		&catalog.ReportUpdated{ReportID: 5001, AppID: 7, OpenUserID: 1001, ChannelUserID: "u-1", Changed: []string{"interpretation_result"},
			ReportType: ptr("BLOOD_PRESSURE"), InterpretationResult: ptr("elevated"), InterpretedAt: &at, UpdatedBy: "uploader:1"},
		&catalog.ReportUpdated{ReportID: 5002, AppID: 7, OpenUserID: 1001, ChannelUserID: "u-1", Changed: []string{"file_path"}, FilePath: ptr("/r.pdf")},
		&catalog.ReportViewed{ReportID: 5001, AppID: 7},
		&catalog.ReportKeyClaimed{Uploader: "uploader:1", RequestReportID: "R-1", ReportID: 5001},
		&catalog.UploaderRegistered{UploaderID: 1, Name: "stations", TokenHash: "h"},
		&catalog.TokenIssued{TokenHash: "h", AppID: 7, Scope: "daily_report", ExpiresAt: at},
		&catalog.TokenRevoked{TokenHash: "h", AppID: 7},
		&catalog.PluginNonceClaimed{AppID: 7, Nonce: "n", SessionID: "s"},
		&catalog.PluginSessionOpened{SessionID: "s", AppID: 7, ThirdUserID: "t", DeviceKey: "HOME_SPO2_RING", MeasureMode: "SPO2", ReportType: "spo2", ExpiresAt: at},
		&catalog.PluginMeasurementRecorded{PluginMeasurement: measured, DeviceSN: ptr("BP-1"), Data: `{"systolic":121}`},
		&catalog.PluginMeasurementRecorded{PluginMeasurement: bare, Data: `{"spo2":97}`, Mock: true},
		&catalog.PluginMeasurementRecorded{PluginMeasurement: ecg, Data: `{"rr_intervals_ms":[800]}`, NeedsAnalysis: true},
		&catalog.PluginMeasurementAnalyzed{PluginMeasurement: ecg, Result: `{"heart_rate":75}`},
		&catalog.GoodsCreated{GoodsID: 1, GoodsCode: "BP-100", GoodsName: "Monitor"},
		&catalog.GoodsUpdated{GoodsID: 1, GoodsCode: "BP-100", GoodsName: "Monitor 2"},
		&catalog.GoodsActivation{GoodsID: 1, GoodsCode: "BP-100"},
		&catalog.OrderKeyClaimed{AppID: 7, ThirdOrderID: "T-1", OrderID: 42},
		&catalog.OrderCreated{OrderID: 42, OrderCode: "PO2024050142", AppID: 7, ThirdOrderID: "T-1", ContactPerson: "Li", ContactPhone: "13812345678",
			Address: "Beijing", LogisticsType: "EXPRESS_DELIVERY", PostagePolicy: "FREE_SHIPPING", OrderSource: "API_INTERFACE", CooperationType: "PURCHASE",
			OrderTime: at, Items: []catalog.OrderLine{{ItemID: 1, GoodsID: 1, GoodsCode: "BP-100", GoodsName: "Monitor", Quantity: 2, UnitPrice: 100, TotalPrice: 200}}},
		&catalog.OrderReviewed{OrderID: 42, AppID: 7, Approved: true, By: "operator"},
		&catalog.OrderShipped{OrderID: 42, OrderCode: "PO2024050142", AppID: 7, ThirdOrderID: "T-1", LogisticsCompany: "SF", TrackingNumber: "SF1",
			Items: []catalog.ShippedLine{{ItemID: 1, GoodsCode: "BP-100", Quantity: 2, DeviceSNs: []string{"SN-1", "SN-2"}}}, ShippedAt: at, Source: "operator"},
		&catalog.OrderShipped{OrderID: 42, OrderCode: "PO2024050142", AppID: 7, ThirdOrderID: "T-1", LogisticsCompany: "SANDBOX-EXPRESS", TrackingNumber: "SBX1",
			Items: []catalog.ShippedLine{{ItemID: 2, GoodsCode: "RING-1", Quantity: 1, DeviceSNs: []string{}}}, ShippedAt: at, Complete: true, Source: "sandbox_test"},
		&catalog.AppReviewed{AppID: 7, Approved: true, ProductionAppID: 8},
		&catalog.AppScopesDeclared{AppID: 7, Scopes: []string{"orders"}},
		&catalog.ProviderRegistered{ProviderID: 1, AppID: 7, Name: "Station", Type: "HEALTH_STATION", Contact: "x", PointsCode: ptr("P-1")},
		&catalog.ProviderReviewed{ProviderID: 1, Approved: true},
		&catalog.ProviderItemsConfigured{ProviderID: 1, AllowedItemIDs: []int64{1}},
		&catalog.BenefitItemCreated{BenefitItemID: 1, Name: "Check-up"},
		&catalog.BenefitItemStatusChanged{BenefitItemID: 1, Status: "SUSPENDED"},
		&catalog.CardIssued{CardNumber: "100000000000042", IssuerAppID: 7, HolderName: "Han", ExpiresAt: at, Items: []catalog.CardLine{{UserBenefitItemID: 1, BenefitItemID: 1, Quantity: 3}}},
		&catalog.BenefitFulfilled{RecordID: 1, CardNumber: "100000000000042", IssuerAppID: 7, UserBenefitItemID: 1, BenefitItemID: 1, ProviderID: 1, ProviderAppID: 7, Quantity: 1, Remaining: 2, At: at},
		&catalog.FulfillmentRated{RecordID: 1, IssuerAppID: 7, Rating: 5},
		&catalog.CardBatchPlanned{IssuerAppID: 7, Key: "k", Cards: []catalog.PlannedCard{{CardNumber: "100000000000042", UserBenefitItemIDs: []int64{1}}}},
		&catalog.CardBatchRenumbered{IssuerAppID: 7, Index: 0, CardNumber: "100000000000043"},
		&catalog.CardBatchCompleted{IssuerAppID: 7, Cards: 1},
		&catalog.AppWebhookTestRequested{AppID: 7, EndpointID: 12},
		&catalog.AppSandboxEventTriggered{AppID: 7, Event: "user.profile.updated"},
		&catalog.AppSandboxEventTriggered{AppID: 7, Event: "user.family_group.created"},
		&catalog.AppSandboxEventTriggered{AppID: 7, Event: "user.family_group.deleted"},
		&catalog.AppSandboxEventTriggered{AppID: 7, Event: "user.family_member.created"},
		&catalog.AppSandboxEventTriggered{AppID: 7, Event: "user.family_member.updated"},
		&catalog.AppSandboxEventTriggered{AppID: 7, Event: "user.family_member.deleted"},
		&catalog.AppSandboxEventTriggered{AppID: 7, Event: "health.report.created"},
		&catalog.AppSandboxEventTriggered{AppID: 7, Event: "health.report.updated"},
		&catalog.AppSandboxEventTriggered{AppID: 7, Event: "plugin.report.ready"},
		&catalog.AppSandboxEventTriggered{AppID: 7, Event: "order.shipped"},
	}
}

// webhookOperations loads every x-webhooks entry as the POST of a path of
// its own, so the loader resolves and validates it like any operation and
// its request body schema can check webhook bodies. It is loaded once per
// test process from openapitest.Doc's document; the tests only read it.
func webhookOperations(t *testing.T) map[string]*openapi3.Operation {
	t.Helper()
	doc := openapitest.Doc(t)
	webhookOps.once.Do(func() { webhookOps.ops, webhookOps.err = loadWebhookOperations(doc) })
	if webhookOps.err != nil {
		t.Fatal(webhookOps.err)
	}
	return webhookOps.ops
}

var webhookOps struct {
	once sync.Once
	ops  map[string]*openapi3.Operation
	err  error
}

func loadWebhookOperations(doc *openapi3.T) (map[string]*openapi3.Operation, error) {
	raw, err := doc.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	hooks, _ := m["x-webhooks"].(map[string]any)
	paths := map[string]any{}
	for name, entry := range hooks {
		paths["/x-webhooks/"+name] = entry
	}
	m["paths"] = paths
	delete(m, "x-webhooks")
	if raw, err = json.Marshal(m); err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	wdoc, err := loader.LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("x-webhooks as paths: %w", err)
	}
	if err := wdoc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("x-webhooks entries are not valid operations: %w", err)
	}
	ops := map[string]*openapi3.Operation{}
	for name := range hooks {
		op := wdoc.Paths.Value("/x-webhooks/" + name).Post
		if op == nil || op.RequestBody == nil || op.RequestBody.Value.Content.Get("application/json") == nil {
			return nil, fmt.Errorf("x-webhooks %s: no POST with an application/json request body", name)
		}
		ops[name] = op
	}
	return ops, nil
}

// The webhook bodies the dispatcher renders are exactly what their
// x-webhooks entry and WebhookPayload (the feed's payload) describe, and
// x-webhooks lists exactly the events partners receive.
func TestWebhookBodiesMatchTheDocument(t *testing.T) {
	doc := openapitest.Doc(t)
	payload := doc.Components.Schemas["WebhookPayload"]
	if payload == nil || payload.Value == nil {
		t.Fatal("components.schemas.WebhookPayload missing")
	}
	hooks, _ := doc.Extensions["x-webhooks"].(map[string]any)
	if len(hooks) == 0 {
		t.Fatal("x-webhooks missing")
	}
	ops := webhookOperations(t)
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
		// Test events go to one endpoint and never into the feed, whose
		// payloads WebhookPayload describes.
		if err := payload.Value.VisitJSON(body, openapi3.MultiErrors()); r.Event != domain.TestEvent && err != nil {
			t.Errorf("%s body %s does not match WebhookPayload: %v", r.Event, r.Body, err)
		}
		op := ops[r.Event]
		if op == nil {
			t.Errorf("%s is sent but not in x-webhooks", r.Event)
			continue
		}
		schema := op.RequestBody.Value.Content.Get("application/json").Schema.Value
		if err := schema.VisitJSON(body, openapi3.MultiErrors()); err != nil {
			t.Errorf("%s body %s does not match its x-webhooks entry: %v", r.Event, r.Body, err)
		}
		if dir := os.Getenv(openapitest.RecordEnv); dir != "" {
			rec := openapitest.Recording{Method: "POST", Path: "x-webhooks/" + r.Event, OperationID: op.OperationID, Status: http.StatusOK, Request: r.Body}
			if err := openapitest.Save(dir, rec); err != nil {
				t.Error(err)
			}
		}
	}
	// Every documented event is sent, and named by exactly one event enum.
	var enum []string
	for _, s := range []*openapi3.Schema{
		doc.Components.Schemas["ChannelUserEvent"].Value,
		doc.Components.Schemas["HealthReportEvent"].Value,
		doc.Components.Schemas["PluginReportReadyWebhook"].Value.Properties["event"].Value,
		doc.Components.Schemas["OrderShippedWebhook"].Value.Properties["event"].Value,
		doc.Components.Schemas["WebhookTestEvent"].Value.Properties["event"].Value,
		doc.Components.Schemas["UserErasedWebhook"].Value.Properties["event"].Value,
	} {
		for _, v := range s.Enum {
			enum = append(enum, fmt.Sprint(v))
		}
	}
	for name := range hooks {
		if !rendered[name] {
			t.Errorf("x-webhooks documents %s, which is never sent", name)
		}
		if !slices.Contains(enum, name) {
			t.Errorf("no event enum lists %s", name)
		}
	}
	if len(enum) != len(hooks) {
		t.Errorf("event enums %v, x-webhooks has %d events", enum, len(hooks))
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

// acceptsCode reports whether the operation documents status with an
// error envelope carrying code (a VALIDATION_ERROR body has errors).
func acceptsCode(t *testing.T, op *openapi3.Operation, status int, code string) error {
	t.Helper()
	ref := op.Responses.Status(status)
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("status %d not documented", status)
	}
	mt := ref.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		return fmt.Errorf("status %d has no JSON body", status)
	}
	body := map[string]any{"success": false, "code": code, "message": "m", "timestamp": "2024-05-01T08:30:00+08:00"}
	if code == "VALIDATION_ERROR" {
		body["errors"] = map[string]any{"field": []any{"is required"}}
	}
	return mt.Schema.Value.VisitJSON(body, openapi3.MultiErrors(), openapi3.VisitAsResponse())
}

// Every error the commerce handlers can answer is documented with its
// status and code (commandapi/commerce.go, queryapi/commerce.go and the
// error table of internal/httpapi).
func TestCommerceRoutesDocumentTheirErrors(t *testing.T) {
	doc := openapitest.Doc(t)
	type outcome struct {
		status int
		code   string
	}
	admin := []outcome{{401, "HTTP_401"}, {500, "HTTP_500"}, {503, "HTTP_503"}}
	adminWrite := append([]outcome{{400, "HTTP_400"}, {413, "PAYLOAD_TOO_LARGE"}, {422, "VALIDATION_ERROR"}}, admin...)
	partner := []outcome{{400, "HTTP_400"}, {401, "HTTP_401"}, {403, "SCOPE_NOT_GRANTED"}, {413, "PAYLOAD_TOO_LARGE"}, {422, "VALIDATION_ERROR"}, {500, "HTTP_500"}, {503, "HTTP_503"}}
	internal := []outcome{{400, "HTTP_400"}, {401, "HTTP_401"}, {413, "PAYLOAD_TOO_LARGE"}, {422, "VALIDATION_ERROR"}, {500, "HTTP_500"}, {503, "HTTP_503"}}
	cases := []struct {
		method, path string
		base         []outcome
		more         []outcome
	}{
		{"POST", "/admin/v1/goods", adminWrite, []outcome{{409, "GOODS_CODE_EXISTS"}}},
		{"GET", "/admin/v1/goods", admin, nil},
		{"PATCH", "/admin/v1/goods/{goodsCode}", adminWrite, []outcome{{404, "GOODS_NOT_FOUND"}, {409, "CONCURRENT_MODIFICATION"}}},
		{"POST", "/admin/v1/goods/{goodsCode}/deactivate", admin, []outcome{{404, "GOODS_NOT_FOUND"}, {409, "CONCURRENT_MODIFICATION"}, {413, "PAYLOAD_TOO_LARGE"}}},
		{"POST", "/admin/v1/goods/{goodsCode}/activate", admin, []outcome{{404, "GOODS_NOT_FOUND"}, {409, "CONCURRENT_MODIFICATION"}, {413, "PAYLOAD_TOO_LARGE"}}},
		{"POST", "/open/v1/order/create", partner, []outcome{{404, "USER_NOT_FOUND"}, {404, "GOODS_NOT_FOUND"}, {409, "DUPLICATE_THIRD_ORDER_ID"}, {409, "CONCURRENT_MODIFICATION"}}},
		{"GET", "/open/v1/order/detail", partner, []outcome{{404, "ORDER_NOT_FOUND"}}},
		{"POST", "/admin/v1/orders/{orderCode}/approve", adminWrite, []outcome{{404, "ORDER_NOT_FOUND"}, {409, "ILLEGAL_TRANSITION"}, {409, "CONCURRENT_MODIFICATION"}}},
		{"POST", "/admin/v1/orders/{orderCode}/reject", adminWrite, []outcome{{404, "ORDER_NOT_FOUND"}, {409, "ILLEGAL_TRANSITION"}, {409, "CONCURRENT_MODIFICATION"}}},
		{"POST", "/admin/v1/orders/{orderCode}/ship", adminWrite, []outcome{{404, "ORDER_NOT_FOUND"}, {409, "ILLEGAL_TRANSITION"}, {409, "CONCURRENT_MODIFICATION"}, {422, "SHIPMENT_MISMATCH"}}},
		{"POST", "/open/internal/order/shipped-callback", internal, []outcome{{404, "ORDER_NOT_FOUND"}, {409, "ILLEGAL_TRANSITION"}, {409, "CONCURRENT_MODIFICATION"}, {422, "SHIPMENT_MISMATCH"}}},
		{"POST", "/open/v1/order/shipped-callback-test", partner, []outcome{{403, "SANDBOX_ONLY"}, {404, "ORDER_NOT_FOUND"}, {409, "ILLEGAL_TRANSITION"}, {409, "CONCURRENT_MODIFICATION"}}},
		{"GET", "/admin/v1/orders", admin, []outcome{{422, "VALIDATION_ERROR"}}},
		{"GET", "/admin/v1/orders/{orderCode}", admin, []outcome{{404, "ORDER_NOT_FOUND"}}},
		{"POST", "/admin/v1/apps/{appId}/review", adminWrite, []outcome{{404, "APP_NOT_FOUND"}, {409, "ALREADY_REVIEWED"}}},
		{"PUT", "/admin/v1/apps/{appId}/scopes", adminWrite, []outcome{{404, "APP_NOT_FOUND"}, {409, "CONCURRENT_MODIFICATION"}}},
		{"POST", "/admin/v1/service-providers", adminWrite, []outcome{{404, "APP_NOT_FOUND"}}},
		{"GET", "/admin/v1/service-providers", admin, []outcome{{422, "VALIDATION_ERROR"}}},
		{"POST", "/open/v1/service-providers", partner, nil},
		{"POST", "/admin/v1/service-providers/{providerId}/review", adminWrite, []outcome{{404, "PROVIDER_NOT_FOUND"}, {409, "ALREADY_REVIEWED"}}},
		{"PUT", "/admin/v1/service-providers/{providerId}/benefit-items", adminWrite, []outcome{{404, "PROVIDER_NOT_FOUND"}, {409, "CONCURRENT_MODIFICATION"}}},
		{"POST", "/admin/v1/benefit-items", adminWrite, nil},
		{"GET", "/admin/v1/benefit-items", admin, nil},
		{"POST", "/admin/v1/benefit-items/{itemId}/suspend", admin, []outcome{{404, "BENEFIT_ITEM_NOT_FOUND"}, {409, "CONCURRENT_MODIFICATION"}, {422, "VALIDATION_ERROR"}}},
		{"POST", "/admin/v1/benefit-items/{itemId}/activate", admin, []outcome{{404, "BENEFIT_ITEM_NOT_FOUND"}, {409, "CONCURRENT_MODIFICATION"}, {422, "VALIDATION_ERROR"}}},
		{"POST", "/admin/v1/benefit-cards", adminWrite, []outcome{{404, "APP_NOT_FOUND"}, {404, "BENEFIT_ITEM_NOT_FOUND"}, {409, "CARD_NUMBER_EXISTS"}, {422, "BENEFIT_ITEM_INACTIVE"}}},
		{"GET", "/admin/v1/benefit-cards/{cardNumber}", admin, []outcome{{404, "CARD_NOT_FOUND"}}},
		{"POST", "/open/v1/benefit-cards/batch-issue", partner, []outcome{{403, "SERVICE_PROVIDER_UNAUTHORIZED"}, {404, "BENEFIT_ITEM_NOT_FOUND"}, {422, "BENEFIT_ITEM_INACTIVE"}}},
		{"POST", "/open/v1/benefit-cards/verify-use", partner, []outcome{{403, "SERVICE_PROVIDER_UNAUTHORIZED"}, {404, "CARD_NOT_FOUND"}, {409, "CONCURRENT_MODIFICATION"},
			{422, "CARD_EXPIRED"}, {422, "BENEFIT_ITEM_INACTIVE"}, {422, "NO_REMAINING_QUOTA"}, {422, "DUPLICATE_FULFILLMENT"}}},
		{"GET", "/open/v1/benefit-cards/detail", partner, []outcome{{404, "CARD_NOT_FOUND"}}},
		{"GET", "/open/v1/benefit-cards/fulfillments", partner, nil},
		{"POST", "/open/v1/benefit-cards/fulfillments/{recordId}/rating", partner, []outcome{{404, "FULFILLMENT_NOT_FOUND"}, {409, "ALREADY_RATED"}}},
	}
	for _, c := range cases {
		item := doc.Paths.Value(c.path)
		if item == nil || item.GetOperation(c.method) == nil {
			t.Errorf("%s %s missing", c.method, c.path)
			continue
		}
		op := item.GetOperation(c.method)
		for _, o := range append(append([]outcome{}, c.base...), c.more...) {
			if err := acceptsCode(t, op, o.status, o.code); err != nil {
				t.Errorf("%s %s: %d %s: %v", c.method, c.path, o.status, o.code, err)
			}
		}
	}
}

// Every route an app reaches with its own credentials may answer
// 403 SCOPE_NOT_GRANTED (internal/auth: Allowed and ScopeOf).
func TestPartnerRoutesDocumentScopeRefusal(t *testing.T) {
	doc := openapitest.Doc(t)
	n := 0
	for path, item := range doc.Paths.Map() {
		if auth.ScopeOf(path) == "" || strings.HasPrefix(path, "/open/internal/") {
			continue
		}
		for method, op := range item.Operations() {
			n++
			for _, code := range []string{"SCOPE_NOT_GRANTED", "APP_SUSPENDED"} {
				if err := acceptsCode(t, op, http.StatusForbidden, code); err != nil {
					t.Errorf("%s %s: %v", method, path, err)
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d scoped operations found", n)
	}
}
