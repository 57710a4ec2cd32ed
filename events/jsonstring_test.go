package events_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/healthtech/partner-open-platform/events"
)

// encodingJSONString is encoding/json's literal for s, HTML-escaped or not.
func encodingJSONString(t *testing.T, s string, escapeHTML bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// TestAppendJSONStringEscapes pins the escapes partners see in webhook
// bodies (HTML-escaped) and snapshot documents (not).
func TestAppendJSONStringEscapes(t *testing.T) {
	in := "a\"\\/\b\f\n\r\t\x00\x1f\x7f<>&\u2028\u2029\xff张🙂"
	for _, c := range []struct {
		html bool
		want string
	}{
		{true, `"a\"\\/\b\f\n\r\t\u0000\u001f` + "\x7f" + `\u003c\u003e\u0026\u2028\u2029\ufffd张🙂"`},
		{false, `"a\"\\/\b\f\n\r\t\u0000\u001f` + "\x7f" + `<>&\u2028\u2029\ufffd张🙂"`},
	} {
		got := events.AppendJSONString([]byte("x"), in, c.html)
		if string(got) != "x"+c.want {
			t.Errorf("html=%v: got %s want x%s", c.html, got, c.want)
		}
		if want := encodingJSONString(t, in, c.html); !bytes.Equal(got[1:], want) {
			t.Errorf("html=%v: got %s, encoding/json %s", c.html, got[1:], want)
		}
	}
}

// FuzzAppendJSONStringMatchesEncodingJSON: for any string, valid UTF-8 or
// not, both modes write exactly encoding/json's bytes.
func FuzzAppendJSONStringMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\\x00\x1f<>&", "\u2028\u2029", "\xe2\x80", "\xff\xfe", "张🙂\xf0\x9f"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, html bool) {
		if got, want := events.AppendJSONString(nil, s, html), encodingJSONString(t, s, html); !bytes.Equal(got, want) {
			t.Fatalf("%q html=%v: got %s, encoding/json %s", s, html, got, want)
		}
	})
}

// BenchmarkAppendJSONString writes a snapshot-sized plain string and a
// webhook excerpt with escapes, in both modes.
func BenchmarkAppendJSONString(b *testing.B) {
	buf := make([]byte, 0, 512)
	for _, c := range []struct{ name, s string }{
		{"plain", "0192f0c8-1b2a-7c3d-8e4f-a5b6c7d8e9f0 张三 https://x.example/hook"},
		{"escaped", "{\"error\":\"bad <input>\",\n\"detail\":\"a & b\"}\t\u2028"},
	} {
		for _, html := range []bool{true, false} {
			name := c.name + "/noHTML"
			if html {
				name = c.name + "/HTML"
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					buf = events.AppendJSONString(buf[:0], c.s, html)
				}
			})
		}
	}
}

// TestAppendJSONStringsAsEncodingJSON: nil, empty and escaped lists are
// written as encoding/json writes a []string, in both modes.
func TestAppendJSONStringsAsEncodingJSON(t *testing.T) {
	for _, ss := range [][]string{nil, {}, {""}, {"a"}, {"a\"<b>", "\u2028\xff", "张&"}} {
		for _, html := range []bool{true, false} {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(html)
			if err := enc.Encode(ss); err != nil {
				t.Fatal(err)
			}
			want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
			if got := events.AppendJSONStrings(nil, ss, html); !bytes.Equal(got, want) {
				t.Errorf("%q html=%v: got %s, encoding/json %s", ss, html, got, want)
			}
		}
	}
}
