package events

import "unicode/utf8"

// The hand-written encoders (the catalog's direct event encoders, the
// snapshot documents queryapi writes) must produce encoding/json's bytes
// exactly, so they share this one string writer; its differential fuzz
// tests (FuzzAppendJSONStringMatchesEncodingJSON here in both escaping
// modes, catalog's FuzzDirectEncodeMatchesEncodingJSON, queryapi's
// TestSnapshotStringsAsEncodingJSON) compare it with encoding/json.

// jsonPlain and jsonPlainHTML mark the ASCII bytes encoding/json copies
// into a string literal unescaped, without and with HTML escaping: a table
// look-up per byte is what keeps the writer as fast as the two it replaced.
var jsonPlain, jsonPlainHTML = plainTables()

func plainTables() (plain, html [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		plain[c] = c != '"' && c != '\\'
		html[c] = plain[c] && c != '<' && c != '>' && c != '&'
	}
	return plain, html
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string literal exactly as
// encoding/json writes it, so a hand-written encoder's output stays byte
// for byte encoding/json's: quote and backslash escaped, \b \f \n \r \t
// short, other control bytes as \u00XX, invalid UTF-8 as \ufffd, U+2028 and
// U+2029 escaped, and with escapeHTML (json.Marshal's default) also < > &
// as \u00XX; with it off, as an Encoder with SetEscapeHTML(false) writes.
func AppendJSONString(b []byte, s string, escapeHTML bool) []byte {
	plain := &jsonPlain
	if escapeHTML {
		plain = &jsonPlainHTML
	}
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
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
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

// AppendJSONStrings appends ss as encoding/json writes a []string (null
// when nil, [] when empty), each element as AppendJSONString writes it, so
// the hand-written encoders share one list writer as they share the string.
func AppendJSONStrings(b []byte, ss []string, escapeHTML bool) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, s, escapeHTML)
	}
	return append(b, ']')
}
