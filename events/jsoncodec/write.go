// Package jsoncodec is the one JSON mechanism of the hand-written codecs
// (the catalog's event payloads, webhook bodies, the snapshot and report
// answers, the Postgres snapshot documents, the few ids privacy picks out
// of any payload): an append-based writer and a scanning reader, with
// JSON's escaping, number and time rules written once. They exist for
// speed (encoding/json's reflection was the largest share of the hot
// paths' CPU), and they are exact: the writer writes encoding/json's bytes
// and the readers decide as encoding/json decides or decline, which the
// fuzz targets here and at each codec compare. docs/decisions/json-codec.md
// says why this is a package and not generated code.
package jsoncodec

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// Writer appends JSON values after their keys. A key argument is the JSON
// text written before the value, separator included (`{"id":`, `,"name":`),
// so a codec is one call per field in its own order. The Writer's only
// state is its string escaping.
type Writer struct {
	plain *[utf8.RuneSelf]bool
	// longBF writes \b and \f as \u0008 and \u000c, as log/slog does.
	longBF bool
}

var (
	// HTML escapes strings as json.Marshal does (< > & as \u00XX): the
	// event payloads and webhook bodies.
	HTML = Writer{plain: &plainHTML}
	// NoHTML escapes strings as an Encoder with SetEscapeHTML(false)
	// does: the HTTP answers (httpapi.WriteJSON).
	NoHTML = Writer{plain: &plain}
	// Slog escapes strings as log/slog's JSON handler does: NoHTML's
	// escapes, with \b and \f as \u0008 and \u000c (the log lines).
	Slog = Writer{plain: &plain, longBF: true}
)

// plain and plainHTML mark the ASCII bytes encoding/json copies into a
// string literal unescaped, without and with HTML escaping: a table
// look-up per byte keeps the writer fast.
var plain, plainHTML = plainTables()

func plainTables() (p, html [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		p[c] = c != '"' && c != '\\'
		html[c] = p[c] && c != '<' && c != '>' && c != '&'
	}
	return p, html
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string literal exactly as encoding/json
// writes it: quote and backslash escaped, \b \f \n \r \t short, other
// control bytes as \u00XX, invalid UTF-8 as \ufffd, U+2028 and U+2029
// escaped, and < > & as \u00XX when w is HTML (\b and \f as \u00XX when
// w is Slog).
func (w Writer) AppendString(b []byte, s string) []byte {
	plain := w.plain
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b', '\f':
				if w.longBF {
					b = append(b, '\\', 'u', '0', '0', '0', hexDigits[c])
				} else if c == '\b' {
					b = append(b, '\\', 'b')
				} else {
					b = append(b, '\\', 'f')
				}
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// String appends key and s.
func (w Writer) String(b []byte, key, s string) []byte {
	return w.AppendString(append(b, key...), s)
}

// OptString appends key and s, null when s is nil.
func (w Writer) OptString(b []byte, key string, s *string) []byte {
	if s == nil {
		return append(append(b, key...), "null"...)
	}
	return w.AppendString(append(b, key...), *s)
}

// Strings appends key and ss as encoding/json writes a []string: null
// when nil, [] when empty.
func (w Writer) Strings(b []byte, key string, ss []string) []byte {
	b = append(b, key...)
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = w.AppendString(b, s)
	}
	return append(b, ']')
}

// Int appends key and n.
func Int(b []byte, key string, n int64) []byte {
	return strconv.AppendInt(append(b, key...), n, 10)
}

// Ints appends key and ns as an array, [] when nil (a webhook body's list
// of ids is never null).
func Ints(b []byte, key string, ns []int64) []byte {
	b = append(b, key...)
	b = append(b, '[')
	for i, n := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, n, 10)
	}
	return append(b, ']')
}

// OptInt appends key and n, null when n is nil.
func OptInt(b []byte, key string, n *int64) []byte {
	if n == nil {
		return append(append(b, key...), "null"...)
	}
	return strconv.AppendInt(append(b, key...), *n, 10)
}

// Uint appends key and n.
func Uint(b []byte, key string, n uint64) []byte {
	return strconv.AppendUint(append(b, key...), n, 10)
}

// Bool appends key and v.
func Bool(b []byte, key string, v bool) []byte {
	return strconv.AppendBool(append(b, key...), v)
}

// Time appends key and t quoted as time.Time.MarshalJSON writes it (RFC
// 3339 with nanoseconds); ok is false where MarshalJSON fails (a year
// outside 0–9999, a zone offset of 24 hours or more or with seconds),
// checked as MarshalJSON checks its own output, and the caller then lets
// encoding/json decide.
func Time(b []byte, key string, t time.Time) (out []byte, ok bool) {
	b = append(b, key...)
	b = append(b, '"')
	n0 := len(b)
	b = t.AppendFormat(b, time.RFC3339Nano)
	switch {
	case b[n0+len("9999")] != '-':
		return b, false
	case b[len(b)-1] != 'Z':
		c := b[len(b)-len("Z07:00")]
		tail := b[len(b)-len("07:00"):]
		if ('0' <= c && c <= '9') || 10*(tail[0]-'0')+(tail[1]-'0') >= 24 {
			return b, false
		}
	}
	return append(b, '"'), true
}

// TimeIn appends key and t in loc formatted with layout, quoted (the
// layouts the answers use hold nothing to escape).
func TimeIn(b []byte, key string, t time.Time, loc *time.Location, layout string) []byte {
	b = append(b, key...)
	b = append(b, '"')
	b = t.In(loc).AppendFormat(b, layout)
	return append(b, '"')
}

// OptTimeIn is TimeIn, null when t is nil.
func OptTimeIn(b []byte, key string, t *time.Time, loc *time.Location, layout string) []byte {
	if t == nil {
		return append(append(b, key...), "null"...)
	}
	return TimeIn(b, key, *t, loc, layout)
}
