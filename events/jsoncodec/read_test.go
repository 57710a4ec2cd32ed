package jsoncodec_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events/jsoncodec"
)

// every is a struct with a field of each kind the Reader reads; an unknown
// key "x" is skipped, as encoding/json skips it.
type every struct {
	S  string     `json:"s"`
	SP *string    `json:"sp"`
	L  []string   `json:"l"`
	I  int64      `json:"i"`
	IP *int64     `json:"ip"`
	N  int        `json:"n"`
	U  uint64     `json:"u"`
	B  bool       `json:"b"`
	T  time.Time  `json:"t"`
	TP *time.Time `json:"tp"`
	O  struct {
		S string `json:"s"`
	} `json:"o"`
}

func readEvery(data []byte) (*every, bool) {
	v := &every{}
	ok := jsoncodec.ReadObjectString(string(data), func(key string, r *jsoncodec.Reader) bool {
		switch key {
		case "s":
			return r.String(&v.S)
		case "sp":
			return r.StringPtr(&v.SP)
		case "l":
			return r.Strings(&v.L)
		case "i":
			return r.Int(&v.I)
		case "ip":
			return r.IntPtr(&v.IP)
		case "n":
			return r.IntTo(&v.N)
		case "u":
			return r.Uint(&v.U)
		case "b":
			return r.Bool(&v.B)
		case "t":
			return r.Time(&v.T)
		case "tp":
			return r.TimePtr(&v.TP)
		case "o":
			return r.Object(func(key string, r *jsoncodec.Reader) bool { return key == "s" && r.String(&v.O.S) })
		case "x":
			return r.Skip()
		}
		return false
	})
	return v, ok
}

// readSame checks the Reader against json.Unmarshal on data: when the
// Reader decides, encoding/json accepts data and gives the same values.
func readSame(t *testing.T, data []byte) bool {
	t.Helper()
	got, ok := readEvery(data)
	if !ok {
		return false
	}
	var want every
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("%q: the Reader decided, encoding/json: %v", data, err)
	}
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("%q:\nReader        %#v\nencoding/json %#v", data, *got, want)
	}
	return true
}

// The Reader decides what it reads exactly as encoding/json does, strings
// with escapes, invalid UTF-8 and lone surrogates included, and declines
// what it does not follow.
func TestReaderDecidesAsEncodingJSON(t *testing.T) {
	for _, c := range []struct {
		doc     string
		decided bool
	}{
		{`{"s":"a","sp":"b","l":["c","d"],"i":-7,"ip":8,"n":9,"u":18446744073709551615,"b":true,"t":"2026-01-02T03:04:05.5+08:00","tp":null,"o":{"s":"e"}}`, true},
		{` { "s" : "\u00e9\ud83d\ude00\ud800x\\\"\/\b\f\n\r\t" , "l" : [ ] , "x" : [1, 2.5, {"y": null}] } `, true},
		{"{\"s\":\"\xff\xfe ok\",\"sp\":\"\\udc00\\ud800\"}", true},
		{`{"l":null,"sp":null,"ip":null}`, true},
		{`{}`, true},
		{`{"s":null}`, false},        // null into a string: encoding/json keeps the value
		{`{"S":"a"}`, false},         // another case of a key
		{`{"s":"a","s":"b"}`, false}, // a duplicate
		{`{"y":1}`, false},           // an unknown key
		{`{"i":1.0}`, false},
		{`{"i":-0}`, false},
		{`{"i":01}`, false},
		{`{"u":-1}`, false},
		{`{"n":9223372036854775808}`, false},
		{`{"t":"2026-01-02T03:04:05\u005a"}`, false},
		{`{"s":"a"} x`, false},
		{`{"s":"a` + "\x01" + `"}`, false},
		{`{"x":[1,}`, false},
		// Past 64 bytes an escaped string unquotes into a buffer of its
		// raw length: a JSON document as a string, as many escapes as it
		// leaves the buffer a quarter empty, and more than its raw length
		// (each invalid byte becomes U+FFFD's three).
		{`{"s":"` + strings.Repeat(`{\"event\":\"user.registered\",\"open_user_id\":7}`, 4) + `"}`, true},
		{`{"s":"` + strings.Repeat(`\u00e9\n`, 12) + `"}`, true},
		{"{\"s\":\"\\t" + strings.Repeat("\xff", 70) + "\"}", true},
	} {
		if got := readSame(t, []byte(c.doc)); got != c.decided {
			t.Errorf("%q: decided %v, want %v", c.doc, got, c.decided)
		}
	}
}

// FuzzReaderMatchesEncodingJSON: on any bytes, the Reader either declines
// or gives encoding/json's values (every string rule, skipped values and
// numbers included).
func FuzzReaderMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"s":"a","sp":"b","l":["c"],"i":-7,"ip":8,"n":9,"u":1,"b":false,"t":"2026-01-02T03:04:05Z","tp":"2026-01-02T03:04:05.123+01:00","o":{"s":"e"}}`,
		`{"s":"\ud83d\ude00\ud800\u0041","x":{"a":[true,null,-1e5]}}`, "{\"s\":\"\xf0\x9f\"}", `{"l":[],"sp":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { readSame(t, data) })
}

// A long escaped string (a webhook's body in a delivery's event) decodes
// in one allocation, the string's, not grown through a buffer and copied;
// so does one whose decoding fills the Reader's stack buffer to its last
// bytes (1,016 plain bytes, then a word of 7 and an escape) or passes it.
func TestReaderUnquotesALongStringInOneAllocation(t *testing.T) {
	for _, value := range []string{
		strings.Repeat(`{\"event\":\"user.registered\",\"open_user_id\":7}`, 16),
		strings.Repeat("a", 1016) + "bbbbbbb" + `\u00e9` + "c",
		strings.Repeat("a", 1016) + "bbbbbbb" + `\ud83d\ude00` + strings.Repeat("c", 3000),
	} {
		doc := `{"s":"` + value + `"}`
		var want string
		if err := json.Unmarshal([]byte(`"`+value+`"`), &want); err != nil {
			t.Fatal(err)
		}
		var got string
		read := func(key string, r *jsoncodec.Reader) bool { return r.String(&got) }
		if !jsoncodec.ReadObjectString(doc, read) || got != want {
			t.Fatalf("read %q", got)
		}
		if n := testing.AllocsPerRun(100, func() { jsoncodec.ReadObjectString(doc, read) }); n != 2 {
			t.Errorf("%d bytes: %v allocations per document, want 2: the Reader and the string", len(value), n)
		}
	}
}

// BenchmarkReaderStrings reads a document of a delivery's shape: short
// keys and identifiers, a timestamp, and a webhook's body (an escaped JSON
// document of about 700 bytes, as a third of a rebuilt log's events hold):
//
//	go test -run '^$' -bench ReaderStrings -benchmem ./events/jsoncodec
func BenchmarkReaderStrings(b *testing.B) {
	body := `{"event_id":"0b8e5c1e-6f0e-4c55-9d8a-0f8d2b7c1a11","event_type":"user.family_member.updated","app_id":3,` +
		`"open_user_id":7,"occurred_at":"2026-11-24T01:02:03.456789Z","data":{"channel_user_id":"u-1","open_user_id":7,` +
		`"member":{"member_id":31,"app_user_id":"m-3","app_group_id":10,"family_group_id":12,"name":"n-1234",` +
		`"relationship":"SON","gender":null,"birth_date":null,"phone":"13812345678","id_type":null,"id_number":null,` +
		`"height":172,"weight":null,"blood_type":null,"is_default":false},"changed":["name"]}}`
	quoted, _ := json.Marshal(body)
	doc := `{"s":` + string(quoted) + `,"sp":"5d3c8f0a-6a8e-4d7e-9f2b-1c1a2b3c4d5e","l":["user.family_member.updated","user-7"],` +
		`"t":"2026-11-24T01:02:03.456789Z","x":{"commit":123456,"prepare":123456,"stream":"user-7"}}`
	if v, ok := readEvery([]byte(doc)); !ok || v.S != body {
		b.Fatalf("read %v: %+v", ok, v)
	}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		readEvery([]byte(doc))
	}
}
