package events

import (
	"bytes"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Every follower decodes every event of its read model again, and decoding with
// encoding/json through reflection was the largest share of a member
// upsert's CPU across followers (≈ 66 µs per upsert).
// A payload type may therefore register a DirectDecoder, built on
// JSONReader, which reads the shape encoding/json writes. The reader takes
// a strict subset of JSON (known keys spelled exactly, each once, nulls
// only where the field is a pointer or slice, canonical integers, valid
// UTF-8 without lone surrogates) and reports false for anything else;
// Registry.Decode then decodes the same bytes with encoding/json. So a
// payload a direct decoder returns is always the one encoding/json would
// (catalog's FuzzDirectDecodeMatchesEncodingJSON), and every input it
// cannot decide exactly keeps encoding/json's result, errors included.

// DirectDecoder reads the JSON of one payload type at its current schema
// without reflection, returning a pointer to the payload as Decode does;
// ok=false means "not decided here", never "invalid", so Decode falls back
// to encoding/json, which decides.
type DirectDecoder func(data []byte) (p Payload, ok bool)

// JSONReader walks JSON text for a DirectDecoder; every method consumes one
// value (after optional white space) and reports false when the value is
// outside the subset it decides exactly as encoding/json does.
type JSONReader struct {
	b []byte
	i int
}

// ReadJSONObject reads exactly one JSON object from raw (white space around
// it allowed, nothing else), calling field with each member's key and the
// reader positioned at its value; field returns false for an unknown key,
// because encoding/json's case-insensitive matching is not followed here.
func ReadJSONObject(raw []byte, field func(key []byte, r *JSONReader) bool) bool {
	r := &JSONReader{b: raw}
	if !r.Object(field) {
		return false
	}
	r.ws()
	return r.i == len(r.b)
}

func (r *JSONReader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// Object reads one nested object, refusing a key seen twice (encoding/json
// merges duplicates, last one winning per field, which is not followed here).
func (r *JSONReader) Object(field func(key []byte, r *JSONReader) bool) bool {
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != '{' {
		return false
	}
	r.i++
	var seenBuf [16][]byte // the hot payloads' objects fit: no allocation
	seen := seenBuf[:0]
	r.ws()
	if r.i < len(r.b) && r.b[r.i] == '}' {
		r.i++
		return true
	}
	for {
		key, ok := r.key()
		if !ok {
			return false
		}
		for _, k := range seen {
			if bytes.Equal(k, key) {
				return false
			}
		}
		seen = append(seen, key)
		r.ws()
		if r.i >= len(r.b) || r.b[r.i] != ':' {
			return false
		}
		r.i++
		if !field(key, r) {
			return false
		}
		r.ws()
		if r.i >= len(r.b) {
			return false
		}
		switch r.b[r.i] {
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

// key reads an object key without escapes (encoding/json writes none for
// struct tags of plain ASCII), as a slice of the input.
func (r *JSONReader) key() ([]byte, bool) {
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return nil, false
	}
	start := r.i + 1
	for i := start; i < len(r.b); i++ {
		switch c := r.b[i]; {
		case c == '"':
			r.i = i + 1
			return r.b[start:i], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

// null consumes a null literal if one comes next.
func (r *JSONReader) null() bool {
	r.ws()
	if bytes.HasPrefix(r.b[r.i:], []byte("null")) {
		r.i += 4
		return true
	}
	return false
}

// str reads a string literal; escapes are decoded, and invalid UTF-8 or a
// lone surrogate (which encoding/json would replace with U+FFFD) is refused.
func (r *JSONReader) str() (string, bool) {
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return "", false
	}
	start := r.i + 1
	for i := start; i < len(r.b); i++ {
		c := r.b[i]
		if c == '"' {
			s := r.b[start:i]
			if !utf8.Valid(s) {
				return "", false
			}
			r.i = i + 1
			return string(s), true
		}
		if c == '\\' {
			return r.escaped(start)
		}
		if c < 0x20 {
			return "", false
		}
	}
	return "", false
}

// escaped finishes a string literal that holds escapes, from its start.
func (r *JSONReader) escaped(start int) (string, bool) {
	out := make([]byte, 0, 64)
	i := start
	for i < len(r.b) {
		c := r.b[i]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return "", false
			}
			r.i = i + 1
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			j := i + 1
			for j < len(r.b) && r.b[j] != '"' && r.b[j] != '\\' && r.b[j] >= 0x20 {
				j++
			}
			out = append(out, r.b[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(r.b) {
			return "", false
		}
		i += 2
		switch r.b[i-1] {
		case '"', '\\', '/':
			out = append(out, r.b[i-1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			u, ok := hex4(r.b, i)
			if !ok {
				return "", false
			}
			i += 4
			if utf16.IsSurrogate(rune(u)) {
				if i+6 > len(r.b) || r.b[i] != '\\' || r.b[i+1] != 'u' {
					return "", false
				}
				lo, ok := hex4(r.b, i+2)
				if !ok {
					return "", false
				}
				dec := utf16.DecodeRune(rune(u), rune(lo))
				if dec == utf8.RuneError {
					return "", false
				}
				i += 6
				out = utf8.AppendRune(out, dec)
				continue
			}
			out = utf8.AppendRune(out, rune(u))
		default:
			return "", false
		}
	}
	return "", false
}

func hex4(b []byte, i int) (uint16, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var v uint16
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint16(c)
	}
	return v, true
}

// int64 reads a canonical integer (no leading zeros, no minus zero, no
// fraction or exponent) that fits in 64 bits.
func (r *JSONReader) int64() (int64, bool) {
	r.ws()
	start := r.i
	i := start
	if i < len(r.b) && r.b[i] == '-' {
		i++
	}
	digits := i
	for i < len(r.b) && r.b[i] >= '0' && r.b[i] <= '9' {
		i++
	}
	if i == digits || (r.b[digits] == '0' && (i-digits > 1 || digits > start)) {
		return 0, false
	}
	if i < len(r.b) && (r.b[i] == '.' || r.b[i] == 'e' || r.b[i] == 'E') {
		return 0, false
	}
	n, err := strconv.ParseInt(string(r.b[start:i]), 10, 64)
	if err != nil {
		return 0, false
	}
	r.i = i
	return n, true
}

// Int reads an integer into an int64 field.
func (r *JSONReader) Int(dst *int64) bool {
	n, ok := r.int64()
	*dst = n
	return ok
}

// IntPtr reads a *int64 field: null leaves it nil, as encoding/json does
// for a fresh value, and a number allocates it.
func (r *JSONReader) IntPtr(dst **int64) bool {
	if r.null() {
		*dst = nil
		return true
	}
	n, ok := r.int64()
	if !ok {
		return false
	}
	*dst = &n
	return true
}

// String reads a string field.
func (r *JSONReader) String(dst *string) bool {
	s, ok := r.str()
	*dst = s
	return ok
}

// StringPtr reads a *string field: null leaves it nil, a string allocates it.
func (r *JSONReader) StringPtr(dst **string) bool {
	if r.null() {
		*dst = nil
		return true
	}
	s, ok := r.str()
	if !ok {
		return false
	}
	*dst = &s
	return true
}

// Strings reads a []string field: null gives nil and [] an empty, non-nil
// slice, as encoding/json does.
func (r *JSONReader) Strings(dst *[]string) bool {
	if r.null() {
		*dst = nil
		return true
	}
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != '[' {
		return false
	}
	r.i++
	out := []string{}
	r.ws()
	if r.i < len(r.b) && r.b[r.i] == ']' {
		r.i++
		*dst = out
		return true
	}
	for {
		s, ok := r.str()
		if !ok {
			return false
		}
		out = append(out, s)
		r.ws()
		if r.i >= len(r.b) {
			return false
		}
		switch r.b[r.i] {
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
func (r *JSONReader) Bool(dst *bool) bool {
	r.ws()
	switch {
	case bytes.HasPrefix(r.b[r.i:], []byte("true")):
		*dst, r.i = true, r.i+4
	case bytes.HasPrefix(r.b[r.i:], []byte("false")):
		*dst, r.i = false, r.i+5
	default:
		return false
	}
	return true
}

// Time reads a time.Time field through time.Time's own UnmarshalJSON, as
// encoding/json does; a literal with escapes is refused.
func (r *JSONReader) Time(dst *time.Time) bool {
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return false
	}
	end := bytes.IndexByte(r.b[r.i+1:], '"')
	if end < 0 {
		return false
	}
	lit := r.b[r.i : r.i+end+2]
	if bytes.IndexByte(lit, '\\') >= 0 {
		return false
	}
	if err := dst.UnmarshalJSON(lit); err != nil {
		return false
	}
	r.i += end + 2
	return true
}

// IntTo reads an integer into an int field, refusing one int cannot hold.
func (r *JSONReader) IntTo(dst *int) bool {
	n, ok := r.int64()
	*dst = int(n)
	return ok && int64(*dst) == n
}

// Uint reads a canonical non-negative integer into a uint64 field.
func (r *JSONReader) Uint(dst *uint64) bool {
	r.ws()
	i := r.i
	for i < len(r.b) && r.b[i] >= '0' && r.b[i] <= '9' {
		i++
	}
	if i == r.i || (r.b[r.i] == '0' && i-r.i > 1) {
		return false
	}
	if i < len(r.b) && (r.b[i] == '.' || r.b[i] == 'e' || r.b[i] == 'E') {
		return false
	}
	n, err := strconv.ParseUint(string(r.b[r.i:i]), 10, 64)
	if err != nil {
		return false
	}
	*dst, r.i = n, i
	return true
}

// TimePtr reads a *time.Time field: null leaves it nil, a time allocates it.
func (r *JSONReader) TimePtr(dst **time.Time) bool {
	if r.null() {
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
