package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/healthtech/partner-open-platform/domain"
)

// MaxDepth is the deepest nesting of objects and arrays a body may have
// (the body's own object is level 1); raw device data is the deepest we take.
const MaxDepth = 64

// MaxArrayItems bounds every array a route reads; routes may set lower caps
// of their own (100 order items, 100 cards, 100 groups, 100 members).
const MaxArrayItems = 1000

type frame struct {
	path      string
	object    bool
	keys      map[string]bool
	key       string // object: the key whose value is read next
	expectKey bool   // object: the next token is a key or '}'
	index     int    // array: the index of the next element
}

func (f *frame) valuePath() string {
	if f.object {
		if f.path == "" {
			return f.key
		}
		return f.path + "." + f.key
	}
	return fmt.Sprintf("%s[%d]", f.path, f.index)
}

// checkStrict refuses what two JSON parsers could read differently or what
// a store could not keep: invalid UTF-8, duplicate object keys (at any
// depth, raw_data included) and nesting beyond MaxDepth. Syntax errors are
// left to the decoder, which answers ErrMalformed.
func checkStrict(body []byte) error {
	invalid := func(path, msg string) error {
		if path == "" {
			path = "body"
		}
		v := &domain.ValidationError{}
		v.Add(path, msg)
		return v
	}
	if !utf8.Valid(body) {
		return invalid("body", "must be valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var stack []*frame
	afterValue := func() {
		if len(stack) == 0 {
			return
		}
		if top := stack[len(stack)-1]; top.object {
			top.expectKey = true
		} else {
			top.index++
		}
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return nil // a syntax error: the decoder reports it
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.expectKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				afterValue()
				continue
			}
			k, _ := tok.(string)
			top.key, top.expectKey = k, false
			if top.keys[k] {
				return invalid(top.valuePath(), "appears more than once in its object")
			}
			top.keys[k] = true
			continue
		}
		path := ""
		if top != nil {
			path = top.valuePath()
		}
		switch d, _ := tok.(json.Delim); d {
		case '{', '[':
			if len(stack) >= MaxDepth {
				return invalid(path, fmt.Sprintf("nests deeper than %d levels", MaxDepth))
			}
			stack = append(stack, &frame{path: path, object: d == '{', keys: map[string]bool{}, expectKey: d == '{'})
		case ']':
			stack = stack[:len(stack)-1]
			afterValue()
		default:
			afterValue()
		}
	}
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
