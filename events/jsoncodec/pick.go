package jsoncodec

// Pick reads a few top-level members of any JSON object (ids and short
// strings), giving exactly what json.Unmarshal would leave in a struct
// with one *int64 or string field per name, or declining. Unlike the
// Reader, which knows a payload's every key, Pick skips members it does
// not know and still answers: it validates the whole document as
// encoding/json does (json.Unmarshal sets nothing in a document that does
// not parse) and matches keys as encoding/json does for keys of ASCII
// bytes without escapes (exact, else ASCII case-insensitive; the last
// duplicate wins). It declines what it cannot decide exactly: a top-level
// key with an escape or a non-ASCII byte (which encoding/json may fold onto
// a name through Unicode case folding), a document that is not an object
// or does not parse, nesting deeper than maxDepth. Callers use it where the
// answer picks a person's encryption key, so declining is always allowed
// and a wrong answer never is (FuzzPick compares it with encoding/json).

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

// Picked is what encoding/json leaves in one field after decoding the
// document, so a caller can decide exactly as its json.Unmarshal did.
type Picked struct {
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
func (v Picked) Raw(data []byte) []byte {
	if v.end == v.start {
		return nil
	}
	return data[v.start:v.end]
}

// Pick decodes the top-level members named by fields into out (one Picked
// per field, zeroed first) and reports whether it decided exactly; false
// means the caller must use encoding/json.
func Pick(data []byte, fields []Field, out []Picked) bool {
	for k := range out {
		out[k] = Picked{}
	}
	s := view(data)
	i := SkipSpace(s, 0)
	if i >= len(s) || s[i] != '{' {
		return false
	}
	i = SkipSpace(s, i+1)
	if i < len(s) && s[i] == '}' {
		return SkipSpace(s, i+1) == len(s)
	}
	for {
		kend, escaped, nonASCII := scanString(s, i)
		if kend < 0 || escaped || nonASCII {
			return false
		}
		key := s[i+1 : kend-1]
		i = SkipSpace(s, kend)
		if i >= len(s) || s[i] != ':' {
			return false
		}
		i = SkipSpace(s, i+1)
		vend := skipValue(s, i)
		if vend < 0 {
			return false
		}
		for k, f := range fields {
			if foldEqual(key, f.Name) {
				set(&out[k], f.Kind, s, i, vend)
				break
			}
		}
		i = SkipSpace(s, vend)
		if i >= len(s) {
			return false
		}
		if s[i] == '}' {
			return SkipSpace(s, i+1) == len(s)
		}
		if s[i] != ',' {
			return false
		}
		i = SkipSpace(s, i+1)
	}
}

// set stores one member's value as encoding/json's literalStore does for
// the field's type.
func set(v *Picked, kind Kind, s string, start, end int) {
	raw := s[start:end]
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
func parseInt(raw string) (int64, bool) {
	neg := raw[0] == '-'
	if neg {
		raw = raw[1:]
	}
	var u uint64
	for i := 0; i < len(raw); i++ {
		c := raw[i]
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
func foldEqual(key, name string) bool {
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
