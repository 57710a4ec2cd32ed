package jsoncodec

import (
	"encoding/json"
	"strings"
	"testing"
)

// refScanString is what scanString must return, from encoding/json: the
// string ends at the first quote no backslash escapes (a backslash
// escapes the byte after it), and is valid if encoding/json decodes it.
func refScanString(s string, i int) (end int, escaped, nonASCII bool) {
	if i >= len(s) || s[i] != '"' {
		return -1, false, false
	}
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			var v string
			if json.Unmarshal([]byte(s[i:j+1]), &v) != nil {
				return -1, false, false
			}
			body := s[i+1 : j]
			return j + 1, strings.Contains(body, `\`), strings.IndexFunc(body, func(r rune) bool { return r >= 0x80 }) >= 0
		}
	}
	return -1, false, false
}

// scanSame checks scanString and the one-pass decoders (unquoteAt, the
// Reader's str) on the string at the start of s against encoding/json:
// the same strings valid, ending at the same byte, with encoding/json's
// value.
func scanSame(t *testing.T, s string) {
	t.Helper()
	end, escaped, nonASCII := scanString(s, 0)
	wend, wescaped, wnonASCII := refScanString(s, 0)
	if end != wend || escaped != wescaped || nonASCII != wnonASCII {
		t.Fatalf("%q: scanned (%d, %v, %v), encoding/json (%d, %v, %v)", s, end, escaped, nonASCII, wend, wescaped, wnonASCII)
	}
	var want string
	if end >= 0 {
		if err := json.Unmarshal([]byte(s[:end]), &want); err != nil {
			t.Fatalf("%q: scanned a string encoding/json rejects: %v", s[:end], err)
		}
	}
	if len(s) == 0 || s[0] != '"' {
		return
	}
	got, uend := unquoteAt(nil, s, 0, false)
	if uend != wend || end >= 0 && string(got) != want {
		t.Fatalf("%q: unquoted %q to %d, encoding/json %q to %d", s, got, uend, want, wend)
	}
	r := Reader{s: s}
	str, ok := r.str()
	if ok != (end >= 0) || ok && (str != want || r.i != end) {
		t.Fatalf("%q: read %q (%v) to %d, encoding/json %q to %d", s, str, ok, r.i, want, end)
	}
}

// Every byte that ends a run of a string's plain bytes (a quote, a
// backslash, a control byte) or marks it as non-ASCII, and escapes valid
// and not, at every position of strings around the scanner's word size
// (and at the ends of strings around the Reader's stack buffer's size),
// with the string's end at the buffer's end or before more bytes: the
// word-at-a-time scanner and the one-pass decoders decide as
// encoding/json does.
func TestScanStringAtEveryPosition(t *testing.T) {
	specials := []string{`"`, `\`, `\\`, `\"`, `\/`, `\n`, `\u00e9`, `\ud83d\ude00`, `\ud800`, `\x`, `\u12`,
		`\ud83d\u00e9`, `\ud83d\uzzzz`, `\udc00\ud800`, `\ud83d\`, `\"\"\\\"\/`, `\u00E9\uD83D\uDE00`,
		"\x00", "\x1f", " ", "\x7f", "\x80", "\xff", "é", "\xe2\x80", "😀"}
	tails := []string{"", `"`, `,"k":"v"}`, `"é`, "\"\x01\x02\x03\x04\x05\x06\x07"}
	lengths := []int{onStack - 9, onStack - 8, onStack - 7, onStack, onStack + 1}
	for n := range 35 {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for p := 0; p <= n; p++ {
			if p == 17 && n > 34 {
				p = n - 17 // a long string's first and last bytes
			}
			for _, sp := range specials {
				for _, tail := range tails {
					body := strings.Repeat("a", p) + sp + strings.Repeat("b", n-p)
					scanSame(t, `"`+body+tail)
					scanSame(t, `"`+body+`"`+tail)
				}
			}
		}
		// A string ending in a run of backslashes: the last quote is
		// escaped when the run is odd.
		for k := range 6 {
			for _, tail := range tails {
				scanSame(t, `"`+strings.Repeat("a", n)+strings.Repeat(`\`, k)+`"`+tail)
			}
		}
	}
}

// FuzzScanString: on any bytes, the word-at-a-time scanner and the
// one-pass decoders decide as encoding/json does.
func FuzzScanString(f *testing.F) {
	for _, s := range []string{`"abcdefg"`, `"abcdefgh"`, `"abcdefghi"`, `"abcdefghijklmno"`, `"abcdefghijklmnop"`,
		`"abcdefghijklmnopq"`, `"abcdefg\\"`, `"abcdefg\\\"x"`, `"{\"event\":\"user.registered\",\"id\":7}"`,
		"\"\xe4\xb8\xad\xe6\x96\x87\xff\x01\"", `"\ud83d\ude00\ud800\u00e9abcdefgh"`, `"abcdefgh`, `"abc\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		scanSame(t, `"`+s)
		scanSame(t, s)
	})
}
