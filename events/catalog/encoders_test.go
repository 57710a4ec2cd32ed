package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// The direct encoders must write exactly json.Marshal's bytes, so the log,
// the read models, signatures over webhook bodies and every older reader see
// no difference; where json.Marshal fails (a time it refuses), the direct
// encoder declines and the registry returns encoding/json's error.

// encoderNames lists the event types with a direct encoder, in a fixed
// order so a fuzz input's type index means the same type in every run.
func encoderNames() []string {
	names := make([]string, 0, len(directEncoders))
	for n := range directEncoders {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// encodeSource fills payloads for the encoders: strings from the fuzzer,
// times around a fuzzed instant (any year, any zone offset), and nil,
// empty and filled pointers and slices.
type encodeSource struct {
	rng  *rand.Rand
	strs []string
	sec  int64
	nsec int64
	zone int
}

var timeType = reflect.TypeOf(time.Time{})

func (s *encodeSource) fill(v reflect.Value, depth int) {
	if v.Type() == timeType {
		var tm time.Time
		switch s.rng.IntN(5) {
		case 0: // the zero time
		case 1:
			tm = time.Unix(s.sec, s.nsec).UTC()
		case 2:
			tm = time.Unix(s.sec, s.nsec).In(time.FixedZone("z", s.zone))
		case 3:
			tm = time.Unix(s.sec, s.nsec) // local, with a monotonic-free wall clock
		default:
			tm = time.Now()
		}
		v.Set(reflect.ValueOf(tm))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s.strs[s.rng.IntN(len(s.strs))])
	case reflect.Int, reflect.Int64:
		v.SetInt([]int64{0, 1, -1, math.MaxInt64, math.MinInt64, s.rng.Int64(), s.rng.Int64N(1000)}[s.rng.IntN(7)])
	case reflect.Uint64:
		v.SetUint([]uint64{0, 1, math.MaxUint64, s.rng.Uint64()}[s.rng.IntN(4)])
	case reflect.Bool:
		v.SetBool(s.rng.IntN(2) == 1)
	case reflect.Pointer:
		if s.rng.IntN(3) > 0 {
			p := reflect.New(v.Type().Elem())
			s.fill(p.Elem(), depth+1)
			v.Set(p)
		}
	case reflect.Slice:
		if n := s.rng.IntN(4); n > 0 {
			sl := reflect.MakeSlice(v.Type(), n-1, n-1) // n=1: empty, not nil
			for i := 0; i < n-1; i++ {
				s.fill(sl.Index(i), depth+1)
			}
			v.Set(sl)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				s.fill(v.Field(i), depth+1)
			}
		}
	default:
		panic("encodeSource: no values for " + v.Type().String())
	}
}

// checkEncode fails unless the direct encoder, given p as a value and as a
// pointer, and the registry write json.Marshal's bytes, or all fail.
func checkEncode(t *testing.T, reg *events.Registry, name string, p reflect.Value) (direct bool) {
	t.Helper()
	want, werr := json.Marshal(p.Interface())
	for _, form := range []events.Payload{p.Interface().(events.Payload), p.Addr().Interface().(events.Payload)} {
		got, ok := directEncoders[name]([]byte(nil), form)
		switch {
		case ok && werr != nil:
			t.Fatalf("%s: direct encoder wrote %s where encoding/json fails: %v", name, got, werr)
		case !ok && werr == nil:
			t.Fatalf("%s: direct encoder declined %#v, which encoding/json writes as %s", name, form, want)
		case ok && !bytes.Equal(got, want):
			t.Fatalf("%s: direct encoder wrote\n%s\nencoding/json writes\n%s", name, got, want)
		}
		direct = ok
	}
	ev, err := reg.Encode(p.Interface().(events.Payload), events.Metadata{})
	if (err == nil) != (werr == nil) || (err == nil && !bytes.Equal(ev.Data, want)) {
		t.Fatalf("%s: registry wrote %s (%v), encoding/json %s (%v)", name, ev.Data, err, want, werr)
	}
	return direct
}

// Strings that exercise encoding/json's escaping: HTML characters, quotes,
// control characters, line separators, astral runes and invalid UTF-8.
var encodePieces = []string{"", "a", "Zoë", "<b>&amp;</b>", `"`, `\`, "\n\t\r\b\f", "\u2028\u2029", "😀", "\x7f",
	"\xff\xfe", "\xed\xa0\x80", "\x00\x1f", "渡辺", "/", "{\"k\":[1,\"x\"]}"}

// Every type with a direct encoder, random payloads including the times
// json.Marshal refuses: the direct encoders write its bytes or decline
// exactly where it fails.
func TestDirectEncodeMatchesEncodingJSON(t *testing.T) {
	reg := Registry()
	rng := rand.New(rand.NewPCG(11, 12))
	for _, name := range encoderNames() {
		typ := reflect.TypeOf(directPayload(name))
		taken, declined := 0, 0
		for i := 0; i < 300; i++ {
			strs := []string{encodePieces[rng.IntN(len(encodePieces))] + encodePieces[rng.IntN(len(encodePieces))], encodePieces[rng.IntN(len(encodePieces))]}
			sec := rng.Int64N(253402300799+62135596800) - 62135596800
			if i%10 == 0 {
				sec = []int64{-62135596801, 253402300800, math.MaxInt64 / 4, math.MinInt64 / 4}[i/10%4]
			}
			zone := []int{0, 8 * 3600, -(5*3600 + 1800), 8*3600 + 43, 24 * 3600, -25 * 3600, 60}[rng.IntN(7)]
			src := &encodeSource{rng: rng, strs: strs, sec: sec, nsec: rng.Int64N(2e9) - 1e9, zone: zone}
			v := reflect.New(typ).Elem()
			src.fill(v, 0)
			if checkEncode(t, reg, name, v) {
				taken++
			} else {
				declined++
			}
		}
		if taken < 100 {
			t.Errorf("%s: only %d of 300 payloads taken directly", name, taken)
		}
		t.Logf("%s: %d written directly, %d left to encoding/json (which refused them)", name, taken, declined)
	}
}

// FuzzDirectEncodeMatchesEncodingJSON fills a payload of each direct type
// with the fuzzer's strings, instant and zone offset (any year, any
// offset), and compares the direct encoders and the registry with
// json.Marshal byte for byte, or on failing.
func FuzzDirectEncodeMatchesEncodingJSON(f *testing.F) {
	names := encoderNames()
	for i := range names {
		f.Add(uint8(i), uint64(i), "Zoë <b>&</b>", "\u2028\xff\x00", int64(1764000000), int64(5), 0)
		f.Add(uint8(i), uint64(i+100), "", "\"\\/", int64(-62135596801), int64(0), 8*3600+43)
		f.Add(uint8(i), uint64(i+200), "渡辺", "😀\x7f", int64(253402300800), int64(-1), 24*3600)
	}
	reg := Registry()
	f.Fuzz(func(t *testing.T, which uint8, seed uint64, s1, s2 string, sec, nsec int64, zone int) {
		name := names[int(which)%len(names)]
		src := &encodeSource{rng: rand.New(rand.NewPCG(seed, 1)), strs: []string{s1, s2, s1 + s2}, sec: sec, nsec: nsec, zone: zone}
		v := reflect.New(reflect.TypeOf(directPayload(name))).Elem()
		src.fill(v, 0)
		checkEncode(t, reg, name, v)
	})
}

// Every direct encoder belongs to a catalog type, and the catalog's
// registry refuses a second one for a type (the registration is checked
// at start-up, where a mistake panics).
func TestEncodersAreRegisteredOncePerCatalogType(t *testing.T) {
	reg := Registry()
	for _, name := range encoderNames() {
		if !reg.Known(name) {
			t.Fatalf("encoder for %s, which the catalog does not register", name)
		}
		err := reg.RegisterEncoder(name, directEncoders[name])
		if err == nil || !strings.Contains(err.Error(), "twice") {
			t.Fatalf("%s: a second encoder was accepted: %v", name, err)
		}
	}
	if err := reg.RegisterEncoder("no.such_event", directEncoders[UserRegistered{}.EventType()]); err == nil {
		t.Fatal("an encoder for an unregistered type was accepted")
	}
}

// A payload of another type given to an encoder (a programming error) is
// declined, not written with the wrong shape.
func TestEncoderDeclinesOtherTypes(t *testing.T) {
	if _, ok := directEncoders[UserRegistered{}.EventType()](nil, FamilyMemberDeleted{}); ok {
		t.Fatal("the user.registered encoder wrote a family_member.deleted payload")
	}
	var nilPtr *UserRegistered
	if _, ok := directEncoders[UserRegistered{}.EventType()](nil, nilPtr); ok {
		t.Fatal("the user.registered encoder wrote a nil pointer")
	}
}

// Commands and the dispatcher encode from many goroutines at once: every
// concurrent Encode of one registry writes json.Marshal's bytes (run with
// -race, which also checks the encoders share no buffer).
func TestConcurrentEncodesWriteEncodingJSONBytes(t *testing.T) {
	reg := Registry()
	names := encoderNames()
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 3))
			for i := 0; i < 200; i++ {
				name := names[(g+i)%len(names)]
				v := reflect.New(reflect.TypeOf(directPayload(name))).Elem()
				(&encodeSource{rng: rng, strs: []string{"<&>", fmt.Sprint(g, i)}, sec: int64(i) * 86400, zone: 3600}).fill(v, 0)
				want, werr := json.Marshal(v.Interface())
				ev, err := reg.Encode(v.Interface().(events.Payload), events.Metadata{})
				if (err == nil) != (werr == nil) || (err == nil && !bytes.Equal(ev.Data, want)) {
					errs <- fmt.Sprintf("%s: %s (%v) vs %s (%v)", name, ev.Data, err, want, werr)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
