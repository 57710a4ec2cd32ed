package openapi_test

import (
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/healthtech/partner-open-platform/internal/openapi/openapitest"
)

// TestEveryOperationHasExamples: each request body and each successful
// response of every operation shows an example, so a partner reading the
// reference sees a real exchange; the document's own validation checks
// every example against its schema. Examples come from real traffic
// (go run ./internal/openapi/examplegen).
func TestEveryOperationHasExamples(t *testing.T) {
	doc := openapitest.Doc(t)
	hasExample := func(mt *openapi3.MediaType) bool {
		return mt.Example != nil || len(mt.Examples) > 0 || (mt.Schema != nil && mt.Schema.Value != nil && mt.Schema.Value.Example != nil)
	}
	checked := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			if rb := op.RequestBody; rb != nil && rb.Value != nil {
				for ct, mt := range rb.Value.Content {
					checked++
					if !hasExample(mt) {
						t.Errorf("%s: request body %s has no example", where, ct)
					}
				}
			}
			for code, resp := range op.Responses.Map() {
				if !strings.HasPrefix(code, "2") || resp.Value == nil {
					continue
				}
				for ct, mt := range resp.Value.Content {
					checked++
					if !hasExample(mt) {
						t.Errorf("%s: response %s %s has no example", where, code, ct)
					}
				}
			}
		}
	}
	// Webhooks: webhookOperations loads x-webhooks as paths and validates
	// that document, examples included, so only presence is checked here.
	for event, op := range webhookOperations(t) {
		checked++
		if mt := op.RequestBody.Value.Content.Get("application/json"); mt == nil || mt.Example == nil {
			t.Errorf("webhook %s has no example body", event)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d bodies checked: the document lost its operations?", checked)
	}
}
