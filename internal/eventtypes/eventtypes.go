// Package eventtypes is the catalog of webhook event types: each type's
// name, versions, description, JSON Schema (draft 2020-12, as the Kafka
// feed's schemas) and example, the one list the API
// (GET /open/v1/event-types), the developer portal, the OpenAPI
// document's x-webhooks and the SDKs' parsers are checked against.
//
// The schemas and examples are checked-in files generated from the table
// (table.go): each schema from the entry's fields, each example by
// rendering the entry's sample event through webhooks.Render, the
// renderer the dispatcher uses. Their tests fail when a file is stale.
package eventtypes

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/healthtech/partner-open-platform/events"
)

//go:embed schemas examples
var files embed.FS

// SchemaID is the $id prefix of the schema files.
const SchemaID = "https://schemas.partner-open-platform.invalid/webhooks/"

// Type is one webhook event type as the catalog lists it.
type Type struct {
	Name        string    `json:"name"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	Current     int       `json:"current_version"`
	Versions    []Version `json:"versions"`
}

// Version is one version of a type's body: its JSON Schema and an example
// the dispatcher's renderer produced.
type Version struct {
	Version int             `json:"version"`
	Schema  json.RawMessage `json:"schema"`
	Example json.RawMessage `json:"example"`
}

// entry is a table row; versions are in ascending order, the last is the
// one the dispatcher sends.
type entry struct {
	name, title, description string
	versions                 []version
	// sandbox makes the sample a sandbox app's trigger of the type sends
	// (Triggerable); nil: the type cannot be triggered.
	sandbox sandboxFunc
}

type version struct {
	body schema
	// sample is the event whose rendering is the example.
	sample events.Payload
}

// SchemaFile and ExampleFile name a version's files.
func SchemaFile(name string, v int) string  { return fmt.Sprintf("%s.v%d.json", name, v) }
func ExampleFile(name string, v int) string { return fmt.Sprintf("%s.v%d.json", name, v) }

var all = load()

// load reads the checked-in files of every table entry; a missing file is
// left empty, which the package's tests report (run them with -update).
func load() []Type {
	out := make([]Type, 0, len(table))
	for _, e := range table {
		t := Type{Name: e.name, Title: e.title, Description: e.description, Current: len(e.versions)}
		for i := range e.versions {
			n := i + 1
			s, _ := files.ReadFile("schemas/" + SchemaFile(e.name, n))
			x, _ := files.ReadFile("examples/" + ExampleFile(e.name, n))
			t.Versions = append(t.Versions, Version{Version: n, Schema: compact(s), Example: compact(x)})
		}
		out = append(out, t)
	}
	return out
}

func compact(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil
	}
	return buf.Bytes()
}

// All returns every catalogued type, in the catalog's order.
func All() []Type { return slices.Clone(all) }

// Lookup returns the type named name.
func Lookup(name string) (Type, bool) {
	for _, t := range all {
		if t.Name == name {
			return t, true
		}
	}
	return Type{}, false
}
