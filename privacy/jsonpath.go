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

// findAll finds the values of every path in one pass over the document.
func findAll(data []byte, paths [][]string) ([]pathSpan, error) {
	active := make([]int, len(paths))
	for i := range active {
		active[i] = i
	}
	var out []pathSpan
	err := walkAll(data, skipWS(data, 0), paths, active, 0, &out)
	return out, err
}

// walkAll visits the value at i, where the active paths have matched their
// first depth steps.
func walkAll(data []byte, i int, paths [][]string, active []int, depth int, out *[]pathSpan) error {
	var deeper []int
	for _, p := range active {
		if len(paths[p]) == depth {
			end, err := skipValue(data, i)
			if err != nil {
				return err
			}
			*out = append(*out, pathSpan{span{i, end}, p})
		} else {
			deeper = append(deeper, p)
		}
	}
	if len(deeper) == 0 || i >= len(data) || data[i] != '{' {
		return nil
	}
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		return nil
	}
	var match []int
	for {
		if i >= len(data) || data[i] != '"' {
			return errSyntax
		}
		kend, err := skipString(data, i)
		if err != nil {
			return err
		}
		key := data[i:kend]
		i = skipWS(data, kend)
		if i >= len(data) || data[i] != ':' {
			return errSyntax
		}
		i = skipWS(data, i+1)
		vend, err := skipValue(data, i)
		if err != nil {
			return err
		}
		match, each := match[:0], false
		for _, p := range deeper {
			name, arr := strings.CutSuffix(paths[p][depth], "[]")
			if keyIs(key, name) {
				match = append(match, p)
				each = each || arr
			}
		}
		if len(match) > 0 {
			if !each {
				if err := walkAll(data, i, paths, append([]int(nil), match...), depth+1, out); err != nil {
					return err
				}
			} else if data[i] == '[' {
				if err := walkAllArray(data, i, paths, append([]int(nil), match...), depth+1, out); err != nil {
					return err
				}
			}
		}
		i = skipWS(data, vend)
		if i >= len(data) {
			return errSyntax
		}
		if data[i] == '}' {
			return nil
		}
		if data[i] != ',' {
			return errSyntax
		}
		i = skipWS(data, i+1)
	}
}

func walkAllArray(data []byte, i int, paths [][]string, active []int, depth int, out *[]pathSpan) error {
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == ']' {
		return nil
	}
	for {
		end, err := skipValue(data, i)
		if err != nil {
			return err
		}
		if err := walkAll(data, i, paths, active, depth, out); err != nil {
			return err
		}
		i = skipWS(data, end)
		if i >= len(data) {
			return errSyntax
		}
		if data[i] == ']' {
			return nil
		}
		if data[i] != ',' {
			return errSyntax
		}
		i = skipWS(data, i+1)
	}
}

// keyIs compares a raw JSON key (with quotes) to a name, unescaping only
// when the key holds an escape.
func keyIs(raw []byte, name string) bool {
	if !strings.ContainsRune(string(raw), '\\') {
		return string(raw[1:len(raw)-1]) == name
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

func skipString(data []byte, i int) (int, error) {
	for j := i + 1; j < len(data); {
		k := bytes.IndexAny(data[j:], `"\\`)
		if k < 0 {
			break
		}
		j += k
		if data[j] == '"' {
			return j + 1, nil
		}
		j += 2 // an escape: skip the escaped byte
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
