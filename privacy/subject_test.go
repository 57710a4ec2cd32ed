package privacy

import (
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// subjectTypes are the event types whose subjects are read differently:
// the two delivery records (body and source stream count) and any other.
var subjectTypes = []string{
	(catalog.DeliveryCreated{}).EventType(),
	(catalog.DeliveryAttempted{}).EventType(),
	"report.created",
}

// sameSubject fails when the direct reader decides a subject encoding/json
// would not give: a different key would seal the person's fields. It
// reports whether the direct reader decided.
func sameSubject(t *testing.T, stream, eventType string, data []byte) bool {
	t.Helper()
	want := subjectJSON(stream, eventType, data)
	if got := Subject(stream, eventType, data); got != want && !strings.HasPrefix(stream, "user-") {
		t.Fatalf("Subject(%q, %s, %q) = %s, encoding/json %s", stream, eventType, data, got, want)
	}
	got, ok := subjectDirect(stream, eventType, data)
	if ok && got != want {
		t.Fatalf("direct subject of (%q, %s, %q) = %s, encoding/json %s", stream, eventType, data, got, want)
	}
	return ok
}

// Delivery records as the dispatcher writes them are decided by the direct
// reader (no encoding/json on the write path), with the subject
// encoding/json gives.
func TestSubjectOfRecordedDeliveriesIsDirect(t *testing.T) {
	at := time.Date(2026, 11, 24, 1, 2, 3, 456789, time.UTC)
	body := `{"event_id":"e1","event_type":"user.member.upserted","app_id":3,"open_user_id":42,"data":{"name":"Zoë \"Z\" Li\n","note":"\u2028<tag>&"}}`
	user := int64(42)
	for _, p := range []events.Payload{
		catalog.DeliveryCreated{DeliveryID: "d1", AppID: 3, Event: "user.member.upserted", SourceEventID: "e1", SourceStream: "user-42",
			SourcePosition: events.Position{Commit: 9, Prepare: 9}, SourceRecordedAt: at, Body: body, Deliver: true},
		catalog.DeliveryCreated{DeliveryID: "d2", AppID: 3, Event: "order.paid", SourceStream: "order-7", Body: `{"order_id":7}`},
		catalog.DeliveryAttempted{DeliveryID: "d1", Attempt: 1, At: at, URL: "https://x.test/h", StatusCode: 200, Outcome: "delivered",
			ResponseExcerpt: "ok", OpenUserID: user, SourceStream: "user-42"},
	} {
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if !sameSubject(t, "delivery-d1", p.EventType(), data) {
			t.Errorf("%s %s: the direct reader declined a record as written", p.EventType(), data)
		}
	}
	for _, c := range []struct{ data, want string }{
		{`{"source_stream":"report-5","body":"{\"open_user_id\":7}"}`, "user-7"},
		{`{"source_stream":"order-9","body":"{\"open_user_id\":\"7\",\"OPEN_USER_ID\":8}"}`, "order-9"}, // encoding/json errs: no user
		{`{"SOURCE_STREAM":"order-9","Body":"{\"Open_User_Id\":8}"}`, "user-8"},
		{`{"open_user_id":5,"open_user_id":null,"source_stream":"order-9"}`, "order-9"},
		{`{"open_user_id":5,"open_user_id":1.5,"source_stream":"order-9"}`, "user-5"},
		// The erasure notice is sealed under its delivery, not the erased person.
		{`{"event":"user.erased","source_stream":"user-7","body":"{\"open_user_id\":7}"}`, "delivery-x"},
		{`{"EVENT":"user\u002eerased","source_stream":"user-7","body":"{\"open_user_id\":7}"}`, "delivery-x"},
		{`{"event":"user.erasedx","source_stream":"user-7","body":"{\"open_user_id\":7}"}`, "user-7"},
	} {
		got, ok := subjectDirect("delivery-x", (catalog.DeliveryCreated{}).EventType(), []byte(c.data))
		if !ok || got != c.want {
			t.Errorf("%s: %s (decided %v), want %s", c.data, got, ok, c.want)
		}
		sameSubject(t, "delivery-x", (catalog.DeliveryCreated{}).EventType(), []byte(c.data))
	}
}

// Generated documents built from the pieces encoding/json treats specially
// (key case and Unicode folding, escaped keys, duplicates, nulls, numbers
// that are no int64, values of other types, escaped and invalid UTF-8
// bodies and source streams, corrupted bytes) give the subject
// encoding/json gives, and most of them are decided without it.
func TestSubjectAgreesWithEncodingJSONOnGeneratedDocuments(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	const n = 20000
	decided := 0
	for i := 0; i < n; i++ {
		doc := genDoc(r, 0)
		if r.Intn(8) == 0 {
			doc = corrupt(r, doc)
		}
		typ := subjectTypes[r.Intn(len(subjectTypes))]
		if sameSubject(t, "delivery-"+typ[:3], typ, []byte(doc)) {
			decided++
		}
	}
	if decided < n/2 {
		t.Fatalf("the direct reader decided %d of %d documents; the fast path is not taken", decided, n)
	}
}

var (
	genKeys = []string{"open_user_id", "OPEN_USER_ID", "Open_User_Id", "user_id", "User_ID", "platform_user_id",
		"source_stream", "Source_Stream", "body", "BODY", "other", "event", "EVENT", "open_user_\u0131d", `open\u005fuser_id`, "\u017fource_stream", "bod\u212a"}
	genNumbers = []string{"7", "42", "-3", "0", "-0", "1.5", "1e2", "9223372036854775807", "9223372036854775808", "-9223372036854775808", "12345678901234567890"}
	genStreams = []string{`"report-5"`, `"user-9"`, `"order-1"`, `""`, `"a\u00e9"`, "\"\xff-x\"", `"user-\u0031"`, `"card-a/b"`, `"user.erased"`, `"user\u002eerased"`}
)

// genValue is one JSON value; depth bounds the nesting.
func genValue(r *rand.Rand, depth int) string {
	switch k := r.Intn(9); {
	case k < 3:
		return genNumbers[r.Intn(len(genNumbers))]
	case k == 3:
		return "null"
	case k == 4:
		return genStreams[r.Intn(len(genStreams))]
	case k == 5:
		return []string{"true", "false", "[]", `[1,"x"]`}[r.Intn(4)]
	case depth >= 2:
		return "null"
	case k == 6:
		return genDoc(r, depth+1)
	default: // a body: a document encoded as a JSON string
		inner := genDoc(r, depth+1)
		if r.Intn(6) == 0 {
			inner = corrupt(r, inner)
		}
		b, _ := json.Marshal(inner)
		s := string(b)
		if r.Intn(4) == 0 { // escapes encoding/json does not write
			s = strings.ReplaceAll(s, `:`, `\u003a`)
			s = strings.ReplaceAll(s, `{`, `\u007B`)
		}
		return s
	}
}

// genDoc is an object of a few generated members.
func genDoc(r *rand.Rand, depth int) string {
	var b strings.Builder
	ws := func() {
		if r.Intn(4) == 0 {
			b.WriteString([]string{" ", "\n\t", "\r "}[r.Intn(3)])
		}
	}
	ws()
	b.WriteByte('{')
	for m := r.Intn(5); m > 0; m-- {
		ws()
		b.WriteString(`"` + genKeys[r.Intn(len(genKeys))] + `"`)
		ws()
		b.WriteByte(':')
		ws()
		b.WriteString(genValue(r, depth))
		ws()
		if m > 1 {
			b.WriteByte(',')
		}
	}
	b.WriteByte('}')
	ws()
	return b.String()
}

// corrupt deletes, duplicates or replaces one byte.
func corrupt(r *rand.Rand, doc string) string {
	if doc == "" {
		return doc
	}
	i := r.Intn(len(doc))
	switch r.Intn(3) {
	case 0:
		return doc[:i] + doc[i+1:]
	case 1:
		return doc[:i] + doc[i:i+1] + doc[i:]
	default:
		const pieces = "{}[],:\"\\ 0x\x00\xff"
		return doc[:i] + pieces[r.Intn(len(pieces)):][:1] + doc[i+1:]
	}
}

func FuzzSubject(f *testing.F) {
	for _, s := range []string{
		`{"open_user_id":7}`, `{"user_id":null}`, `{"OPEN_USER_ID":1,"open_user_id":null}`,
		`{"source_stream":"report-5","body":"{\"open_user_id\":7}"}`,
		`{"source_stream":"order-9","body":"{\"open_user_id\":1.5}"}`,
		`{"source_stream":"a\u00e9","body":"{\"Open_User_Id\":\"7\"}"}`,
		`{"body":"{\"open_user_id\":7,\"open_user_id\":null}","source_stream":"user-3"}`,
		`{"open_user_\u0131d":7}`, `{"open\u005fuser_id":7}`,
	} {
		for typ := range subjectTypes {
			f.Add(uint8(typ), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, typ uint8, data []byte) {
		sameSubject(t, "delivery-x", subjectTypes[int(typ)%len(subjectTypes)], data)
	})
}

// BodyUser agrees with encoding/json wherever it decides.
func FuzzBodyUser(f *testing.F) {
	for _, s := range []string{`{"open_user_id":7}`, `{"open_user_id":"7"}`, `{"OPEN_USER_ID":7,"open_user_id":null}`, `{"a":{"open_user_id":7}}`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		user, ok := BodyUser(body)
		if !ok {
			return
		}
		var ref struct {
			OpenUserID *int64 `json:"open_user_id"`
		}
		var want int64
		if json.Unmarshal(body, &ref) == nil && ref.OpenUserID != nil {
			want = *ref.OpenUserID
		}
		if user != want {
			t.Fatalf("%q: %d, encoding/json %d", body, user, want)
		}
	})
}
