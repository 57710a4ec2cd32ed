package httpapi

import (
	"bytes"
	"encoding/json"
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
// every type problem is collected under its field path. Its fields are the
// members the body scan collected: slices of the body, decoded only when a
// handler reads them.
type Object struct {
	fields []member
	index  map[string]int // for objects with many fields
	doc    *document
	// parent, name and item place the object in the body; its path is
	// spelled out only for an error (prefix).
	parent *Object
	name   string
	item   int    // the element's index when parent's field name is an array; -1 otherwise
	read   uint64 // bit i: the handler asked for fields[i] (i < 64)
	more   []bool // the same for fields[64:], rare
}

// document is what every object parsed from one body shares: the type
// problems, the objects (for CheckUnknown), room for the first objects,
// and one slice for the members of all of them, so that a body of a few
// objects is two allocations besides its scanners'.
type document struct {
	errs    domain.ValidationError
	objects []*Object
	free    []member // what is left of the members' room
	used    int      // objects of first handed out
	first   [4]Object
	ptrs    [4]*Object
}

// maxRoom bounds the members' room made ahead; scans past it make their own.
const maxRoom = 64

// ParseObject decodes body as one JSON object; anything else is ErrMalformed.
func ParseObject(body []byte) (*Object, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, ErrMalformed
	}
	d := &document{}
	// Every member is followed by a comma or closes its container, so this
	// is at least the body's count of members (strings' commas count too).
	room := bytes.Count(body, []byte{','}) + bytes.Count(body, []byte{'{'}) + bytes.Count(body, []byte{'['})
	d.objects, d.free = d.ptrs[:0], make([]member, min(room, maxRoom))
	fields, err := checkBody(body, d.take())
	if err != nil {
		return nil, err
	}
	d.kept(fields)
	return d.newObject(fields, nil, "", -1), nil
}

// take is the room left for a scan's members; kept records what the scan
// used of it.
func (d *document) take() []member { return d.free[:0] }

func (d *document) kept(members []member) {
	if cap(members) == cap(d.free) { // appended in place, not moved
		d.free = d.free[len(members):]
	}
}

func (d *document) newObject(fields []member, parent *Object, name string, item int) *Object {
	var o *Object
	if d.used < len(d.first) {
		o = &d.first[d.used]
		d.used++
	} else {
		o = new(Object)
	}
	*o = Object{fields: fields, doc: d, parent: parent, name: name, item: item}
	d.objects = append(d.objects, o)
	if len(fields) > smallObject {
		o.index = make(map[string]int, len(fields))
		for i, f := range fields {
			o.index[string(f.key)] = i
		}
	}
	return o
}

// prefix is the object's path in the body as its fields' paths begin:
// "" for the body's object, else e.g. "user." or "family_members[1].".
func (o *Object) prefix() string {
	if o.parent == nil {
		return ""
	}
	p := o.parent.prefix() + o.name
	if o.item >= 0 {
		p += "[" + strconv.Itoa(o.item) + "]"
	}
	return p + "."
}

// parseObject reads raw, a value the body scan checked, as the nested
// object at parent's field name (element item of it when item >= 0).
func (o *Object) parseObject(raw []byte, name string, item int) (*Object, error) {
	fields, ok := o.splitValue(raw, '{')
	if !ok {
		return nil, ErrMalformed
	}
	return o.doc.newObject(fields, o, name, item), nil
}

// splitValue is splitValue with the members kept in the document's room.
func (o *Object) splitValue(raw []byte, open byte) ([]member, bool) {
	members, ok := splitValue(raw, open, o.doc.take())
	if ok {
		o.doc.kept(members)
	}
	return members, ok
}

// field returns the raw JSON of the named field.
// field returns the raw JSON of the named field, which counts as read
// (known to the route) from then on.
func (o *Object) field(name string) ([]byte, bool) {
	if o.index != nil {
		i, ok := o.index[name]
		if !ok {
			return nil, false
		}
		return o.markRead(i), true
	}
	for i := range o.fields {
		if string(o.fields[i].key) == name {
			return o.markRead(i), true
		}
	}
	return nil, false
}

func (o *Object) markRead(i int) []byte {
	if i < 64 {
		o.read |= 1 << i
	} else {
		if o.more == nil {
			o.more = make([]bool, len(o.fields)-64)
		}
		o.more[i-64] = true
	}
	return o.fields[i].raw
}

func (o *Object) wasRead(i int) bool {
	if i < 64 {
		return o.read&(1<<i) != 0
	}
	return o.more != nil && o.more[i-64]
}

// CheckUnknown caps the arrays of the fields no route read, as the read
// ones are capped: an unknown field is ignored, but an array in it (at any
// depth) of more than MaxArrayItems elements is refused under its path
// (422 VALIDATION_ERROR), so an ignored field cannot carry what a known one
// may not. Call it once the route has read every field it knows.
func (o *Object) CheckUnknown() {
	for _, obj := range o.doc.objects {
		for i, f := range obj.fields {
			if obj.wasRead(i) || len(f.raw) == 0 || (f.raw[0] != '[' && f.raw[0] != '{') {
				continue
			}
			if path, over := longArray(f.raw, MaxArrayItems); over {
				obj.doc.errs.Add(obj.prefix()+string(f.key)+path, fmt.Sprintf("must have at most %d items", MaxArrayItems))
			}
		}
	}
}

// elements returns the elements of raw when it is an array.
func (o *Object) elements(raw []byte) ([]member, bool) { return o.splitValue(raw, '[') }

// Err returns the collected type errors, or nil.
func (o *Object) Err() error { return o.doc.errs.Err() }

// Has reports whether the field was sent (even as null).
func (o *Object) Has(name string) bool { _, ok := o.field(name); return ok }

func (o *Object) bad(name, msg string) { o.doc.errs.Add(o.prefix()+name, msg) }

func isNull(raw []byte) bool { return string(raw) == "null" }

// decodeString reads raw as encoding/json would into a string (null is the
// empty string); ok is false for any other type. Text without escapes is
// the literal's bytes, which the body scan already checked.
func decodeString(raw []byte) (s string, ok bool, msg string) {
	if isNull(raw) {
		return "", true, ""
	}
	if len(raw) < 2 || raw[0] != '"' {
		return "", false, ""
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true, ""
	}
	if json.Unmarshal(raw, &s) != nil {
		return "", false, ""
	}
	return s, true, checkText(raw, s)
}

// String reads an optional string field.
func (o *Object) String(name string) domain.Field[string] {
	raw, ok := o.field(name)
	if !ok {
		return domain.Field[string]{}
	}
	if isNull(raw) {
		return domain.Field[string]{Set: true, Null: true}
	}
	s, ok, msg := decodeString(raw)
	if !ok {
		o.bad(name, "must be a string")
		return domain.Field[string]{}
	}
	if msg != "" {
		o.bad(name, msg)
		return domain.Field[string]{}
	}
	return domain.Val(s)
}

// Int reads an optional integer field; fractions and out-of-range numbers are errors.
func (o *Object) Int(name string) domain.Field[int64] {
	raw, ok := o.field(name)
	if !ok {
		return domain.Field[int64]{}
	}
	if isNull(raw) {
		return domain.Field[int64]{Set: true, Null: true}
	}
	if c := raw[0]; c != '-' && (c < '0' || c > '9') {
		o.bad(name, "must be an integer")
		return domain.Field[int64]{}
	}
	n := string(raw) // a number: the body scan checked its syntax
	i, err := strconv.ParseInt(n, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(n, 64)
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

// MaxInt is the largest integer a body may hold (2^53−1): beyond it a JSON
// number is not exact in every client (JavaScript's numbers are float64),
// so two parsers could read different values.
const MaxInt = 1<<53 - 1

const intRange = "must be an integer between -9007199254740991 and 9007199254740991"

// Bool reads an optional boolean field.
func (o *Object) Bool(name string) domain.Field[bool] {
	raw, ok := o.field(name)
	if !ok {
		return domain.Field[bool]{}
	}
	if isNull(raw) {
		return domain.Field[bool]{Set: true, Null: true}
	}
	switch string(raw) {
	case "true":
		return domain.Val(true)
	case "false":
		return domain.Val(false)
	}
	o.bad(name, "must be a boolean")
	return domain.Field[bool]{}
}

// Strings reads an optional array of strings.
func (o *Object) Strings(name string) []string {
	raw, ok := o.field(name)
	if !ok || isNull(raw) {
		return nil
	}
	items, ok := o.elements(raw)
	if !ok {
		o.bad(name, "must be an array of strings")
		return nil
	}
	if !o.capped(name, len(items), MaxArrayItems) {
		return nil
	}
	ss := make([]string, 0, len(items))
	for i, it := range items {
		s, ok, msg := decodeString(it.raw)
		if !ok {
			o.bad(name, "must be an array of strings")
			return nil
		}
		if msg != "" {
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
		if !o.doc.errs.Has(o.prefix() + name) {
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
		if !o.doc.errs.Has(o.prefix() + name) {
			o.bad(name, "is required")
		}
		return 0
	}
	return f.Value
}

// Object reads a nested object field; required controls the missing case.
func (o *Object) Object(name string, required bool) *Object {
	raw, ok := o.field(name)
	if !ok || isNull(raw) {
		if required {
			o.bad(name, "is required")
		}
		return nil
	}
	child, err := o.parseObject(raw, name, -1)
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
	raw, ok := o.field(name)
	if !ok || isNull(raw) {
		return nil
	}
	items, ok := o.elements(raw)
	if !ok {
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
		child, err := o.parseObject(it.raw, name, i)
		if err != nil {
			o.doc.errs.Add(fmt.Sprintf("%s%s[%d]", o.prefix(), name, i), "must be an object")
			continue
		}
		out = append(out, child)
	}
	return out
}

// Raw reads a field's JSON exactly as sent (for raw_data); null is Null.
func (o *Object) Raw(name string) domain.Field[json.RawMessage] {
	raw, ok := o.field(name)
	if !ok {
		return domain.Field[json.RawMessage]{}
	}
	if isNull(raw) {
		return domain.Field[json.RawMessage]{Set: true, Null: true}
	}
	return domain.Val(json.RawMessage(bytes.Clone(raw))) // not an alias of the request's buffer
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
	raw, ok := o.field(name)
	if !ok || isNull(raw) {
		return nil
	}
	items, ok := o.elements(raw)
	if !ok {
		o.bad(name, "must be an array of integers")
		return nil
	}
	if !o.capped(name, len(items), MaxArrayItems) {
		return nil
	}
	out := make([]int64, 0, len(items))
	for i, it := range items {
		n, err := strconv.ParseInt(string(it.raw), 10, 64)
		if err != nil {
			// An integer too long for int64 is out of range, not a non-integer.
			if f, ferr := strconv.ParseFloat(string(it.raw), 64); ferr == nil && f == math.Trunc(f) && math.Abs(f) > MaxInt {
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
