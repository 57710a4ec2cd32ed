package openapi_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/healthtech/partner-open-platform/internal/eventtypes"
	"github.com/healthtech/partner-open-platform/internal/openapi/openapitest"
)

// TestXWebhooksMatchTheEventCatalog keeps the document's x-webhooks and the
// event catalog (internal/eventtypes) one contract: the same event types,
// each entry's summary the catalog's title and its description opening
// with the catalog's, the catalog's examples valid against the document's
// schemas and the document's examples valid against the catalog's.
func TestXWebhooksMatchTheEventCatalog(t *testing.T) {
	ops := webhookOperations(t)
	var documented []string
	for name := range ops {
		documented = append(documented, name)
	}
	slices.Sort(documented)
	var catalogued []string
	for _, typ := range eventtypes.All() {
		catalogued = append(catalogued, typ.Name)
	}
	slices.Sort(catalogued)
	if !slices.Equal(documented, catalogued) {
		t.Fatalf("x-webhooks documents %v, the catalog lists %v", documented, catalogued)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	space := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for _, typ := range eventtypes.All() {
		op := ops[typ.Name]
		if op.Summary != typ.Title {
			t.Errorf("%s: x-webhooks summary %q, catalog title %q", typ.Name, op.Summary, typ.Title)
		}
		if !strings.HasPrefix(space(op.Description), space(typ.Description)) {
			t.Errorf("%s: x-webhooks description does not open with the catalog's:\n%s\n%s", typ.Name, space(op.Description), typ.Description)
		}
		mt := op.RequestBody.Value.Content.Get("application/json")
		current := typ.Versions[typ.Current-1]
		var example any
		if err := json.Unmarshal(current.Example, &example); err != nil {
			t.Fatal(err)
		}
		if err := mt.Schema.Value.VisitJSON(example, openapi3.MultiErrors()); err != nil {
			t.Errorf("%s: the catalog's example %s does not match x-webhooks: %v", typ.Name, current.Example, err)
		}
		url := eventtypes.SchemaID + eventtypes.SchemaFile(typ.Name, typ.Current)
		sdoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(current.Schema))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource(url, sdoc); err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile(url)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(mt.Example)
		ex, _ := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err := s.Validate(ex); err != nil {
			t.Errorf("%s: the x-webhooks example %s does not match the catalog's schema: %v", typ.Name, raw, err)
		}
	}
}

// TestEventTypeExampleIsTheCatalogs: the document's example of
// GET /open/v1/event-types/{type} is the catalog's webhook.test entry as
// served (less the schema's $schema keyword, which the document's
// linters would take for a schema of their own).
func TestEventTypeExampleIsTheCatalogs(t *testing.T) {
	doc := openapitest.Doc(t)
	op := doc.Paths.Value("/open/v1/event-types/{type}").Get
	example := op.Responses.Status(200).Value.Content.Get("application/json").Example
	raw, _ := json.Marshal(example.(map[string]any)["data"])
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	typ, _ := eventtypes.Lookup("webhook.test")
	raw, _ = json.Marshal(typ)
	var want map[string]any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	delete(want["versions"].([]any)[0].(map[string]any)["schema"].(map[string]any), "$schema")
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("the document's example\n%s\nis not the catalog's\n%s", g, w)
	}
}
