package feed

import (
	"embed"
	"encoding/json"
	"fmt"
)

//go:embed schemas
var schemaFiles embed.FS

// SchemaID is the $id prefix of the schema files, so consumers can resolve them offline.
const SchemaID = "https://schemas.partner-open-platform.invalid/feed/"

// SchemaFile names a type's schema file inside the schemas folder.
func SchemaFile(eventType string, version int) string {
	return fmt.Sprintf("%s.v%d.json", eventType, version)
}

// Schema returns the committed JSON Schema of a published type's current
// version, so a consumer in Go can validate without copying the files.
func Schema(eventType string) ([]byte, bool) {
	e, ok := table[eventType]
	if !ok {
		return nil, false
	}
	b, err := schemaFiles.ReadFile("schemas/" + SchemaFile(eventType, e.version))
	return b, err == nil
}

// generateSchema renders a table entry as JSON Schema draft 2020-12; the
// committed files are its output, compared in TestSchemaFilesMatchTable.
func generateSchema(eventType string) ([]byte, error) {
	e, ok := table[eventType]
	if !ok {
		return nil, fmt.Errorf("feed: %s is not published", eventType)
	}
	str := object{{"type", "string"}, {"minLength", 1}}
	envelope := object{
		{"schema", object{{"const", SchemaName(eventType, e.version)}}},
		{"id", str},
		{"type", object{{"const", eventType}}},
		{"occurred_at", object{{"type", "string"}, {"format", "date-time"}}},
		{"stream", object{{"type", "string"}, {"minLength", 1}, {"description", "aggregate the event belongs to; the Kafka key; for users and cards the id after user- or card- is a pseudonym"}}},
		{"app_id", object{{"type", []string{"integer", "null"}}}},
		{"pseudonym_key", object{{"type", "string"}, {"pattern", "^[0-9a-f]{8}$"}, {"description", "id of the key the pseudonyms were made with"}}},
		{"data", dataSchema(e.fields)},
	}
	s := object{
		{"$schema", "https://json-schema.org/draft/2020-12/schema"},
		{"$id", SchemaID + SchemaFile(eventType, e.version)},
		{"title", SchemaName(eventType, e.version)},
		{"description", e.doc},
		{"type", "object"},
		{"required", names(envelope)},
		{"properties", envelope},
		{"$defs", object{{"pseudonym", object{
			{"type", "string"}, {"pattern", "^[0-9a-f]{32}$"},
			{"description", "first 128 bits of HMAC-SHA256 under the feed's pseudonym key, hex; stable per person while the key stays"},
		}}}},
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func dataSchema(fields []field) object {
	props := make(object, 0, len(fields))
	for _, f := range fields {
		props = append(props, member{f.out, fieldSchema(f)})
	}
	return object{
		{"type", "object"},
		{"additionalProperties", false},
		{"required", names(props)},
		{"properties", props},
	}
}

func fieldSchema(f field) object {
	var s object
	switch f.kind {
	case kInt:
		s = object{{"type", "integer"}}
	case kStr:
		s = object{{"type", "string"}}
	case kBool:
		s = object{{"type", "boolean"}}
	case kTime:
		s = object{{"type", "string"}, {"format", "date-time"}}
	case kInts:
		s = object{{"type", "array"}, {"items", object{{"type", "integer"}}}}
	case kStrs:
		s = object{{"type", "array"}, {"items", object{{"type", "string"}}}}
	case kRef:
		s = object{{"$ref", "#/$defs/pseudonym"}}
	case kRefs:
		s = object{{"type", "array"}, {"items", object{{"$ref", "#/$defs/pseudonym"}}}}
	case kObjs:
		s = object{{"type", "array"}, {"items", dataSchema(f.sub)}}
	}
	if f.doc != "" {
		s = append(s, member{"description", f.doc})
	}
	if f.null {
		return object{{"anyOf", []object{s, {{"type", "null"}}}}}
	}
	return s
}

func names(o object) []string {
	out := make([]string, len(o))
	for i, m := range o {
		out[i] = m.name
	}
	return out
}
