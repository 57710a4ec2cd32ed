package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
)

// MaxBody is the largest request body any route accepts.
const MaxBody = 1 << 20

// ReadBody reads the whole body up to MaxBody, answering ErrTooLarge beyond it.
func ReadBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	if r.ContentLength > MaxBody {
		return nil, ErrTooLarge
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return nil, &Problem{Status: http.StatusBadRequest, Code: "HTTP_400", Message: "could not read request body"}
	}
	if len(b) > MaxBody {
		return nil, ErrTooLarge
	}
	return b, nil
}

// Object is a decoded JSON object whose fields are read with type checks;
// every type problem is collected under its field path.
type Object struct {
	fields map[string]json.RawMessage
	prefix string
	errs   *domain.ValidationError
}

// ParseObject decodes body as one JSON object; anything else is ErrMalformed.
func ParseObject(body []byte) (*Object, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, ErrMalformed
	}
	if err := checkStrict(body); err != nil {
		return nil, err
	}
	return parseObject(body, "", &domain.ValidationError{})
}

func parseObject(raw []byte, prefix string, errs *domain.ValidationError) (*Object, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var fields map[string]json.RawMessage
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return nil, ErrMalformed
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, ErrMalformed
	}
	return &Object{fields: fields, prefix: prefix, errs: errs}, nil
}

// Err returns the collected type errors, or nil.
func (o *Object) Err() error { return o.errs.Err() }

// Has reports whether the field was sent (even as null).
func (o *Object) Has(name string) bool { _, ok := o.fields[name]; return ok }

func (o *Object) bad(name, msg string) { o.errs.Add(o.prefix+name, msg) }

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// String reads an optional string field.
func (o *Object) String(name string) domain.Field[string] {
	raw, ok := o.fields[name]
	if !ok {
		return domain.Field[string]{}
	}
	if isNull(raw) {
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
func (o *Object) Int(name string) domain.Field[int64] {
	raw, ok := o.fields[name]
	if !ok {
		return domain.Field[int64]{}
	}
	if isNull(raw) {
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
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > MaxInt {
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

// MaxInt is the largest integer a body may hold (2^53−1): beyond it a JSON
// number is not exact in every client (JavaScript's numbers are float64),
// so two parsers could read different values.
const MaxInt = 1<<53 - 1

const intRange = "must be an integer between -9007199254740991 and 9007199254740991"

// Bool reads an optional boolean field.
func (o *Object) Bool(name string) domain.Field[bool] {
	raw, ok := o.fields[name]
	if !ok {
		return domain.Field[bool]{}
	}
	if isNull(raw) {
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
func (o *Object) Strings(name string) []string {
	raw, ok := o.fields[name]
	if !ok || isNull(raw) {
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
func (o *Object) RequiredString(name string) string {
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
func (o *Object) RequiredInt(name string) int64 {
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
func (o *Object) Object(name string, required bool) *Object {
	raw, ok := o.fields[name]
	if !ok || isNull(raw) {
		if required {
			o.bad(name, "is required")
		}
		return nil
	}
	child, err := parseObject(raw, o.prefix+name+".", o.errs)
	if err != nil {
		o.bad(name, "must be an object")
		return nil
	}
	return child
}

// capped reports whether n items are within max, noting the error if not.
func (o *Object) capped(name string, n, max int) bool {
	if n > max {
		o.bad(name, fmt.Sprintf("must have at most %d items", max))
		return false
	}
	return true
}

// Array reads an array of at most max objects (MaxArrayItems when max is
// 0); each element is parsed with the index in its path.
func (o *Object) Array(name string, max int) []*Object {
	raw, ok := o.fields[name]
	if !ok || isNull(raw) {
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
	out := make([]*Object, 0, len(items))
	for i, it := range items {
		p := fmt.Sprintf("%s%s[%d]", o.prefix, name, i)
		child, err := parseObject(it, p+".", o.errs)
		if err != nil {
			o.errs.Add(p, "must be an object")
			continue
		}
		out = append(out, child)
	}
	return out
}

// Raw reads a field's JSON exactly as sent (for raw_data); null is Null.
func (o *Object) Raw(name string) domain.Field[json.RawMessage] {
	raw, ok := o.fields[name]
	if !ok {
		return domain.Field[json.RawMessage]{}
	}
	if isNull(raw) {
		return domain.Field[json.RawMessage]{Set: true, Null: true}
	}
	return domain.Val(json.RawMessage(bytes.TrimSpace(raw)))
}

// Time reads an ISO 8601 date-time; without an offset it is in loc.
func (o *Object) Time(name string, loc *time.Location) domain.Field[time.Time] {
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
func (o *Object) Ints(name string) []int64 {
	raw, ok := o.fields[name]
	if !ok || isNull(raw) {
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
		if err != nil || n > MaxInt || n < -MaxInt {
			o.bad(fmt.Sprintf("%s[%d]", name, i), "must be an integer")
			continue
		}
		out = append(out, n)
	}
	return out
}
