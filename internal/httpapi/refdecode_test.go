package httpapi

// The reference body decoder: a strict token scan, then a map decode
// through encoding/json, plain enough to trust by reading, and the oracle
// FuzzDecoderMatchesTheReference compares the one-pass scanner with: every body must get the same verdict and every
// typed read the same value and errors.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/healthtech/partner-open-platform/domain"
)

// Object is a decoded JSON object whose fields are read with type checks;
// every type problem is collected under its field path.
type refObject struct {
	fields map[string]json.RawMessage
	prefix string
	errs   *domain.ValidationError
}

// refParseObject decodes body as one JSON object; anything else is ErrMalformed.
func refParseObject(body []byte) (*refObject, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, ErrMalformed
	}
	if err := refCheckStrict(body); err != nil {
		return nil, err
	}
	return refParseObjectAt(body, "", &domain.ValidationError{})
}

func refParseObjectAt(raw []byte, prefix string, errs *domain.ValidationError) (*refObject, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return nil, ErrMalformed
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, ErrMalformed
	}
	return &refObject{fields: fields, prefix: prefix, errs: errs}, nil
}

// Err returns the collected type errors, or nil.
func (o *refObject) Err() error { return o.errs.Err() }

// Has reports whether the field was sent (even as null).
func (o *refObject) Has(name string) bool { _, ok := o.fields[name]; return ok }

func (o *refObject) bad(name, msg string) { o.errs.Add(o.prefix+name, msg) }

func refIsNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// String reads an optional string field.
func (o *refObject) String(name string) domain.Field[string] {
	raw, ok := o.fields[name]
	if !ok {
		return domain.Field[string]{}
	}
	if refIsNull(raw) {
		return domain.Field[string]{Set: true, Null: true}
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		o.bad(name, "must be a string")
		return domain.Field[string]{}
	}
	if msg := checkText(raw, s); msg != "" {
		o.bad(name, msg)
		return domain.Field[string]{}
	}
	return domain.Val(s)
}

// Int reads an optional integer field; fractions and out-of-range numbers are errors.
func (o *refObject) Int(name string) domain.Field[int64] {
	raw, ok := o.fields[name]
	if !ok {
		return domain.Field[int64]{}
	}
	if refIsNull(raw) {
		return domain.Field[int64]{Set: true, Null: true}
	}
	var n json.Number
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] == '"' || json.Unmarshal(t, &n) != nil {
		o.bad(name, "must be an integer")
		return domain.Field[int64]{}
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(n.String(), 64)
		if ferr == nil && f == math.Trunc(f) && math.Abs(f) > MaxInt {
			o.bad(name, intRange)
			return domain.Field[int64]{}
		}
		if ferr != nil || f != math.Trunc(f) {
			o.bad(name, "must be an integer")
			return domain.Field[int64]{}
		}
		i = int64(f)
	}
	if i > MaxInt || i < -MaxInt {
		o.bad(name, intRange)
		return domain.Field[int64]{}
	}
	return domain.Val(i)
}

// Bool reads an optional boolean field.
func (o *refObject) Bool(name string) domain.Field[bool] {
	raw, ok := o.fields[name]
	if !ok {
		return domain.Field[bool]{}
	}
	if refIsNull(raw) {
		return domain.Field[bool]{Set: true, Null: true}
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		o.bad(name, "must be a boolean")
		return domain.Field[bool]{}
	}
	return domain.Val(b)
}

// Strings reads an optional array of strings.
func (o *refObject) Strings(name string) []string {
	raw, ok := o.fields[name]
	if !ok || refIsNull(raw) {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		o.bad(name, "must be an array of strings")
		return nil
	}
	if !o.capped(name, len(items), MaxArrayItems) {
		return nil
	}
	ss := make([]string, 0, len(items))
	for i, it := range items {
		var s string
		if err := json.Unmarshal(it, &s); err != nil {
			o.bad(name, "must be an array of strings")
			return nil
		}
		if msg := checkText(it, s); msg != "" {
			o.bad(fmt.Sprintf("%s[%d]", name, i), msg)
			return nil
		}
		ss = append(ss, s)
	}
	return ss
}

// RequiredString reads a string that must be present and non-null.
func (o *refObject) RequiredString(name string) string {
	f := o.String(name)
	if !f.Set || f.Null {
		if !o.errs.Has(o.prefix + name) {
			o.bad(name, "is required")
		}
		return ""
	}
	return f.Value
}

// RequiredInt reads an integer that must be present and non-null.
func (o *refObject) RequiredInt(name string) int64 {
	f := o.Int(name)
	if !f.Set || f.Null {
		if !o.errs.Has(o.prefix + name) {
			o.bad(name, "is required")
		}
		return 0
	}
	return f.Value
}

// Object reads a nested object field; required controls the missing case.
func (o *refObject) Object(name string, required bool) *refObject {
	raw, ok := o.fields[name]
	if !ok || refIsNull(raw) {
		if required {
			o.bad(name, "is required")
		}
		return nil
	}
	child, err := refParseObjectAt(raw, o.prefix+name+".", o.errs)
	if err != nil {
		o.bad(name, "must be an object")
		return nil
	}
	return child
}

// capped reports whether n items are within max, noting the error if not.
func (o *refObject) capped(name string, n, max int) bool {
	if n > max {
		o.bad(name, fmt.Sprintf("must have at most %d items", max))
		return false
	}
	return true
}

// Array reads an array of at most max objects (MaxArrayItems when max is
// 0); each element is parsed with the index in its path.
func (o *refObject) Array(name string, max int) []*refObject {
	raw, ok := o.fields[name]
	if !ok || refIsNull(raw) {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		o.bad(name, "must be an array")
		return nil
	}
	if max <= 0 || max > MaxArrayItems {
		max = MaxArrayItems
	}
	if !o.capped(name, len(items), max) {
		return nil
	}
	out := make([]*refObject, 0, len(items))
	for i, it := range items {
		p := fmt.Sprintf("%s%s[%d]", o.prefix, name, i)
		child, err := refParseObjectAt(it, p+".", o.errs)
		if err != nil {
			o.errs.Add(p, "must be an object")
			continue
		}
		out = append(out, child)
	}
	return out
}

// Raw reads a field's JSON exactly as sent (for raw_data); null is Null.
func (o *refObject) Raw(name string) domain.Field[json.RawMessage] {
	raw, ok := o.fields[name]
	if !ok {
		return domain.Field[json.RawMessage]{}
	}
	if refIsNull(raw) {
		return domain.Field[json.RawMessage]{Set: true, Null: true}
	}
	return domain.Val(json.RawMessage(bytes.TrimSpace(raw)))
}

// Time reads an ISO 8601 date-time; without an offset it is in loc.
func (o *refObject) Time(name string, loc *time.Location) domain.Field[time.Time] {
	f := o.String(name)
	if !f.Set || f.Null {
		return domain.Field[time.Time]{Set: f.Set, Null: f.Null}
	}
	t, ok := ParseTime(f.Value, loc)
	if !ok {
		o.bad(name, "must be an ISO 8601 date-time")
		return domain.Field[time.Time]{}
	}
	return domain.Val(t)
}

// Ints reads an optional array of integers.
func (o *refObject) Ints(name string) []int64 {
	raw, ok := o.fields[name]
	if !ok || refIsNull(raw) {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		o.bad(name, "must be an array of integers")
		return nil
	}
	if !o.capped(name, len(items), MaxArrayItems) {
		return nil
	}
	out := make([]int64, 0, len(items))
	for i, it := range items {
		n, err := strconv.ParseInt(string(bytes.TrimSpace(it)), 10, 64)
		if err != nil {
			if f, ferr := strconv.ParseFloat(string(bytes.TrimSpace(it)), 64); ferr == nil && f == math.Trunc(f) && math.Abs(f) > MaxInt {
				o.bad(fmt.Sprintf("%s[%d]", name, i), intRange)
				continue
			}
			o.bad(fmt.Sprintf("%s[%d]", name, i), "must be an integer")
			continue
		}
		if n > MaxInt || n < -MaxInt {
			o.bad(fmt.Sprintf("%s[%d]", name, i), intRange)
			continue
		}
		out = append(out, n)
	}
	return out
}

type refFrame struct {
	path      string
	object    bool
	keys      map[string]bool
	key       string // object: the key whose value is read next
	expectKey bool   // object: the next token is a key or '}'
	index     int    // array: the index of the next element
}

func (f *refFrame) valuePath() string {
	if f.object {
		if f.path == "" {
			return f.key
		}
		return f.path + "." + f.key
	}
	return fmt.Sprintf("%s[%d]", f.path, f.index)
}

// refCheckStrict refuses what two JSON parsers could read differently or what
// a store could not keep: invalid UTF-8, duplicate object keys (at any
// depth, raw_data included) and nesting beyond MaxDepth. Syntax errors are
// left to the decoder, which answers ErrMalformed.
func refCheckStrict(body []byte) error {
	invalid := func(path, msg string) error {
		if path == "" {
			path = "body"
		}
		v := &domain.ValidationError{}
		v.Add(path, msg)
		return v
	}
	if !utf8.Valid(body) {
		return invalid("body", "must be valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stack []*refFrame
	afterValue := func() {
		if len(stack) == 0 {
			return
		}
		if top := stack[len(stack)-1]; top.object {
			top.expectKey = true
		} else {
			top.index++
		}
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return nil // a syntax error: the decoder reports it
		}
		var top *refFrame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expectKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				afterValue()
				continue
			}
			k, _ := tok.(string)
			top.key, top.expectKey = k, false
			if top.keys[k] {
				return invalid(top.valuePath(), "appears more than once in its object")
			}
			top.keys[k] = true
			continue
		}
		path := ""
		if top != nil {
			path = top.valuePath()
		}
		switch d, _ := tok.(json.Delim); d {
		case '{', '[':
			if len(stack) >= MaxDepth {
				return invalid(path, fmt.Sprintf("nests deeper than %d levels", MaxDepth))
			}
			stack = append(stack, &refFrame{path: path, object: d == '{', keys: map[string]bool{}, expectKey: d == '{'})
		case ']':
			stack = stack[:len(stack)-1]
			afterValue()
		default:
			afterValue()
		}
	}
}
