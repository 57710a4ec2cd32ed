package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/healthtech/partner-open-platform/domain"
)

func TestObjectCollectsTypeErrorsByPath(t *testing.T) {
	o, err := ParseObject([]byte(`{"a":"x","n":1.5,"b":"yes","u":{"phone":1},"list":[{"id":"1"},3]}`))
	if err != nil {
		t.Fatal(err)
	}
	o.RequiredInt("a")
	o.Int("n")
	o.Bool("b")
	o.Object("u", true).String("phone")
	for _, it := range o.Array("list", 0) {
		it.Int("id")
	}
	o.RequiredString("missing")
	var v *domain.ValidationError
	if !errors.As(o.Err(), &v) {
		t.Fatalf("err %v", o.Err())
	}
	for _, f := range []string{"a", "n", "b", "u.phone", "list[0].id", "list[1]", "missing"} {
		if !v.Has(f) {
			t.Errorf("no error for %s in %v", f, v.Fields)
		}
	}
}

func TestIntAcceptsWholeFloatsOnly(t *testing.T) {
	o, _ := ParseObject([]byte(`{"a":3.0,"b":1e3,"c":9007199254740991,"d":-0,"e":-9007199254740991}`))
	if got := o.Int("a"); got.Value != 3 {
		t.Fatal(got)
	}
	if got := o.Int("b"); got.Value != 1000 {
		t.Fatal(got)
	}
	if got := o.Int("c"); got.Value != 9007199254740991 {
		t.Fatal(got)
	}
	if got := o.Int("e"); got.Value != -9007199254740991 {
		t.Fatal(got)
	}
	if o.Int("d"); o.Err() != nil {
		t.Fatal(o.Err())
	}
}

// Integers beyond 2^53-1 are not exact in every client, so they are refused
// however they are written (the float path once refused 9007199254740993.0
// while the integer path accepted 9007199254740993).
func TestIntRefusesNumbersBeyond2To53(t *testing.T) {
	for _, n := range []string{"9007199254740992", "9007199254740993", "-9007199254740993", "9007199254740992.0", "9.007199254740993e15", "9223372036854775807", "1e300"} {
		o, _ := ParseObject([]byte(`{"n":` + n + `,"list":[` + n + `]}`))
		if got := o.Int("n"); got.Set {
			t.Errorf("Int accepted %s as %d", n, got.Value)
		}
		if got := o.Ints("list"); len(got) != 0 {
			t.Errorf("Ints accepted %s as %v", n, got)
		}
		var v *domain.ValidationError
		if !errors.As(o.Err(), &v) || !v.Has("n") || !v.Has("list[0]") {
			t.Errorf("%s: err %v", n, o.Err())
			continue
		}
		// They are integers: the message names the range, not the type.
		if got := v.Fields["n"]; len(got) != 1 || got[0] != intRange {
			t.Errorf("%s: n %v, want %q", n, got, intRange)
		}
		if got := v.Fields["list[0]"]; len(got) != 1 || got[0] != intRange {
			t.Errorf("%s: list[0] %v, want %q", n, got, intRange)
		}
	}
}

// FuzzParseObject: any bytes either fail as ErrMalformed or yield an object
// whose typed reads never panic and agree with encoding/json on validity.
func FuzzParseObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"user":{"name":"a"}}`, `[]`, `{"a":1} {}`, `{"a":[{"b":null}]}`, "\xff", `{"n":1e400}`, `{"a":1,"a":2}`, `{"s":"\u0000"}`, `{"s":"\ud800"}`, `{"r":{"x":[{"y":1,"y":2}]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		o, err := ParseObject(body)
		if err != nil {
			var v *domain.ValidationError
			if !errors.Is(err, ErrMalformed) && !errors.As(err, &v) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if !utf8.Valid(body) {
			t.Fatalf("accepted invalid UTF-8 %q", body)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) != nil {
			t.Fatalf("accepted %q that encoding/json rejects", body)
		}
		for k := range m {
			o.String(k)
			o.Int(k)
			o.Bool(k)
			o.Strings(k)
			if c := o.Object(k, false); c != nil {
				c.String("x")
			}
			for _, it := range o.Array(k, 0) {
				it.Int("x")
			}
			if f := o.String(k); f.Set && !f.Null && strings.ContainsRune(f.Value, 0) {
				t.Fatalf("String(%q) returned U+0000 from %q", k, body)
			}
		}
		_ = o.Err()
	})
}

func TestStrictBodies(t *testing.T) {
	deep := strings.Repeat(`{"a":`, MaxDepth) + `1` + strings.Repeat(`}`, MaxDepth)
	tooDeep := strings.Repeat(`{"a":`, MaxDepth+1) + `1` + strings.Repeat(`}`, MaxDepth+1)
	for _, c := range []struct {
		name, body, field string // field "" means accepted
	}{
		{"duplicate top-level key", `{"open_user_id":1,"open_user_id":2}`, "open_user_id"},
		{"duplicate nested key", `{"user":{"name":"a","name":"b"}}`, "user.name"},
		{"duplicate key inside an array", `{"raw_data":{"indicators":[{"code":"x"},{"code":"a","code":"b"}]}}`, "raw_data.indicators[1].code"},
		{"same key in sibling objects", `{"a":{"k":1},"b":{"k":1},"c":[{"k":1},{"k":2}]}`, ""},
		{"invalid UTF-8", "{\"name\":\"a\xff\"}", "body"},
		{"invalid UTF-8 in raw data", "{\"raw_data\":{\"v\":\"\xc3\x28\"}}", "body"},
		{"deepest accepted nesting", deep, ""},
		{"one level deeper", tooDeep, strings.TrimSuffix(strings.Repeat("a.", MaxDepth), ".")},
		{"escapes are fine in raw values", `{"raw_data":{"v":"\u0000\ud800"}}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseObject([]byte(c.body))
			if c.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var v *domain.ValidationError
			if !errors.As(err, &v) || !v.Has(c.field) {
				t.Fatalf("err = %v, want a validation error on %s", err, c.field)
			}
		})
	}
}

func TestStringsRefuseNULAndLoneSurrogates(t *testing.T) {
	o, err := ParseObject([]byte(`{"nul":"A\u0000B","high":"\ud83d","low":"x\ude00","pair":"\ud83d\ude00","twohigh":"\ud83d\ud83d","list":["ok","\u0000"],"plane":"\u4e2d😀\uffff"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"nul", "high", "low", "twohigh"} {
		if f := o.String(bad); f.Set {
			t.Errorf("%s accepted as %q", bad, f.Value)
		}
	}
	o.Strings("list")
	if got := o.String("pair").Value; got != "\U0001F600" {
		t.Errorf("pair = %q", got)
	}
	if got := o.String("plane").Value; got != "\u4e2d\U0001F600\uffff" {
		t.Errorf("plane = %q", got)
	}
	var v *domain.ValidationError
	if !errors.As(o.Err(), &v) {
		t.Fatal(o.Err())
	}
	for _, f := range []string{"nul", "high", "low", "twohigh", "list[1]"} {
		if !v.Has(f) {
			t.Errorf("no error on %s: %v", f, v.Fields)
		}
	}
	if v.Has("pair") || v.Has("plane") {
		t.Errorf("valid text refused: %v", v.Fields)
	}
}

func TestArraysAreCapped(t *testing.T) {
	items := strings.TrimSuffix(strings.Repeat(`{},`, 101), ",")
	o, err := ParseObject([]byte(`{"groups":[` + items + `],"few":[{},{}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := o.Array("groups", 100); got != nil {
		t.Fatalf("101 items accepted under a cap of 100")
	}
	if got := o.Array("few", 100); len(got) != 2 {
		t.Fatalf("few = %d", len(got))
	}
	var v *domain.ValidationError
	if !errors.As(o.Err(), &v) || !v.Has("groups") {
		t.Fatalf("err = %v", o.Err())
	}
}

// Arrays under fields the route does not read are capped like the ones it
// reads: at MaxArrayItems elements, at any depth, named by their path; a
// read field (raw data) and arrays within the cap are not refused.
func TestArraysUnderUnknownFieldsAreCapped(t *testing.T) {
	list := func(n int, item string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
	}
	over, atCap := list(MaxArrayItems+1, "1"), list(MaxArrayItems, "1")
	body := `{"name":"x","extra":` + over + `,"nested":{"deep":[{"more":` + over + `}]},"fine":` + atCap +
		`,"raw_data":` + over + `,"members":[{"name":"m","junk":` + over + `}]}`
	o, err := ParseObject([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	o.String("name")
	o.Raw("raw_data")
	for _, m := range o.Array("members", 10) {
		m.String("name")
	}
	o.CheckUnknown()
	var v *domain.ValidationError
	if !errors.As(o.Err(), &v) {
		t.Fatalf("err = %v", o.Err())
	}
	want := []string{"extra", "nested.deep[0].more", "members[0].junk"}
	for _, f := range want {
		if !v.Has(f) {
			t.Errorf("no error on %s: %v", f, v.Fields)
		}
	}
	for _, f := range []string{"fine", "raw_data", "name", "members"} {
		if v.Has(f) {
			t.Errorf("%s refused: %v", f, v.Fields)
		}
	}
	if len(v.Fields) != len(want) {
		t.Errorf("errors %v, want exactly %v", v.Fields, want)
	}

	ok, err := ParseObject([]byte(`{"name":"x","extra":` + atCap + `}`))
	if err != nil {
		t.Fatal(err)
	}
	ok.String("name")
	ok.CheckUnknown()
	if err := ok.Err(); err != nil {
		t.Fatalf("an unknown array at the cap refused: %v", err)
	}
}

// An object of more than 64 fields tracks the read ones past the 64th too.
func TestCheckUnknownPastSixtyFourFields(t *testing.T) {
	over := "[" + strings.TrimSuffix(strings.Repeat("1,", MaxArrayItems+1), ",") + "]"
	var b strings.Builder
	b.WriteString("{")
	for i := 0; i < 70; i++ {
		fmt.Fprintf(&b, `"f%d":%s,`, i, over)
	}
	b.WriteString(`"last":1}`)
	o, err := ParseObject([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 70; i += 2 { // the even ones are known (raw data)
		o.Raw(fmt.Sprintf("f%d", i))
	}
	o.CheckUnknown()
	var v *domain.ValidationError
	if !errors.As(o.Err(), &v) {
		t.Fatalf("err = %v", o.Err())
	}
	for i := 0; i < 70; i++ {
		if got, want := v.Has(fmt.Sprintf("f%d", i)), i%2 == 1; got != want {
			t.Errorf("f%d refused = %v, want %v", i, got, want)
		}
	}
}
