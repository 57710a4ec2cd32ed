// Package jsonid reads a few top-level members of a JSON object (ids and
// short strings) without encoding/json's reflection, giving exactly what
// json.Unmarshal would leave in a struct with one *int64 or string field per
// name, or declining.
//
// The reader validates the whole document as encoding/json's scanner does
// (json.Unmarshal sets nothing in a document that does not parse) and
// matches keys as encoding/json does for keys of ASCII bytes without escapes
// (exact, else ASCII case-insensitive; the last duplicate wins). Anything it
// cannot decide exactly (a top-level key with an escape or a non-ASCII byte,
// which encoding/json may fold onto a name through Unicode case folding; a
// document that is not an object or does not parse; nesting deeper than
// maxDepth) makes Read return false, and the caller decodes with
// encoding/json instead. Callers use it where the answer picks a person's
// encryption key, so declining is always allowed and a wrong answer never
// is: the fuzz tests of this package and of privacy compare it with
// encoding/json.
//
// It is deliberately not built on events.JSONReader, the reader the
// direct payload decoders share: that reader declines any document with an
// unknown key, a differently cased key or a duplicate, and never walks a
// value it does not decode, which is right for a decoder that knows its
// payload's every key. Read picks a few members out of the payload of any
// event type (privacy.Subject) and out of webhook bodies, skipping
// members it does not know, and must still answer for them (declining
// would send every event back to encoding/json), so it keeps what
// JSONReader does not have: it validates the whole document including the
// members it skips, matches keys case-insensitively with the last
// duplicate winning as encoding/json does, and declines only on escaped or
// non-ASCII keys. Giving JSONReader those modes would slow the payload
// decoders for rules they never need.
package jsonid

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is the nesting Read follows; deeper documents (encoding/json
// allows 10,000 levels) are declined rather than validated here.
const maxDepth = 128

// Kind says which Go field type a name is read as, because encoding/json
// keeps or replaces a field's value depending on it.
type Kind uint8

const (
	// Int64 is a *int64 field: an integer that fits sets it, null resets it
	// to nil (reported as 0), any other value leaves it and is a Mismatch.
	Int64 Kind = iota
	// String is a string field: a string sets it, null leaves it, any
	// other value leaves it and is a Mismatch.
	String
)

// Field names one top-level member to read and the Go type it decodes into.
type Field struct {
	Name string // as in the struct tag; ASCII, no escapes needed
	Kind Kind
}

// Value is what encoding/json leaves in one field after decoding the
// document, so a caller can decide exactly as its json.Unmarshal did.
type Value struct {
	// N is an Int64 field's value, 0 when the pointer is nil.
	N int64
	// start and end delimit a String field's value in the document (its
	// quoted JSON text); equal when no string was set. Offsets, not a
	// slice, so the document does not escape to the heap.
	start, end int
	// Mismatch reports a member of the wrong type for the field, which
	// json.Unmarshal reports as an error (after decoding the rest).
	Mismatch bool
}

// Raw is a String field's value as its quoted JSON text in data (the
// document read), nil when no string was set; Unquote gives the Go string.
func (v Value) Raw(data []byte) []byte {
	if v.end == v.start {
		return nil
	}
	return data[v.start:v.end]
}

// Read decodes the top-level members named by fields into out (one Value
// per field, zeroed first) and reports whether it decided exactly; false
// means the caller must use encoding/json.
func Read(data []byte, fields []Field, out []Value) bool {
	for k := range out {
		out[k] = Value{}
	}
	i := skipWS(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		return skipWS(data, i+1) == len(data)
	}
	for {
		kend, plain := scanString(data, i)
		if kend < 0 || !plain {
			return false
		}
		key := data[i+1 : kend-1]
		i = skipWS(data, kend)
		if i >= len(data) || data[i] != ':' {
			return false
		}
		i = skipWS(data, i+1)
		vend := scanValue(data, i)
		if vend < 0 {
			return false
		}
		for k, f := range fields {
			if foldEqual(key, f.Name) {
				set(&out[k], f.Kind, data, i, vend)
				break
			}
		}
		i = skipWS(data, vend)
		if i >= len(data) {
			return false
		}
		if data[i] == '}' {
			return skipWS(data, i+1) == len(data)
		}
		if data[i] != ',' {
			return false
		}
		i = skipWS(data, i+1)
	}
}

// set stores one member's value as encoding/json's literalStore does for
// the field's type.
func set(v *Value, kind Kind, data []byte, start, end int) {
	raw := data[start:end]
	switch c := raw[0]; {
	case c == 'n': // null
		if kind == Int64 {
			v.N = 0 // the pointer is set to nil
		}
	case kind == Int64 && (c == '-' || c >= '0' && c <= '9'):
		if n, ok := parseInt(raw); ok {
			v.N = n
		} else {
			v.Mismatch = true // a fraction, exponent or overflow: unchanged
		}
	case kind == String && c == '"':
		v.start, v.end = start, end
	default:
		v.Mismatch = true
	}
}

// parseInt is strconv.ParseInt(raw, 10, 64) for a validated JSON number,
// false for one with a fraction or exponent or out of range.
func parseInt(raw []byte) (int64, bool) {
	neg := raw[0] == '-'
	if neg {
		raw = raw[1:]
	}
	var u uint64
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > (1<<64-1)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
		if u > 1<<63 {
			return 0, false
		}
	}
	if !neg && u == 1<<63 {
		return 0, false
	}
	if neg {
		return -int64(u), true
	}
	return int64(u), true
}

// foldEqual is encoding/json's key match for a key of ASCII bytes: equal
// once 'a'–'z' are upper-cased on both sides.
func foldEqual(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i := 0; i < len(key); i++ {
		a, b := key[i], name[i]
		if 'a' <= a && a <= 'z' {
			a -= 'a' - 'A'
		}
		if 'a' <= b && b <= 'z' {
			b -= 'a' - 'A'
		}
		if a != b {
			return false
		}
	}
	return true
}

func skipWS(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// scanString validates the string at i and returns its end (-1: invalid)
// and whether it is plain: no escape and no byte outside ASCII.
func scanString(data []byte, i int) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return -1, false
	}
	plain := true
	for j := i + 1; j < len(data); j++ {
		for j < len(data) && plainByte[data[j]] {
			j++ // the common case, without the switch below
		}
		if j >= len(data) {
			break
		}
		switch c := data[j]; {
		case c == '"':
			return j + 1, plain
		case c == '\\':
			plain = false
			j++
			if j >= len(data) {
				return -1, false
			}
			switch data[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(data) {
					return -1, false
				}
				for _, h := range data[j+1 : j+5] {
					if !isHex(h) {
						return -1, false
					}
				}
				j += 4
			default:
				return -1, false
			}
		case c < 0x20:
			return -1, false
		case c >= utf8.RuneSelf:
			plain = false
		}
	}
	return -1, false
}

// plainByte marks the bytes a string holds as they are: printable ASCII
// other than the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// scanNumber validates the number at i (JSON's grammar) and returns its
// end, -1 if invalid.
func scanNumber(data []byte, i int) int {
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		i = digits(data, i)
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		j := digits(data, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(data, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(data []byte, i int) int {
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		i++
	}
	return i
}

// scanLiteral validates the literal word at i and returns its end.
func scanLiteral(data []byte, i int, word string) int {
	if len(data)-i < len(word) || string(data[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}

// scanValue validates the value at i (objects and arrays to maxDepth) and
// returns its end, -1 if invalid or too deep.
func scanValue(data []byte, i int) int {
	var closers [maxDepth]byte
	depth := 0
	for {
		// A value starts at i.
		if i >= len(data) {
			return -1
		}
		switch data[i] {
		case '{', '[':
			closer := byte('}')
			if data[i] == '[' {
				closer = ']'
			}
			i = skipWS(data, i+1)
			if i < len(data) && data[i] == closer {
				i++
				break
			}
			if depth == maxDepth {
				return -1
			}
			closers[depth] = closer
			depth++
			if closer == '}' {
				if i = member(data, i); i < 0 {
					return -1
				}
			}
			continue
		case '"':
			i, _ = scanString(data, i)
		case 't':
			i = scanLiteral(data, i, "true")
		case 'f':
			i = scanLiteral(data, i, "false")
		case 'n':
			i = scanLiteral(data, i, "null")
		default:
			i = scanNumber(data, i)
		}
		if i < 0 {
			return -1
		}
		// A value ended at i: close what it ends, or go on to the next.
		for {
			if depth == 0 {
				return i
			}
			i = skipWS(data, i)
			if i >= len(data) {
				return -1
			}
			if data[i] == closers[depth-1] {
				depth--
				i++
				continue
			}
			if data[i] != ',' {
				return -1
			}
			i = skipWS(data, i+1)
			if closers[depth-1] == '}' {
				if i = member(data, i); i < 0 {
					return -1
				}
			}
			break
		}
	}
}

// member validates an object member's key and colon at i and returns where
// its value starts.
func member(data []byte, i int) int {
	i, _ = scanString(data, i)
	if i < 0 {
		return -1
	}
	i = skipWS(data, i)
	if i >= len(data) || data[i] != ':' {
		return -1
	}
	return skipWS(data, i+1)
}

// Unquote appends the string raw (a String Value's Raw) to buf as
// encoding/json decodes it: escapes resolved, invalid UTF-8 and lone
// surrogates replaced by U+FFFD.
func Unquote(buf, raw []byte) []byte {
	s := raw[1 : len(raw)-1]
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			r++
			switch s[r] {
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				rr := hex4(s[r+1 : r+5])
				r += 4
				if utf16.IsSurrogate(rr) {
					if r+6 < len(s) && s[r+1] == '\\' && s[r+2] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(s[r+3:r+7])); dec != unicode.ReplacementChar {
							buf = utf8.AppendRune(buf, dec)
							r += 7
							continue
						}
					}
					rr = unicode.ReplacementChar
				}
				buf = utf8.AppendRune(buf, rr)
			default: // '"', '\\', '/'
				buf = append(buf, s[r])
			}
			r++
		case c < utf8.RuneSelf:
			run := r + 1
			for run < len(s) && s[run] < utf8.RuneSelf && s[run] != '\\' {
				run++
			}
			buf = append(buf, s[r:run]...)
			r = run
		default:
			rr, size := utf8.DecodeRune(s[r:])
			buf = utf8.AppendRune(buf, rr)
			r += size
		}
	}
	return buf
}

// hex4 is the value of four validated hex digits.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
