package jsoncodec

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// The scanner validates JSON text exactly as encoding/json's scanner does;
// the Reader and Pick are built on it, so JSON's grammar, string escapes
// and UTF-8 rules are written here once. It works on a string: documents
// that arrive as bytes are read through view, without a copy.

// view is data as a string without a copy. The readers only look at it
// while they run, and every string they hand out of a view is cloned, so
// nothing keeps the caller's bytes or sees them change.
func view(data []byte) string {
	return unsafe.String(unsafe.SliceData(data), len(data))
}

// maxDepth is the nesting skipValue follows; deeper documents (encoding/json
// allows 10,000 levels) are declined rather than validated here.
const maxDepth = 128

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// plainByte marks the bytes a string holds as they are: printable ASCII
// other than the quote and the backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// scanString validates the string at i and returns its end (-1: invalid),
// whether it holds an escape and whether it holds a byte outside ASCII.
func scanString(s string, i int) (end int, escaped, nonASCII bool) {
	if i >= len(s) || s[i] != '"' {
		return -1, false, false
	}
	for j := i + 1; j < len(s); j++ {
		for j < len(s) && plainByte[s[j]] {
			j++ // the common case, without the switch below
		}
		if j >= len(s) {
			break
		}
		switch c := s[j]; {
		case c == '"':
			return j + 1, escaped, nonASCII
		case c == '\\':
			escaped = true
			j++
			if j >= len(s) {
				return -1, false, false
			}
			switch s[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(s) {
					return -1, false, false
				}
				for k := j + 1; k < j+5; k++ {
					if !isHex(s[k]) {
						return -1, false, false
					}
				}
				j += 4
			default:
				return -1, false, false
			}
		case c < 0x20:
			return -1, false, false
		default:
			nonASCII = true
		}
	}
	return -1, false, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// scanNumber validates the number at i (JSON's grammar) and returns its
// end, -1 if invalid.
func scanNumber(s string, i int) int {
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = digits(s, i)
	default:
		return -1
	}
	if i < len(s) && s[i] == '.' {
		j := digits(s, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := digits(s, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// scanLiteral validates the literal word at i and returns its end.
func scanLiteral(s string, i int, word string) int {
	if len(s)-i < len(word) || s[i:i+len(word)] != word {
		return -1
	}
	return i + len(word)
}

// skipValue validates the value at i (objects and arrays to maxDepth) and
// returns its end, -1 if invalid or too deep.
func skipValue(s string, i int) int {
	var closers [maxDepth]byte
	depth := 0
	for {
		// A value starts at i.
		if i >= len(s) {
			return -1
		}
		switch s[i] {
		case '{', '[':
			closer := byte('}')
			if s[i] == '[' {
				closer = ']'
			}
			i = skipSpace(s, i+1)
			if i < len(s) && s[i] == closer {
				i++
				break
			}
			if depth == maxDepth {
				return -1
			}
			closers[depth] = closer
			depth++
			if closer == '}' {
				if i = member(s, i); i < 0 {
					return -1
				}
			}
			continue
		case '"':
			i, _, _ = scanString(s, i)
		case 't':
			i = scanLiteral(s, i, "true")
		case 'f':
			i = scanLiteral(s, i, "false")
		case 'n':
			i = scanLiteral(s, i, "null")
		default:
			i = scanNumber(s, i)
		}
		if i < 0 {
			return -1
		}
		// A value ended at i: close what it ends, or go on to the next.
		for {
			if depth == 0 {
				return i
			}
			i = skipSpace(s, i)
			if i >= len(s) {
				return -1
			}
			if s[i] == closers[depth-1] {
				depth--
				i++
				continue
			}
			if s[i] != ',' {
				return -1
			}
			i = skipSpace(s, i+1)
			if closers[depth-1] == '}' {
				if i = member(s, i); i < 0 {
					return -1
				}
			}
			break
		}
	}
}

// member validates an object member's key and colon at i and returns where
// its value starts.
func member(s string, i int) int {
	i, _, _ = scanString(s, i)
	if i < 0 {
		return -1
	}
	i = skipSpace(s, i)
	if i >= len(s) || s[i] != ':' {
		return -1
	}
	return skipSpace(s, i+1)
}

// Unquote appends the validated JSON string raw (quotes included; a
// Picked String's Raw) to buf as encoding/json decodes it: escapes
// resolved, invalid UTF-8 and lone surrogates replaced by U+FFFD.
func Unquote(buf, raw []byte) []byte { return unquote(buf, view(raw)) }

func unquote(buf []byte, raw string) []byte {
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
			rr, size := utf8.DecodeRuneInString(s[r:])
			buf = utf8.AppendRune(buf, rr)
			r += size
		}
	}
	return buf
}

// hex4 is the value of four validated hex digits.
func hex4(h string) rune {
	var r rune
	for i := 0; i < len(h); i++ {
		c := h[i]
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
