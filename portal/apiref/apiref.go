// Package apiref turns the platform's OpenAPI document into the model of the
// portal's API reference page: operations grouped by tag, their parameters,
// request and response fields, examples and error codes, the outgoing
// webhooks of x-webhooks, the security schemes and the named schemas. It is
// built once from the same embedded document the node serves at
// /openapi.yaml, so the readable reference can never drift from the
// machine-readable one.
package apiref

import (
	"encoding/json"
	"fmt"
	"html/template"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Reference is the whole page's content, in reading order.
type Reference struct {
	Title       string
	Version     string
	Description template.HTML
	Tags        []Tag
	Webhooks    []Operation
	Security    []SecurityScheme
	Schemas     []Schema
	// declared are the document's tags, operations or not, for the
	// operators' reference (which regroups the admin operations by subject).
	declared []Tag
	// SchemeHPaths are the path templates whose operations are signed with
	// scheme H only (not those that merely accept it), so the in-browser signer can choose the scheme by path.
	SchemeHPaths []string
}

// Tag is one group of operations, as the document's tags list orders them.
type Tag struct {
	Name        string
	Anchor      string
	Description template.HTML
	Operations  []Operation
	// Omitted counts the operations of the tag another reference lists.
	Omitted int
}

// Operation is one method on one path (or one outgoing webhook).
type Operation struct {
	Anchor      string
	OperationID string
	Method      string
	Path        string
	Summary     string
	Description template.HTML
	Security    []SecurityUse
	Parameters  []Parameter
	Request     *Body
	Responses   []Response
	// Tags are the operation's tags in the document's order.
	Tags []string
	// Partner says the operation is in the partners' reference (see
	// IsPartner); the others are in the operators' reference.
	Partner bool
	// Auth is how the examples authenticate: "M", "H", "basic" (OAuth
	// client), "bearer" (OAuth access token) or "" (none, or not a
	// partner credential).
	Auth string
	// Snippets are the curl example and one example per SDK (partner
	// operations only), in Languages' order.
	Snippets []Snippet

	reqModel       string
	reqContentType string
	reqExample     any
}

// SecurityUse names one way an operation may be authenticated (the schemes
// of one requirement are needed together).
type SecurityUse struct {
	Label   string
	Anchor  string
	Schemes []string
}

// Parameter is a path, query or header parameter.
type Parameter struct {
	Name        string
	In          string
	Required    bool
	Type        string
	Description template.HTML
	// More is the rest of a long description (see Brief).
	More template.HTML

	example string
}

// Body is a request or response body: its fields flattened into an indented
// list, the named schemas it extends, and its example as pretty JSON.
type Body struct {
	ContentType string
	Extends     []SchemaLink
	Fields      []Field
	Example     string

	raw any
}

// Response is one documented status of an operation.
type Response struct {
	// Error marks a 4xx, 5xx or default answer: the page shows its
	// status and codes and keeps its description and body folded.
	Error       bool
	Status      string
	Description template.HTML
	Codes       []string
	Body        *Body
}

// Field is one property, Depth levels below the body.
type Field struct {
	Depth       int
	Name        string
	Type        string
	Link        *SchemaLink
	Required    bool
	Nullable    bool
	Constraints string
	Description template.HTML
	// More is the rest of a long description (see Brief).
	More template.HTML
}

// IsArray tells the page to say "array of" before a linked item schema.
func (f Field) IsArray() bool { return strings.HasPrefix(f.Type, "array of") }

// SchemaLink points at a named schema's section.
type SchemaLink struct {
	Name   string
	Anchor string
}

// Schema is one named schema of components/schemas.
type Schema struct {
	Name        string
	Anchor      string
	Type        string
	Description template.HTML
	Extends     []SchemaLink
	Fields      []Field
	Example     string
}

// SecurityScheme is one entry of components/securitySchemes.
type SecurityScheme struct {
	Name        string
	Anchor      string
	Kind        string
	Description template.HTML
}

// webhookPrefix keeps the webhooks apart from the real paths while the
// loader resolves their references.
const webhookPrefix = "/x-webhooks/"

// maxDepth bounds inline expansion; deeper structure is reached by links.
const maxDepth = 6

// Build reads an OpenAPI 3.0 document (YAML or JSON) into a Reference.
func Build(spec []byte) (*Reference, error) {
	doc, webhookNames, err := load(spec)
	if err != nil {
		return nil, err
	}
	ref := &Reference{}
	if doc.Info != nil {
		ref.Title, ref.Version, ref.Description = doc.Info.Title, doc.Info.Version, Markdown(doc.Info.Description)
	}
	ref.addOperations(doc)
	ref.addWebhooks(doc, webhookNames)
	if err := ref.addSnippets(); err != nil {
		return nil, err
	}
	if doc.Components != nil {
		ref.Security = securitySchemes(doc.Components)
		ref.Schemas = schemas(doc.Components)
	}
	return ref, nil
}

// load parses spec and resolves its references, the x-webhooks
// included, and returns the webhooks' names sorted.
func load(spec []byte) (*openapi3.T, []string, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(spec)
	if err != nil {
		return nil, nil, fmt.Errorf("apiref: load: %w", err)
	}
	// x-webhooks entries are shaped like path items but the loader leaves
	// extensions alone: decode them as path items under a private prefix
	// and resolve their references with the rest of the document.
	var webhookNames []string
	if raw, ok := doc.Extensions["x-webhooks"]; ok {
		b, err := json.Marshal(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("apiref: x-webhooks: %w", err)
		}
		var items map[string]*openapi3.PathItem
		if err := json.Unmarshal(b, &items); err != nil {
			return nil, nil, fmt.Errorf("apiref: x-webhooks: %w", err)
		}
		for name, item := range items {
			doc.Paths.Set(webhookPrefix+name, item)
			webhookNames = append(webhookNames, name)
		}
		if err := loader.ResolveRefsIn(doc, nil); err != nil {
			return nil, nil, fmt.Errorf("apiref: resolve x-webhooks: %w", err)
		}
	}
	sort.Strings(webhookNames)
	return doc, webhookNames, nil
}

// addOperations lists every real path's operations under their first
// tag (declared tags first, in the document's order; "other" for an
// untagged one), drops tags without operations, and collects the paths
// scheme H alone signs.
func (ref *Reference) addOperations(doc *openapi3.T) {
	tagIndex := map[string]int{}
	for _, t := range doc.Tags {
		tagIndex[t.Name] = len(ref.Tags)
		ref.Tags = append(ref.Tags, Tag{Name: t.Name, Anchor: "tag-" + slug(t.Name), Description: Markdown(t.Description)})
	}
	paths := doc.Paths.Map()
	keys := make([]string, 0, len(paths))
	for p := range paths {
		if !strings.HasPrefix(p, webhookPrefix) {
			keys = append(keys, p)
		}
	}
	sort.Strings(keys)
	hPaths := map[string]bool{}
	for _, p := range keys {
		item := paths[p]
		for _, m := range methods(item) {
			op := item.GetOperation(m)
			o := operation(doc, m, p, item, op)
			// Only paths scheme H alone signs: the signer signs scheme M
			// where scheme H is merely accepted in its place.
			if len(o.Security) == 1 && slices.Contains(o.Security[0].Schemes, "schemeH") {
				hPaths[p] = true
			}
			tag := "other"
			if len(op.Tags) > 0 {
				tag = op.Tags[0]
			}
			i, ok := tagIndex[tag]
			if !ok {
				i = len(ref.Tags)
				tagIndex[tag] = i
				ref.Tags = append(ref.Tags, Tag{Name: tag, Anchor: "tag-" + slug(tag)})
			}
			ref.Tags[i].Operations = append(ref.Tags[i].Operations, o)
		}
	}
	ref.declared = append([]Tag(nil), ref.Tags...)
	// A tag that only the webhooks use has no operations of its own.
	kept := ref.Tags[:0]
	for _, t := range ref.Tags {
		if len(t.Operations) > 0 {
			kept = append(kept, t)
		}
	}
	ref.Tags = kept
	for p := range hPaths {
		ref.SchemeHPaths = append(ref.SchemeHPaths, p)
	}
	sort.Strings(ref.SchemeHPaths)
}

// addWebhooks lists the webhooks' operations in name order.
func (ref *Reference) addWebhooks(doc *openapi3.T, names []string) {
	paths := doc.Paths.Map()
	for _, name := range names {
		item := paths[webhookPrefix+name]
		for _, m := range methods(item) {
			o := operation(doc, m, name, item, item.GetOperation(m))
			o.Anchor = "webhook-" + slug(name)
			ref.Webhooks = append(ref.Webhooks, o)
		}
	}
}

// securitySchemes lists the security schemes in name order.
func securitySchemes(c *openapi3.Components) []SecurityScheme {
	var out []SecurityScheme
	for _, n := range sortedKeys(c.SecuritySchemes) {
		s := c.SecuritySchemes[n].Value
		if s == nil {
			continue
		}
		kind := s.Type
		if s.Type == "apiKey" {
			kind = "API key in " + s.In + " " + s.Name
		} else if s.Scheme != "" {
			kind = s.Type + " " + s.Scheme
		}
		out = append(out, SecurityScheme{Name: n, Anchor: "security-" + slug(n), Kind: kind, Description: Markdown(s.Description)})
	}
	return out
}

// schemas lists the named schemas in name order, each with its fields
// expanded.
func schemas(c *openapi3.Components) []Schema {
	var out []Schema
	for _, n := range sortedKeys(c.Schemas) {
		sr := c.Schemas[n]
		if sr == nil || sr.Value == nil {
			continue
		}
		s := sr.Value
		sc := Schema{Name: n, Anchor: schemaAnchor(n), Type: typeName(s), Description: Markdown(s.Description)}
		sc.Extends, sc.Fields = fields(&openapi3.SchemaRef{Value: s}, 0)
		if s.Example != nil {
			sc.Example = pretty(s.Example)
		}
		out = append(out, sc)
	}
	return out
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// methodOrder is the order operations of one path are listed in.
var methodOrder = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}

func methods(item *openapi3.PathItem) []string {
	var out []string
	for _, m := range methodOrder {
		if item.GetOperation(m) != nil {
			out = append(out, m)
		}
	}
	return out
}

func operation(doc *openapi3.T, method, path string, item *openapi3.PathItem, op *openapi3.Operation) Operation {
	o := Operation{
		Anchor:      "op-" + slug(method+" "+path),
		OperationID: op.OperationID,
		Tags:        op.Tags,
		Method:      method,
		Path:        path,
		Summary:     op.Summary,
		Description: Markdown(op.Description),
	}
	if op.OperationID != "" {
		o.Anchor = "op-" + slug(op.OperationID)
	}
	sec := doc.Security
	if op.Security != nil {
		sec = *op.Security
	}
	for _, req := range sec {
		var names []string
		for n := range req {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) == 0 {
			o.Security = append(o.Security, SecurityUse{Label: "none"})
			continue
		}
		label, anchor := securityLabel(names)
		o.Security = append(o.Security, SecurityUse{Label: label, Anchor: anchor, Schemes: names})
	}
	params := append(openapi3.Parameters{}, item.Parameters...)
	params = append(params, op.Parameters...)
	for _, pr := range params {
		p := pr.Value
		if p == nil {
			continue
		}
		typ := ""
		if p.Schema != nil && p.Schema.Value != nil {
			typ = typeName(p.Schema.Value)
			if c := constraints(p.Schema.Value); c != "" {
				typ += "; " + c
			}
		}
		ex := p.Example
		if ex == nil && p.Schema != nil && p.Schema.Value != nil {
			ex = p.Schema.Value.Example
		}
		head, more := Brief(p.Description)
		o.Parameters = append(o.Parameters, Parameter{Name: p.Name, In: p.In, Required: p.Required, Type: typ, Description: head, More: more,
			example: exampleValue(p.Name, ex, typ)})
	}
	if op.RequestBody != nil && op.RequestBody.Value != nil {
		o.Request = body(op.RequestBody.Value.Content)
		if o.Request != nil {
			o.reqContentType, o.reqExample = o.Request.ContentType, o.Request.raw
			if mt := op.RequestBody.Value.Content[o.Request.ContentType]; mt != nil && mt.Schema != nil && mt.Schema.Ref != "" {
				o.reqModel = refName(mt.Schema.Ref)
			}
		}
	}
	o.Partner = IsPartner(path, o.Security)
	if o.Partner {
		o.Auth = authKind(o.Security)
	}
	if op.Responses != nil {
		m := op.Responses.Map()
		statuses := make([]string, 0, len(m))
		for s := range m {
			statuses = append(statuses, s)
		}
		sort.Slice(statuses, func(i, j int) bool {
			// "default" last; numeric and 2XX-style codes in order.
			if (statuses[i] == "default") != (statuses[j] == "default") {
				return statuses[j] == "default"
			}
			return statuses[i] < statuses[j]
		})
		for _, s := range statuses {
			rr := m[s]
			if rr == nil || rr.Value == nil {
				continue
			}
			r := Response{Status: s, Error: s == "default" || s[0] == '4' || s[0] == '5'}
			if rr.Value.Description != nil {
				r.Description = Markdown(*rr.Value.Description)
			}
			r.Body = body(rr.Value.Content)
			for _, mt := range rr.Value.Content {
				if mt.Schema != nil {
					r.Codes = appendUnique(r.Codes, errorCodes(mt.Schema, 0)...)
				}
			}
			sort.Strings(r.Codes)
			o.Responses = append(o.Responses, r)
		}
	}
	return o
}

// securityLabel says in words which credentials a requirement needs, and
// where the page explains them (the signing rules for the partner schemes).
func securityLabel(names []string) (string, string) {
	switch strings.Join(names, "+") {
	case "AppId+Signature+Timestamp":
		return "Scheme M", "sign-scheme-m"
	case "schemeH":
		return "Scheme H", "sign-scheme-h"
	case "AdminToken":
		return "Operator token", "security-admintoken"
	}
	return strings.Join(names, " + "), "security-" + slug(names[0])
}

func body(content openapi3.Content) *Body {
	if len(content) == 0 {
		return nil
	}
	types := make([]string, 0, len(content))
	for t := range content {
		types = append(types, t)
	}
	sort.Strings(types)
	// One media type is shown: JSON when offered.
	ct := types[0]
	for _, t := range types {
		if t == "application/json" {
			ct = t
		}
	}
	mt := content[ct]
	b := &Body{ContentType: ct}
	if mt.Schema != nil {
		b.Extends, b.Fields = fields(mt.Schema, 0)
	}
	switch {
	case mt.Example != nil:
		b.Example, b.raw = pretty(mt.Example), mt.Example
	case len(mt.Examples) > 0:
		names := make([]string, 0, len(mt.Examples))
		for n := range mt.Examples {
			names = append(names, n)
		}
		sort.Strings(names)
		var parts []string
		for _, n := range names {
			if e := mt.Examples[n]; e != nil && e.Value != nil {
				parts = append(parts, "// "+n+"\n"+pretty(e.Value.Value))
				if b.raw == nil {
					b.raw = e.Value.Value
				}
			}
		}
		b.Example = strings.Join(parts, "\n\n")
	case mt.Schema != nil && mt.Schema.Value != nil && mt.Schema.Value.Example != nil:
		b.Example, b.raw = pretty(mt.Schema.Value.Example), mt.Schema.Value.Example
	}
	return b
}

// fields flattens a body schema: a reference at the top is expanded once,
// allOf parts that are named schemas become Extends links and the others'
// properties are merged, nested objects are indented, and named object
// schemas below the top are links rather than copies.
func fields(sr *openapi3.SchemaRef, depth int) ([]SchemaLink, []Field) {
	if sr == nil || sr.Value == nil {
		return nil, nil
	}
	s := sr.Value
	var extends []SchemaLink
	var out []Field
	if len(s.AllOf) > 0 {
		for _, part := range s.AllOf {
			if part.Ref != "" && len(s.AllOf) > 1 {
				extends = append(extends, link(part.Ref))
				continue
			}
			ex, fs := fields(part, depth)
			extends = append(extends, ex...)
			out = append(out, fs...)
		}
	}
	alts := s.OneOf
	if len(alts) == 0 {
		alts = s.AnyOf
	}
	for i, alt := range alts {
		f := Field{Depth: depth, Name: "(alternative " + strconv.Itoa(i+1) + ")", Type: typeName(alt.Value)}
		if alt.Ref != "" {
			l := link(alt.Ref)
			f.Link = &l
			out = append(out, f)
			continue
		}
		out = append(out, f)
		_, fs := fields(alt, depth+1)
		out = append(out, fs...)
	}
	out = append(out, properties(s, depth)...)
	return extends, out
}

func properties(s *openapi3.Schema, depth int) []Field {
	if depth > maxDepth || len(s.Properties) == 0 {
		return nil
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Field
	for _, n := range names {
		pr := s.Properties[n]
		if pr == nil || pr.Value == nil {
			continue
		}
		p := pr.Value
		head, more := Brief(p.Description)
		f := Field{Depth: depth, Name: n, Type: typeName(p), Required: required[n], Nullable: p.Nullable, Constraints: constraints(p), Description: head, More: more}
		if pr.Ref != "" {
			l := link(pr.Ref)
			f.Link = &l
			out = append(out, f)
			continue
		}
		out = append(out, f)
		if p.Items != nil && p.Items.Value != nil {
			if p.Items.Ref != "" {
				l := link(p.Items.Ref)
				out[len(out)-1].Link = &l
				continue
			}
			_, fs := fields(p.Items, depth+1)
			out = append(out, fs...)
			continue
		}
		_, fs := fields(pr, depth+1)
		// The property's own allOf/oneOf parts were expanded by fields;
		// its plain properties too.
		out = append(out, fs...)
	}
	return out
}

// errorCodes collects the string enum of a response's `code` property.
func errorCodes(sr *openapi3.SchemaRef, depth int) []string {
	if sr == nil || sr.Value == nil || depth > 3 {
		return nil
	}
	s := sr.Value
	var out []string
	if c := s.Properties["code"]; c != nil && c.Value != nil && c.Value.Type.Is("string") {
		for _, e := range c.Value.Enum {
			if str, ok := e.(string); ok {
				out = appendUnique(out, str)
			}
		}
	}
	for _, group := range []openapi3.SchemaRefs{s.AllOf, s.OneOf, s.AnyOf} {
		for _, part := range group {
			out = appendUnique(out, errorCodes(part, depth+1)...)
		}
	}
	return out
}

func appendUnique(list []string, add ...string) []string {
	for _, a := range add {
		found := false
		for _, l := range list {
			if l == a {
				found = true
				break
			}
		}
		if !found {
			list = append(list, a)
		}
	}
	return list
}

func typeName(s *openapi3.Schema) string {
	if s == nil {
		return ""
	}
	var t string
	if s.Type != nil {
		t = strings.Join(s.Type.Slice(), " or ")
	}
	switch {
	case t == "array" && s.Items != nil && s.Items.Value != nil:
		it := typeName(s.Items.Value)
		if s.Items.Ref != "" {
			it = refName(s.Items.Ref)
		}
		t = "array of " + it
	case t == "" && len(s.AllOf) > 0:
		t = "object"
	case t == "" && (len(s.OneOf) > 0 || len(s.AnyOf) > 0):
		t = "one of"
	case t == "" && len(s.Properties) > 0:
		t = "object"
	case t == "":
		t = "any"
	}
	if s.Format != "" {
		t += " (" + s.Format + ")"
	}
	return t
}

func constraints(s *openapi3.Schema) string {
	var c []string
	if len(s.Enum) > 0 {
		vals := make([]string, 0, len(s.Enum))
		for _, e := range s.Enum {
			b, _ := json.Marshal(e)
			vals = append(vals, string(b))
		}
		c = append(c, "one of "+strings.Join(vals, ", "))
	}
	if s.Min != nil {
		c = append(c, "minimum "+num(*s.Min))
	}
	if s.Max != nil {
		c = append(c, "maximum "+num(*s.Max))
	}
	if s.MinLength > 0 {
		c = append(c, "at least "+strconv.FormatUint(s.MinLength, 10)+" characters")
	}
	if s.MaxLength != nil {
		c = append(c, "at most "+strconv.FormatUint(*s.MaxLength, 10)+" characters")
	}
	if s.MinItems > 0 {
		c = append(c, "at least "+strconv.FormatUint(s.MinItems, 10)+" items")
	}
	if s.MaxItems != nil {
		c = append(c, "at most "+strconv.FormatUint(*s.MaxItems, 10)+" items")
	}
	if s.Pattern != "" {
		c = append(c, "pattern "+s.Pattern)
	}
	if s.Default != nil {
		b, _ := json.Marshal(s.Default)
		c = append(c, "default "+string(b))
	}
	return strings.Join(c, "; ")
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func pretty(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func refName(ref string) string { return ref[strings.LastIndex(ref, "/")+1:] }

func link(ref string) SchemaLink {
	n := refName(ref)
	return SchemaLink{Name: n, Anchor: schemaAnchor(n)}
}

func schemaAnchor(name string) string { return "schema-" + slug(name) }

// slug makes a fragment identifier of letters, digits and dashes.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r + ('a' - 'A'))
			dash = false
		default:
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
				dash = true
			}
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}
