package jsoncodec

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"
)

// Reader reads JSON into Go values field by field, for a codec that knows
// its document's every key. Every method consumes one value (after
// optional white space) and reports false when the value is outside the
// subset the Reader decides exactly as encoding/json does: known keys
// spelled exactly, each once (encoding/json's case-insensitive match and
// last-duplicate-wins are not followed); nulls only where the field is a
// pointer or slice; canonical integers. Strings decode as encoding/json
// decodes them (escapes resolved, invalid UTF-8 and lone surrogates as
// U+FFFD). A codec whose Reader says false lets encoding/json decide.
type Reader struct {
	s string
	i int
	// b is s as the caller's bytes when the Reader reads a view of them
	// (see view); the strings it hands out are then cloned.
	b []byte
}

// ReadObjectString reads exactly one JSON object from doc (white space
// around it allowed, nothing else), calling field with each member's key
// and the Reader at its value; field returns false for a key it does not
// take. The strings read are substrings of doc, so a document costs one
// allocation.
func ReadObjectString(doc string, field func(key string, r *Reader) bool) bool {
	r := &Reader{s: doc}
	return r.Object(field) && SkipSpace(r.s, r.i) == len(r.s)
}

// ws skips white space and reports whether a byte follows.
func (r *Reader) ws() bool {
	r.i = SkipSpace(r.s, r.i)
	return r.i < len(r.s)
}

// Object reads one nested object, refusing a key seen twice.
func (r *Reader) Object(field func(key string, r *Reader) bool) bool {
	if !r.ws() || r.s[r.i] != '{' {
		return false
	}
	r.i++
	var seenBuf [16]string // the codecs' objects fit: no allocation
	seen := seenBuf[:0]
	if r.ws() && r.s[r.i] == '}' {
		r.i++
		return true
	}
	for {
		key, ok := r.key()
		if !ok {
			return false
		}
		for _, k := range seen {
			if k == key {
				return false
			}
		}
		seen = append(seen, key)
		if !r.ws() || r.s[r.i] != ':' {
			return false
		}
		r.i++
		if !field(key, r) || !r.ws() {
			return false
		}
		switch r.s[r.i] {
		case ',':
			r.i++
		case '}':
			r.i++
			return true
		default:
			return false
		}
	}
}

// Array reads one array, calling elem with the Reader at each element.
func (r *Reader) Array(elem func(r *Reader) bool) bool {
	if !r.ws() || r.s[r.i] != '[' {
		return false
	}
	r.i++
	if r.ws() && r.s[r.i] == ']' {
		r.i++
		return true
	}
	for {
		if !elem(r) || !r.ws() {
			return false
		}
		switch r.s[r.i] {
		case ',':
			r.i++
		case ']':
			r.i++
			return true
		default:
			return false
		}
	}
}

// key reads an object key of plain ASCII without escapes (encoding/json
// writes none for the struct tags the codecs read).
func (r *Reader) key() (string, bool) {
	if !r.ws() {
		return "", false
	}
	end, escaped, nonASCII := scanString(r.s, r.i)
	if end < 0 || escaped || nonASCII {
		return "", false
	}
	key := r.s[r.i+1 : end-1]
	r.i = end
	return key, true
}

// memberIs consumes the object key name and the colon after it if they
// are next, the key spelled as it is: a field's name is plain ASCII (a
// struct tag), which as a key without escapes is spelled one way only,
// so its raw text decides what key decides, without scanning the key as
// any string.
func (r *Reader) memberIs(name string) bool {
	if !r.ws() {
		return false
	}
	end := r.i + len(name) + 2
	if end > len(r.s) || r.s[r.i] != '"' || r.s[end-1] != '"' || r.s[r.i+1:end-1] != name {
		return false
	}
	if end < len(r.s) && r.s[end] == ':' { // a stored event's members hold no white space
		r.i = end + 1
		return true
	}
	r.i = end
	if !r.ws() || r.s[r.i] != ':' {
		r.i -= len(name) + 2 // left to readKey, which refuses it
		return false
	}
	r.i++
	return true
}

// Null consumes a null literal if one comes next.
func (r *Reader) Null() bool {
	if r.ws() && strings.HasPrefix(r.s[r.i:], "null") {
		r.i += 4
		return true
	}
	return false
}

// Skip consumes any one valid value: a member a codec does not read.
func (r *Reader) Skip() bool {
	if !r.ws() {
		return false
	}
	end := skipValue(r.s, r.i)
	if end < 0 {
		return false
	}
	r.i = end
	return true
}

// str reads a string literal as encoding/json decodes it.
func (r *Reader) str() (string, bool) { return r.strIn(nil) }

// strIn is str, the value known's own string when known holds it (a
// value among a few, read many times, is then no allocation of its own).
func (r *Reader) strIn(known map[string]string) (string, bool) {
	if !r.ws() {
		return "", false
	}
	end, escaped, nonASCII := scanPlain(r.s, r.i)
	if end < 0 {
		return "", false
	}
	if escaped || nonASCII && !utf8.ValidString(r.s[r.i+1:end-1]) {
		return r.unquoted()
	}
	s := r.s[r.i+1 : end-1]
	r.i = end
	if known != nil {
		if k, ok := known[s]; ok {
			return k, true
		}
	}
	if r.b != nil {
		return strings.Clone(s), true
	}
	return s, true
}

// unquoted reads the escaped string at r.i as a string of its own, in one
// pass and one allocation. Most, a webhook's body of a few hundred bytes
// among them (a JSON document carried as a string, an escape every few
// bytes), are decoded as they are validated into a buffer on the stack
// and copied at their length. One too long for it goes on decoding from
// where the stack buffer filled, into a buffer made for what that holds
// and the document's rest (as long as the string's raw bytes or longer,
// which its value is not unless invalid UTF-8 grows it), which then is
// the string, neither grown nor copied, unless over a quarter of
// it is left unused (a string followed by much of the document, or
// shortened by its escapes): it is copied at its length then, since a
// read model may keep it.
func (r *Reader) unquoted() (string, bool) {
	var stack [onStack]byte
	buf, end, stop := unquoteFrom(stack[:0], r.s, r.i+1, true)
	if end == 0 {
		long := append(make([]byte, 0, len(buf)+len(r.s)-stop), buf...)
		if long, end, _ = unquoteFrom(long, r.s, stop, false); end > 0 {
			r.i = end
			if cap(long)-len(long) > cap(long)/4 {
				return string(long), true
			}
			return unsafe.String(unsafe.SliceData(long), len(long)), true
		}
	}
	if end < 0 {
		return "", false
	}
	r.i = end
	return string(buf), true
}

// onStack is the size of the stack buffer unquoted decodes into.
const onStack = 1024

// int64 reads a canonical integer (no leading zeros, no minus zero, no
// fraction or exponent) that fits in 64 bits.
func (r *Reader) int64() (int64, bool) {
	if !r.ws() {
		return 0, false
	}
	start := r.i
	i := start
	if r.s[i] == '-' {
		i++
	}
	first := i
	i = digits(r.s, i)
	if i == first || (r.s[first] == '0' && (i-first > 1 || first > start)) {
		return 0, false
	}
	if i < len(r.s) && (r.s[i] == '.' || r.s[i] == 'e' || r.s[i] == 'E') {
		return 0, false
	}
	n, err := strconv.ParseInt(r.s[start:i], 10, 64)
	if err != nil {
		return 0, false
	}
	r.i = i
	return n, true
}

// Int reads an integer into an int64 field.
func (r *Reader) Int(dst *int64) bool {
	n, ok := r.int64()
	*dst = n
	return ok
}

// IntTo reads an integer into an int field, refusing one int cannot hold.
func (r *Reader) IntTo(dst *int) bool {
	n, ok := r.int64()
	*dst = int(n)
	return ok && int64(*dst) == n
}

// IntPtr reads a *int64 field: null leaves it nil, as encoding/json does
// for a fresh value, and a number allocates it.
func (r *Reader) IntPtr(dst **int64) bool {
	if r.Null() {
		*dst = nil
		return true
	}
	n, ok := r.int64()
	if ok {
		*dst = &n
	}
	return ok
}

// Uint reads a canonical non-negative integer into a uint64 field.
func (r *Reader) Uint(dst *uint64) bool {
	if !r.ws() {
		return false
	}
	i := digits(r.s, r.i)
	if i == r.i || (r.s[r.i] == '0' && i-r.i > 1) {
		return false
	}
	if i < len(r.s) && (r.s[i] == '.' || r.s[i] == 'e' || r.s[i] == 'E') {
		return false
	}
	n, err := strconv.ParseUint(r.s[r.i:i], 10, 64)
	if err != nil {
		return false
	}
	*dst, r.i = n, i
	return true
}

// String reads a string field.
func (r *Reader) String(dst *string) bool {
	s, ok := r.str()
	*dst = s
	return ok
}

// StringIn reads a string field whose values are mostly among known (a
// set, each value its own key): such a value is known's string, not a
// copy.
func (r *Reader) StringIn(dst *string, known map[string]string) bool {
	s, ok := r.strIn(known)
	*dst = s
	return ok
}

// StringPtr reads a *string field: null leaves it nil, a string allocates it.
func (r *Reader) StringPtr(dst **string) bool {
	if r.Null() {
		*dst = nil
		return true
	}
	s, ok := r.str()
	if ok {
		*dst = &s
	}
	return ok
}

// Strings reads a []string field: null gives nil and [] an empty, non-nil
// slice, as encoding/json does. (A loop, not Array: a func value would
// move the Reader to the heap.)
func (r *Reader) Strings(dst *[]string) bool {
	if r.Null() {
		*dst = nil
		return true
	}
	if !r.ws() || r.s[r.i] != '[' {
		return false
	}
	r.i++
	out := []string{}
	if r.ws() && r.s[r.i] == ']' {
		r.i++
		*dst = out
		return true
	}
	for {
		s, ok := r.str()
		if !ok || !r.ws() {
			return false
		}
		out = append(out, s)
		switch r.s[r.i] {
		case ',':
			r.i++
		case ']':
			r.i++
			*dst = out
			return true
		default:
			return false
		}
	}
}

// Bool reads a bool field.
func (r *Reader) Bool(dst *bool) bool {
	switch {
	case !r.ws():
		return false
	case strings.HasPrefix(r.s[r.i:], "true"):
		*dst, r.i = true, r.i+4
	case strings.HasPrefix(r.s[r.i:], "false"):
		*dst, r.i = false, r.i+5
	default:
		return false
	}
	return true
}

// Time reads a time.Time field as time.Time's own UnmarshalJSON does, as
// encoding/json does (UnmarshalTime); a literal with escapes is refused.
func (r *Reader) Time(dst *time.Time) bool {
	if !r.ws() || r.s[r.i] != '"' {
		return false
	}
	end := strings.IndexByte(r.s[r.i+1:], '"')
	if end < 0 {
		return false
	}
	end += r.i + 2
	var lit []byte
	if r.b != nil {
		lit = r.b[r.i:end]
	} else {
		lit = []byte(r.s[r.i:end])
	}
	if strings.IndexByte(r.s[r.i:end], '\\') >= 0 || UnmarshalTime(dst, lit) != nil {
		return false
	}
	r.i = end
	return true
}

// TimePtr reads a *time.Time field: null leaves it nil, a time allocates it.
func (r *Reader) TimePtr(dst **time.Time) bool {
	if r.Null() {
		*dst = nil
		return true
	}
	var t time.Time
	if !r.Time(&t) {
		return false
	}
	*dst = &t
	return true
}
