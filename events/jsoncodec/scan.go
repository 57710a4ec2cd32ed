package jsoncodec

import (
	"encoding/binary"
	"math/bits"
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

// SkipSpace passes JSON's white space at i in s (a document as a string
// or as bytes). It runs before every key, colon, value and comma, where
// there is rarely any: a byte above the space ends it in one comparison.
func SkipSpace[T string | []byte](s T, i int) int {
	for i < len(s) && s[i] <= ' ' && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// A string's bytes are read eight at a time: a word's special bytes are
// found with the borrow tricks of "has a zero byte" and "has a byte less
// than n", each byte's verdict in its high bit. A borrow out of a flagged
// byte can flag the bytes above it, never one below, so the lowest flag of
// a word is exact, and the lowest is all a scan looks at.
const (
	lowBits  = 0x0101010101010101
	highBits = 0x8080808080808080
)

// load64 is the little-endian word of s at j (the compiler makes it one
// load).
func load64(s string, j int) uint64 {
	w := s[j : j+8]
	return uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
}

// hasByte flags the bytes of w equal to the byte c repeats in every byte
// (in their high bits, the other bits left for the caller to clear).
func hasByte(w, c uint64) uint64 {
	x := w ^ c
	return (x - lowBits) &^ x
}

// stringStop flags the bytes of w a string cannot hold as they are: a
// quote, a backslash, a control byte. The quote, xor 2, is 0x20 and the
// control bytes stay below it, so one "less than 0x21" finds both.
func stringStop(w uint64) uint64 {
	x := w ^ lowBits*2
	return ((x-lowBits*0x21)&^x | hasByte(w, lowBits*'\\')) & highBits
}

// QuoteOrBackslash flags, in their high bits, the bytes of the word w
// that are a quote or a backslash, the lowest flag exactly (see hasByte):
// where a run of a JSON string's bytes ends, for a scanner that leaves
// their validation to others.
func QuoteOrBackslash(w uint64) uint64 {
	return (hasByte(w, lowBits*'"') | hasByte(w, lowBits*'\\')) & highBits
}

// scanString validates the string at i and returns its end (-1: invalid),
// whether it holds an escape and whether it holds a byte outside ASCII.
func scanString(s string, i int) (end int, escaped, nonASCII bool) {
	return scanStringTo(s, i, false)
}

// scanPlain is scanString up to the string's first escape: a string
// without one as scanString returns it, else the backslash's index and
// escaped, for a caller that decodes it (unquoteAt validates the rest).
func scanPlain(s string, i int) (end int, escaped, nonASCII bool) {
	return scanStringTo(s, i, true)
}

// scanStringTo passes a string's plain bytes a word at a time, the bytes
// outside ASCII among them told by the high bits of the words passed.
func scanStringTo(s string, i int, stopAtEscape bool) (end int, escaped, nonASCII bool) {
	if i >= len(s) || s[i] != '"' {
		return -1, false, false
	}
	var seen uint64 // the plain bytes passed, OR-ed
	for j := i + 1; ; j++ {
		if j+8 <= len(s) {
			w := load64(s, j)
			m := stringStop(w)
			if m == 0 {
				seen |= w
				j += 7
				continue
			}
			k := bits.TrailingZeros64(m) // the high bit of the first stop byte
			seen |= w & (1<<k - 1)
			j += k >> 3
		} else {
			for j < len(s) && s[j] >= 0x20 && s[j] != '"' && s[j] != '\\' {
				seen |= uint64(s[j])
				j++
			}
			if j >= len(s) {
				return -1, false, false
			}
		}
		switch s[j] {
		case '"':
			return j + 1, escaped, seen&highBits != 0
		case '\\':
			if stopAtEscape {
				return j, true, seen&highBits != 0
			}
			escaped = true
			j++
			if j >= len(s) {
				return -1, false, false
			}
			switch s[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if hex4(s, j+1) < 0 {
					return -1, false, false
				}
				j += 4
			default:
				return -1, false, false
			}
		default: // a control byte
			return -1, false, false
		}
	}
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
			i = SkipSpace(s, i+1)
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
			i = SkipSpace(s, i)
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
			i = SkipSpace(s, i+1)
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
	i = SkipSpace(s, i)
	if i >= len(s) || s[i] != ':' {
		return -1
	}
	return SkipSpace(s, i+1)
}

// Unquote appends the validated JSON string raw (quotes included; a
// Picked String's Raw) to buf as encoding/json decodes it: escapes
// resolved, invalid UTF-8 and lone surrogates replaced by U+FFFD. buf's
// spare capacity is written a word at a time, up to 8 bytes past what is
// appended, so buf must not share memory with raw.
func Unquote(buf, raw []byte) []byte {
	buf, _ = unquoteAt(buf, view(raw), 0, false)
	return buf
}

// unquoteAt appends the string whose opening quote is at i to buf as
// encoding/json decodes it, validating it as scanString does, and returns
// its end: -1 if the string is invalid, 0 if fixed and its value would
// outgrow buf's capacity (a fixed buf never grows).
func unquoteAt(buf []byte, s string, i int, fixed bool) ([]byte, int) {
	buf, end, _ := unquoteFrom(buf, s, i+1, fixed)
	return buf, end
}

// unquoteFrom is unquoteAt from r, a byte of the string past its opening
// quote that is not inside an escape; where fixed buf has no room left
// it returns end 0 and the byte to go on from (stop), so that a caller
// continues into a larger buffer without decoding the string again. Runs
// of bytes that decode as they are move a word at a time: the word is
// stored whole and the run's bytes of it kept.
func unquoteFrom(buf []byte, s string, r int, fixed bool) (out []byte, end, stop int) {
	for {
		// One step stores a word and may keep only 7 of its bytes, then
		// append a rune: it needs 8+4 bytes of room.
		room := cap(buf)-len(buf) >= 8+utf8.UTFMax
		if !room && fixed {
			return buf, 0, r
		}
		if r+8 <= len(s) && room {
			w := load64(s, r)
			n := 8
			if m := stringStop(w) | w&highBits; m != 0 {
				n = bits.TrailingZeros64(m) >> 3
			}
			l := len(buf)
			binary.LittleEndian.PutUint64(buf[l:l+8], w)
			buf = buf[:l+n]
			if r += n; n == 8 {
				continue
			}
		}
		if r >= len(s) {
			return buf, -1, r
		}
		switch c := s[r]; {
		case c == '"':
			return buf, r + 1, r + 1
		case c == '\\':
			if r+1 >= len(s) {
				return buf, -1, r
			}
			r++
			switch s[r] {
			case '"', '\\', '/':
				buf = append(buf, s[r])
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
				rr := hex4(s, r+1)
				if rr < 0 {
					return buf, -1, r
				}
				r += 4
				if utf16.IsSurrogate(rr) {
					// A pair decodes to one rune; a lone half, or one
					// whose next escape is no other half, to U+FFFD (the
					// next escape decoded in its turn).
					if r+2 < len(s) && s[r+1] == '\\' && s[r+2] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(s, r+3)); dec != unicode.ReplacementChar {
							buf = utf8.AppendRune(buf, dec)
							r += 7
							continue
						}
					}
					rr = unicode.ReplacementChar
				}
				buf = utf8.AppendRune(buf, rr)
			default:
				return buf, -1, r
			}
			r++
		case c < 0x20:
			return buf, -1, r
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			r++
		default:
			rr, size := utf8.DecodeRuneInString(s[r:])
			if size == 1 { // invalid UTF-8 (a valid rune here is over a byte)
				buf = utf8.AppendRune(buf, rr)
			} else {
				buf = append(buf, s[r:r+size]...)
			}
			r += size
		}
	}
}

// hex4 is the value of the four hex digits at s[i:], -1 if they are not.
func hex4(s string, i int) rune {
	if i+4 > len(s) {
		return -1
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}
