package jsoncodec_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events/jsoncodec"
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

// TestAppendStringEscapes pins the escapes partners see in webhook
// bodies (HTML-escaped) and snapshot documents (not).
func TestAppendStringEscapes(t *testing.T) {
	in := "a\"\\/\b\f\n\r\t\x00\x1f\x7f<>&\u2028\u2029\xff张🙂"
	for _, c := range []struct {
		html bool
		want string
	}{
		{true, `"a\"\\/\b\f\n\r\t\u0000\u001f` + "\x7f" + `\u003c\u003e\u0026\u2028\u2029\ufffd张🙂"`},
		{false, `"a\"\\/\b\f\n\r\t\u0000\u001f` + "\x7f" + `<>&\u2028\u2029\ufffd张🙂"`},
	} {
		got := writer(c.html).AppendString([]byte("x"), in)
		if string(got) != "x"+c.want {
			t.Errorf("html=%v: got %s want x%s", c.html, got, c.want)
		}
		if want := encodingJSONString(t, in, c.html); !bytes.Equal(got[1:], want) {
			t.Errorf("html=%v: got %s, encoding/json %s", c.html, got[1:], want)
		}
	}
}

// FuzzAppendStringMatchesEncodingJSON: for any string, valid UTF-8 or
// not, both modes write exactly encoding/json's bytes.
func FuzzAppendStringMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\\x00\x1f<>&", "\u2028\u2029", "\xe2\x80", "\xff\xfe", "张🙂\xf0\x9f"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, html bool) {
		if got, want := writer(html).AppendString(nil, s), encodingJSONString(t, s, html); !bytes.Equal(got, want) {
			t.Fatalf("%q html=%v: got %s, encoding/json %s", s, html, got, want)
		}
	})
}

// BenchmarkAppendString writes a snapshot-sized plain string and a
// webhook excerpt with escapes, in both modes.
func BenchmarkAppendString(b *testing.B) {
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
					buf = writer(html).AppendString(buf[:0], c.s)
				}
			})
		}
	}
}

// TestStringsAsEncodingJSON: nil, empty and escaped lists are
// written as encoding/json writes a []string, in both modes.
func TestStringsAsEncodingJSON(t *testing.T) {
	for _, ss := range [][]string{nil, {}, {""}, {"a"}, {"a\"<b>", "\u2028\xff", "张&"}} {
		for _, html := range []bool{true, false} {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(html)
			if err := enc.Encode(ss); err != nil {
				t.Fatal(err)
			}
			want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
			if got := writer(html).Strings(nil, "", ss); !bytes.Equal(got, want) {
				t.Errorf("%q html=%v: got %s, encoding/json %s", ss, html, got, want)
			}
		}
	}
}

// writer is the Writer of one escaping mode.
func writer(html bool) jsoncodec.Writer {
	if html {
		return jsoncodec.HTML
	}
	return jsoncodec.NoHTML
}

// Time writes what time.Time.MarshalJSON writes, and declines
// exactly the times it refuses.
func TestTimeMatchesMarshalJSON(t *testing.T) {
	base := time.Date(2026, 11, 24, 5, 0, 1, 123456789, time.UTC)
	times := []time.Time{{}, base, base.Truncate(time.Second), base.Local(),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)}
	for _, off := range []int{8 * 3600, -5*3600 - 1800, 8*3600 + 43, 23*3600 + 59*60, 24 * 3600, -24 * 3600, 30 * 3600, -1} {
		times = append(times, base.In(time.FixedZone("z", off)))
	}
	for _, tm := range times {
		want, werr := tm.MarshalJSON()
		got, ok := jsoncodec.Time([]byte("x"), "", tm)
		if ok != (werr == nil) {
			t.Fatalf("%v: direct ok=%v, MarshalJSON %v", tm, ok, werr)
		}
		if ok && string(got) != "x"+string(want) {
			t.Fatalf("%v: direct %s, MarshalJSON %s", tm, got, want)
		}
		if ok {
			if j, _ := json.Marshal(tm); string(j) != string(want) {
				t.Fatalf("json.Marshal %s", j)
			}
		}
	}
}
