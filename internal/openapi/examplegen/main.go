// Command examplegen gives openapi.yaml examples taken from real traffic:
// it reads the exchanges openapitest recorded (PLATFORM_OPENAPI_RECORD)
// and inserts an `example:` beside the schema of every JSON request body
// and 2xx response that has none, leaving the rest of the file as it is.
//
//	rm -rf /tmp/rec
//	PLATFORM_OPENAPI_RECORD=/tmp/rec go test ./internal/openapi/ ./e2e/...
//	go run ./internal/openapi/examplegen -record /tmp/rec -file internal/openapi/openapi.yaml
//
// Examples are then checked like the rest of the document: every one is
// validated against its schema by the document's own test, and a test
// refuses an operation without them. Recorded values come from tests, so
// no real person's data or real credential can enter the document.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	yaml "github.com/oasdiff/yaml3"
)

type recording struct {
	Method      string          `json:"method"`
	Path        string          `json:"path"`
	OperationID string          `json:"operation_id"`
	Status      int             `json:"status"`
	Request     json.RawMessage `json:"request"`
	Response    json.RawMessage `json:"response"`
}

// insertion is text to put before a line (1-based), at a column.
type insertion struct {
	line, column int
	value        *yaml.Node
	where        string
}

func main() {
	recDir := flag.String("record", "", "folder of recorded exchanges")
	file := flag.String("file", "internal/openapi/openapi.yaml", "the OpenAPI document to edit in place")
	flag.Parse()
	if *recDir == "" {
		log.Fatal("examplegen: -record is required")
	}
	recs, err := load(*recDir)
	if err != nil {
		log.Fatal(err)
	}
	src, err := os.ReadFile(*file)
	if err != nil {
		log.Fatal(err)
	}
	out, added, missing, err := apply(src, recs)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*file, out, 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("examplegen: %d examples added\n", added)
	for _, m := range missing {
		fmt.Printf("examplegen: no recording for %s\n", m)
	}
}

// load reads every recording, keyed by operation id.
func load(dir string) (map[string][]recording, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	out := map[string][]recording{}
	for _, n := range names {
		raw, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		var r recording
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("examplegen: %s: %w", n, err)
		}
		out[r.OperationID] = append(out[r.OperationID], r)
	}
	return out, nil
}

var methods = map[string]bool{"get": true, "post": true, "put": true, "patch": true, "delete": true}

// apply returns the document with the examples inserted.
func apply(src []byte, recs map[string][]recording) ([]byte, int, []string, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(src, &root); err != nil {
		return nil, 0, nil, err
	}
	doc := root.Content[0]
	components := get(doc, "components")
	var ins []insertion
	var missing []string
	paths := get(doc, "paths")
	for i := 0; i+1 < len(paths.Content); i += 2 {
		path, item := paths.Content[i].Value, paths.Content[i+1]
		for j := 0; j+1 < len(item.Content); j += 2 {
			method, op := item.Content[j].Value, item.Content[j+1]
			if !methods[method] {
				continue
			}
			id := get(op, "operationId")
			if id == nil {
				continue
			}
			where := strings.ToUpper(method) + " " + path
			rs := recs[id.Value]
			if body := get(op, "requestBody"); body != nil {
				body = deref(components, body)
				if mt := jsonMedia(body); mt != nil && !hasExample(mt) {
					if r, ok := firstOK(rs, func(r recording) bool { return len(r.Request) > 0 }); ok {
						ins = append(ins, exampleAt(mt, r.Request, where+" request"))
					} else {
						missing = append(missing, where+" request")
					}
				}
			}
			responses := get(op, "responses")
			for k := 0; responses != nil && k+1 < len(responses.Content); k += 2 {
				code, resp := responses.Content[k].Value, responses.Content[k+1]
				status, err := strconv.Atoi(code)
				if err != nil || status < 200 || status > 299 || get(resp, "$ref") != nil {
					continue
				}
				mt := jsonMedia(resp)
				if mt == nil || hasExample(mt) {
					continue
				}
				if r, ok := firstOK(rs, func(r recording) bool { return r.Status == status && len(r.Response) > 0 }); ok {
					ins = append(ins, exampleAt(mt, r.Response, where+" "+code))
				} else {
					missing = append(missing, where+" "+code)
				}
			}
		}
	}
	// Webhooks: the body the platform POSTs is the operation's request.
	hooks := get(doc, "x-webhooks")
	for i := 0; hooks != nil && i+1 < len(hooks.Content); i += 2 {
		event, op := hooks.Content[i].Value, get(hooks.Content[i+1], "post")
		id := get(op, "operationId")
		body := get(op, "requestBody")
		if id == nil || body == nil {
			continue
		}
		mt := jsonMedia(deref(components, body))
		if mt == nil || hasExample(mt) {
			continue
		}
		where := "webhook " + event
		if r, ok := firstOK(recs[id.Value], func(r recording) bool { return len(r.Request) > 0 }); ok {
			ins = append(ins, exampleAt(mt, r.Request, where))
		} else {
			missing = append(missing, where)
		}
	}
	out, err := insert(src, ins)
	return out, len(ins), missing, err
}

func firstOK(rs []recording, ok func(recording) bool) (recording, bool) {
	for _, r := range rs {
		if r.Status >= 200 && r.Status < 300 && ok(r) {
			return r, true
		}
	}
	return recording{}, false
}

// exampleAt places the example before the media type's first key.
// JSON is YAML, so the recording parses into a node that keeps the
// server's key order (envelope fields first); its JSON styles are cleared
// so the example reads as block YAML like the rest of the file.
func exampleAt(mt *yaml.Node, raw json.RawMessage, where string) insertion {
	var doc yaml.Node
	_ = yaml.Unmarshal(raw, &doc)
	v := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		v = doc.Content[0]
	}
	plain(v)
	first := mt.Content[0]
	return insertion{line: first.Line, column: first.Column, value: v, where: where}
}

func plain(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		plain(c)
	}
}

// insert writes the examples bottom-up so earlier line numbers hold.
func insert(src []byte, ins []insertion) ([]byte, error) {
	lines := strings.SplitAfter(string(src), "\n")
	sort.SliceStable(ins, func(i, j int) bool { return ins[i].line > ins[j].line })
	done := map[int]bool{} // a shared request body component gets one example
	for _, in := range ins {
		if done[in.line] {
			continue
		}
		done[in.line] = true
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(in.value); err != nil {
			return nil, fmt.Errorf("examplegen: %s: %w", in.where, err)
		}
		pad := strings.Repeat(" ", in.column-1)
		block := pad + "example:"
		body := strings.TrimRight(buf.String(), "\n")
		if k := in.value.Kind; k != yaml.MappingNode && k != yaml.SequenceNode {
			block += " " + body + "\n"
		} else {
			block += "\n"
			for _, l := range strings.Split(body, "\n") {
				block += pad + "  " + l + "\n"
			}
		}
		at := in.line - 1
		lines = append(lines[:at], append([]string{block}, lines[at:]...)...)
	}
	return []byte(strings.Join(lines, "")), nil
}

// get is a mapping node's value for key, or nil.
func get(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// deref follows a local $ref to a component.
func deref(components, n *yaml.Node) *yaml.Node {
	ref := get(n, "$ref")
	if ref == nil {
		return n
	}
	parts := strings.Split(strings.TrimPrefix(ref.Value, "#/components/"), "/")
	if len(parts) != 2 {
		return n
	}
	if c := get(get(components, parts[0]), parts[1]); c != nil {
		return c
	}
	return n
}

func jsonMedia(n *yaml.Node) *yaml.Node {
	mt := get(get(n, "content"), "application/json")
	if mt == nil || mt.Kind != yaml.MappingNode || len(mt.Content) == 0 {
		return nil
	}
	return mt
}

func hasExample(mt *yaml.Node) bool {
	if get(mt, "example") != nil || get(mt, "examples") != nil {
		return true
	}
	return get(get(mt, "schema"), "example") != nil
}
