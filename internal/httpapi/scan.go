package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/healthtech/partner-open-platform/domain"
)

// MaxDepth is the deepest nesting of objects and arrays a body may have
// (the body's own object is level 1); raw device data is the deepest we take.
const MaxDepth = 64

// MaxArrayItems bounds every array a route reads; routes may set lower caps
// of their own (100 order items, 100 cards, 100 groups, 100 members).
const MaxArrayItems = 1000

// errSyntax is the scanner's verdict on bytes that are not JSON; ParseObject
// answers it as ErrMalformed.
var errSyntax = errors.New("httpapi: JSON syntax error")

// member is one value of a scanned container: its key (unescaped; nil in an
// array) and its JSON exactly as sent, without surrounding whitespace.
type member struct {
	key []byte
	raw []byte
}

// scanFrame is one open container: enough to name a value's path when an
// error is reported (paths are built only then) and to find duplicate keys.
type scanFrame struct {
	object   bool
	key      []byte              // object: the key whose value is read now
	index    int                 // array: the index of the element read now
	keyStart int                 // object: where its keys start in scanner.keys
	set      map[string]struct{} // object: its keys, once it has many
}

// smallObject is how many keys an object may have before duplicate checks
// switch from comparing with each earlier key to a map.
const smallObject = 16

// scanner checks a body in one pass: JSON syntax exactly as encoding/json
// reads it, duplicate keys and nesting depth (the checks two parsers could
// disagree on), and collects the members of the first top-level container
// so that the handler reads its fields without decoding the body again.
type scanner struct {
	data    []byte
	pos     int
	frames  []scanFrame
	keys    [][]byte
	members []member
	values  int // top-level values seen so far
	// maxItems, when positive, ends the scan at the first array with more
	// elements (longArray), recording that array's path in overPath.
	maxItems int
	overPath string
	over     bool
}

// scanners keeps the frame and key stacks of finished scans for the next.
var scanners = sync.Pool{New: func() any { return new(scanner) }}

// getScanner returns a scanner over data that appends the members it
// collects to room (a fresh slice when room is nil); putScanner gives it
// back once its members were taken.
func getScanner(data []byte, room []member) *scanner {
	s := scanners.Get().(*scanner)
	s.data, s.pos, s.values = data, 0, 0
	s.maxItems, s.overPath, s.over = 0, "", false
	if room == nil {
		room = make([]member, 0, 8)
	}
	s.members = room
	return s
}

func putScanner(s *scanner) {
	clear(s.frames[:cap(s.frames)]) // nothing of the body stays reachable
	clear(s.keys[:cap(s.keys)])
	s.data, s.members, s.frames, s.keys = nil, nil, s.frames[:0], s.keys[:0]
	scanners.Put(s)
}

// scan runs the scanner over the whole body. Like the token scan it
// replaces, it reads every top-level value (a body of several values is
// refused later as malformed, but a duplicate key in the second value is
// still reported), and a syntax error ends the scan as errSyntax.
func (s *scanner) scan() error {
	for {
		s.skipSpace()
		if s.pos >= len(s.data) {
			return nil
		}
		if err := s.value(); err != nil {
			return err
		}
		s.values++
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *scanner) skipSpace() {
	for s.pos < len(s.data) && isSpace(s.data[s.pos]) {
		s.pos++
	}
}

// path names the value the innermost open container reads now, as the
// validation error's field ("" at the top level).
func (s *scanner) path() string { return s.pathOf(len(s.frames)) }

// pathOf names the value the n-th open container reads now (n = 0: "").
func (s *scanner) pathOf(n int) string {
	var b []byte
	for i := range s.frames[:n] {
		f := &s.frames[i]
		if f.object {
			if len(b) > 0 {
				b = append(b, '.')
			}
			b = append(b, f.key...)
		} else {
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(f.index), 10)
			b = append(b, ']')
		}
	}
	return string(b)
}

func invalid(path, msg string) error {
	if path == "" {
		path = "body"
	}
	v := &domain.ValidationError{}
	v.Add(path, msg)
	return v
}

// value scans one JSON value starting at s.pos (whitespace already skipped).
func (s *scanner) value() error {
	if s.pos >= len(s.data) {
		return errSyntax
	}
	switch c := s.data[s.pos]; {
	case c == '{' || c == '[':
		if len(s.frames) >= MaxDepth {
			return invalid(s.path(), fmt.Sprintf("nests deeper than %d levels", MaxDepth))
		}
		collect := len(s.frames) == 0 && s.values == 0
		s.frames = append(s.frames, scanFrame{object: c == '{', keyStart: len(s.keys)})
		s.pos++
		var err error
		if c == '{' {
			err = s.object(collect)
		} else {
			err = s.array(collect)
		}
		if err != nil {
			return err
		}
		f := &s.frames[len(s.frames)-1]
		s.keys = s.keys[:f.keyStart]
		s.frames = s.frames[:len(s.frames)-1]
		return nil
	case c == '"':
		_, err := s.str()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	default:
		return errSyntax
	}
}

func (s *scanner) literal(lit string) error {
	if len(s.data)-s.pos < len(lit) || string(s.data[s.pos:s.pos+len(lit)]) != lit {
		return errSyntax
	}
	s.pos += len(lit)
	return nil
}

func (s *scanner) digits() int {
	n := 0
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
		n++
	}
	return n
}

// number scans the longest JSON number at s.pos; what follows it is the
// caller's to judge (at the top level another value may follow at once, as
// encoding/json's decoder reads it).
func (s *scanner) number() error {
	if s.data[s.pos] == '-' {
		s.pos++
	}
	if s.pos >= len(s.data) {
		return errSyntax
	}
	if s.data[s.pos] == '0' {
		s.pos++
	} else if s.digits() == 0 {
		return errSyntax
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if s.digits() == 0 {
			return errSyntax
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return errSyntax
		}
	}
	return nil
}

// str scans a string literal and reports whether it holds an escape. The
// body's UTF-8 was checked before; here only control bytes and escapes.
func (s *scanner) str() (escaped bool, err error) {
	s.pos++ // the opening quote
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return escaped, nil
		case c < 0x20:
			return false, errSyntax
		case c == '\\':
			escaped = true
			if s.pos+1 >= len(s.data) {
				return false, errSyntax
			}
			switch s.data[s.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos += 2
			case 'u':
				if s.pos+6 > len(s.data) {
					return false, errSyntax
				}
				for _, h := range s.data[s.pos+2 : s.pos+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false, errSyntax
					}
				}
				s.pos += 6
			default:
				return false, errSyntax
			}
		default:
			s.pos++
		}
	}
	return false, errSyntax
}

// object scans the members of an object whose '{' was read.
func (s *scanner) object(collect bool) error {
	fi := len(s.frames) - 1
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return nil
	}
	for {
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return errSyntax
		}
		start := s.pos
		escaped, err := s.str()
		if err != nil {
			return err
		}
		key := s.data[start+1 : s.pos-1]
		if escaped {
			var k string
			if json.Unmarshal(s.data[start:s.pos], &k) != nil {
				return errSyntax
			}
			key = []byte(k)
		}
		f := &s.frames[fi]
		f.key = key
		if s.seen(f, key) {
			return invalid(s.path(), "appears more than once in its object")
		}
		s.skipSpace()
		if s.pos >= len(s.data) || s.data[s.pos] != ':' {
			return errSyntax
		}
		s.pos++
		s.skipSpace()
		vstart := s.pos
		if err := s.value(); err != nil {
			return err
		}
		if collect {
			s.members = append(s.members, member{key: key, raw: s.data[vstart:s.pos]})
		}
		s.skipSpace()
		if s.pos >= len(s.data) {
			return errSyntax
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
			s.skipSpace()
		case '}':
			s.pos++
			return nil
		default:
			return errSyntax
		}
	}
}

// seen records key in the object f and reports whether it was there already.
func (s *scanner) seen(f *scanFrame, key []byte) bool {
	if f.set != nil {
		if _, dup := f.set[string(key)]; dup {
			return true
		}
		f.set[string(key)] = struct{}{}
		return false
	}
	mine := s.keys[f.keyStart:]
	for _, k := range mine {
		if bytes.Equal(k, key) {
			return true
		}
	}
	s.keys = append(s.keys, key)
	if len(mine)+1 > smallObject {
		f.set = make(map[string]struct{}, 2*smallObject)
		for _, k := range s.keys[f.keyStart:] {
			f.set[string(k)] = struct{}{}
		}
	}
	return false
}

// array scans the elements of an array whose '[' was read.
func (s *scanner) array(collect bool) error {
	fi := len(s.frames) - 1
	s.skipSpace()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		return nil
	}
	for {
		vstart := s.pos
		if err := s.value(); err != nil {
			return err
		}
		if collect {
			s.members = append(s.members, member{raw: s.data[vstart:s.pos]})
		}
		s.skipSpace()
		if s.pos >= len(s.data) {
			return errSyntax
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
			s.skipSpace()
			s.frames[fi].index++
			if s.maxItems > 0 && s.frames[fi].index >= s.maxItems {
				s.over, s.overPath = true, s.pathOf(fi)
				return errOver
			}
		case ']':
			s.pos++
			return nil
		default:
			return errSyntax
		}
	}
}

// checkBody refuses what two JSON parsers could read differently or what a
// store could not keep: invalid UTF-8, duplicate object keys (at any depth,
// raw_data included) and nesting beyond MaxDepth; bytes that are not one
// JSON object are ErrMalformed. It returns the object's members, appended
// to room.
func checkBody(body []byte, room []member) ([]member, error) {
	if !utf8.Valid(body) {
		return nil, invalid("body", "must be valid UTF-8")
	}
	s := getScanner(body, room)
	defer putScanner(s)
	if err := s.scan(); err != nil {
		if errors.Is(err, errSyntax) {
			return nil, ErrMalformed
		}
		return nil, err
	}
	if s.values != 1 || bytes.TrimLeft(body, " \t\r\n")[0] != '{' {
		return nil, ErrMalformed
	}
	return s.members, nil
}

// errOver ends a longArray scan at the first array over its cap.
var errOver = errors.New("httpapi: array over its cap")

// longArray reports whether raw, a JSON value the body scan already
// checked, holds an array (itself or at any depth) of more than max
// elements, and that array's path relative to raw ("" for raw itself,
// else ".name" or "[i]" steps).
func longArray(raw []byte, max int) (string, bool) {
	s := getScanner(raw, nil)
	defer putScanner(s)
	s.maxItems = max
	_ = s.scan()
	if !s.over {
		return "", false
	}
	p := s.overPath
	if p != "" && p[0] != '[' {
		p = "." + p
	}
	return p, true
}

// splitValue returns the members of raw, a JSON value the body scan already
// checked, when it is a container that opens with open ('{' or '['),
// appended to room.
func splitValue(raw []byte, open byte, room []member) ([]member, bool) {
	if len(raw) == 0 || raw[0] != open {
		return nil, false
	}
	s := getScanner(raw, room)
	defer putScanner(s)
	if err := s.scan(); err != nil || s.values != 1 {
		return nil, false
	}
	return s.members, true
}

// checkText refuses partner strings that no partner needs and not every
// store can keep: U+0000, and escapes of lone UTF-16 surrogates (which a
// decoder silently turns into U+FFFD). raw is the JSON string literal.
func checkText(raw []byte, s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return "must not contain U+0000"
		}
	}
	if loneSurrogate(raw) {
		return "must not contain a lone UTF-16 surrogate escape"
	}
	return ""
}

// loneSurrogate reports whether a JSON string literal escapes a surrogate
// that is not part of a high-low pair.
func loneSurrogate(raw []byte) bool {
	if !bytes.Contains(raw, []byte(`\u`)) && !bytes.Contains(raw, []byte(`\U`)) {
		return false
	}
	pendingHigh := false
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 >= len(raw) {
			if pendingHigh {
				return true
			}
			continue
		}
		if raw[i+1] != 'u' || i+5 >= len(raw) {
			if pendingHigh {
				return true
			}
			i++ // skip the escaped character
			continue
		}
		var r rune
		for _, c := range raw[i+2 : i+6] {
			r <<= 4
			switch {
			case c >= '0' && c <= '9':
				r |= rune(c - '0')
			case c >= 'a' && c <= 'f':
				r |= rune(c-'a') + 10
			case c >= 'A' && c <= 'F':
				r |= rune(c-'A') + 10
			}
		}
		i += 5
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if pendingHigh {
				return true
			}
			pendingHigh = true
		case r >= 0xDC00 && r < 0xE000:
			if !pendingHigh {
				return true
			}
			pendingHigh = false
		default:
			if pendingHigh {
				return true
			}
		}
	}
	return pendingHigh
}
