// Package healthdata holds pure functions over measurement data (raw_data of
// health reports): removing large fields, reading indicators and building the
// daily summary. It performs no I/O.
package healthdata

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// LargeFields lists the keys raw_data rule 4 keeps out of stored and returned reports.
var LargeFields = []string{"dat_base64"}

// ErrInvalidJSON lets callers tell a malformed document apart from other failures.
var ErrInvalidJSON = errors.New("healthdata: invalid JSON")

// StripLargeFields drops waveform-sized members at any depth yet keeps every other byte as received, since raw_data is stored uncleaned (raw_data rules 1 and 4).
func StripLargeFields(raw []byte, names ...string) ([]byte, error) {
	if !json.Valid(raw) {
		return nil, fmt.Errorf("%w: input is not exactly one JSON value", ErrInvalidJSON)
	}
	if len(names) == 0 {
		names = LargeFields
	}
	s := stripper{data: raw, names: names}
	end, err := s.value(s.skipWS(0), true)
	if err != nil {
		return nil, err
	}
	if s.skipWS(end) != len(raw) {
		return nil, fmt.Errorf("%w: trailing data at offset %d", ErrInvalidJSON, end)
	}
	if len(s.cuts) == 0 {
		return raw, nil
	}
	removed := 0
	for _, c := range s.cuts {
		removed += c.end - c.start
	}
	out := make([]byte, 0, len(raw)-removed)
	pos := 0
	for _, c := range s.cuts {
		out = append(out, raw[pos:c.start]...)
		pos = c.end
	}
	out = append(out, raw[pos:]...)
	return out, nil
}

// cut is a half-open byte range [start, end) to drop from the input.
type cut struct{ start, end int }

// stripper scans an already validated document and records the byte ranges
// of matching members. Cuts are appended in increasing, non-overlapping order.
type stripper struct {
	data  []byte
	names []string
	cuts  []cut
}

func (s *stripper) errAt(i int, what string) error {
	return fmt.Errorf("%w: %s at offset %d", ErrInvalidJSON, what, i)
}

func isWS(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

func (s *stripper) skipWS(i int) int {
	for i < len(s.data) && isWS(s.data[i]) {
		i++
	}
	return i
}

// value scans the value starting at i and returns the offset just past it.
// When match is false, members are not inspected (the value is being dropped
// as a whole, so cuts inside it would overlap the enclosing cut).
func (s *stripper) value(i int, match bool) (int, error) {
	if i >= len(s.data) {
		return i, s.errAt(i, "unexpected end")
	}
	switch s.data[i] {
	case '{':
		return s.object(i, match)
	case '[':
		return s.array(i, match)
	case '"':
		return s.str(i)
	default:
		start := i
		for i < len(s.data) {
			b := s.data[i]
			if b == ',' || b == ']' || b == '}' || isWS(b) {
				break
			}
			i++
		}
		if i == start {
			return i, s.errAt(i, "unexpected character")
		}
		return i, nil
	}
}

// str scans a string literal starting at the opening quote.
func (s *stripper) str(i int) (int, error) {
	if i >= len(s.data) || s.data[i] != '"' {
		return i, s.errAt(i, "expected string")
	}
	i++
	for i < len(s.data) {
		switch s.data[i] {
		case '\\':
			i += 2
		case '"':
			return i + 1, nil
		default:
			i++
		}
	}
	return i, s.errAt(i, "unterminated string")
}

func (s *stripper) array(i int, match bool) (int, error) {
	i = s.skipWS(i + 1)
	if i < len(s.data) && s.data[i] == ']' {
		return i + 1, nil
	}
	for {
		end, err := s.value(i, match)
		if err != nil {
			return end, err
		}
		i = s.skipWS(end)
		if i >= len(s.data) {
			return i, s.errAt(i, "unterminated array")
		}
		switch s.data[i] {
		case ',':
			i = s.skipWS(i + 1)
		case ']':
			return i + 1, nil
		default:
			return i, s.errAt(i, "expected ',' or ']'")
		}
	}
}

// object scans an object and cuts matching members. A removed member takes
// the comma after it with it (up to the next key), except for a trailing run
// of removed members, which takes the comma before it; when every member is
// removed, only the whitespace around them remains.
func (s *stripper) object(i int, match bool) (int, error) {
	i = s.skipWS(i + 1)
	if i < len(s.data) && s.data[i] == '}' {
		return i + 1, nil
	}
	var (
		runStart       = -1    // key offset of the first member in the pending removed run
		keptAny        = false // a member before the run was kept
		commaAfterKept int     // offset of the comma after the last kept member
		lastValueEnd   int
	)
	for {
		keyStart := i
		keyEnd, err := s.str(i)
		if err != nil {
			return keyEnd, err
		}
		remove := match && s.matches(s.data[keyStart:keyEnd])
		if !remove && runStart >= 0 {
			s.cuts = append(s.cuts, cut{runStart, keyStart})
			runStart = -1
		}
		i = s.skipWS(keyEnd)
		if i >= len(s.data) || s.data[i] != ':' {
			return i, s.errAt(i, "expected ':'")
		}
		valueEnd, err := s.value(s.skipWS(i+1), match && !remove)
		if err != nil {
			return valueEnd, err
		}
		lastValueEnd = valueEnd
		if remove && runStart < 0 {
			runStart = keyStart
		}
		i = s.skipWS(valueEnd)
		if i >= len(s.data) {
			return i, s.errAt(i, "unterminated object")
		}
		switch s.data[i] {
		case ',':
			if !remove {
				keptAny = true
				commaAfterKept = i
			}
			i = s.skipWS(i + 1)
		case '}':
			if runStart >= 0 {
				if keptAny {
					s.cuts = append(s.cuts, cut{commaAfterKept, lastValueEnd})
				} else {
					s.cuts = append(s.cuts, cut{runStart, lastValueEnd})
				}
			}
			return i + 1, nil
		default:
			return i, s.errAt(i, "expected ',' or '}'")
		}
	}
}

// matches compares the decoded key with the configured names, so escaped
// spellings such as "dat\u005fbase64" are caught too.
func (s *stripper) matches(quoted []byte) bool {
	inner := quoted[1 : len(quoted)-1]
	plain := utf8.Valid(inner)
	for _, b := range inner {
		if b == '\\' {
			plain = false
			break
		}
	}
	if plain {
		for _, n := range s.names {
			if string(inner) == n {
				return true
			}
		}
		return false
	}
	var key string
	if err := json.Unmarshal(quoted, &key); err != nil {
		return false
	}
	for _, n := range s.names {
		if key == n {
			return true
		}
	}
	return false
}
