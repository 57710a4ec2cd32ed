package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
)

// verdict renders a ParseObject error as a partner sees it: malformed, or
// the validation error's fields and messages.
func verdict(err error) string {
	var v *domain.ValidationError
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrMalformed):
		return "malformed"
	case errors.As(err, &v):
		return fmt.Sprint(v.Fields)
	}
	return "other: " + err.Error()
}

// readNew reads the named fields of a decoded object with every typed
// reader, descending two levels into nested objects and arrays, and renders
// what it got; readRef does the same with the reference decoder.
func readNew(o *Object, names []string, depth int) string {
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "%q has=%v s=%v i=%v b=%v ss=%q is=%v raw=%s t=%v;", k, o.Has(k), o.String(k), o.Int(k), o.Bool(k), o.Strings(k), o.Ints(k), o.Raw(k).Value, o.Time(k, time.UTC))
		if depth < 2 {
			if c := o.Object(k, false); c != nil {
				b.WriteString("{" + readNew(c, names, depth+1) + "}")
			}
			for _, it := range o.Array(k, 3) {
				b.WriteString("[" + readNew(it, names, depth+1) + "]")
			}
		}
	}
	return b.String()
}

func readRef(o *refObject, names []string, depth int) string {
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "%q has=%v s=%v i=%v b=%v ss=%q is=%v raw=%s t=%v;", k, o.Has(k), o.String(k), o.Int(k), o.Bool(k), o.Strings(k), o.Ints(k), o.Raw(k).Value, o.Time(k, time.UTC))
		if depth < 2 {
			if c := o.Object(k, false); c != nil {
				b.WriteString("{" + readRef(c, names, depth+1) + "}")
			}
			for _, it := range o.Array(k, 3) {
				b.WriteString("[" + readRef(it, names, depth+1) + "]")
			}
		}
	}
	return b.String()
}

// FuzzDecoderMatchesTheReference: the one-pass scanner gives every body the
// verdict the token scan plus map decode gave (malformed, or the same
// validation errors), and every typed read of an accepted body returns the
// same value and records the same errors.
func FuzzDecoderMatchesTheReference(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"user":{"name":"a"}}`, `[]`, `{"a":1} {}`, `{} {"a":1,"a":2}`, `1{"a":1,"a":1}`, `truefalse`, `{"a":01}`,
		`{"a":[{"b":null}]}`, "\xff", `{"n":1e400}`, `{"a":1,"a":2}`, `{"s":"\u0000"}`, `{"s":"\ud800"}`,
		`{"r":{"x":[{"y":1,"y":2}]}}`, `{"a":"x","\u0061":"y"}`, `{"\ud800":1,"\ufffd":2}`, `{"a":1,}`, `[1,]`, `{"a" 1}`,
		`{"b":true,"n":-0.5e+3,"l":["a",null,"\n"],"i":[1,2.0,-3],"o":{"a":{}},"t":"2026-01-02T03:04:05Z"}`,
		`{"a":1`, `{"a":tru}`, `{"a":1,"a":tr`, " \f{}", `{"":{"":1,"":2}}`, `[[1],[2,{"k":1,"k":2}]]`,
		`{"a":"\u00e9\t","b":"é"}`, `{"x":-}`, `{"x":1.}`, `{"x":1e}`, `{"x":"\x"}`, `null`, `{"a":[1 2]}`,
		strings.Repeat(`[`, MaxDepth+1), strings.Repeat(`{"a":`, MaxDepth) + `[{"b":1,"b":2}]`,
		`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k3":3}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		o, err := ParseObject(body)
		ref, refErr := refParseObject(body)
		if got, want := verdict(err), verdict(refErr); got != want {
			t.Fatalf("body %q: verdict %s, the reference decoder's %s", body, got, want)
		}
		if err != nil {
			return
		}
		names := []string{"a", "b", "x", "", "k", "k16"}
		for k := range ref.fields {
			if len(names) < 10 {
				names = append(names, k)
			}
		}
		if got, want := readNew(o, names, 0), readRef(ref, names, 0); got != want {
			t.Fatalf("body %q: reads\n%s\nthe reference decoder's\n%s", body, got, want)
		}
		var gotF, wantF map[string][]string
		var v *domain.ValidationError
		if errors.As(o.Err(), &v) {
			gotF = v.Fields
		}
		if errors.As(ref.Err(), &v) {
			wantF = v.Fields
		}
		if !reflect.DeepEqual(gotF, wantF) {
			t.Fatalf("body %q: read errors %v, the reference decoder's %v", body, gotF, wantF)
		}
	})
}

// TestRawDoesNotAliasTheBody: a handler may keep raw_data after the
// request's buffer is gone or reused.
func TestRawDoesNotAliasTheBody(t *testing.T) {
	body := []byte(`{"raw_data":{"v":1}}`)
	o, err := ParseObject(body)
	if err != nil {
		t.Fatal(err)
	}
	raw := o.Raw("raw_data").Value
	copy(body, strings.Repeat("x", len(body)))
	if string(raw) != `{"v":1}` || !json.Valid(raw) {
		t.Fatalf("raw_data changed with the body: %s", raw)
	}
}

// BenchmarkParseObject decodes a register body and reads its fields as the
// handler does, with the one-pass scanner ("scan") and with the reference
// decoder ("reference", a token scan plus a map decode); compare the two.
func BenchmarkParseObject(b *testing.B) {
	body := []byte(`{"channel_user_id":"bench-123456","user":{"name":"n","phone":"13812345678","gender":"MALE","birthday":"1990-01-02"},"metadata":{"source":"app","campaign":"winter"}}`)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			o, err := ParseObject(body)
			if err != nil {
				b.Fatal(err)
			}
			o.RequiredString("channel_user_id")
			u := o.Object("user", true)
			u.String("name")
			u.String("phone")
			u.String("gender")
			u.String("birthday")
			if o.Err() != nil {
				b.Fatal(o.Err())
			}
		}
	})
	// A register as partners send it (e2e/harness.RegisterBody): nested
	// objects in arrays, read field by field.
	register := []byte(`{"channel_user_id":"u-1","user":{"name":"李雷","phone":"13812345678","gender":"male","birth_date":"1990-05-01","email":"li@example.cn"},` +
		`"family_groups":[{"app_group_id":10,"name":"Home"}],` +
		`"family_members":[{"app_user_id":"self","app_group_id":10,"name":"李雷","relationship":"SELF","height":175,"weight":7000,"id_type":"ID_CARD","id_number":"110101199005010000","is_default":true},` +
		`{"app_user_id":"wife","app_group_id":10,"name":"韩梅梅","relationship":"SPOUSE","blood_type":"AB"}]}`)
	b.Run("register", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			o, err := ParseObject(register)
			if err != nil {
				b.Fatal(err)
			}
			o.RequiredString("channel_user_id")
			u := o.Object("user", true)
			for _, f := range []string{"name", "nickname", "gender", "avatar", "phone", "email", "birth_date"} {
				u.String(f)
			}
			for _, g := range o.Array("family_groups", 100) {
				g.RequiredInt("app_group_id")
				g.RequiredString("name")
			}
			for _, m := range o.Array("family_members", 100) {
				m.RequiredString("app_user_id")
				m.RequiredInt("app_group_id")
				for _, f := range []string{"name", "relationship", "gender", "birth_date", "phone", "id_type", "id_number", "blood_type"} {
					m.String(f)
				}
				m.Int("height")
				m.Int("weight")
				m.Bool("is_default")
			}
			o.CheckUnknown()
			if o.Err() != nil {
				b.Fatal(o.Err())
			}
		}
	})
	b.Run("reference", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			o, err := refParseObject(body)
			if err != nil {
				b.Fatal(err)
			}
			o.RequiredString("channel_user_id")
			u := o.Object("user", true)
			u.String("name")
			u.String("phone")
			u.String("gender")
			u.String("birthday")
			if o.Err() != nil {
				b.Fatal(o.Err())
			}
		}
	})
}
