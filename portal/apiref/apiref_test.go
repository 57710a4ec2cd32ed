package apiref_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/openapi/openapitest"
	"github.com/healthtech/partner-open-platform/portal/apiref"
)

// build is the reference of the served document, built once for the test
// binary (apiref.ServedReference).
func build(t *testing.T) *apiref.Reference {
	t.Helper()
	return apiref.ServedReference(t)
}

// Every operation and every webhook of the served document is on the page,
// under its tag, with its examples: a partner reading the reference misses
// nothing a code generator reading /openapi.yaml would see.
func TestEveryOperationAndWebhookIsListed(t *testing.T) {
	ref := build(t)
	doc := openapitest.Doc(t)
	listed := map[string]apiref.Operation{}
	for _, tag := range ref.Tags {
		for _, op := range tag.Operations {
			listed[op.Method+" "+op.Path] = op
		}
	}
	want := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			want++
			got, ok := listed[method+" "+path]
			if !ok {
				t.Errorf("%s %s is not on the reference page", method, path)
				continue
			}
			if got.Summary != op.Summary {
				t.Errorf("%s %s: summary %q, document says %q", method, path, got.Summary, op.Summary)
			}
			if op.RequestBody != nil && got.Request != nil && got.Request.Example == "" {
				t.Errorf("%s %s: the request body's example is not shown", method, path)
			}
			shown := map[string]bool{}
			for _, r := range got.Responses {
				shown[r.Status] = r.Body != nil && r.Body.Example != ""
			}
			for status, rr := range op.Responses.Map() {
				mt := rr.Value.Content.Get("application/json")
				if mt != nil && (mt.Example != nil || len(mt.Examples) > 0) && !shown[status] {
					t.Errorf("%s %s %s: the document's example is not shown", method, path, status)
				}
			}
		}
	}
	if len(listed) != want {
		t.Errorf("%d operations listed, the document has %d", len(listed), want)
	}
	hooks, _ := doc.Extensions["x-webhooks"].(map[string]any)
	if len(hooks) == 0 || len(ref.Webhooks) != len(hooks) {
		t.Fatalf("%d webhooks listed, x-webhooks has %d", len(ref.Webhooks), len(hooks))
	}
	for _, w := range ref.Webhooks {
		if _, ok := hooks[w.Path]; !ok {
			t.Errorf("webhook %q is not in x-webhooks", w.Path)
		}
		if w.Request == nil || w.Request.Example == "" || len(w.Request.Fields) == 0 {
			t.Errorf("webhook %s: body fields or example missing", w.Path)
		}
		var headers []string
		for _, p := range w.Parameters {
			headers = append(headers, p.Name)
		}
		if !strings.Contains(strings.Join(headers, ","), "X-Webhook-Signature") {
			t.Errorf("webhook %s: headers %v lack X-Webhook-Signature (references not resolved?)", w.Path, headers)
		}
	}
}

// Error codes a partner must handle are listed with the status that
// carries them, and the scheme of each operation is named.
func TestCodesAndSchemes(t *testing.T) {
	ref := build(t)
	var register *apiref.Operation
	for _, tag := range ref.Tags {
		for i, op := range tag.Operations {
			if op.Method == "POST" && op.Path == "/open/v1/channel/users" {
				register = &tag.Operations[i]
			}
		}
	}
	if register == nil {
		t.Fatal("POST /open/v1/channel/users not found")
	}
	codes := map[string][]string{}
	for _, r := range register.Responses {
		codes[r.Status] = r.Codes
	}
	if !contains(codes["401"], "HTTP_401") || !contains(codes["422"], "VALIDATION_ERROR") {
		t.Errorf("register's codes by status: %v", codes)
	}
	if len(register.Security) == 0 || register.Security[0].Label != "Scheme M" {
		t.Errorf("register's security: %+v", register.Security)
	}
	found := false
	for _, p := range ref.SchemeHPaths {
		if strings.HasPrefix(p, "/open/v1/health-reports/") {
			found = true
		}
		if strings.HasPrefix(p, "/open/v1/channel/") {
			t.Errorf("scheme H paths include %s", p)
		}
	}
	if !found {
		t.Errorf("scheme H paths %v lack the report pull", ref.SchemeHPaths)
	}
}

// A body built on a named schema links to it and lists its own fields,
// nested fields are indented, and named schemas deeper down are links.
func TestFieldsFlattenAllOfAndLinkNamedSchemas(t *testing.T) {
	const doc = `openapi: 3.0.3
info: {title: t, version: "1", description: "Intro with <b>tags</b>"}
paths:
  /x:
    post:
      tags: [a]
      summary: S
      requestBody:
        content:
          application/json:
            example: {outer: {inner: 1}}
            schema:
              allOf:
                - $ref: '#/components/schemas/Base'
                - type: object
                  required: [outer]
                  properties:
                    outer:
                      type: object
                      properties:
                        inner: {type: integer, minimum: 1, description: "In <i>"}
                    thing: {$ref: '#/components/schemas/Thing'}
                    list: {type: array, items: {$ref: '#/components/schemas/Thing'}}
      responses:
        '200': {description: ok}
components:
  schemas:
    Base: {type: object, properties: {id: {type: string}}}
    Thing: {type: object, properties: {name: {type: string, nullable: true}}}
`
	ref, err := apiref.Build([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(ref.Description), "<b>") {
		t.Errorf("description markup not escaped: %s", ref.Description)
	}
	body := ref.Tags[0].Operations[0].Request
	if len(body.Extends) != 1 || body.Extends[0].Name != "Base" || body.Extends[0].Anchor != "schema-base" {
		t.Errorf("extends %+v", body.Extends)
	}
	got := map[string]apiref.Field{}
	for _, f := range body.Fields {
		got[f.Name] = f
	}
	if f := got["outer"]; !f.Required || f.Depth != 0 || f.Type != "object" {
		t.Errorf("outer %+v", f)
	}
	if f := got["inner"]; f.Depth != 1 || f.Constraints != "minimum 1" || !strings.Contains(string(f.Description), "In &lt;i&gt;") {
		t.Errorf("inner %+v", f)
	}
	if f := got["thing"]; f.Link == nil || f.Link.Name != "Thing" {
		t.Errorf("thing %+v", f)
	}
	if f := got["list"]; f.Link == nil || f.Type != "array of Thing" {
		t.Errorf("list %+v", f)
	}
	if _, ok := got["name"]; ok {
		t.Errorf("a named schema below the top was copied inline: %+v", body.Fields)
	}
	if !strings.Contains(body.Example, `"inner": 1`) {
		t.Errorf("example %q", body.Example)
	}
}

func TestMarkdownEscapesAndMarksUp(t *testing.T) {
	cases := map[string]string{
		"a `<x>` **b** <script>":            "<p>a <code>&lt;x&gt;</code> <strong>b</strong> &lt;script&gt;</p>",
		"- one\n- two `t`":                  "<ul><li>one</li><li>two <code>t</code></li></ul>",
		"1. a\n2. b":                        "<ol><li>a</li><li>b</li></ol>",
		"| h | i |\n|---|---|\n| `c` | d |": "<table class=\"md\"><tr><th>h</th><th>i</th></tr><tr><td><code>c</code></td><td>d</td></tr></table>",
		"odd ` tick":                        "<p>odd ` tick</p>",
		"p1\n\np2":                          "<p>p1</p><p>p2</p>",
	}
	for in, want := range cases {
		if got := string(apiref.Markdown(in)); got != want {
			t.Errorf("Markdown(%q) = %q, want %q", in, got, want)
		}
	}
}

// The signing rules on the page are the contract's words: each quote must
// appear verbatim in the spec (shared/spec/partner-open-platform.md).
func TestSigningRulesQuoteTheSpec(t *testing.T) {
	spec := readSpec(t)
	for _, r := range apiref.SigningRules {
		if !strings.Contains(spec, r.Quote) {
			t.Errorf("%s: the quote is not in the spec word for word", r.Name)
		}
	}
}

func readSpec(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, "shared", "spec", "partner-open-platform.md")
		if b, err := os.ReadFile(p); err == nil {
			return strings.ReplaceAll(string(b), "\r\n", "\n")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no shared/spec/partner-open-platform.md above the working directory")
		}
		dir = parent
	}
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}
