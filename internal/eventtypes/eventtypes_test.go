package eventtypes_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/eventtypes"
	"github.com/healthtech/partner-open-platform/webhooks"
)

var update = flag.Bool("update", false, "rewrite the schema, example and SDK files from the table")

// render is the body the dispatcher sends for p to the app's default
// endpoint: the same renderer, the platform's time zone.
func render(t *testing.T, p events.Payload, id string) webhooks.Rendered {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	env := events.Envelope{
		Recorded: events.Recorded{ID: id, Type: p.EventType()},
		Payload:  p, Metadata: events.Metadata{AppID: 7, OccurredAt: eventtypes.SampleTime()},
	}
	r, ok := webhooks.Render(env, loc)
	if !ok {
		t.Fatalf("%s: the renderer sends nothing for the sample", p.EventType())
	}
	return r
}

// writeOrCompare keeps a generated file in step with its source.
func writeOrCompare(t *testing.T, path string, want []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%s: %v (run go test ./internal/eventtypes -update)", path, err)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: run go test ./internal/eventtypes -update (a published version's schema never changes: add a version)", path)
	}
}

// TestFilesMatchTable: every schema file is the table's, and every example
// is what the renderer makes of the entry's sample event today.
func TestFilesMatchTable(t *testing.T) {
	files := map[string]bool{}
	for _, typ := range eventtypes.All() {
		for _, v := range typ.Versions {
			s, err := eventtypes.GenerateSchema(typ.Name, v.Version)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("schemas", eventtypes.SchemaFile(typ.Name, v.Version))
			writeOrCompare(t, path, s)
			files[path] = true
			sample, _ := eventtypes.Sample(typ.Name, v.Version)
			r := render(t, sample, "evt-"+typ.Name)
			if r.Event != typ.Name {
				t.Errorf("sample of %s renders as %s", typ.Name, r.Event)
			}
			path = filepath.Join("examples", eventtypes.ExampleFile(typ.Name, v.Version))
			writeOrCompare(t, path, append(r.Body, '\n'))
			files[path] = true
		}
	}
	for _, dir := range []string{"schemas", "examples"} {
		found, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, f := range found {
			if !files[f] {
				t.Errorf("%s belongs to no catalogued version: remove it", f)
			}
		}
	}
}

// compile compiles every version's schema with a JSON Schema 2020-12
// validator that asserts formats (date-time, uuid).
func compile(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	out := map[string]*jsonschema.Schema{}
	for _, typ := range eventtypes.All() {
		for _, v := range typ.Versions {
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(v.Schema))
			if err != nil {
				t.Fatalf("%s v%d: %v", typ.Name, v.Version, err)
			}
			url := eventtypes.SchemaID + eventtypes.SchemaFile(typ.Name, v.Version)
			if err := c.AddResource(url, doc); err != nil {
				t.Fatal(err)
			}
			s, err := c.Compile(url)
			if err != nil {
				t.Fatalf("%s v%d: %v", typ.Name, v.Version, err)
			}
			out[typ.Name+"/"+string(rune('0'+v.Version))] = s
		}
	}
	return out
}

// TestExamplesMatchTheirSchemas validates each example against its schema,
// and proves the schemas closed: an extra field fails.
func TestExamplesMatchTheirSchemas(t *testing.T) {
	schemas := compile(t)
	for _, typ := range eventtypes.All() {
		if typ.Current != len(typ.Versions) || typ.Description == "" || typ.Title == "" {
			t.Errorf("%s: %+v", typ.Name, typ)
		}
		for _, v := range typ.Versions {
			s := schemas[typ.Name+"/"+string(rune('0'+v.Version))]
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(v.Example))
			if err != nil {
				t.Fatalf("%s: example %s: %v", typ.Name, v.Example, err)
			}
			if err := s.Validate(doc); err != nil {
				t.Errorf("%s v%d example %s does not match its schema: %v", typ.Name, v.Version, v.Example, err)
			}
			leaked := bytes.Replace(v.Example, []byte(`{"event":`), []byte(`{"phone":"13800138000","event":`), 1)
			doc, _ = jsonschema.UnmarshalJSON(bytes.NewReader(leaked))
			if err := s.Validate(doc); err == nil {
				t.Errorf("%s v%d schema accepts an unlisted field: %s", typ.Name, v.Version, leaked)
			}
			var head struct{ Event string }
			if err := json.Unmarshal(v.Example, &head); err != nil || head.Event != typ.Name {
				t.Errorf("%s example names %q", typ.Name, head.Event)
			}
		}
	}
}

// TestRendererSendsOnlyCataloguedTypes renders every event type the log
// knows, and the catalog's own variations (empty lists, absent optional
// fields), and requires each webhook the renderer makes to be catalogued
// and to match its schema.
func TestRendererSendsOnlyCataloguedTypes(t *testing.T) {
	schemas := compile(t)
	var zero, payloads []events.Payload
	for _, p := range catalog.Payloads() {
		// A zero payload of each registered type, as a pointer (the form
		// the registry decodes into).
		rt := reflect.TypeOf(p)
		if rt.Kind() == reflect.Pointer {
			rt = rt.Elem()
		}
		zero = append(zero, reflect.New(rt).Interface().(events.Payload))
	}
	payloads = append(payloads,
		&catalog.UserProfileUpdated{ChannelUserID: "u", OpenUserID: 1},
		&catalog.FamilyGroupUpserted{ChannelUserID: "u", OpenUserID: 1, FamilyGroupID: 2},
		&catalog.FamilyGroupDissolved{ChannelUserID: "u", OpenUserID: 1, FamilyGroupID: 2},
		&catalog.FamilyMemberUpdated{ChannelUserID: "u", OpenUserID: 1, Member: catalog.Member{MemberID: 3, AppUserID: "m"}, Changed: []string{"name"}},
		&catalog.ReportCreated{ReportID: 1, AppID: 7, OpenUserID: 1, ChannelUserID: "u"},
		&catalog.PluginMeasurementAnalyzed{PluginMeasurement: catalog.PluginMeasurement{MeasurementNo: "PM1", AppID: 7, ReportType: "ecg"}},
		&catalog.OrderShipped{OrderCode: "PO1", AppID: 7, Items: []catalog.ShippedLine{{ItemID: 1, GoodsCode: "G", Quantity: 1}}, ShippedAt: eventtypes.SampleTime()},
		&catalog.AppWebhookTestRequested{AppID: 7},
	)
	for _, s := range eventtypes.Samples() {
		payloads = append(payloads, s)
	}
	loc, _ := time.LoadLocation("Asia/Shanghai")
	sent := map[string]bool{}
	// Zero payloads only show which events the renderer sends at all; the
	// bodies checked against the schemas are of events the domain makes.
	checked := len(zero)
	for i, p := range append(zero, payloads...) {
		env := events.Envelope{Recorded: events.Recorded{ID: "e" + string(rune('a'+i%26)), Type: p.EventType()}, Payload: p,
			Metadata: events.Metadata{AppID: 7, OccurredAt: eventtypes.SampleTime()}}
		r, ok := webhooks.Render(env, loc)
		if !ok {
			continue
		}
		sent[r.Event] = true
		typ, ok := eventtypes.Lookup(r.Event)
		if !ok {
			t.Errorf("the renderer sends %s, which the catalog does not list", r.Event)
			continue
		}
		if i < checked {
			continue
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.Body))
		if err != nil {
			t.Fatal(err)
		}
		if err := schemas[r.Event+"/"+string(rune('0'+typ.Current))].Validate(doc); err != nil {
			t.Errorf("%s body %s does not match the catalog: %v", r.Event, r.Body, err)
		}
	}
	for _, name := range eventtypes.Names() {
		if !sent[name] {
			t.Errorf("the catalog lists %s, which the renderer never sends", name)
		}
	}
	if !sent[domain.TestEvent] || len(sent) < 10 {
		t.Fatalf("only %v rendered", sent)
	}
	if _, ok := eventtypes.Lookup("no.such.event"); ok || strings.Join(eventtypes.Names(), ",") == "" {
		t.Fatal("Lookup found an unknown type")
	}
}
