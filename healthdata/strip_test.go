package healthdata

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestStripLargeFields(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		names []string
		want  string
	}{
		{name: "only member", in: `{"dat_base64":"AAAA"}`, want: `{}`},
		{name: "only member with spaces", in: `{ "dat_base64" : "AAAA" }`, want: `{  }`},
		{name: "first member", in: `{"dat_base64":"AAAA","a":1}`, want: `{"a":1}`},
		{name: "middle member", in: `{"a":1,"dat_base64":"AAAA","b":2}`, want: `{"a":1,"b":2}`},
		{name: "last member", in: `{"a":1,"dat_base64":"AAAA"}`, want: `{"a":1}`},
		{name: "two adjacent in middle", in: `{"a":1,"dat_base64":1,"dat_base64":2,"b":2}`, want: `{"a":1,"b":2}`},
		{name: "two trailing", in: `{"a":1,"dat_base64":1,"dat_base64":2}`, want: `{"a":1}`},
		{name: "all of several", in: `{"dat_base64":1, "dat_base64":2}`, want: `{}`},
		{name: "first and last", in: `{"dat_base64":1,"a":2,"dat_base64":3}`, want: `{"a":2}`},
		{name: "alternating", in: `{"a":0,"dat_base64":1,"b":2,"dat_base64":3,"c":4}`, want: `{"a":0,"b":2,"c":4}`},
		{
			name: "pretty printed middle",
			in:   "{\n  \"a\": 1,\n  \"dat_base64\": \"AAAA\",\n  \"b\": 2\n}\n",
			want: "{\n  \"a\": 1,\n  \"b\": 2\n}\n",
		},
		{
			name: "pretty printed last",
			in:   "{\n  \"a\": 1,\n  \"dat_base64\": \"AAAA\"\n}",
			want: "{\n  \"a\": 1\n}",
		},
		{
			name: "pretty printed first",
			in:   "{\n\t\"dat_base64\": \"AAAA\",\n\t\"a\": 1\n}",
			want: "{\n\t\"a\": 1\n}",
		},
		{
			name: "whitespace around commas",
			in:   "{\"a\":1 ,\r\n \"dat_base64\" :\t\"x\" ,\n\"b\":2 }",
			want: "{\"a\":1 ,\r\n \"b\":2 }",
		},
		{
			name: "whitespace before trailing removal",
			in:   "{\"a\":1 , \"dat_base64\":\"x\" \n}",
			want: "{\"a\":1  \n}",
		},
		{
			name: "nested object",
			in:   `{"report":{"raw_data":{"ecg":{"dat_base64":"AAAA","hr":72}}},"x":true}`,
			want: `{"report":{"raw_data":{"ecg":{"hr":72}}},"x":true}`,
		},
		{
			name: "inside arrays",
			in:   `[{"dat_base64":"A"},{"a":[{"b":1,"dat_base64":"B"}]},"dat_base64",3]`,
			want: `[{},{"a":[{"b":1}]},"dat_base64",3]`,
		},
		{
			name: "removed value contains matching key",
			in:   `{"a":1,"dat_base64":{"dat_base64":{"dat_base64":1}},"b":2}`,
			want: `{"a":1,"b":2}`,
		},
		{
			name: "removed value is array of objects",
			in:   `{"dat_base64":[{"x":1},{"dat_base64":2}],"keep":[1,2]}`,
			want: `{"keep":[1,2]}`,
		},
		{name: "escaped key underscore", in: `{"a":1,"dat\u005fbase64":"x"}`, want: `{"a":1}`},
		{name: "escaped key all letters", in: `{"\u0064\u0061\u0074_base64":"x","b":2}`, want: `{"b":2}`},
		{name: "escaped key uppercase hex", in: `{"dat\u005Fbase64":"x"}`, want: `{}`},
		{name: "similar keys kept", in: `{"dat_base64x":1,"Dat_base64":2,"dat_base6":3," dat_base64":4}`, want: `{"dat_base64x":1,"Dat_base64":2,"dat_base6":3," dat_base64":4}`},
		{name: "key text inside string value", in: `{"note":"{\"dat_base64\":\"AAAA\"}","a":1}`, want: `{"note":"{\"dat_base64\":\"AAAA\"}","a":1}`},
		{name: "key text inside key", in: `{"\"dat_base64\"":1}`, want: `{"\"dat_base64\"":1}`},
		{name: "name as value", in: `{"field":"dat_base64","list":["dat_base64"]}`, want: `{"field":"dat_base64","list":["dat_base64"]}`},
		{name: "name as value of removed sibling", in: `{"dat_base64":"dat_base64","k":"dat_base64"}`, want: `{"k":"dat_base64"}`},
		{name: "top-level string", in: `"dat_base64"`, want: `"dat_base64"`},
		{name: "top-level scalar with spaces", in: "  12  ", want: "  12  "},
		{name: "empty object", in: `{ }`, want: `{ }`},
		{
			name: "numbers and escapes preserved",
			in:   `{"n":12345678901234567890.123456789e-3,"s":"caf\u00e9 \/ \n","dat_base64":"x","z":-0.0E+00}`,
			want: `{"n":12345678901234567890.123456789e-3,"s":"caf\u00e9 \/ \n","z":-0.0E+00}`,
		},
		{name: "key order preserved", in: `{"z":1,"a":2,"dat_base64":3,"m":4}`, want: `{"z":1,"a":2,"m":4}`},
		{
			name:  "custom names",
			in:    `{"waveform":"W","dat_base64":"D","keep":{"image":"I","k":1}}`,
			names: []string{"waveform", "image"},
			want:  `{"dat_base64":"D","keep":{"k":1}}`,
		},
		{name: "unicode key", in: `{"é":1,"dat_base64":2}`, names: []string{"é"}, want: `{"dat_base64":2}`},
		{name: "unicode key escaped", in: `{"\u00e9":1,"x":2}`, names: []string{"é"}, want: `{"x":2}`},
		{name: "empty key name", in: `{"":1,"x":2}`, names: []string{""}, want: `{"x":2}`},
		{name: "deeply nested", in: strings.Repeat(`{"a":[`, 200) + `{"dat_base64":1,"b":2}` + strings.Repeat(`]}`, 200), want: strings.Repeat(`{"a":[`, 200) + `{"b":2}` + strings.Repeat(`]}`, 200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := StripLargeFields([]byte(tt.in), tt.names...)
			if err != nil {
				t.Fatalf("StripLargeFields(%q) error: %v", tt.in, err)
			}
			if string(got) != tt.want {
				t.Fatalf("StripLargeFields(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if !json.Valid(got) {
				t.Fatalf("output is not valid JSON: %q", got)
			}
			assertDecodedEqual(t, []byte(tt.in), got, namesOrDefault(tt.names))
		})
	}
}

func TestStripLargeFieldsInvalid(t *testing.T) {
	for _, in := range []string{
		``,
		`   `,
		`{`,
		`{"dat_base64":}`,
		`{"dat_base64":1,}`,
		`{"a":1} {"b":2}`,
		`{"a":1}x`,
		`[1,2`,
		`{'a':1}`,
		`{"a":01}`,
		`{"a":"\x"}`,
		`{"a":NaN}`,
		"{\"a\":\"\x01\"}",
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	} {
		got, err := StripLargeFields([]byte(in))
		if !errors.Is(err, ErrInvalidJSON) {
			t.Errorf("StripLargeFields(%.40q) error = %v, want ErrInvalidJSON", in, err)
		}
		if got != nil {
			t.Errorf("StripLargeFields(%.40q) = %q, want nil output on error", in, got)
		}
	}
}

func TestStripLargeFieldsUnchangedReturnsInput(t *testing.T) {
	in := []byte(`{"a": [1, 2, {"b": "dat_base64"}]}`)
	got, err := StripLargeFields(in)
	if err != nil {
		t.Fatal(err)
	}
	if &got[0] != &in[0] || len(got) != len(in) {
		t.Fatalf("expected the input slice back when nothing is removed")
	}
}

func TestStripLargeFieldsDoesNotModifyInput(t *testing.T) {
	in := []byte(`{"a":1,"dat_base64":"AAAA","b":2}`)
	orig := bytes.Clone(in)
	if _, err := StripLargeFields(in); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(in, orig) {
		t.Fatalf("input modified: %q", in)
	}
}

func TestStripLargeFieldsDefaultNames(t *testing.T) {
	got, err := StripLargeFields([]byte(`{"dat_base64":1,"a":2}`), []string{}...)
	if err != nil || string(got) != `{"a":2}` {
		t.Fatalf("empty names should use LargeFields; got %q, %v", got, err)
	}
}

// TestStripLargeFieldsProperty generates random documents with random
// whitespace and key spellings and checks the output against a decode-delete
// model.
func TestStripLargeFieldsProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		g := &docGen{r: r}
		g.value(0)
		in := g.b.Bytes()
		if !json.Valid(in) {
			t.Fatalf("generator produced invalid JSON: %q", in)
		}
		names := LargeFields
		if i%3 == 0 {
			names = []string{"dat_base64", "k1"}
		}
		got, err := StripLargeFields(in, names...)
		if err != nil {
			t.Fatalf("StripLargeFields(%q): %v", in, err)
		}
		if !json.Valid(got) {
			t.Fatalf("invalid output for %q: %q", in, got)
		}
		assertDecodedEqual(t, in, got, names)
		again, err := StripLargeFields(got, names...)
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("not idempotent for %q: %q then %q (%v)", in, got, again, err)
		}
		if !hasKey(t, in, names) && !bytes.Equal(got, in) {
			t.Fatalf("changed a document without matching keys: %q -> %q", in, got)
		}
	}
}

// docGen writes random JSON with random whitespace and key spellings.
type docGen struct {
	r *rand.Rand
	b bytes.Buffer
}

var genKeys = []string{
	`"dat_base64"`, `"dat\u005fbase64"`, `"\u0064at_base64"`, `"a"`, `"b"`, `"k1"`, `"dat_base64x"`,
	`"\"dat_base64\""`, `"caf\u00e9"`, `""`, `"a"`,
}

var genScalars = []string{
	`1`, `-0.5e+10`, `12345678901234567890.123456789e-3`, `true`, `false`, `null`,
	`"dat_base64"`, `"x\"y"`, `"{\"dat_base64\":1}"`, `"\u00e9"`, `""`, `1E400`,
}

func (g *docGen) ws() {
	switch g.r.IntN(6) {
	case 0:
		g.b.WriteString(" ")
	case 1:
		g.b.WriteString("\n  ")
	case 2:
		g.b.WriteString("\t\r\n")
	}
}

func (g *docGen) value(depth int) {
	k := g.r.IntN(10)
	if depth > 4 {
		k = 9
	}
	switch {
	case k < 4:
		g.b.WriteByte('{')
		g.ws()
		n := g.r.IntN(5)
		for i := 0; i < n; i++ {
			if i > 0 {
				g.ws()
				g.b.WriteByte(',')
				g.ws()
			}
			g.b.WriteString(genKeys[g.r.IntN(len(genKeys))])
			g.ws()
			g.b.WriteByte(':')
			g.ws()
			g.value(depth + 1)
		}
		g.ws()
		g.b.WriteByte('}')
	case k < 6:
		g.b.WriteByte('[')
		g.ws()
		n := g.r.IntN(4)
		for i := 0; i < n; i++ {
			if i > 0 {
				g.ws()
				g.b.WriteByte(',')
				g.ws()
			}
			g.value(depth + 1)
		}
		g.ws()
		g.b.WriteByte(']')
	default:
		g.b.WriteString(genScalars[g.r.IntN(len(genScalars))])
	}
}

func namesOrDefault(names []string) []string {
	if len(names) == 0 {
		return LargeFields
	}
	return names
}

// decodeNumber decodes with UseNumber so number spelling survives the comparison.
func decodeNumber(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return v
}

// deleteKeys is the model: remove the names from every object at any depth.
func deleteKeys(v any, names []string) any {
	switch x := v.(type) {
	case map[string]any:
		for _, n := range names {
			delete(x, n)
		}
		for k, e := range x {
			x[k] = deleteKeys(e, names)
		}
	case []any:
		for i, e := range x {
			x[i] = deleteKeys(e, names)
		}
	}
	return v
}

// hasKey walks the token stream; unlike a decoded map it also sees keys of
// members that a later duplicate key overwrites.
func hasKey(t testing.TB, b []byte, names []string) bool {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	type frame struct{ obj, wantKey bool }
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if n := len(stack); n > 0 && stack[n-1].obj {
			top := &stack[n-1]
			if top.wantKey {
				if key, ok := tok.(string); ok {
					for _, name := range names {
						if key == name {
							return true
						}
					}
					top.wantKey = false
					continue
				}
			} else {
				// This token starts the member's value; the next one is a key.
				top.wantKey = true
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{obj: true, wantKey: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

func assertDecodedEqual(t testing.TB, in, out []byte, names []string) {
	t.Helper()
	want := deleteKeys(decodeNumber(t, in), names)
	got := decodeNumber(t, out)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded output differs from model\n in: %q\nout: %q\ngot:  %#v\nwant: %#v", in, out, got, want)
	}
}

func FuzzStripLargeFields(f *testing.F) {
	for _, s := range []string{
		`{"dat_base64":"AAAA"}`,
		`{"a":1,"dat_base64":"AAAA","b":2}`,
		"{\n  \"a\": 1,\n  \"dat_base64\": \"x\"\n}",
		`{"dat\u005fbase64":1,"dat_base64":2}`,
		`[{"dat_base64":[{"dat_base64":1}]},"dat_base64"]`,
		`{"note":"{\"dat_base64\":1}"}`,
		`{"n":12345678901234567890.123456789e-3}`,
		`{"a":{"b":{"c":{"dat_base64":null,"d":[]}}}}`,
		`{"a":1,}`,
		`"unterminated`,
		``,
		strconv.Quote("dat_base64"),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		orig := bytes.Clone(in)
		got, err := StripLargeFields(in)
		if !bytes.Equal(in, orig) {
			t.Fatalf("input modified")
		}
		if !json.Valid(in) {
			if !errors.Is(err, ErrInvalidJSON) || got != nil {
				t.Fatalf("invalid input %q: got %q, %v", in, got, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("valid input %q: %v", in, err)
		}
		if !json.Valid(got) {
			t.Fatalf("invalid output for %q: %q", in, got)
		}
		again, err := StripLargeFields(got)
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("not idempotent for %q: %q then %q (%v)", in, got, again, err)
		}
		if !hasKey(t, in, LargeFields) && !bytes.Equal(got, in) {
			t.Fatalf("changed a document without matching keys: %q -> %q", in, got)
		}
		assertDecodedEqual(t, in, got, LargeFields)
	})
}

func TestHasKeyHelper(t *testing.T) {
	for in, want := range map[string]bool{
		`{"a":{"dat_base64":1},"a":2}`:                       true,
		`{"a":"dat_base64"}`:                                 false,
		`["dat_base64",{"b":[{"c":{"dat\u005fbase64":0}}]}]`: true,
		`{"a":[{}],"b":{"c":"d"}}`:                           false,
	} {
		if got := hasKey(t, []byte(in), LargeFields); got != want {
			t.Errorf("hasKey(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestScannerOnMalformedInput drives the scanner past validation on every
// prefix and some corruptions, so its defensive paths return errors instead of
// panicking if validation and scanning ever disagree.
func TestScannerOnMalformedInput(t *testing.T) {
	doc := `{"a" : [1, "x\"", {"dat_base64":"A", "b":{}}], "dat\u005fbase64" : null , "c":true}`
	var inputs []string
	for i := 0; i < len(doc); i++ {
		inputs = append(inputs, doc[:i])
	}
	inputs = append(inputs, `{"a" 1}`, `{"a":1 "b":2}`, `[1 2]`, `{1:2}`, `[,]`, `{"a":}`, `"\`)
	for _, in := range inputs {
		s := stripper{data: []byte(in), names: LargeFields}
		if _, err := s.value(s.skipWS(0), true); err == nil {
			t.Errorf("scanner accepted malformed %q", in)
		} else if !errors.Is(err, ErrInvalidJSON) {
			t.Errorf("scanner error %v does not wrap ErrInvalidJSON", err)
		}
	}
}
