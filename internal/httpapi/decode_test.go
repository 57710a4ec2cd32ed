package httpapi

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/healthtech/partner-open-platform/commands"
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
	for _, it := range o.Array("list") {
		it.Int("id")
	}
	o.RequiredString("missing")
	var v *commands.ValidationError
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
	o, _ := ParseObject([]byte(`{"a":3.0,"b":1e3,"c":9007199254740993,"d":-0}`))
	if got := o.Int("a"); got.Value != 3 {
		t.Fatal(got)
	}
	if got := o.Int("b"); got.Value != 1000 {
		t.Fatal(got)
	}
	if got := o.Int("c"); got.Value != 9007199254740993 {
		t.Fatal(got)
	}
	if o.Int("d"); o.Err() != nil {
		t.Fatal(o.Err())
	}
}

// FuzzParseObject: any bytes either fail as ErrMalformed or yield an object
// whose typed reads never panic and agree with encoding/json on validity.
func FuzzParseObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"user":{"name":"a"}}`, `[]`, `{"a":1} {}`, `{"a":[{"b":null}]}`, "\xff", `{"n":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		o, err := ParseObject(body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("unexpected error %v", err)
			}
			return
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
			for _, it := range o.Array(k) {
				it.Int("x")
			}
		}
		_ = o.Err()
	})
}
