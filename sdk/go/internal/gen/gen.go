// Package gen turns the platform's OpenAPI document into the SDK's Go
// models, so the models have one source of truth: the drift test
// regenerates them and fails when the checked-in file differs.
package gen

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Schema is the subset of an OpenAPI 3.0 schema object the generator reads.
type Schema struct {
	Ref                  string             `yaml:"$ref"`
	Type                 string             `yaml:"type"`
	Format               string             `yaml:"format"`
	Nullable             bool               `yaml:"nullable"`
	Description          string             `yaml:"description"`
	Required             []string           `yaml:"required"`
	Properties           map[string]*Schema `yaml:"properties"`
	Items                *Schema            `yaml:"items"`
	AllOf                []*Schema          `yaml:"allOf"`
	OneOf                []*Schema          `yaml:"oneOf"`
	AnyOf                []*Schema          `yaml:"anyOf"`
	Enum                 []any              `yaml:"enum"`
	AdditionalProperties any                `yaml:"additionalProperties"`
}

// Operation is one method+path of the document with what decides whether
// it belongs to the partner SDK.
type Operation struct {
	ID         string                `yaml:"operationId"`
	Security   []map[string][]string `yaml:"security"`
	Parameters []struct {
		Ref  string `yaml:"$ref"`
		Name string `yaml:"name"`
		In   string `yaml:"in"`
	} `yaml:"parameters"`
	RequestBody *struct {
		Content map[string]struct {
			Schema *Schema `yaml:"schema"`
		} `yaml:"content"`
	} `yaml:"requestBody"`
	Responses map[string]struct {
		Content map[string]struct {
			Schema *Schema `yaml:"schema"`
		} `yaml:"content"`
	} `yaml:"responses"`
	Method string `yaml:"-"`
	Path   string `yaml:"-"`
}

// TakesIdempotencyKey says whether the operation declares the
// Idempotency-Key header, by the shared parameter or inline.
func (o Operation) TakesIdempotencyKey() bool {
	for _, p := range o.Parameters {
		if refName(p.Ref) == "IdempotencyKey" || (p.In == "header" && strings.EqualFold(p.Name, "Idempotency-Key")) {
			return true
		}
	}
	return false
}

// Doc is the parsed OpenAPI document.
type Doc struct {
	Paths      map[string]map[string]yaml.Node `yaml:"paths"`
	Webhooks   map[string]map[string]Operation `yaml:"x-webhooks"`
	Components struct {
		Schemas map[string]*Schema `yaml:"schemas"`
	} `yaml:"components"`
}

// Load parses the OpenAPI file at path.
func Load(path string) (*Doc, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read openapi: %w", err)
	}
	var d Doc
	if err := yaml.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("parse openapi: %w", err)
	}
	return &d, nil
}

// partnerSchemes are the security schemes a partner app authenticates with;
// an operation secured by one of them is a partner operation.
var partnerSchemes = map[string]bool{"AppId": true, "schemeH": true, "oauthBearer": true, "oauthClient": true}

// PartnerOperations lists the document's partner operations, sorted by path
// then method.
func (d *Doc) PartnerOperations() ([]Operation, error) {
	var out []Operation
	for p, methods := range d.Paths {
		for m, node := range methods {
			switch m {
			case "get", "post", "put", "patch", "delete":
			default:
				continue
			}
			var op Operation
			if err := node.Decode(&op); err != nil {
				return nil, fmt.Errorf("decode %s %s: %w", m, p, err)
			}
			partner := false
			for _, req := range op.Security {
				for name := range req {
					partner = partner || partnerSchemes[name]
				}
			}
			if !partner {
				continue
			}
			op.Method, op.Path = strings.ToUpper(m), p
			out = append(out, op)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Method < out[j].Method
	})
	return out, nil
}

// refName is the schema name a $ref points at.
func refName(ref string) string { return ref[strings.LastIndex(ref, "/")+1:] }

// Roots names the component schemas the SDK needs: request bodies and
// response data of partner operations, and every webhook body.
func (d *Doc) Roots() ([]string, error) {
	ops, err := d.PartnerOperations()
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	var addData func(s *Schema)
	addData = func(s *Schema) {
		if s == nil {
			return
		}
		if s.Ref != "" {
			set[refName(s.Ref)] = true
			return
		}
		for _, a := range s.AllOf {
			if a.Ref != "" && refName(a.Ref) == "Envelope" {
				continue
			}
			if dp := a.Properties["data"]; dp != nil {
				addData(dp)
			} else if a.Ref != "" {
				set[refName(a.Ref)] = true
			}
		}
	}
	for _, op := range ops {
		if op.RequestBody != nil {
			for ct, c := range op.RequestBody.Content {
				if ct == "application/json" {
					addData(c.Schema)
				}
			}
		}
		for code, r := range op.Responses {
			if !strings.HasPrefix(code, "2") {
				continue
			}
			for ct, c := range r.Content {
				if ct == "application/json" {
					addData(c.Schema)
				}
			}
		}
	}
	for _, w := range d.Webhooks {
		for _, op := range w {
			if op.RequestBody == nil {
				continue
			}
			for _, c := range op.RequestBody.Content {
				addData(c.Schema)
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// gen holds generator state: the structs emitted so far and those queued.
type gen struct {
	doc     *Doc
	emitted map[string]bool
	queue   []named
	buf     bytes.Buffer
}

// named is a struct still to emit: a component schema or an inline object.
type named struct {
	name string
	s    *Schema
}

// Generate renders the Go source of the models for the document's roots.
func Generate(d *Doc) ([]byte, error) {
	roots, err := d.Roots()
	if err != nil {
		return nil, err
	}
	g := &gen{doc: d, emitted: map[string]bool{}}
	g.buf.WriteString("// Code generated by internal/gen from internal/openapi/openapi.yaml; DO NOT EDIT.\n\npackage partneropen\n\nimport \"encoding/json\"\n\nvar _ json.RawMessage\n\n")
	for _, r := range roots {
		s := d.Components.Schemas[r]
		if s == nil {
			return nil, fmt.Errorf("schema %s is referenced but not defined", r)
		}
		g.enqueue(r, s)
	}
	for len(g.queue) > 0 {
		n := g.queue[0]
		g.queue = g.queue[1:]
		g.emit(n)
	}
	src, err := format.Source(g.buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format generated source: %w\n%s", err, g.buf.Bytes())
	}
	return src, nil
}

// enqueue schedules a struct for emission once.
func (g *gen) enqueue(name string, s *Schema) {
	if g.emitted[name] {
		return
	}
	g.emitted[name] = true
	g.queue = append(g.queue, named{name, s})
}

// resolve follows $ref chains to a concrete schema.
func (g *gen) resolve(s *Schema) (*Schema, string) {
	name := ""
	for s != nil && s.Ref != "" {
		name = refName(s.Ref)
		s = g.doc.Components.Schemas[name]
	}
	return s, name
}

// Properties merges a schema's own properties with those of its allOf parts.
func (g *gen) properties(s *Schema) (map[string]*Schema, map[string]bool) {
	props, req := map[string]*Schema{}, map[string]bool{}
	var walk func(s *Schema)
	walk = func(s *Schema) {
		s, _ = g.resolve(s)
		if s == nil {
			return
		}
		for _, a := range s.AllOf {
			walk(a)
		}
		for k, v := range s.Properties {
			props[k] = v
		}
		for _, r := range s.Required {
			req[r] = true
		}
	}
	walk(s)
	return props, req
}

// PropertyNames lists the JSON property names of a component schema,
// allOf parts included; the SDK's tests compare them with struct tags.
func (d *Doc) PropertyNames(name string) []string {
	g := &gen{doc: d}
	props, _ := g.properties(d.Components.Schemas[name])
	out := make([]string, 0, len(props))
	for k := range props {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// isStruct reports whether a schema becomes a Go struct.
func (g *gen) isStruct(s *Schema) bool {
	s, _ = g.resolve(s)
	if s == nil || len(s.OneOf) > 0 || len(s.AnyOf) > 0 {
		return false
	}
	props, _ := g.properties(s)
	return len(props) > 0
}

// emit writes one struct.
func (g *gen) emit(n named) {
	props, req := g.properties(n.s)
	desc := strings.TrimSpace(strings.SplitN(n.s.Description, "\n\n", 2)[0])
	desc = strings.Join(strings.Fields(desc), " ")
	if desc == "" {
		desc = "mirrors the " + n.name + " schema of the platform's OpenAPI document."
	} else {
		desc = lowerFirst(desc)
	}
	fmt.Fprintf(&g.buf, "// %s %s\n", n.name, desc)
	fmt.Fprintf(&g.buf, "type %s struct {\n", n.name)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := props[k]
		goType := g.goType(n.name+GoName(k), p)
		rs, _ := g.resolve(p)
		nullable := p.Nullable || (rs != nil && rs.Nullable)
		tag := k
		if !req[k] {
			tag += ",omitempty"
		}
		if nullable && !strings.HasPrefix(goType, "[]") && !strings.HasPrefix(goType, "map[") && goType != "json.RawMessage" {
			goType = "*" + goType
		} else if !req[k] && g.isStruct(p) {
			goType = "*" + goType
		}
		doc := strings.Join(strings.Fields(strings.SplitN(strings.TrimSpace(p.Description), "\n\n", 2)[0]), " ")
		if doc == "" && rs != nil {
			doc = strings.Join(strings.Fields(strings.SplitN(strings.TrimSpace(rs.Description), "\n\n", 2)[0]), " ")
		}
		if doc == "" {
			doc = "carries the schema's " + k + " property."
		} else {
			doc = "is: " + doc
		}
		fmt.Fprintf(&g.buf, "\t// %s %s\n\t%s %s `json:%q`\n", GoName(k), doc, GoName(k), goType, tag)
	}
	g.buf.WriteString("}\n\n")
}

// goType maps a property schema to a Go type, queueing nested structs.
func (g *gen) goType(inlineName string, p *Schema) string {
	rs, refd := g.resolve(p)
	if rs == nil {
		return "json.RawMessage"
	}
	if len(rs.OneOf) > 0 || len(rs.AnyOf) > 0 {
		return "json.RawMessage"
	}
	if g.isStruct(rs) {
		name := refd
		if name == "" {
			name = inlineName
		}
		g.enqueue(name, rs)
		return name
	}
	if len(rs.AllOf) > 0 {
		// allOf of scalars: take the first part's type.
		return g.goType(inlineName, rs.AllOf[0])
	}
	switch rs.Type {
	case "string":
		return "string"
	case "integer":
		return "int64"
	case "number":
		return "float64"
	case "boolean":
		return "bool"
	case "array":
		if rs.Items == nil {
			return "[]json.RawMessage"
		}
		item := strings.TrimSuffix(inlineName, "s")
		if item == inlineName {
			item += "Item"
		}
		return "[]" + g.goType(item, rs.Items)
	case "object":
		if ap, ok := rs.AdditionalProperties.(map[string]any); ok && len(ap) > 0 {
			b, _ := yaml.Marshal(ap)
			var inner Schema
			if yaml.Unmarshal(b, &inner) == nil {
				return "map[string]" + g.goType(inlineName+"Value", &inner)
			}
		}
		return "json.RawMessage"
	}
	return "json.RawMessage"
}

// initialisms are written in upper case in Go names.
var initialisms = map[string]string{"id": "ID", "url": "URL", "sn": "SN", "ip": "IP", "uri": "URI", "json": "JSON", "http": "HTTP", "ai": "AI"}

// GoName turns a snake_case or camelCase JSON name into an exported Go name.
func GoName(s string) string {
	var parts []string
	cur := []rune{}
	for _, r := range s {
		switch {
		case r == '_' || r == '-' || r == '.':
			parts = append(parts, string(cur))
			cur = nil
		case r >= 'A' && r <= 'Z' && len(cur) > 0:
			parts = append(parts, string(cur))
			cur = []rune{r}
		default:
			cur = append(cur, r)
		}
	}
	parts = append(parts, string(cur))
	var b strings.Builder
	for _, p := range parts {
		if p == "" {
			continue
		}
		if up, ok := initialisms[strings.ToLower(p)]; ok {
			b.WriteString(up)
			continue
		}
		b.WriteString(strings.ToUpper(p[:1]) + p[1:])
	}
	return b.String()
}

// lowerFirst makes a description read as the continuation of a type name.
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	if strings.HasPrefix(s, "The ") || strings.HasPrefix(s, "A ") || strings.HasPrefix(s, "An ") {
		return "is " + strings.ToLower(s[:1]) + s[1:]
	}
	return "is described by the platform as: " + s
}
