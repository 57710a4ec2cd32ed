package jsoncodec

import (
	"sync"
	"time"
)

// Fields is a struct's JSON codec written once: a method lists the
// struct's fields in declaration order with their json names, one call
// each (f.String("name", &p.Name), ...), and the same method encodes the
// struct as json.Marshal does and decodes it as json.Unmarshal does. So a
// new field is one line beside the others, in both directions.
//
// Encoding writes each field after its key, HTML escaped, leaving an Omit
// field out when zero, as json.Marshal does for omitempty; a time
// MarshalJSON refuses makes the encode decline. Decoding takes the keys in
// declaration order (the order every encoder of these structs writes), a
// missing key leaving the zero value; anything else (another order, an
// unknown or duplicate key, a null for a value that is not a pointer or
// slice, a value the Reader does not decide) makes it decline, and the
// caller lets encoding/json decide.
type Fields struct {
	decoding bool
	bad      bool // the value cannot be written, or the data read, exactly
	// Encoding: the output, and whether the current object has no member
	// yet.
	b     []byte
	first bool
	// Decoding: the reader, the next member's key, or end when the
	// object closed. unread is a key not read yet, at r.i: the field
	// named next reads it (at), most often by comparing its raw text with
	// its own name.
	r      Reader
	key    string
	end    bool
	unread bool
}

// Encoding: the caller starts with Write, runs the struct's fields method
// on f directly (not through a func value, so f stays on its stack, and
// with a buffer of the size the last value of the type took, so the output
// is allocated once), and ends with Written.

// Write starts encoding after b.
func (f *Fields) Write(b []byte) { f.b, f.first = b, true }

// Written ends encoding: the output, and false where json.Marshal would
// fail.
func (f *Fields) Written() ([]byte, bool) { return f.close(), !f.bad }

// Decode reads data into the struct whose fields fields lists; false
// means "not decided here" and the struct must be discarded.
func Decode(data []byte, fields func(*Fields)) bool {
	f := decoders.Get().(*Fields)
	*f = Fields{decoding: true, r: Reader{s: view(data), b: data}}
	f.open()
	fields(f)
	f.closeRead()
	ok := !f.bad && SkipSpace(f.r.s, f.r.i) == len(f.r.s)
	*f = Fields{} // keeps nothing of data
	decoders.Put(f)
	return ok
}

// decoders recycles the decoding state, which the call of fields through
// a func value moves to the heap: a pool costs less than an allocation.
var decoders = sync.Pool{New: func() any { return new(Fields) }}

// keep stores b, which is f.b with bytes appended, back in f.b. When the
// append fit, only the length changes: a store the compiler makes without
// the write barrier a pointer store into *f needs while the collector runs.
func (f *Fields) keep(b []byte) {
	if cap(b) == cap(f.b) {
		f.b = f.b[:len(b)]
	} else {
		f.b = b
	}
}

// close ends an object being encoded.
func (f *Fields) close() []byte {
	if f.first {
		f.b = append(f.b, '{')
	}
	f.first = false
	return append(f.b, '}')
}

// open starts reading an object: its first key, or end.
func (f *Fields) open() {
	r := &f.r
	if !r.ws() || r.s[r.i] != '{' {
		f.bad = true
		return
	}
	r.i++
	if r.ws() && r.s[r.i] == '}' {
		r.i++
		f.key, f.end = "", true
		return
	}
	f.key, f.end, f.unread = "", false, true
}

// readKey reads the unread key and its colon.
func (f *Fields) readKey() {
	key, ok := f.r.key()
	f.key, f.unread = key, false
	f.colon(ok)
}

// colon consumes the colon after a key read (ok) as the member's.
func (f *Fields) colon(ok bool) {
	if !ok || !f.r.ws() || f.r.s[f.r.i] != ':' {
		f.bad = true
		return
	}
	f.r.i++
}

// next moves past a member's value: to the next key, or end.
func (f *Fields) next() {
	r := &f.r
	if !r.ws() {
		f.bad = true
		return
	}
	switch r.s[r.i] {
	case ',':
		r.i++
		f.key, f.end, f.unread = "", false, true
	case '}':
		r.i++
		f.key, f.end = "", true
	default:
		f.bad = true
	}
}

// closeRead checks that the object's members were all taken.
func (f *Fields) closeRead() {
	if !f.end {
		f.bad = true
	}
}

// at reports whether the field name is to be handled now: encoding
// (after writing its key), or decoding when it is the next key. A
// decoding field that is not next keeps its zero value.
func (f *Fields) at(name string) bool {
	if f.decoding {
		if f.bad || f.end {
			return false
		}
		if f.unread {
			if f.r.memberIs(name) {
				f.unread = false // f.key is not read again: the field reads its value
				return true
			}
			f.readKey()
		}
		return !f.bad && f.key == name
	}
	n := len(f.b)
	if cap(f.b)-n < len(name)+4 {
		f.b = append(f.b, make([]byte, len(name)+4)...)[:n]
	}
	f.b = f.b[:n+len(name)+4]
	f.b[n], f.b[n+1] = ',', '"'
	if f.first {
		f.b[n], f.first = '{', false
	}
	copy(f.b[n+2:], name)
	f.b[len(f.b)-2], f.b[len(f.b)-1] = '"', ':'
	return true
}

// read finishes a decoded member: ok is the value's read.
func (f *Fields) read(ok bool) {
	if !ok {
		f.bad = true
		return
	}
	f.next()
}

// String is a string field.
func (f *Fields) String(name string, p *string) {
	switch {
	case !f.at(name):
	case f.decoding:
		f.read(f.r.String(p))
	default:
		f.keep(HTML.AppendString(f.b, *p))
	}
}

// StringIn is a string field whose values are mostly among known (a set,
// each value its own key), such as an event type: decoding gives such a
// value as known's string instead of a copy (Reader.StringIn); encoding
// is String's.
func (f *Fields) StringIn(name string, p *string, known map[string]string) {
	switch {
	case !f.at(name):
	case f.decoding:
		f.read(f.r.StringIn(p, known))
	default:
		f.keep(HTML.AppendString(f.b, *p))
	}
}

// OmitString is a string field with omitempty.
func (f *Fields) OmitString(name string, p *string) {
	if f.decoding || *p != "" {
		f.String(name, p)
	}
}

// StringPtr is a *string field: null when nil.
func (f *Fields) StringPtr(name string, p **string) {
	switch {
	case !f.at(name):
	case f.decoding:
		f.read(f.r.StringPtr(p))
	case *p == nil:
		f.keep(append(f.b, "null"...))
	default:
		f.keep(HTML.AppendString(f.b, **p))
	}
}

// Strings is a []string field: null when nil.
func (f *Fields) Strings(name string, p *[]string) {
	switch {
	case !f.at(name):
	case f.decoding:
		f.read(f.r.Strings(p))
	default:
		f.keep(HTML.Strings(f.b, "", *p))
	}
}

// Int is an int64 field.
func (f *Fields) Int(name string, p *int64) {
	switch {
	case !f.at(name):
	case f.decoding:
		f.read(f.r.Int(p))
	default:
		f.keep(Int(f.b, "", *p))
	}
}

// OmitInt is an int64 field with omitempty.
func (f *Fields) OmitInt(name string, p *int64) {
	if f.decoding || *p != 0 {
		f.Int(name, p)
	}
}

// IntN is an int field.
func (f *Fields) IntN(name string, p *int) {
	switch {
	case !f.at(name):
	case f.decoding:
		f.read(f.r.IntTo(p))
	default:
		f.keep(Int(f.b, "", int64(*p)))
	}
}

// OmitIntN is an int field with omitempty.
func (f *Fields) OmitIntN(name string, p *int) {
	if f.decoding || *p != 0 {
		f.IntN(name, p)
	}
}

// IntPtr is a *int64 field: null when nil.
func (f *Fields) IntPtr(name string, p **int64) {
	switch {
	case !f.at(name):
	case f.decoding:
		f.read(f.r.IntPtr(p))
	default:
		f.keep(OptInt(f.b, "", *p))
	}
}

// Uint is a uint64 field.
func (f *Fields) Uint(name string, p *uint64) {
	switch {
	case !f.at(name):
	case f.decoding:
		f.read(f.r.Uint(p))
	default:
		f.keep(Uint(f.b, "", *p))
	}
}

// Bool is a bool field.
func (f *Fields) Bool(name string, p *bool) {
	switch {
	case !f.at(name):
	case f.decoding:
		f.read(f.r.Bool(p))
	default:
		f.keep(Bool(f.b, "", *p))
	}
}

// Time is a time.Time field, as time.Time's MarshalJSON and UnmarshalJSON
// write and read it.
func (f *Fields) Time(name string, p *time.Time) {
	switch {
	case !f.at(name):
	case f.decoding:
		f.read(f.r.Time(p))
	default:
		b, ok := Time(f.b, "", *p)
		f.keep(b)
		f.bad = f.bad || !ok
	}
}

// TimePtr is a *time.Time field: null when nil.
func (f *Fields) TimePtr(name string, p **time.Time) {
	switch {
	case !f.at(name):
	case f.decoding:
		f.read(f.r.TimePtr(p))
	case *p == nil:
		f.keep(append(f.b, "null"...))
	default:
		b, ok := Time(f.b, "", **p)
		f.keep(b)
		f.bad = f.bad || !ok
	}
}

// OmitTimePtr is a *time.Time field with omitempty.
func (f *Fields) OmitTimePtr(name string, p **time.Time) {
	if f.decoding || *p != nil {
		f.TimePtr(name, p)
	}
}

// Object starts a struct field: when it reports true, the caller lists
// the struct's fields and calls End; false (decoding, the key is not
// next) leaves the struct zero. A null is declined when decoding
// (encoding/json would keep the zero value).
func (f *Fields) Object(name string) bool {
	if !f.at(name) {
		return false
	}
	if f.decoding {
		f.open()
	} else {
		f.first = true
	}
	return true
}

// End ends a struct field Object started.
func (f *Fields) End() {
	if f.decoding {
		f.closeRead()
		f.read(!f.bad)
		return
	}
	f.keep(f.close())
}
