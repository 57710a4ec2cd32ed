package files

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/datakeys"
	"github.com/healthtech/partner-open-platform/internal/datakeys/keystest"
)

// The hand decoder of the log's lines accepts exactly what encoding/json
// accepts and gives the same record, for the lines encodeLine writes and
// for anything else a damaged or hand-edited log may hold.
func FuzzParseLine(f *testing.F) {
	created := time.Date(2026, 11, 23, 12, 37, 54, 914356377, time.UTC)
	for _, e := range []item{
		{rec: recordFor("user-1", created)},
		{rec: recordFor("readmodels-snapshot-17", time.Time{})},
		{rec: recordFor("user-2", created), destroyed: true},
	} {
		f.Add(encodeLine(e))
	}
	for _, s := range []string{
		`{}`, `{"op":"key"}`, `{"op":"key",}`, `{"op" :"key"}`, `{"op":"k\"ey"}`, `{"op":"k\u0065y","subject":"user-1"}`,
		`{"OP":"key","Subject":"user-1"}`, `{"op":"key","subject":"user-1","extra":"x"}`, `{"op":"key","subject":null}`,
		`{"op":"key","created":"2026-11-23T12:37:54Z"}`, `{"op":"key","created":"2026-11-23T1:37:54Z"}`, `{"op":"key","created":"yesterday"}`,
		`{"op":"key","op":"destroyed"}`, `{"op":"ké"}`, `{"op":"key"}x`, ` {"op":"key"}`, `{"op":"key","subject":1}`, `[]`, ``, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want line
		wantErr := json.Unmarshal(raw, &want)
		got, err := parseLine(raw)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: parseLine error %v, encoding/json error %v", raw, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: parseLine %+v, encoding/json %+v", raw, got, want)
		}
	})
}

func recordFor(subject string, created time.Time) datakeys.Record {
	return datakeys.Record{Subject: subject, KeyID: subject + "~4e4e7e109a0a344a", MasterKeyID: "mk-8153ac4953452bd6", Sealed: "v1:vmX9yZ8/9393K587w71bld+HkA==", Created: created}
}

// A line is written as json.Marshal writes it, whatever its strings hold
// (escapes, HTML characters, invalid UTF-8) and whichever fields are
// empty or times zero.
func FuzzEncodeLineIsMarshal(f *testing.F) {
	f.Add("key", "user-1", "user-1~4e4e7e109a0a344a", "mk-8153ac4953452bd6", "v1:vmX9yZ8/9393K587w71bld+HkA==", int64(1795437474914356377), int64(0))
	f.Add("destroyed", "user-2", "", "", "", int64(0), int64(1795437474000000000))
	f.Add("key", "<a&b>\"\\\n\u2028\xff", "é", "", "x", int64(-62135596800000000000/1000), int64(1))
	f.Fuzz(func(t *testing.T, op, subject, keyID, master, sealed string, created, at int64) {
		l := line{Op: op, Subject: subject, KeyID: keyID, MasterKeyID: master, Sealed: sealed}
		if created != 0 {
			l.Created = time.Unix(0, created).UTC()
		}
		if at != 0 {
			l.At = time.Unix(0, at).In(time.FixedZone("", int(at%86400)))
		}
		want, wantErr := json.Marshal(l)
		got := l.encode()
		if wantErr != nil {
			want = nil
		}
		if string(got) != string(want) {
			t.Fatalf("%+v:\nencode       %s\njson.Marshal %s", l, got, want)
		}
	})
}

// BenchmarkEncodeLine: a new person's key line, written field by field
// (encode) and by reflection (marshal), in the same run.
func BenchmarkEncodeLine(b *testing.B) {
	l := line{Op: "key", Subject: "user-1", KeyID: "user-1~4e4e7e109a0a344a", MasterKeyID: "mk-8153ac4953452bd6",
		Sealed: "v1:vmX9yZ8/9393K587w71bld+HkA==vmX9yZ8/9393K587w71bld+HkA==", Created: time.Now().UTC()}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_ = l.encode()
		}
	})
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			_, _ = json.Marshal(l)
		}
	})
}

// A line parseKeyLine packs is one parseLine reads as the same key, packed
// alike; any other line is left to parseLine.
func FuzzParseKeyLineIsParseLine(f *testing.F) {
	created := time.Date(2026, 11, 23, 12, 37, 54, 914356377, time.UTC)
	for _, r := range keystest.StoredForms() {
		f.Add(encodeLine(item{rec: r}))
	}
	f.Add(encodeLine(item{rec: datakeys.Record{Subject: "user-1", KeyID: "user-1~0123456789abcdef", MasterKeyID: "mk-1",
		Sealed: "v1:" + strings.Repeat("AbC+/9", 16), Created: created}}))
	f.Add(encodeLine(item{rec: recordFor("user-2", created), destroyed: true}))
	f.Add([]byte(`{"op":"key","subject":"user-1","key_id":"user-1~0123456789abcdef","master_key_id":"mk-1","sealed":"v1:` +
		strings.Repeat("AbC+/9", 16) + `","created":"2026-11-23T12:37:54Z","subject":"user-2"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		master := "mk-0"
		e := &entry{}
		subject, ok := parseKeyLine(raw, e, &master)
		if !ok {
			if *e != (entry{}) {
				t.Fatalf("%q: parseKeyLine set %+v of a line it did not pack", raw, *e)
			}
			return
		}
		l, err := parseLine(raw)
		if err != nil || l.Op != "key" || l.Subject != subject {
			t.Fatalf("%q: parseKeyLine packed %q, parseLine read %+v, %v", raw, subject, l, err)
		}
		var want entry
		if !want.pack(l.item().rec) {
			t.Fatalf("%q: parseKeyLine packed what parseLine's record does not", raw)
		}
		if *e != want || e.master != master {
			t.Fatalf("%q: parseKeyLine packed %+v, parseLine's record %+v", raw, *e, want)
		}
	})
}
