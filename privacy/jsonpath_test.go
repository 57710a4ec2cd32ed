package privacy

import (
	"strings"
	"testing"
)

// refSkipString is skipString read byte by byte: the reference the
// word-at-a-time and indexed scan must agree with.
func refSkipString(data []byte, i int) (int, error) {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '"':
			return j + 1, nil
		case '\\':
			j++
		}
	}
	return 0, errSyntax
}

// skipSame checks skipString against the reference on the string at the
// start of data, and that a string holding a backslash is said to be
// escaped (keyIs compares a key that is not as it is).
func skipSame(t *testing.T, data []byte) {
	t.Helper()
	end, escaped, err := skipString(data, 0)
	wend, werr := refSkipString(data, 0)
	if end != wend || (err == nil) != (werr == nil) {
		t.Fatalf("%q: skipped to %d (%v), byte by byte %d (%v)", data, end, err, wend, werr)
	}
	if err == nil && !escaped && strings.Contains(string(data[1:end]), `\`) {
		t.Fatalf("%q: a string with a backslash is not escaped", data[:end])
	}
}

// A quote, a backslash or a run of them at every position of strings
// around the word size and the short scan's length, the string ending at
// the buffer's end or before more bytes: skipString ends every string
// where a byte-by-byte scan does.
func TestSkipStringAtEveryPosition(t *testing.T) {
	specials := []string{`"`, `\`, `\\`, `\"`, `\\\`, `\\\"`, "é", "\x00"}
	tails := []string{"", `"`, `,"k":"v"}`, `\"`}
	for n := range 70 {
		for p := 0; p <= n; p++ {
			for _, sp := range specials {
				for _, tail := range tails {
					body := strings.Repeat("a", p) + sp + strings.Repeat("b", n-p)
					skipSame(t, []byte(`"`+body+tail))
					skipSame(t, []byte(`"`+body+`"`+tail))
				}
			}
		}
	}
}

// FuzzSkipString: on any bytes, skipString ends the string where the
// byte-by-byte scan does.
func FuzzSkipString(f *testing.F) {
	for _, s := range []string{`"abcdefg"`, `"abcdefgh"`, `"abcdefghi"`, `"abcdefghijklmnop"`, `"abcdefghijklmnopq"`,
		`"abcdefghijklmnopqrstuvwxyz0123456\\"`, `"abcdefghijklmnopqrstuvwxyz012345\"x"`, `"na\u006de"`, `"abc\`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		skipSame(t, append([]byte(`"`), data...))
		skipSame(t, data)
	})
}

// leafSame checks that skipLeaf ends the value at the start of data where
// skipValue does, and fails where it fails.
func leafSame(t *testing.T, data []byte) {
	t.Helper()
	end, err := skipLeaf(data, 0)
	wend, werr := skipValue(data, 0)
	if end != wend || (err == nil) != (werr == nil) {
		t.Fatalf("%q: skipLeaf to %d (%v), skipValue %d (%v)", data, end, err, wend, werr)
	}
}

// An envelope, and what only starts as one (escapes, another end, more
// members, a truncation), ends where skipValue ends it.
func TestSkipLeafIsSkipValue(t *testing.T) {
	for _, s := range []string{
		`{"$enc":"k1:QUJD"}`, `{"$enc":"k1:QUJD"},"x":1}`, `{"$enc":"k1:QU\"JD"}`, `{"$enc":"k1:QU\\"}`,
		`{"$enc":"k1:QUJD","x":1}`, `{"$enc":"k1:QUJD" }`, `{"$enc":"k1:QUJD"`, `{"$enc":"`, `{"$enc":"}"}`,
		`{"$enc":"a{b"}`, `{"$enc":"a\"}"}`, `"plain"`, `null`, `{"a":1}`, `12`,
	} {
		leafSame(t, []byte(s))
	}
}

// FuzzSkipLeaf: on any bytes, skipLeaf ends the value where skipValue does.
func FuzzSkipLeaf(f *testing.F) {
	for _, s := range []string{`{"$enc":"k1:QUJD"}`, `{"$enc":"k1:QU\"JD"}`, `{"$enc":"k1:QUJD","x":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(leafSame)
}
