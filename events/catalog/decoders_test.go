package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/healthtech/partner-open-platform/events"
)

// The direct decoders must give exactly what encoding/json gives: for any
// bytes, either they leave the input undecided (and the registry asks
// encoding/json), or encoding/json succeeds on it too with a deep-equal
// payload. The registry as a whole must match encoding/json on error-or-not
// and on the payload for every catalog type.

// payloadType is the Go type the registry decodes an event type into.
func payloadType(t *testing.T, name string) reflect.Type {
	t.Helper()
	for _, p := range Payloads() {
		if p.EventType() == name {
			return reflect.TypeOf(p)
		}
	}
	t.Fatalf("%s is not in the catalog", name)
	return nil
}

// currentMeta is metadata at the registry's current schema of typ, so no
// upcaster changes the data between the two decoders compared.
func currentMeta(t *testing.T, reg *events.Registry, typ reflect.Type) []byte {
	t.Helper()
	ev, err := reg.Encode(reflect.New(typ).Elem().Interface().(events.Payload), events.Metadata{})
	if err != nil {
		t.Fatal(err)
	}
	return ev.Meta
}

// directNames lists the event types with a direct decoder, in a fixed order
// so a fuzz input's type index means the same type in every run.
func directNames() []string {
	names := make([]string, 0, len(directDecoders))
	for n := range directDecoders {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// checkSame compares the registry's and the direct decoder's results on
// data with encoding/json's, failing the test on any difference.
func checkSame(t *testing.T, reg *events.Registry, name string, typ reflect.Type, data []byte) (directOK bool) {
	t.Helper()
	want := reflect.New(typ)
	wantErr := json.Unmarshal(data, want.Interface())
	if d := directDecoders[name]; d != nil {
		p, ok := d(data)
		if ok {
			directOK = true
			if wantErr != nil {
				t.Fatalf("%s: direct decoder accepted %q, encoding/json refused it: %v", name, data, wantErr)
			}
			if !reflect.DeepEqual(p, want.Interface()) {
				t.Fatalf("%s: direct decoder of %q gave\n%#v\nencoding/json\n%#v", name, data, p, want.Interface())
			}
		}
	}
	env, err := reg.Decode(events.Recorded{ID: "e1", Type: name, Data: data, Meta: currentMeta(t, reg, typ)})
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%s: registry error %v, encoding/json error %v, on %q", name, err, wantErr, data)
	}
	if err == nil && !reflect.DeepEqual(env.Payload, want.Interface()) {
		t.Fatalf("%s: registry decoded %q as\n%#v\nencoding/json\n%#v", name, data, env.Payload, want.Interface())
	}
	return directOK
}

// Strings that exercise encoding/json's escaping: HTML characters, quotes,
// control characters, line separators, astral runes and invalid UTF-8
// (which json.Marshal writes as U+FFFD).
var stringPieces = []string{"", "a", "Zoë", "<b>&amp;</b>", `"`, `\`, "\n\t", "\u2028\u2029", "😀", "\x7f", "\xff\xfe", "null", "1", " ", "渡辺", "/", "\u0000"}

// randomValue fills v (settable) with a random value of its type.
func randomValue(rng *rand.Rand, v reflect.Value, depth int) {
	if v.Type() == reflect.TypeOf(time.Time{}) {
		sec := rng.Int64N(253402300799-(-62135596800)) - 62135596800
		tm := time.Unix(sec, rng.Int64N(1e9)*int64(rng.IntN(2)))
		switch rng.IntN(3) {
		case 0:
			tm = tm.UTC()
		case 1:
			tm = tm.In(time.FixedZone("", (rng.IntN(48)-24)*1800))
		}
		if y := tm.Year(); y < 0 || y > 9999 {
			tm = time.Unix(sec%1e9, 0).UTC()
		}
		v.Set(reflect.ValueOf(tm))
		return
	}
	if v.Type() == reflect.TypeOf(json.RawMessage(nil)) {
		v.Set(reflect.ValueOf(json.RawMessage(`{"k":[1,"x"]}`)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		var b strings.Builder
		for n := rng.IntN(4); n > 0; n-- {
			b.WriteString(stringPieces[rng.IntN(len(stringPieces))])
		}
		v.SetString(b.String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		ints := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, rng.Int64(), rng.Int64N(1000)}
		n := ints[rng.IntN(len(ints))]
		v.SetInt(n)
		if v.Int() != n {
			v.SetInt(n % 100)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n := []uint64{0, 1, math.MaxUint64, rng.Uint64()}[rng.IntN(4)]
		v.SetUint(n)
		if v.Uint() != n {
			v.SetUint(n % 100)
		}
	case reflect.Float32, reflect.Float64:
		v.SetFloat([]float64{0, 1.5, -2, 1e300}[rng.IntN(4)])
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 1)
	case reflect.Pointer:
		if depth < 4 && rng.IntN(3) > 0 {
			p := reflect.New(v.Type().Elem())
			randomValue(rng, p.Elem(), depth+1)
			v.Set(p)
		}
	case reflect.Slice:
		switch n := rng.IntN(4); {
		case n == 0 || depth >= 4:
		default:
			s := reflect.MakeSlice(v.Type(), n-1, n-1)
			for i := 0; i < n-1; i++ {
				randomValue(rng, s.Index(i), depth+1)
			}
			v.Set(s)
		}
	case reflect.Map:
		if depth < 4 && rng.IntN(2) == 1 {
			m := reflect.MakeMap(v.Type())
			for n := rng.IntN(3); n > 0; n-- {
				k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
				randomValue(rng, k, depth+1)
				randomValue(rng, e, depth+1)
				m.SetMapIndex(k, e)
			}
			v.Set(m)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				randomValue(rng, v.Field(i), depth+1)
			}
		}
	}
}

// Mutations of encoding/json's output that a decoder must treat exactly as
// encoding/json does: keys in another case, duplicated and unknown members,
// nulls, escapes, invalid UTF-8, numbers that are not canonical or do not
// fit, wrong types, white space and truncation. Each applies at the k-th
// place it can (so nested objects are reached), or returns nil.
var (
	keyRE    = regexp.MustCompile(`"([a-z_]+)":`)
	strRE    = regexp.MustCompile(`:"([^"\\]*)"`)
	numRE    = regexp.MustCompile(`:(-?[0-9]+)`)
	boolRE   = regexp.MustCompile(`:(true|false)`)
	memberRE = regexp.MustCompile(`[{,]("[a-z_]+":(?:-?[0-9]+|"[^"\\]*"|true|false|null))`)
)

func replaceNth(re *regexp.Regexp, data []byte, k int, with func(m []byte) []byte) []byte {
	locs := re.FindAllSubmatchIndex(data, -1)
	if k >= len(locs) {
		return nil
	}
	l := locs[k]
	out := append([]byte(nil), data[:l[2]]...)
	out = append(out, with(data[l[2]:l[3]])...)
	return append(out, data[l[3]:]...)
}

var mutations = []func(data []byte, k int) []byte{
	func(d []byte, k int) []byte { // key in upper case: encoding/json matches it case-insensitively
		return replaceNth(keyRE, d, k, bytes.ToUpper)
	},
	func(d []byte, k int) []byte { // key with its first letter in upper case
		return replaceNth(keyRE, d, k, func(m []byte) []byte { return append(bytes.ToUpper(m[:1]), m[1:]...) })
	},
	func(d []byte, k int) []byte { // a key escaped
		return replaceNth(keyRE, d, k, func(m []byte) []byte { return append([]byte(`\u00`+fmt.Sprintf("%x", m[0])), m[1:]...) })
	},
	func(d []byte, k int) []byte { // a member duplicated with another value after it
		locs := memberRE.FindAllSubmatchIndex(d, -1)
		if k >= len(locs) {
			return nil
		}
		m := d[locs[k][2]:locs[k][3]]
		i := bytes.IndexByte(m, ':')
		out := append([]byte(nil), d[:locs[k][3]]...)
		out = append(out, ',')
		out = append(out, m[:i+1]...)
		out = append(out, `null`...)
		out = append(out, ',')
		out = append(out, m...)
		return append(out, d[locs[k][3]:]...)
	},
	func(d []byte, k int) []byte { // an unknown member
		return replaceNth(keyRE, d, k, func(m []byte) []byte { return append([]byte(`zz":{"a":[1]},"`), m...) })
	},
	func(d []byte, k int) []byte { // a string value replaced by null
		return replaceNth(regexp.MustCompile(`:("[^"\\]*")`), d, k, func([]byte) []byte { return []byte("null") })
	},
	func(d []byte, k int) []byte { // a number replaced by null
		return replaceNth(numRE, d, k, func([]byte) []byte { return []byte("null") })
	},
	func(d []byte, k int) []byte { // a bool replaced by null
		return replaceNth(boolRE, d, k, func([]byte) []byte { return []byte("null") })
	},
	func(d []byte, k int) []byte { // an object replaced by null
		return replaceNth(regexp.MustCompile(`:(\{)`), d, k, func([]byte) []byte { return []byte(`null,"x":{`) })
	},
	func(d []byte, k int) []byte { // escapes in a string
		return replaceNth(strRE, d, k, func(m []byte) []byte { return append([]byte(`\u00e9\/\"\ud83d\ude00`), m...) })
	},
	func(d []byte, k int) []byte { // a lone surrogate
		return replaceNth(strRE, d, k, func(m []byte) []byte { return append([]byte(`\ud800`), m...) })
	},
	func(d []byte, k int) []byte { // a reversed surrogate pair
		return replaceNth(strRE, d, k, func(m []byte) []byte { return append([]byte(`\ude00\ud83d`), m...) })
	},
	func(d []byte, k int) []byte { // invalid UTF-8
		return replaceNth(strRE, d, k, func(m []byte) []byte { return append([]byte("\xff\xc0"), m...) })
	},
	func(d []byte, k int) []byte { // a raw control character
		return replaceNth(strRE, d, k, func(m []byte) []byte { return append([]byte("\x01"), m...) })
	},
	func(d []byte, k int) []byte { // a string where a number belongs
		return replaceNth(numRE, d, k, func(m []byte) []byte { return []byte(`"` + string(m) + `"`) })
	},
	func(d []byte, k int) []byte { // a number where a string belongs
		return replaceNth(regexp.MustCompile(`:("[^"\\]*")`), d, k, func([]byte) []byte { return []byte("12") })
	},
	func(d []byte, k int) []byte { // integers out of range and not canonical
		forms := []string{"9223372036854775808", "-9223372036854775809", "1e2", "1.0", "-0", "01", "1E0", "-", "0x1", "99999999999999999999", "18446744073709551616", "-1"}
		return replaceNth(numRE, d, k, func([]byte) []byte { return []byte(forms[k%len(forms)]) })
	},
	func(d []byte, k int) []byte { // white space everywhere
		if k > 0 {
			return nil
		}
		r := strings.NewReplacer(`":`, "\" :\n\t", `,"`, " ,\r\"", `{`, "{ ", `}`, " }")
		return []byte(" " + r.Replace(string(d)) + "\n")
	},
	func(d []byte, k int) []byte { // truncated
		if k >= len(d) {
			return nil
		}
		return d[:len(d)-1-k]
	},
	func(d []byte, k int) []byte { // trailing bytes
		if k > 2 {
			return nil
		}
		return append(append([]byte(nil), d...), []string{"x", "{}", ","}[k]...)
	},
	func(d []byte, k int) []byte { // an array where a value belongs
		return replaceNth(strRE, d, k, func(m []byte) []byte { return []byte(`[]`) })
	},
	func(d []byte, k int) []byte { // a time in another layout
		forms := []string{"2026-01-02", "2026-01-02T03:04:05", "2026-01-02T03:04:05.1234567891Z", "2026-01-02t03:04:05z", "10000-01-01T00:00:00Z"}
		re := regexp.MustCompile(`"(\d{4}-\d\d-\d\dT[^"]*)"`)
		return replaceNth(re, d, k%2, func([]byte) []byte { return []byte(forms[k%len(forms)]) })
	},
}

// Every catalog type, random values and mutations of them: the registry
// decodes exactly as encoding/json does, and the direct decoders take every
// value encoding/json itself wrote (so the fast path is the one exercised).
func TestDirectDecodeMatchesEncodingJSON(t *testing.T) {
	reg := Registry()
	rng := rand.New(rand.NewPCG(11, 10))
	rounds := 25
	if testing.Short() {
		rounds = 20
	}
	for _, p := range Payloads() {
		name, typ := p.EventType(), reflect.TypeOf(p)
		_, direct := directDecoders[name]
		n := 3
		if direct {
			n = rounds
		}
		accepted, undecided := 0, 0
		for i := 0; i < n; i++ {
			v := reflect.New(typ)
			randomValue(rng, v.Elem(), 0)
			data, err := json.Marshal(v.Interface())
			if err != nil {
				t.Fatalf("%s: marshal: %v", name, err)
			}
			if checkSame(t, reg, name, typ, data) {
				accepted++
			} else if direct {
				t.Errorf("%s: the direct decoder left encoding/json's own output undecided: %s", name, data)
			}
			if !direct {
				continue
			}
			for _, mutate := range mutations {
				for k := 0; k < 40; k++ {
					m := mutate(data, k)
					if m == nil {
						break
					}
					if !checkSame(t, reg, name, typ, m) {
						undecided++
					}
				}
			}
		}
		if direct {
			t.Logf("%s: %d values taken directly, %d mutations left to encoding/json", name, accepted, undecided)
		}
	}
}

// FuzzDirectDecodeMatchesEncodingJSON feeds arbitrary bytes, seeded with
// encoding/json's output for each direct type and mutations of it, to the
// registry and the direct decoders, comparing each with encoding/json.
func FuzzDirectDecodeMatchesEncodingJSON(f *testing.F) {
	names := directNames()
	rng := rand.New(rand.NewPCG(1, 2))
	for i, name := range names {
		for j := 0; j < 3; j++ {
			v := reflect.New(reflect.TypeOf(directPayload(name)))
			randomValue(rng, v.Elem(), 0)
			data, err := json.Marshal(v.Interface())
			if err != nil {
				f.Fatal(err)
			}
			f.Add(uint8(i), data)
			for _, mutate := range mutations {
				if m := mutate(data, j); m != nil {
					f.Add(uint8(i), m)
				}
			}
		}
	}
	reg := Registry()
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		name := names[int(which)%len(names)]
		checkSame(t, reg, name, payloadType(t, name), data)
	})
}

// directPayload is a zero payload of a direct type.
func directPayload(name string) events.Payload {
	for _, p := range Payloads() {
		if p.EventType() == name {
			return p
		}
	}
	panic(name)
}

// TestDeliveryDecoderLeavesTheRestToEncodingJSON: delivery input outside
// the direct reader's subset (null, duplicate or unknown keys, other cases
// of a key, floats, trailing data) is not read directly, and the registry
// still decodes it as encoding/json does; invalid UTF-8 and lone
// surrogates are read directly, as encoding/json reads them (U+FFFD).
func TestDeliveryDecoderLeavesTheRestToEncodingJSON(t *testing.T) {
	reg := Registry()
	created := DeliveryCreated{}.EventType()
	for _, data := range []string{
		`{"delivery_id":null}`,
		`{"delivery_id":"a","delivery_id":"b"}`,
		`{"Delivery_ID":"a"}`,
		`{"delivery_id":"a","extra":1}`,
		`{"app_id":1.0}`,
		`{"app_id":01}`,
		`{"app_id":-0}`,
		`{"app_id":1e2}`,
		`{"app_id":9223372036854775808}`,
		`{"deliver":tru}`,
		`{"source_position":{"commit":-1}}`,
		`{"delivery_id":"a"} x`,
		`{"delivery_id":"a"`,
		`{"body":"a` + "\n" + `"}`,
	} {
		if checkSame(t, reg, created, reflect.TypeOf(DeliveryCreated{}), []byte(data)) {
			t.Errorf("%q was read directly", data)
		}
	}
	for _, data := range []string{"{\"body\":\"\xff\"}", `{"body":"\ud800"}`, `{"body":"\ud800\u0041"}`, `{"body":"\udc00\ud800"}`} {
		if !checkSame(t, reg, created, reflect.TypeOf(DeliveryCreated{}), []byte(data)) {
			t.Errorf("%q was not read directly", data)
		}
	}
	resend := DeliveryResendRequested{}.EventType()
	if !checkSame(t, reg, resend, reflect.TypeOf(DeliveryResendRequested{}), []byte(`{"delivery_id":"d","requested_by":"op","at":"2026-01-02T03:04:05Z"}`)) {
		t.Error("a resend request was not read directly")
	}
}

// A report as an upload writes it (its raw_data a JSON document carried as
// a string, most pointers null) is decoded directly, as encoding/json
// decodes it: through encoding/json's reflection the reports, 3% of a
// seeded log, cost its rebuild about 2,200 instructions per event of the
// log.
func TestAnUploadedReportDecodesDirectly(t *testing.T) {
	data := []byte(`{"report_id":1,"app_id":7,"open_user_id":4,"channel_user_id":"seed-user-3","open_member_id":null,` +
		`"request_report_id":"seed-3","measurement_no":null,"device_sn":null,"report_type":"BLOOD_PRESSURE","file_path":null,` +
		`"interpretation_result":null,"interpretation_detail":"","interpretation_method":null,"uploaded_at":"2026-12-01T03:30:45.34367171Z",` +
		`"examined_at":null,"interpreted_at":"2026-12-01T03:31:00Z","meta":{"points_code":null,"data_source":"station","operator_name":null,` +
		`"operator_platform_user_id":12},"raw_data":"{\"data_source\":\"station\",\"indicators\":[{\"code\":\"SBP\",\"value\":113}]}",` +
		`"uploaded_by":"uploader:seed"}`)
	if !checkSame(t, Registry(), ReportCreated{}.EventType(), reflect.TypeOf(ReportCreated{}), data) {
		t.Fatalf("report.created was left to encoding/json: %s", data)
	}
}

// A delivery's webhook event decodes to the catalog's own string of that
// name (a third of a seeded log's events are deliveries, each a copy of
// one of a few names otherwise); a name outside the catalog is a string of
// its own, equal to encoding/json's.
func TestADeliverysEventNameIsTheCatalogsString(t *testing.T) {
	reg := Registry()
	created := DeliveryCreated{}.EventType()
	for _, name := range []string{"user.profile.updated", "health.report.created", "not.a.webhook"} {
		data := []byte(`{"delivery_id":"d-1","app_id":3,"event":"` + name + `","body":"{}"}`)
		if !checkSame(t, reg, created, reflect.TypeOf(DeliveryCreated{}), data) {
			t.Fatalf("%s was left to encoding/json", data)
		}
		meta := currentMeta(t, reg, reflect.TypeOf(DeliveryCreated{}))
		env, err := reg.Decode(events.Recorded{Type: created, Data: data, Meta: meta})
		if err != nil {
			t.Fatal(err)
		}
		got := env.Payload.(*DeliveryCreated).Event
		catalogs, known := webhookEvents[name]
		if shared := unsafe.StringData(got) == unsafe.StringData(catalogs); shared != known {
			t.Errorf("%s: decoded as the catalog's string %v, want %v", name, shared, known)
		}
	}
}
