package privacy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/jsoncodec"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
)

// The reference: how personal fields were found and sealed before the
// compiled single-pass scanner (kept here to compare against).

// associated is the associated data an envelope is sealed with: the
// event's id, NUL, the field's path (what Seal and open1 build in place).
func associated(eventID, path string) []byte { return []byte(eventID + "\x00" + path) }

// refFindAll finds the values of every path in one pass over the document.
func refFindAll(data []byte, paths [][]string) ([]pathSpan, error) {
	active := make([]int, len(paths))
	for i := range active {
		active[i] = i
	}
	var out []pathSpan
	err := refWalkAll(data, jsoncodec.SkipSpace(data, 0), paths, active, 0, &out)
	return out, err
}

// walkAll visits the value at i, where the active paths have matched their
// first depth steps.
func refWalkAll(data []byte, i int, paths [][]string, active []int, depth int, out *[]pathSpan) error {
	var deeper []int
	for _, p := range active {
		if len(paths[p]) == depth {
			end, err := skipValue(data, i)
			if err != nil {
				return err
			}
			*out = append(*out, pathSpan{span{i, end}, p})
		} else {
			deeper = append(deeper, p)
		}
	}
	if len(deeper) == 0 || i >= len(data) || data[i] != '{' {
		return nil
	}
	i = jsoncodec.SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return nil
	}
	var match []int
	for {
		if i >= len(data) || data[i] != '"' {
			return errSyntax
		}
		kend, _, err := skipString(data, i)
		if err != nil {
			return err
		}
		key := data[i:kend]
		i = jsoncodec.SkipSpace(data, kend)
		if i >= len(data) || data[i] != ':' {
			return errSyntax
		}
		i = jsoncodec.SkipSpace(data, i+1)
		vend, err := skipValue(data, i)
		if err != nil {
			return err
		}
		match, each := match[:0], false
		for _, p := range deeper {
			name, arr := strings.CutSuffix(paths[p][depth], "[]")
			if refKeyIs(key, name) {
				match = append(match, p)
				each = each || arr
			}
		}
		if len(match) > 0 {
			if !each {
				if err := refWalkAll(data, i, paths, append([]int(nil), match...), depth+1, out); err != nil {
					return err
				}
			} else if data[i] == '[' {
				if err := refWalkAllArray(data, i, paths, append([]int(nil), match...), depth+1, out); err != nil {
					return err
				}
			}
		}
		i = jsoncodec.SkipSpace(data, vend)
		if i >= len(data) {
			return errSyntax
		}
		if data[i] == '}' {
			return nil
		}
		if data[i] != ',' {
			return errSyntax
		}
		i = jsoncodec.SkipSpace(data, i+1)
	}
}

func refWalkAllArray(data []byte, i int, paths [][]string, active []int, depth int, out *[]pathSpan) error {
	i = jsoncodec.SkipSpace(data, i+1)
	if i < len(data) && data[i] == ']' {
		return nil
	}
	for {
		end, err := skipValue(data, i)
		if err != nil {
			return err
		}
		if err := refWalkAll(data, i, paths, active, depth, out); err != nil {
			return err
		}
		i = jsoncodec.SkipSpace(data, end)
		if i >= len(data) {
			return errSyntax
		}
		if data[i] == ']' {
			return nil
		}
		if data[i] != ',' {
			return errSyntax
		}
		i = jsoncodec.SkipSpace(data, i+1)
	}
}

// keyIs compares a raw JSON key (with quotes) to a name, unescaping only
// when the key holds an escape.
func refKeyIs(raw []byte, name string) bool {
	if !strings.ContainsRune(string(raw), '\\') {
		return string(raw[1:len(raw)-1]) == name
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && s == name
}

// refLocate is locate as it was.
func refLocate(data []byte, paths []string, listed bool) ([]located, error) {
	if !listed {
		start := jsoncodec.SkipSpace(data, 0)
		end, err := skipValue(data, start)
		if err != nil {
			return nil, err
		}
		return []located{{span{start, end}, ""}}, nil
	}
	split := make([][]string, len(paths))
	for i, p := range paths {
		split[i] = strings.Split(p, ".")
	}
	spans, err := refFindAll(data, split)
	if err != nil {
		return nil, err
	}
	found := make([]located, 0, len(spans))
	for _, sp := range spans {
		if string(data[sp.start:sp.end]) != "null" {
			found = append(found, located{sp.span, paths[sp.path]})
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].start < found[j].start })
	return found, nil
}

// refSeal is Seal as it was, with the nonces given (a live key only).
func refSeal(key datakeys.Key, eventID string, data []byte, found []located, nonces [][]byte) []byte {
	var out bytes.Buffer
	last := 0
	for i, f := range found {
		out.Write(data[last:f.start])
		last = f.end
		nonce := append([]byte(nil), nonces[i]...)
		ct := key.AEAD.Seal(nonce, nonce, data[f.start:f.end], associated(eventID, f.path))
		out.WriteString(envPrefix)
		out.WriteString(key.ID)
		out.WriteByte(':')
		out.WriteString(base64.StdEncoding.EncodeToString(ct))
		out.WriteString(envSuffix)
	}
	out.Write(data[last:])
	return out.Bytes()
}

// sealVectors are events as the platform writes them, and some it never
// writes but could read (spacing, escaped keys, nesting the paths skip).
var sealVectors = []struct{ typ, data string }{
	{"user.family_member.created", member},
	{"user.family_member.updated", memberUpserted},
	{"report.created", report},
	{"user.registered", `{"app_id":1,"open_user_id":7,"channel_user_id":"c","profile":{"name":"Li","nickname":null,"gender":"male",` +
		`"avatar":"https://a/b.png","phone":"138","email":"a@b.c","birth_date":"1990-01-02"},"groups":[{"x":{"name":"no"}}]}`},
	{"user.profile.updated", `{ "profile" : { "na\u006de" : "escaped key", "phone":"1\"38" , "x":{"name":[1,{"a":"}"}]}}, "changed":["name"] }`},
	{"user.family_group.created", `{"name":"Li family","group":{"name":"not this one"}}`},
	{"webhook.delivery.created", `{"delivery_id":"d","body":"{\"open_user_id\":7,\"name\":\"Li\"}","source_stream":"user-7"}`},
	{"report.updated", `{"file_path":null,"interpretation_result":"ok","interpretation_detail":"{\"a\":[1,2]}"}`},
	{"not.a.listed.type", `{"anything":"at all"}`},
	{"user.family_member.deleted", `{"member_id":3}`},
}

// The compiled scanner finds exactly the values the previous one found,
// on every vector and every truncation of one (errors where it erred), and
// Seal writes exactly the bytes the previous Seal wrote with the same
// nonces, which Open restores.
func TestSealMatchesThePreviousFormat(t *testing.T) {
	s, _ := newStore(t)
	for _, v := range sealVectors {
		paths, listed := catalog.PersonalFields(v.typ)
		for cut := len(v.data); cut >= 0; cut-- {
			data := []byte(v.data[:cut])
			want, werr := refLocate(data, paths, listed)
			got, gerr := locate(data, personal(v.typ))
			if cut == len(v.data) && werr != nil {
				t.Fatalf("%s: the vector does not parse: %v", v.typ, werr)
			}
			if (werr == nil) != (gerr == nil) || werr == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("%s cut at %d: located %v (%v), previously %v (%v)", v.typ, cut, got, gerr, want, werr)
			}
			sealedAsBefore(t, s, "user-7", v.typ, data)
		}
		sealedAsBefore(t, s, "user-7", v.typ, []byte(v.data))
	}
}

// sealedAsBefore seals data as an event of typ on stream and requires the
// bytes the previous Seal (refLocate, refSeal) writes with the same nonces,
// which Open restores; it returns the number of fields sealed.
func sealedAsBefore(t testing.TB, s *Store, stream, typ string, data []byte) int {
	t.Helper()
	ctx := context.Background()
	id := uuid.NewString()
	paths, listed := catalog.PersonalFields(typ)
	sealed, err := s.Seal(ctx, stream, id, typ, data)
	if listed && len(paths) == 0 || len(data) == 0 {
		if err != nil || !bytes.Equal(sealed, data) {
			t.Fatalf("%s: nothing to seal in %q, yet sealed as %s (%v)", typ, data, sealed, err)
		}
		return 0
	}
	found, ferr := refLocate(data, paths, listed)
	if (err == nil) != (ferr == nil) {
		t.Fatalf("%s %q: sealed with error %v, previously %v", typ, data, err, ferr)
	}
	if ferr != nil {
		return 0
	}
	if len(found) == 0 {
		if !bytes.Equal(sealed, data) {
			t.Fatalf("%s: nothing personal in %q, yet sealed as %s", typ, data, sealed)
		}
		return 0
	}
	key, err := s.keys.DataKey(ctx, Subject(stream, typ, data))
	if err != nil {
		t.Fatal(err)
	}
	var nonces, cts [][]byte
	rest := sealed
	for range found {
		i := bytes.Index(rest, []byte(envPrefix+key.ID+":"))
		if i < 0 {
			t.Fatalf("%s: %d envelopes expected in %s", typ, len(found), sealed)
		}
		rest = rest[i+len(envPrefix)+len(key.ID)+1:]
		b64 := rest[:bytes.IndexByte(rest, '"')]
		ct, err := base64.StdEncoding.DecodeString(string(b64))
		if err != nil {
			t.Fatal(err)
		}
		nonces = append(nonces, ct[:key.AEAD.NonceSize()])
		cts = append(cts, ct)
	}
	// Each nonce is fresh: no other field's nonce, nor taken from another
	// field's ciphertext (the scratch buffer's parts must not overlap).
	for i, nonce := range nonces {
		for j, ct := range cts {
			if i != j && bytes.Contains(ct, nonce) {
				t.Fatalf("%s: field %d's nonce is in field %d's envelope: %s", typ, i, j, sealed)
			}
		}
	}
	if want := refSeal(key, id, data, found, nonces); !bytes.Equal(sealed, want) {
		t.Fatalf("%s sealed as\n%s\npreviously\n%s", typ, sealed, want)
	}
	rec, err := s.Open(ctx, recordOf(id, typ, sealed))
	if err != nil || !bytes.Equal(rec.Data, data) {
		t.Fatalf("%s opened as %s (%v), sealed from %s", typ, rec.Data, err, data)
	}
	return len(found)
}

// Random documents built from the personal paths' names (escaped ones
// too), nested, repeated and spaced at random: both scanners find the same
// values. (Malformed documents are never sealed: Seal's input is what
// events.Registry.Encode marshalled.)
func TestLocateMatchesThePreviousScanner(t *testing.T) {
	seed := make([]byte, 1<<15)
	if _, err := rand.Read(seed); err != nil {
		t.Fatal(err)
	}
	next := 0
	pick := func(n int) int {
		next++
		return int(seed[next%len(seed)]) % n
	}
	names := []string{`"name"`, `"member"`, `"profile"`, `"phone"`, `"x"`, `"na\u006de"`, `"body"`, `"raw_data"`, `"meta"`, `"operator_name"`}
	spaces := []string{"", " ", "\n\t "}
	var gen func(b *strings.Builder, depth int)
	gen = func(b *strings.Builder, depth int) {
		b.WriteString(spaces[pick(len(spaces))])
		switch k := pick(6); {
		case k == 0 || depth > 3:
			vals := []string{`null`, `12.5`, `"v"`, `"a\"}b"`, `true`, `"a\\"`, `"\\\"]\\\\"`, `"x\\\\\\"`}
			b.WriteString(vals[pick(len(vals))])
		case k <= 3:
			b.WriteByte('{')
			for m := pick(4); m > 0; m-- {
				b.WriteString(names[pick(len(names))])
				b.WriteString(spaces[pick(len(spaces))] + ":")
				gen(b, depth+1)
				if m > 1 {
					b.WriteByte(',')
				}
			}
			b.WriteByte('}')
		default:
			b.WriteByte('[')
			for m := pick(4); m > 0; m-- {
				gen(b, depth+1)
				if m > 1 {
					b.WriteByte(',')
				}
			}
			b.WriteByte(']')
		}
		b.WriteString(spaces[pick(len(spaces))])
	}
	types := []string{"user.family_member.updated", "user.profile.updated", "report.created", "webhook.delivery.created", "user.family_group.created"}
	for n := range 2000 {
		var b strings.Builder
		b.WriteByte('{')
		b.WriteString(names[pick(len(names))] + ":")
		gen(&b, 0)
		b.WriteString(`,"member":`)
		gen(&b, 0)
		b.WriteByte('}')
		data := []byte(b.String())
		if !json.Valid(data) {
			t.Fatalf("generated an invalid document: %s", data)
		}
		typ := types[n%len(types)]
		paths, listed := catalog.PersonalFields(typ)
		want, werr := refLocate(data, paths, listed)
		got, gerr := locate(data, personal(typ))
		if werr != nil || gerr != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s %s: located %v (%v), previously %v (%v)", typ, data, got, gerr, want, werr)
		}
	}
	// And valid documents with the paths nested and repeated.
	doc, _ := json.Marshal(map[string]any{"member": map[string]any{"name": "a", "phone": nil, "member": map[string]any{"name": "b"}}, "profile": []any{1}})
	paths, listed := catalog.PersonalFields("user.family_member.updated")
	want, _ := refLocate(doc, paths, listed)
	got, err := locate(doc, personal("user.family_member.updated"))
	if err != nil || !reflect.DeepEqual(got, want) || len(got) != 1 {
		t.Fatalf("located %v (%v), previously %v", got, err, want)
	}
}

// sealDoc builds a document of typ whose personal paths hold the values
// pick chooses (strings of any length with escapes, numbers, null, nested
// values, the path missing), between members no path names, so that
// fields of different lengths are sealed in any order.
func sealDoc(typ string, pick func(n int) int) []byte {
	paths, _ := catalog.PersonalFields(typ)
	doc := map[string]any{"other": "x", "open_user_id": 7}
	long := strings.Repeat(`ab"\<é\u2028`, 1+pick(60))
	values := []any{nil, "", "Li", long, long[:pick(len(long))], 172.5, 0, true,
		map[string]any{"a": []any{1, "}"}}, []any{"x", nil}, strings.Repeat("y", pick(3000))}
	for _, p := range paths {
		if pick(8) == 0 {
			continue // the path is missing
		}
		steps := strings.Split(p, ".")
		m := doc
		for _, step := range steps[:len(steps)-1] {
			next, ok := m[step].(map[string]any)
			if !ok {
				next = map[string]any{"z": pick(100)}
				m[step] = next
			}
			m = next
		}
		m[steps[len(steps)-1]] = values[pick(len(values))]
	}
	data, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return data
}

// Every catalog type with personal fields, over generated documents: Seal
// writes the previous Seal's bytes with the same nonces (one scratch buffer
// for every field's nonce, ciphertext and associated data must not change
// any of them, whatever the fields' lengths and order).
func TestSealEveryCatalogTypeAsBefore(t *testing.T) {
	s, _ := newStore(t)
	seed := make([]byte, 1<<15)
	if _, err := rand.Read(seed); err != nil {
		t.Fatal(err)
	}
	next := 0
	pick := func(n int) int {
		next++
		return int(seed[next%len(seed)]^seed[(next*7)%len(seed)]) * (1 + int(seed[(next*13)%len(seed)])) % n
	}
	sealedFields, typed := 0, 0
	for _, p := range catalog.Payloads() {
		typ := p.EventType()
		if paths, _ := catalog.PersonalFields(typ); len(paths) == 0 {
			continue
		}
		typed++
		for range 40 {
			sealedFields += sealedAsBefore(t, s, "user-7", typ, sealDoc(typ, pick))
		}
	}
	if typed < 10 || sealedFields < typed*40 {
		t.Fatalf("sealed %d fields over %d types: the generator seals too little", sealedFields, typed)
	}
}

// FuzzSealMatchesThePreviousFormat: whatever valid document and type, Seal
// writes what the previous Seal wrote with the same nonces, and Open
// restores it. (Seal's input is what events.Registry.Encode marshalled;
// on malformed JSON the compiled scanner and the previous one may part at
// different bytes, so only valid documents are compared.)
func FuzzSealMatchesThePreviousFormat(f *testing.F) {
	for _, v := range sealVectors {
		f.Add(v.typ, v.data)
	}
	f.Add("user.family_member.updated", memberUpserted)
	f.Add("webhook.delivery.created", string(deliveryCreated))
	s, _ := newStore(f)
	f.Fuzz(func(t *testing.T, typ, data string) {
		if !json.Valid([]byte(data)) {
			return
		}
		sealedAsBefore(t, s, "user-7", typ, []byte(data))
	})
}

func recordOf(id, typ string, data []byte) events.Recorded {
	return events.Recorded{ID: id, Type: typ, Data: data}
}
