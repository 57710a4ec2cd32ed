package privacy

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/memory"
	"github.com/healthtech/partner-open-platform/events/storetest"
	"github.com/healthtech/partner-open-platform/internal/datakeys"
	"github.com/healthtech/partner-open-platform/internal/datakeys/files"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

func newStore(t testing.TB) (*Store, *datakeys.Keys) {
	t.Helper()
	b, err := files.Open(filepath.Join(t.TempDir(), "keys"))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := secrets.New(bytes.Repeat([]byte{1}, 32))
	ks := datakeys.New(b, m)
	return New(memory.New(), ks), ks
}

// The decorated store is still an events.Store in every respect.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) events.Store {
		s, _ := newStore(t)
		t.Cleanup(func() { s.Close() })
		return s
	})
}

const member = `{"open_user_id":7,"member":{"member_id":3,"name":"李四","id_number":"11010519491231002X",` +
	`"phone":null,  "height": 172.50 ,"relationship":"父亲"},"at":"2026-01-02T03:04:05Z"}`

// raw_data is JSON text in a string, with spacing and escapes that a
// re-marshal would change.
const report = `{"report_id":5,"open_user_id":7,"file_path":"https://x/a.pdf","interpretation_result":"正常",` +
	`"interpretation_detail":"","meta":{"operator_name":"王\u4e94","points_code":"P1"},` +
	`"raw_data":"{ \"hr\" : 72,\n \"note\":\"<b>&amp;</b>\", \"big\": 1.0e3 }"}`

func TestPersonalFieldsEncryptedAndRestoredByteForByte(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	for _, c := range []struct{ stream, typ, data string }{
		{"user-7", "user.family_member.created", member},
		{"report-5", "report.created", report},
	} {
		id := uuid.NewString()
		if _, err := s.Append(ctx, c.stream, events.Any(), events.Proposed{ID: id, Type: c.typ, Data: []byte(c.data)}); err != nil {
			t.Fatal(err)
		}
		raw, _ := s.Inner().ReadStream(ctx, c.stream, 0, 0)
		stored := string(raw[0].Data)
		// Each marker holds a character base64 never produces (CJK, '.', a
		// quote) or is too long to occur in it, so ciphertext never matches by chance.
		for _, secret := range []string{"李四", "11010519491231002X", "父亲", "172.50", "a.pdf", "正常", `\"hr\"`, "王"} {
			if strings.Contains(stored, secret) {
				t.Errorf("%s stored in clear: %s", secret, stored)
			}
		}
		for _, clear := range []string{`"open_user_id":7`, `"phone":null`, `"at":"2026-01-02T03:04:05Z"`, `"points_code":"P1"`, `"$enc":"user-7~`} {
			if c.typ == "user.family_member.created" && strings.Contains(clear, "points") || c.typ == "report.created" && (strings.Contains(clear, "phone") || strings.Contains(clear, `"at"`)) {
				continue
			}
			if !strings.Contains(stored, clear) {
				t.Errorf("%s not kept in clear: %s", clear, stored)
			}
		}
		got, _ := s.ReadStream(ctx, c.stream, 0, 0)
		all, _ := s.ReadAll(ctx, events.Position{}, 0)
		sub, _ := s.SubscribeAll(ctx, events.Position{})
		var subbed events.Recorded
		for subbed.ID != id {
			subbed, _ = sub.Next(ctx)
		}
		sub.Close()
		// A subscription read without waiting (the runners') decrypts too.
		psub, _ := s.SubscribeAll(ctx, events.Position{})
		var polled events.Recorded
		for polled.ID != id {
			polled, _, _ = psub.(events.Poller).TryNext(ctx)
		}
		psub.Close()
		for _, rec := range []events.Recorded{got[0], all[len(all)-1], subbed, polled} {
			if string(rec.Data) != c.data {
				t.Fatalf("decrypted\n%s\nwant\n%s", rec.Data, c.data)
			}
		}
	}
}

func TestErasedFieldsReadAsNull(t *testing.T) {
	s, ks := newStore(t)
	ctx := context.Background()
	s.Append(ctx, "user-7", events.Any(), events.Proposed{ID: uuid.NewString(), Type: "user.family_member.created", Data: []byte(member)})
	if err := ks.Destroy(ctx, "user-7"); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadStream(ctx, "user-7", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"open_user_id":7,"member":{"member_id":3,"name":null,"id_number":null,"phone":null,  "height": null ,"relationship":null},"at":"2026-01-02T03:04:05Z"}`
	if string(got[0].Data) != want {
		t.Fatalf("erased\n%s\nwant\n%s", got[0].Data, want)
	}
	// Appending personal data of an erased person stores null, not a new key.
	s.Append(ctx, "user-7", events.Any(), events.Proposed{ID: uuid.NewString(), Type: "user.family_member.created", Data: []byte(member)})
	raw, _ := s.Inner().ReadStream(ctx, "user-7", 1, 0)
	if string(raw[0].Data) != want {
		t.Fatalf("appended after erasure: %s", raw[0].Data)
	}
}

func TestEnvelopeMovedToAnotherEventFails(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	s.Append(ctx, "user-7", events.Any(), events.Proposed{ID: uuid.NewString(), Type: "user.family_group.created", Data: []byte(`{"name":"Li family"}`)})
	raw, _ := s.Inner().ReadStream(ctx, "user-7", 0, 0)
	s.Inner().Append(ctx, "user-7", events.Any(), events.Proposed{ID: uuid.NewString(), Type: "user.family_group.created", Data: raw[0].Data})
	if _, err := s.ReadStream(ctx, "user-7", 0, 0); err == nil {
		t.Fatal("an envelope copied into another event opened")
	}
}

func TestSubjects(t *testing.T) {
	for _, c := range []struct{ stream, typ, data, want string }{
		{"user-7", "user.registered", `{}`, "user-7"},
		{"report-5", "report.created", `{"open_user_id":7}`, "user-7"},
		{"order-9", "order.created", `{"user_id":null}`, "order-9"},
		{"order-9", "order.created", `{"user_id":4}`, "user-4"},
		{"plugin-session-abc", "plugin.measurement.recorded", `{"platform_user_id":null}`, "plugin-session-abc"},
		{"delivery-x", "webhook.delivery.created", `{"source_stream":"report-5","body":"{\"open_user_id\":7}"}`, "user-7"},
		{"delivery-x", "webhook.delivery.created", `{"source_stream":"order-9","body":"{}"}`, "order-9"},
		// An attempt's response excerpt is sealed with the key of its delivery's body.
		{"delivery-x", "webhook.delivery.attempted", `{"open_user_id":7,"source_stream":"report-5","response_excerpt":"ok"}`, "user-7"},
		{"delivery-x", "webhook.delivery.attempted", `{"source_stream":"order-9","response_excerpt":"ok"}`, "order-9"},
		{"card-a/b", "benefit_card.issued", `{}`, ""},
	} {
		got := Subject(c.stream, c.typ, []byte(c.data))
		if c.want == "" {
			if !strings.HasPrefix(got, "stream-") || !datakeys.ValidSubject(got) {
				t.Errorf("%s: %s", c.stream, got)
			}
			continue
		}
		if got != c.want {
			t.Errorf("%s %s: %s, want %s", c.stream, c.typ, got, c.want)
		}
	}
}

// The cache of opened events serves repeated reads (every projection runner
// reads every event) and forgets everything when a key is destroyed or
// forgotten, so an erased person's fields read as null at once.
func TestOpenedEventsCacheForgetsOnErasure(t *testing.T) {
	s, ks := newStore(t)
	ctx := context.Background()
	id := uuid.NewString()
	if _, err := s.Append(ctx, "user-7", events.NoStream(), events.Proposed{ID: id, Type: "user.family_member.created", Data: []byte(member)}); err != nil {
		t.Fatal(err)
	}
	read := func() string {
		t.Helper()
		recs, err := s.ReadStream(ctx, "user-7", 0, 0)
		if err != nil || len(recs) != 1 {
			t.Fatalf("read: %v", err)
		}
		return string(recs[0].Data)
	}
	first := read()
	if first != member {
		t.Fatalf("first read %s", first)
	}
	// A caller that changes its copy does not change what others read.
	recs, _ := s.ReadStream(ctx, "user-7", 0, 0)
	copy(recs[0].Data, bytes.Repeat([]byte("x"), len(recs[0].Data)))
	if again := read(); again != member {
		t.Fatalf("a cached read changed: %s", again)
	}
	if err := ks.Destroy(ctx, "user-7"); err != nil {
		t.Fatal(err)
	}
	if after := read(); strings.Contains(after, "李四") || !strings.Contains(after, `"name":null`) {
		t.Fatalf("after the key was destroyed the cache still shows %s", after)
	}
}

// Another node destroyed the key and died before appending user.erased, so
// no follower tells this node: once this node's key cache expires
// (datakeys.CacheTTL on its clock) and its opened-events cache is emptied (the
// node's periodic sweep), its reads show the person's fields as erased.
func TestDropOpenedLetsAKeyDestroyedElsewhereTakeEffect(t *testing.T) {
	ctx := context.Background()
	b, err := files.Open(filepath.Join(t.TempDir(), "keys"))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := secrets.New(bytes.Repeat([]byte{1}, 32))
	inner := memory.New()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	here := datakeys.New(b, m)
	here.SetClock(func() time.Time { return now })
	s := New(inner, here)
	if _, err := s.Append(ctx, "user-7", events.NoStream(), events.Proposed{ID: uuid.NewString(), Type: "user.family_member.created", Data: []byte(member)}); err != nil {
		t.Fatal(err)
	}
	read := func() string {
		t.Helper()
		recs, err := s.ReadStream(ctx, "user-7", 0, 0)
		if err != nil || len(recs) != 1 {
			t.Fatalf("read: %v", err)
		}
		return string(recs[0].Data)
	}
	if got := read(); got != member {
		t.Fatalf("first read %s", got)
	}
	if err := datakeys.New(b, m).Destroy(ctx, "user-7"); err != nil { // the other node
		t.Fatal(err)
	}
	now = now.Add(datakeys.CacheTTL)
	if s.Readable(ctx, "user-7") {
		t.Fatal("the key still reads once this node's key cache expired")
	}
	s.DropOpened()
	if after := read(); strings.Contains(after, "李四") || !strings.Contains(after, `"name":null`) {
		t.Fatalf("after the sweep this node still shows %s", after)
	}
}
