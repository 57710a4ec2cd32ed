package jsoncodec

import (
	"bytes"
	"encoding/json"
	"testing"
)

// fields read by the tests, as the reference struct below declares them.
var testFields = []Field{{Name: "id", Kind: Int64}, {Name: "name", Kind: String}}

type reference struct {
	ID   *int64 `json:"id"`
	Name string `json:"name"`
}

// agree checks Pick against json.Unmarshal for one document: when Pick
// decides, it gives the fields and the error json.Unmarshal gives.
func agree(t *testing.T, data []byte) bool {
	t.Helper()
	var out [2]Picked
	ok := Pick(data, testFields, out[:])
	if !ok {
		return false
	}
	if !json.Valid(data) {
		t.Fatalf("%q: decided a document encoding/json rejects", data)
	}
	var ref reference
	err := json.Unmarshal(data, &ref)
	var want int64
	if ref.ID != nil {
		want = *ref.ID
	}
	if out[0].N != want {
		t.Fatalf("%q: id %d, encoding/json %d", data, out[0].N, want)
	}
	if mismatch := out[0].Mismatch || out[1].Mismatch; mismatch != (err != nil) {
		t.Fatalf("%q: mismatch %v, encoding/json's error %v", data, mismatch, err)
	}
	var name []byte
	if raw := out[1].Raw(data); raw != nil {
		name = Unquote(nil, raw)
	}
	if string(name) != ref.Name {
		t.Fatalf("%q: name %q, encoding/json %q", data, name, ref.Name)
	}
	return true
}

// The cases encoding/json decides in ways a naive reader would not: case-
// insensitive keys, the last duplicate winning, null resetting a pointer
// but not a string, values of the wrong type leaving the field as it was.
func TestPickDecidesAsEncodingJSON(t *testing.T) {
	for _, c := range []struct {
		doc     string
		decided bool
	}{
		{`{"id":7,"name":"a"}`, true},
		{` { "ID" : 7 , "Name" : "a" } `, true},
		{`{"iD":7,"id":8}`, true},
		{`{"id":7,"id":null}`, true},
		{`{"id":7,"id":1.5}`, true},
		{`{"id":7,"id":"8"}`, true},
		{`{"id":7,"id":{"id":9}}`, true},
		{`{"id":9223372036854775807}`, true},
		{`{"id":9223372036854775808}`, true},
		{`{"id":-9223372036854775808}`, true},
		{`{"id":-0}`, true},
		{`{"id":1e2}`, true},
		{`{"name":"a","name":null}`, true},
		{`{"name":"a","name":5}`, true},
		{`{"name":"\u00e9\ud83d\ude00\ud800x\\\"\/\b\f\n\r\t"}`, true},
		{"{\"name\":\"\xff\xfe ok\"}", true},
		{`{"nested":{"id":5,"x":[1,{"id":6}]},"id":2}`, true},
		{`{}`, true},
		{`{"i\u0064":7}`, false},              // an escaped key: encoding/json unescapes it
		{"{\"\u0131d\":7}", false},            // dotless i: Unicode folding
		{`[{"id":7}]`, false},                 // not an object
		{`{"id":7}x`, false},                  // trailing bytes: invalid
		{`{"id":07}`, false},                  // invalid number
		{`{"id":7,}`, false},                  // invalid
		{`{"name":"a` + "\x01" + `"}`, false}, // control byte in a string
		{`{"id":tru}`, false},
	} {
		if got := agree(t, []byte(c.doc)); got != c.decided {
			t.Errorf("%q: decided %v, want %v", c.doc, got, c.decided)
		}
	}
}

// Deeper than maxDepth the reader declines; at maxDepth it decides.
func TestPickDepth(t *testing.T) {
	doc := func(depth int) []byte {
		return []byte(`{"x":` + string(bytes.Repeat([]byte("["), depth)) + "1" + string(bytes.Repeat([]byte("]"), depth)) + `,"id":3}`)
	}
	if !agree(t, doc(maxDepth)) {
		t.Fatal("declined a document at the depth it follows")
	}
	if agree(t, doc(maxDepth+1)) {
		t.Fatal("decided a document deeper than it follows")
	}
}

func FuzzPick(f *testing.F) {
	for _, s := range []string{`{"id":7,"name":"a"}`, `{"ID":7,"id":null}`, `{"id":1.5,"name":"\u00e9"}`, `{"x":[{"id":1}],"id":-3}`, `{"name":"a","name":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var out [2]Picked
		if !Pick(data, testFields, out[:]) {
			return
		}
		agree(t, data)
	})
}
