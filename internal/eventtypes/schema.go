package eventtypes

import (
	"bytes"
	"encoding/json"
)

// node is a JSON object that keeps its keys in the order written, so the
// generated schema files read top-down like the bodies they describe.
type node []member

type member struct {
	name     string
	value    any
	optional bool // a body property the renderer may leave out
}

func (n node) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.name)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// schema is a version's body given its event name.
type schema func(event string) node

// fixed is a body that does not depend on the event name.
func fixed(n node) schema { return func(string) node { return n } }

// prop is a property the body always has; optional one it may leave out.
func prop(name string, s node) member     { return member{name: name, value: s} }
func optional(name string, s node) member { return member{name: name, value: s, optional: true} }

// object is a closed object: a property the catalog does not list fails
// validation, so a field the renderer adds cannot reach partners unlisted.
func object(props ...member) node {
	var required []string
	ps := make(node, 0, len(props))
	for _, p := range props {
		if !p.optional {
			required = append(required, p.name)
		}
		ps = append(ps, member{name: p.name, value: p.value})
	}
	return node{{name: "type", value: "object"}, {name: "additionalProperties", value: false}, {name: "required", value: required}, {name: "properties", value: ps}}
}

func described(n node, doc string) node {
	if doc == "" {
		return n
	}
	return append(n, member{name: "description", value: doc})
}

func str(doc string) node     { return described(node{{name: "type", value: "string"}}, doc) }
func integer(doc string) node { return described(node{{name: "type", value: "integer"}}, doc) }
func boolean(doc string) node { return described(node{{name: "type", value: "boolean"}}, doc) }
func null(doc string) node    { return described(node{{name: "type", value: "null"}}, doc) }
func constant(v string) node  { return node{{name: "const", value: v}} }
func dateTime() node {
	return node{{name: "type", value: "string"}, {name: "format", value: "date-time"}, {name: "description", value: "RFC 3339 in the platform's time zone (+08:00)"}}
}
func enum(vs ...string) node {
	return node{{name: "type", value: "string"}, {name: "enum", value: vs}}
}
func arrayOf(items node) node {
	return node{{name: "type", value: "array"}, {name: "items", value: items}}
}

// nullable lets s be null too.
func nullable(s node) node {
	return node{{name: "anyOf", value: []node{s, {{name: "type", value: "null"}}}}}
}

// deliveryID is the delivery's id: the same as X-Webhook-Id, stable over
// retries and resends; receivers de-duplicate on it.
func deliveryID() node {
	return node{{name: "type", value: "string"}, {name: "format", value: "uuid"}, {name: "description", value: "equals X-Webhook-Id; stable over retries and resends: de-duplicate on it"}}
}
