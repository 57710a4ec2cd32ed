package privacy

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/bits"
	"slices"
	"strings"

	"github.com/healthtech/partner-open-platform/events/jsoncodec"
)

// span is the byte range [start, end) of one JSON value inside a document.
type span struct{ start, end int }

var errSyntax = errors.New("privacy: malformed JSON")

// pathSpan is a value found for one of several paths.
type pathSpan struct {
	span
	path int // index into the paths searched
}

// pathNode is a set of dotted paths compiled into a tree, so one pass over a
// document matches each key against the names expected at its depth only.
type pathNode struct {
	leaf     int // index of the path that ends at this value, -1 for none
	children []pathChild
	// byLen indexes children, ordered by their name's length: those whose
	// name is n bytes long are children[byLen[n]:byLen[n+1]], so a key is
	// compared only with the names of its length.
	byLen []int
}

// pathChild is one step below an object: the member name and, for "name[]",
// that the step goes into every element of an array.
type pathChild struct {
	name string
	each bool
	node *pathNode
}

// compilePaths builds the tree of dot-separated paths (see
// catalog.PersonalFields); a path's index is its position in paths.
func compilePaths(paths []string) *pathNode {
	root := &pathNode{leaf: -1}
	for i, p := range paths {
		n := root
		for _, step := range strings.Split(p, ".") {
			name, each := strings.CutSuffix(step, "[]")
			var next *pathNode
			for _, c := range n.children {
				if c.name == name && c.each == each {
					next = c.node
				}
			}
			if next == nil {
				next = &pathNode{leaf: -1}
				n.children = append(n.children, pathChild{name, each, next})
			}
			n = next
		}
		n.leaf = i
	}
	root.indexByLength()
	return root
}

// indexByLength orders the children of n and below by their name's
// length (names of one length keep their order) and fills byLen.
func (n *pathNode) indexByLength() {
	slices.SortStableFunc(n.children, func(a, b pathChild) int { return len(a.name) - len(b.name) })
	longest := 0
	if len(n.children) > 0 {
		longest = len(n.children[len(n.children)-1].name)
	}
	n.byLen = make([]int, longest+2)
	for l := range n.byLen {
		n.byLen[l] = len(n.children)
		for k, c := range n.children {
			if len(c.name) >= l {
				n.byLen[l] = k
				break
			}
		}
	}
	for _, c := range n.children {
		c.node.indexByLength()
	}
}

// named is the children whose name the raw key (with quotes) may be: all
// of them when the key may hold an escape, else those of its length.
func (n *pathNode) named(key []byte, escaped bool) []pathChild {
	if escaped {
		return n.children
	}
	l := len(key) - 2
	if l+1 >= len(n.byLen) {
		return nil
	}
	return n.children[n.byLen[l]:n.byLen[l+1]]
}

// findAllInto finds the values of every path of the tree in one pass over the
// document, in document order; expect is how many it makes room for at
// first (the number of paths: one value each unless arrays or repeated
// keys yield more), appending to buf[:0] (made anew if smaller than
// expect) so that a caller can reuse one buffer across documents.
func findAllInto(buf []pathSpan, data []byte, root *pathNode, expect int) ([]pathSpan, error) {
	i := jsoncodec.SkipSpace(data, 0)
	if root.leaf < 0 && (len(root.children) == 0 || i >= len(data) || data[i] != '{') {
		return nil, nil // no path names anything in a document that is no object
	}
	if cap(buf) < expect {
		buf = make([]pathSpan, 0, expect)
	}
	out := buf[:0]
	_, err := walk(data, i, root, &out)
	return out, err
}

// walk visits the value at i as node and returns where it ends: an object
// some path goes into is scanned once, its members matched as it goes.
func walk(data []byte, i int, n *pathNode, out *[]pathSpan) (int, error) {
	at := -1
	if n.leaf >= 0 {
		at = len(*out)
		*out = append(*out, pathSpan{span{i, i}, n.leaf})
	}
	var end int
	var err error
	switch {
	case len(n.children) == 0:
		end, err = skipLeaf(data, i)
	case i >= len(data) || data[i] != '{':
		end, err = skipValue(data, i)
	default:
		end, err = walkObject(data, i, n, out)
	}
	if err != nil {
		return 0, err
	}
	if at >= 0 {
		(*out)[at].end = end
	}
	return end, nil
}

// walkObject scans the object at i, visiting the members n names.
func walkObject(data []byte, i int, n *pathNode, out *[]pathSpan) (int, error) {
	i = jsoncodec.SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return 0, errSyntax
		}
		kend, escaped, err := skipString(data, i)
		if err != nil {
			return 0, err
		}
		key := data[i:kend]
		i = jsoncodec.SkipSpace(data, kend)
		if i >= len(data) || data[i] != ':' {
			return 0, errSyntax
		}
		i = jsoncodec.SkipSpace(data, i+1)
		vend := -1
		for _, c := range n.named(key, escaped) {
			if !keyIs(key, escaped, c.name) {
				continue
			}
			var end int
			switch {
			case !c.each:
				end, err = walk(data, i, c.node, out)
			case i < len(data) && data[i] == '[':
				end, err = walkArray(data, i, c.node, out)
			default:
				end, err = skipValue(data, i)
			}
			if err != nil {
				return 0, err
			}
			vend = end
		}
		if vend < 0 {
			if vend, err = skipValue(data, i); err != nil {
				return 0, err
			}
		}
		i = jsoncodec.SkipSpace(data, vend)
		if i >= len(data) {
			return 0, errSyntax
		}
		if data[i] == '}' {
			return i + 1, nil
		}
		if data[i] != ',' {
			return 0, errSyntax
		}
		i = jsoncodec.SkipSpace(data, i+1)
	}
}

// walkArray visits every element of the array at i as node n.
func walkArray(data []byte, i int, n *pathNode, out *[]pathSpan) (int, error) {
	i = jsoncodec.SkipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return i + 1, nil
	}
	for {
		end, err := walk(data, i, n, out)
		if err != nil {
			return 0, err
		}
		i = jsoncodec.SkipSpace(data, end)
		if i >= len(data) {
			return 0, errSyntax
		}
		if data[i] == ']' {
			return i + 1, nil
		}
		if data[i] != ',' {
			return 0, errSyntax
		}
		i = jsoncodec.SkipSpace(data, i+1)
	}
}

// keyIs compares a raw JSON key (with quotes) to a name, unescaping only
// when the key may hold an escape (names hold no backslash, so a key
// without one is the name only as it is).
func keyIs(raw []byte, escaped bool, name string) bool {
	if !escaped {
		return string(raw[1:len(raw)-1]) == name
	}
	return escapedKeyIs(raw, name)
}

// escapedKeyIs is keyIs for a key that may hold an escape (a long key is
// taken as one), kept out of keyIs so that keyIs inlines into the walk's
// loop over the names.
//
//go:noinline
func escapedKeyIs(raw []byte, name string) bool {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1:len(raw)-1]) == name
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && s == name
}

// skipString returns the end of the string starting at i and whether it
// may hold an escape. Keys and most plain values are short and read a word
// at a time, stopping at a quote or a backslash; past shortString bytes (a
// sealed event's envelopes are long base64 text, most of what opening one
// passes over) the closing quote is looked for with bytes.IndexByte, and
// the string is taken as escaped.
func skipString(data []byte, i int) (end int, escaped bool, err error) {
	j := i + 1
	for j+8 <= len(data) {
		if j-i > shortString {
			end, err := skipLongString(data, j)
			return end, true, err
		}
		m := jsoncodec.QuoteOrBackslash(binary.LittleEndian.Uint64(data[j:]))
		if m == 0 {
			j += 8
			continue
		}
		j += bits.TrailingZeros64(m) >> 3
		if data[j] == '"' {
			return j + 1, escaped, nil
		}
		escaped = true
		j += 2 // an escape: skip the escaped byte
	}
	for ; j < len(data); j++ { // the buffer's last bytes
		switch data[j] {
		case '"':
			return j + 1, escaped, nil
		case '\\':
			escaped = true
			j++
		}
	}
	return 0, false, errSyntax
}

// shortString is how far skipString reads a string a word at a time.
const shortString = 32

// skipLongString is skipString from j, a byte of the string that is not
// the escaped one of an escape: a quote after an odd run of backslashes
// is escaped (escapes pair from the left, so the run's parity decides).
func skipLongString(data []byte, j int) (int, error) {
	for j < len(data) {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			break
		}
		q := j + k
		b := q
		for b > j && data[b-1] == '\\' {
			b--
		}
		if (q-b)%2 == 0 {
			return q + 1, nil
		}
		j = q + 1
	}
	return 0, errSyntax
}

// skipLeaf is skipValue for a personal path's value, in a sealed event
// an envelope as seal writes it ({"$enc":"keyID:base64"}: no white space,
// no escape): its end is found by one search for its closing quote
// rather than a walk of its bytes. Anything else, and an envelope's shape
// holding a backslash, goes to skipValue.
func skipLeaf(data []byte, i int) (int, error) {
	if bytes.HasPrefix(data[i:], []byte(envPrefix)) {
		text := data[i+len(envPrefix):]
		if q := bytes.IndexByte(text, '"'); q >= 0 && bytes.HasPrefix(text[q:], []byte(envSuffix)) &&
			bytes.IndexByte(text[:q], '\\') < 0 {
			return i + len(envPrefix) + q + len(envSuffix), nil
		}
	}
	return skipValue(data, i)
}

// skipValue returns the end of the value starting at i.
func skipValue(data []byte, i int) (int, error) {
	if i >= len(data) {
		return 0, errSyntax
	}
	switch data[i] {
	case '"':
		end, _, err := skipString(data, i)
		return end, err
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, _, err := skipString(data, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errSyntax
	default:
		j := i
	scan:
		for j < len(data) {
			switch data[j] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				break scan
			}
			j++
		}
		if j == i {
			return 0, errSyntax
		}
		return j, nil
	}
}
