package privacy

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
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
	return root
}

// findAllInto finds the values of every path of the tree in one pass over the
// document, in document order; expect is how many it makes room for at
// first (the number of paths: one value each unless arrays or repeated
// keys yield more), appending to buf[:0] (made anew if smaller than
// expect) so that a caller can reuse one buffer across documents.
func findAllInto(buf []pathSpan, data []byte, root *pathNode, expect int) ([]pathSpan, error) {
	i := skipWS(data, 0)
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
	if len(n.children) == 0 || i >= len(data) || data[i] != '{' {
		end, err = skipValue(data, i)
	} else {
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
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(data) || data[i] != '"' {
			return 0, errSyntax
		}
		kend, err := skipString(data, i)
		if err != nil {
			return 0, err
		}
		key := data[i:kend]
		i = skipWS(data, kend)
		if i >= len(data) || data[i] != ':' {
			return 0, errSyntax
		}
		i = skipWS(data, i+1)
		vend := -1
		for _, c := range n.children {
			if !keyIs(key, c.name) {
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
		i = skipWS(data, vend)
		if i >= len(data) {
			return 0, errSyntax
		}
		if data[i] == '}' {
			return i + 1, nil
		}
		if data[i] != ',' {
			return 0, errSyntax
		}
		i = skipWS(data, i+1)
	}
}

// walkArray visits every element of the array at i as node n.
func walkArray(data []byte, i int, n *pathNode, out *[]pathSpan) (int, error) {
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == ']' {
		return i + 1, nil
	}
	for {
		end, err := walk(data, i, n, out)
		if err != nil {
			return 0, err
		}
		i = skipWS(data, end)
		if i >= len(data) {
			return 0, errSyntax
		}
		if data[i] == ']' {
			return i + 1, nil
		}
		if data[i] != ',' {
			return 0, errSyntax
		}
		i = skipWS(data, i+1)
	}
}

// keyIs compares a raw JSON key (with quotes) to a name, unescaping only
// when the key holds an escape.
func keyIs(raw []byte, name string) bool {
	if len(raw) == len(name)+2 && string(raw[1:len(raw)-1]) == name {
		return true // a key equal to the name has no escape: names hold no backslash
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return false
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && s == name
}

func skipWS(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the end of the string starting at i. Keys and most
// plain values are short and read byte by byte; past shortString bytes
// (a sealed event's envelopes are long base64 text, most of what opening
// one passes over) the closing quote is looked for with bytes.IndexByte.
func skipString(data []byte, i int) (int, error) {
	for j := i + 1; j < len(data); j++ {
		if j-i > shortString {
			return skipLongString(data, j)
		}
		switch data[j] {
		case '"':
			return j + 1, nil
		case '\\':
			j++ // an escape: skip the escaped byte
		}
	}
	return 0, errSyntax
}

// shortString is how far skipString reads a string byte by byte.
const shortString = 16

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

// skipValue returns the end of the value starting at i.
func skipValue(data []byte, i int) (int, error) {
	if i >= len(data) {
		return 0, errSyntax
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, err := skipString(data, j)
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
