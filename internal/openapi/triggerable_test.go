package openapi_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/eventtypes"
	"github.com/healthtech/partner-open-platform/internal/openapi/openapitest"
)

// The document's list of triggerable types (SandboxEventRequest.event) is
// the event catalog's, in its order: the generated SDK models offer a
// partner exactly what the route accepts.
func TestSandboxEventRequestListsTheTriggerableTypes(t *testing.T) {
	doc := openapitest.Doc(t)
	s := doc.Components.Schemas["SandboxEventRequest"]
	if s == nil || s.Value.Properties["event"] == nil {
		t.Fatal("no SandboxEventRequest.event in the document")
	}
	var documented []string
	for _, v := range s.Value.Properties["event"].Value.Enum {
		documented = append(documented, fmt.Sprint(v))
	}
	if want := eventtypes.Triggerable(); !slices.Equal(documented, want) {
		t.Fatalf("SandboxEventRequest.event lists %v, the catalog's triggerable types are %v", documented, want)
	}
}
