package partneropen

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/healthtech/partner-open-platform/sdk/go/internal/gen"
)

// openapiPath is the platform's document, from the SDK's folder.
var openapiPath = filepath.Join("..", "..", "internal", "openapi", "openapi.yaml")

// loadDoc parses the document once per test binary (it is large).
var loadDoc = func() func(t *testing.T) *gen.Doc {
	var once sync.Once
	var d *gen.Doc
	var err error
	return func(t *testing.T) *gen.Doc {
		t.Helper()
		once.Do(func() { d, err = gen.Load(openapiPath) })
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
}()

// TestModelsMatchOpenAPI regenerates the models: any schema change in the
// document that the checked-in models miss fails here.
func TestModelsMatchOpenAPI(t *testing.T) {
	src, err := gen.Generate(loadDoc(t))
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("models_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(src, have) {
		t.Fatal("models_gen.go is stale: run go run ./internal/gen/cmd ../../internal/openapi/openapi.yaml models_gen.go")
	}
}

// TestEveryPartnerOperationCovered checks the client's route table against
// the document's partner operations, both ways, by operationId, method and
// path, and whether the operation takes an Idempotency-Key.
func TestEveryPartnerOperationCovered(t *testing.T) {
	ops, err := loadDoc(t).PartnerOperations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) < 20 {
		t.Fatalf("only %d partner operations found in %s", len(ops), openapiPath)
	}
	seen := map[string]bool{}
	for _, o := range ops {
		seen[o.ID] = true
		r, ok := routes[o.ID]
		if !ok {
			t.Errorf("%s %s (%s) has no SDK method", o.Method, o.Path, o.ID)
			continue
		}
		if r.method != o.Method || r.path != o.Path {
			t.Errorf("%s: SDK calls %s %s, document says %s %s", o.ID, r.method, r.path, o.Method, o.Path)
		}
		if r.idem != o.TakesIdempotencyKey() {
			t.Errorf("%s: SDK sends an Idempotency-Key: %v, document declares one: %v", o.ID, r.idem, o.TakesIdempotencyKey())
		}
	}
	for id := range routes {
		if !seen[id] {
			t.Errorf("SDK route %s is not a partner operation of the document", id)
		}
	}
}

// TestModelFieldsMatchSchemas compares the JSON tags of every root model
// with its schema's properties (allOf included), independently of the
// generator's output format.
func TestModelFieldsMatchSchemas(t *testing.T) {
	d := loadDoc(t)
	roots, err := d.Roots()
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]any{
		"RegisterRequest": RegisterRequest{}, "RegisterResult": RegisterResult{}, "Snapshot": Snapshot{}, "UserPatch": UserPatch{},
		"FamilyGroupInput": FamilyGroupInput{}, "FamilyGroupUpsertResult": FamilyGroupUpsertResult{},
		"FamilyMemberUpsertInput": FamilyMemberUpsertInput{}, "FamilyMemberUpsertResult": FamilyMemberUpsertResult{},
		"OrderCreateRequest": OrderCreateRequest{}, "OrderCreateResult": OrderCreateResult{}, "Order": Order{},
		"HealthReport": HealthReport{}, "VerifyUseRequest": VerifyUseRequest{}, "VerifyUseResult": VerifyUseResult{},
		"DeliveryPage": DeliveryPage{}, "DeliveryDetail": DeliveryDetail{}, "FeedPage": FeedPage{}, "ResendResult": ResendResult{},
		"PendingWebhookSecret": PendingWebhookSecret{}, "WebhookSecretActivated": WebhookSecretActivated{},
		"DailyReport": DailyReport{}, "TokenResponse": TokenResponse{}, "MockMeasureRequest": MockMeasureRequest{}, "Measurement": Measurement{},
		"HealthReportWebhook": HealthReportWebhook{}, "PluginReportReadyWebhook": PluginReportReadyWebhook{},
		"OrderShippedWebhook": OrderShippedWebhook{}, "ChannelUserWebhook": ChannelUserWebhook{}, "WebhookTestEvent": WebhookTestEvent{},
		"Card": Card{}, "FulfillmentList": FulfillmentList{}, "IssuedCards": IssuedCards{}, "BatchIssueRequest": BatchIssueRequest{},
		"ProviderRegistration": ProviderRegistration{}, "ProviderRegistered": ProviderRegistered{}, "RatingRequest": RatingRequest{},
		"RatingResult": RatingResult{}, "SandboxShipmentRequest": SandboxShipmentRequest{}, "ShipmentResult": ShipmentResult{},
		"SandboxEventRequest": SandboxEventRequest{}, "SandboxEventTriggered": SandboxEventTriggered{},
		"WebhookEndpoint": WebhookEndpoint{}, "WebhookEndpointList": WebhookEndpointList{}, "NewWebhookEndpoint": NewWebhookEndpoint{},
		"RotatedWebhookEndpoint": RotatedWebhookEndpoint{}, "WebhookEndpointCreate": WebhookEndpointCreate{},
		"WebhookEndpointUpdate": WebhookEndpointUpdate{}, "WebhookTestQueued": WebhookTestQueued{},
	}
	for _, r := range roots {
		if strings.HasSuffix(r, "Data") {
			continue // event data parts, checked through ParseEvent
		}
		v, ok := types[r]
		if !ok {
			t.Errorf("root schema %s has no model in this test's table", r)
			continue
		}
		var tags []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			tags = append(tags, strings.Split(rt.Field(i).Tag.Get("json"), ",")[0])
		}
		sort.Strings(tags)
		if want := d.PropertyNames(r); !reflect.DeepEqual(tags, want) {
			t.Errorf("%s: model fields %v, schema properties %v", r, tags, want)
		}
	}
}
