package snapfile

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/projections"
)

// fill sets every field of v (a pointer) to a value derived from seed:
// strings, numbers and times distinct per field, pointers set, slices of
// two; with seed 0 every field stays zero (nil pointers and slices). A
// field added to a row type is filled too, so a codec that forgets it
// fails the round trip below.
func fill(v reflect.Value, seed int) {
	if seed == 0 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), seed)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			zone := time.UTC
			if seed%2 == 0 {
				zone = time.FixedZone("", 8*3600)
			}
			v.Set(reflect.ValueOf(time.Date(2026, 1, 1+seed%28, 3, 4, 5, 6000*seed, zone)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			fill(v.Field(i), seed*31+i+1)
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d-é", seed))
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(seed) * -1_000_003)
	case reflect.Uint8:
		v.SetUint(uint64(seed % 251))
	case reflect.Uint64:
		v.SetUint(uint64(seed) << 40)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := 0; i < 2; i++ {
			fill(s.Index(i), seed+i+1)
		}
		v.Set(s)
	default:
		panic("fill: no case for " + v.Kind().String())
	}
}

// Every table's rows, with every field set and with every field zero,
// come back equal from the row codec.
func TestRowCodecRoundTripsEveryField(t *testing.T) {
	for fi, f := range imageFields {
		var im Image
		rows := reflect.ValueOf(&im).Elem().Field(2 + fi)
		s := reflect.MakeSlice(rows.Type(), 3, 3)
		fill(s.Index(0), fi+7)
		fill(s.Index(2), fi+8)
		rows.Set(s)
		body := encodeSection(f, &im, 0, 3)
		got, err := f.decode(body)
		if err != nil {
			t.Fatalf("table %d (%s): %v", fi, rows.Type(), err)
		}
		if !reflect.DeepEqual(got, s.Interface()) {
			t.Errorf("table %d (%s) changed in the round trip:\n got %+v\nwant %+v", fi, rows.Type(), got, s.Interface())
		}
		// Cut anywhere, the section is refused, never half read.
		for cut := 0; cut < len(body); cut++ {
			if _, err := f.decode(body[:cut]); err == nil {
				t.Fatalf("table %d: a section cut at byte %d of %d decoded", fi, cut, len(body))
			}
		}
	}
}

// FuzzRowCodec: any bytes decode to an error or to rows that encode and
// decode to themselves; nothing panics or allocates beyond the input's
// size (a length is checked against what remains before it is used).
func FuzzRowCodec(f *testing.F) {
	for fi, field := range imageFields {
		var im Image
		rows := reflect.ValueOf(&im).Elem().Field(2 + fi)
		s := reflect.MakeSlice(rows.Type(), 2, 2)
		fill(s.Index(1), fi+3)
		rows.Set(s)
		body := encodeSection(field, &im, 0, 2)
		f.Add(uint8(fi), body)
	}
	f.Fuzz(func(t *testing.T, table uint8, data []byte) {
		field := imageFields[int(table)%len(imageFields)]
		got, err := field.decode(data)
		if err != nil {
			return
		}
		var im Image
		rows := reflect.ValueOf(&im).Elem().Field(2 + int(table)%len(imageFields))
		rows.Set(reflect.ValueOf(got))
		body := encodeSection(field, &im, 0, rows.Len())
		again, err := field.decode(body)
		if err != nil {
			t.Fatalf("re-encoded rows do not decode: %v", err)
		}
		if !reflect.DeepEqual(again, got) {
			t.Fatalf("rows changed on a second round trip")
		}
	})
}

// BenchmarkSectionDecode decodes one full section (sectionRows rows) of
// each big table in format 2 (gob) and format 3 (the row codec), in the
// same run: compare ns/op and allocs/op between the two.
func BenchmarkSectionDecode(b *testing.B) {
	for _, fi := range []int{0, 1, 2, 3} { // users, groups, members, deliveries
		var im Image
		rows := reflect.ValueOf(&im).Elem().Field(2 + fi)
		s := reflect.MakeSlice(rows.Type(), sectionRows, sectionRows)
		for i := 0; i < sectionRows; i++ {
			fill(s.Index(i), i+1)
		}
		rows.Set(s)
		f := imageFields[fi]
		name := rows.Type().Elem().Name()
		gobBody := &bytes.Buffer{}
		if err := gob.NewEncoder(gobBody).Encode(s.Interface()); err != nil {
			b.Fatal(err)
		}
		codecBody := encodeSection(f, &im, 0, sectionRows)
		b.Run(name+"/gob", func(b *testing.B) {
			b.SetBytes(int64(gobBody.Len()))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.decodeGob(gobBody.Bytes()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/codec", func(b *testing.B) {
			b.SetBytes(int64(len(codecBody)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f.decode(codecBody); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSectionEncode encodes one full section of deliveries with 1 KB
// bodies (most of a snapshot's bytes) the way a write did before (a new
// buffer per section, grown as it fills: "fresh") and does now (one buffer
// reused for every section: "reused"); compare the two in one run.
func BenchmarkSectionEncode(b *testing.B) {
	im := Image{Deliveries: make([]projections.Delivery, sectionRows)}
	body := bytes.Repeat([]byte("x"), 1024)
	for i := range im.Deliveries {
		im.Deliveries[i] = projections.Delivery{DeliveryID: fmt.Sprintf("d%06d", i), AppID: 1, EventType: "user.registered",
			Body: body, Subject: "user-1", Status: "delivered", CreatedAt: time.Unix(int64(i), 0), UpdatedAt: time.Unix(int64(i), 0)}
	}
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(deliveryCodec.encodeRows(im.Deliveries)) == 0 {
				b.Fatal("empty section")
			}
		}
	})
	b.Run("reused", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			if buf = deliveryCodec.appendRows(buf[:0], im.Deliveries); len(buf) == 0 {
				b.Fatal("empty section")
			}
		}
	})
}
