package webhooks

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// oddStrings are values whose JSON needs care: HTML characters (json.Marshal
// escapes them), quotes, control bytes, U+2028/9, invalid UTF-8, unicode.
var oddStrings = []string{
	"", "a", "<script>alert('x')</script>", "Tom & Jerry > 1", `quote " back \ slash`, "\x00\x01\x1f\x7f",
	"tab\tnew\nline\rcr\bb\ff", "\u2028\u2029", "bad \xff\xfe utf8 \xc3", "汉字 ünïcødé 😀", "\xed\xa0\x80 surrogate",
	"2026-11-24T06:00:00+08:00", "null", "{}",
}

// renderInput is what one set of generated envelopes is made of.
type renderInput struct {
	s     [4]string
	n     [4]int64
	flags uint16
	at    time.Time
}

// envelopes builds one envelope of every type Render takes (and of the
// variants it declines) from in: flags pick nil, empty or filled slices
// and pointers.
func (in renderInput) envelopes() []events.Envelope {
	s, n, f := in.s, in.n, in.flags
	bit := func(i uint) bool { return f&(1<<i) != 0 }
	strs := func(i uint, vals ...string) []string {
		switch {
		case bit(i) && bit(i+1):
			return vals
		case bit(i):
			return []string{}
		}
		return nil
	}
	optStr := func(i uint, v string) *string {
		if bit(i) {
			return &v
		}
		return nil
	}
	optInt := func(i uint, v int64) *int64 {
		if bit(i) {
			return &v
		}
		return nil
	}
	var ids []int64
	if bit(0) {
		ids = []int64{}
		if bit(1) {
			ids = []int64{n[1], n[2], -n[3]}
		}
	}
	var items []catalog.ShippedLine
	if bit(2) {
		items = []catalog.ShippedLine{}
		if bit(3) {
			items = append(items, catalog.ShippedLine{ItemID: n[0], GoodsCode: s[1], Quantity: n[2], DeviceSNs: strs(4, s[2], s[3])},
				catalog.ShippedLine{ItemID: n[3], GoodsCode: s[0], DeviceSNs: strs(5, s[3])})
		}
	}
	pm := catalog.PluginMeasurement{MeasurementNo: s[0], SessionID: s[1], AppID: n[0] + int64(f>>14&1), ThirdUserID: optStr(6, s[2]),
		PlatformUserID: optInt(7, n[1]), ReportType: s[3], DeviceKey: s[1], MeasureMode: s[2], Metadata: optStr(8, s[1])}
	payloads := []events.Payload{
		&catalog.UserProfileUpdated{ChannelUserID: s[0], OpenUserID: n[1], Changed: strs(0, s[1], s[2], s[3])},
		&catalog.FamilyGroupUpserted{ChannelUserID: s[0], OpenUserID: n[1], FamilyGroupID: n[2], AppGroupID: n[3], Name: s[f>>9&1], Created: bit(10)},
		&catalog.FamilyGroupDissolved{ChannelUserID: s[0], OpenUserID: n[1], FamilyGroupID: n[2], AppGroupID: n[3], DeletedMemberIDs: ids},
		&catalog.FamilyMemberCreated{ChannelUserID: s[0], OpenUserID: n[1], Member: catalog.Member{MemberID: n[2], AppUserID: s[1], FamilyGroupID: n[3], AppGroupID: n[0] * int64(f>>11&1)}},
		&catalog.FamilyMemberUpdated{ChannelUserID: s[0], OpenUserID: n[1], Changed: strs(1, s[2], s[3]), Member: catalog.Member{MemberID: n[2], AppUserID: s[1], FamilyGroupID: n[3], AppGroupID: n[0] * int64(f>>12&1)}},
		&catalog.FamilyMemberDeleted{ChannelUserID: s[0], OpenUserID: n[1], MemberID: n[2], AppUserID: s[1], FamilyGroupID: n[3]},
		&catalog.ReportCreated{ReportID: n[2], AppID: n[0], OpenUserID: n[1], ChannelUserID: s[0], ReportType: optStr(13, s[3]), UploadedAt: in.at},
		&catalog.ReportUpdated{ReportID: n[2], AppID: n[0], OpenUserID: n[1], ChannelUserID: s[0], ReportType: optStr(14, s[2])},
		&catalog.PluginMeasurementRecorded{PluginMeasurement: pm, NeedsAnalysis: bit(15), Data: s[3]},
		&catalog.PluginMeasurementAnalyzed{PluginMeasurement: pm},
		&catalog.OrderShipped{OrderID: n[3], OrderCode: s[0], AppID: n[0], ThirdOrderID: s[1], LogisticsCompany: s[2], TrackingNumber: s[3],
			Items: items, ShippedAt: in.at.Add(time.Duration(n[3]) * time.Second), Complete: bit(11), Source: s[1]},
		&catalog.AppWebhookTestRequested{AppID: n[0], EndpointID: n[2]},
		&catalog.AppSandboxEventTriggered{AppID: n[0], Event: sandboxTypes[int(uint(f)%uint(len(sandboxTypes)))]},
	}
	out := make([]events.Envelope, len(payloads))
	for i, p := range payloads {
		out[i] = events.Envelope{Recorded: events.Recorded{ID: s[i%4] + "-evt", Type: p.EventType()}, Payload: p,
			Metadata: events.Metadata{AppID: n[0], OccurredAt: in.at}}
	}
	return out
}

// checkRender requires RenderFor to render env as json.Marshal did, for
// the default endpoint and another one, and to carry the body's delivery id.
func checkRender(t *testing.T, env events.Envelope, loc *time.Location) {
	t.Helper()
	for _, endpoint := range []int64{0, 7} {
		got, gotOK := RenderFor(env, loc, endpoint)
		want, wantOK := renderForMarshal(env, loc, endpoint)
		if gotOK != wantOK || got.Event != want.Event || got.AppID != want.AppID || !bytes.Equal(got.Body, want.Body) ||
			got.DeadLetter != want.DeadLetter || got.Only != want.Only || got.Endpoint != want.Endpoint {
			t.Fatalf("%T to endpoint %d:\n direct %v %+v\n%s\n marshal %v %+v\n%s", env.Payload, endpoint, gotOK, got, got.Body, wantOK, want, want.Body)
		}
		if !gotOK {
			continue
		}
		idEndpoint := endpoint
		if got.Only {
			idEndpoint = got.Endpoint
		}
		// The delivery's id, as the plan derived it from the rendered app.
		if id := EndpointDeliveryID(got.AppID, idEndpoint, env.ID); got.id(idEndpoint, env.ID) != id {
			t.Fatalf("%T: delivery id %q, want %q", env.Payload, got.id(idEndpoint, env.ID), id)
		}
	}
}

var renderZones = []*time.Location{time.UTC, time.FixedZone("CST", 8*3600), time.FixedZone("NPT", 5*3600+45*60),
	time.FixedZone("west", -12*3600), time.FixedZone("odd", -(3*3600 + 61))}

// Every webhook type, rendered directly, is the body json.Marshal wrote:
// odd strings, nil/empty/filled slices and pointers, zones and instants
// (a year outside 0–9999 too), 400 generated sets.
func TestRenderMatchesEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	ints := []int64{0, 1, -1, 42, 1 << 53, -1 << 63, 1<<63 - 1}
	instants := []time.Time{time.Unix(0, 0), time.Date(2026, 11, 24, 6, 30, 0, 123456789, time.UTC), time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(12000, 6, 1, 0, 0, 0, 0, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)}
	rendered := map[string]bool{}
	for i := 0; i < 400; i++ {
		var in renderInput
		for j := range in.s {
			in.s[j] = oddStrings[rng.IntN(len(oddStrings))]
			in.n[j] = ints[rng.IntN(len(ints))]
			if rng.IntN(2) == 0 {
				in.n[j] = rng.Int64N(1e12) - 1e6
			}
		}
		in.n[0] = 1 + rng.Int64N(1000) // an app id; 0 renders nothing (below)
		in.flags = uint16(rng.Uint32())
		in.at = instants[rng.IntN(len(instants))].Add(time.Duration(rng.Int64N(1e15)))
		loc := renderZones[rng.IntN(len(renderZones))]
		for _, env := range in.envelopes() {
			checkRender(t, env, loc)
			if r, ok := RenderFor(env, loc, 0); ok {
				rendered[r.Event] = true
			}
		}
	}
	for _, event := range []string{"user.profile.updated", "user.family_group.created", "user.family_group.deleted", "user.family_member.created",
		"user.family_member.updated", "user.family_member.deleted", "health.report.created", "health.report.updated",
		"plugin.report.ready", "order.shipped", "webhook.test"} {
		if !rendered[event] {
			t.Errorf("no %s was rendered: the generator misses a type", event)
		}
	}
	// Every rendered event has its personal paths listed, so the admin
	// delivery read redacts its body field by field.
	for event := range rendered {
		if _, listed := catalog.WebhookPersonalFields(event); !listed {
			t.Errorf("%s is not in the catalog's webhookPersonalFields", event)
		}
	}
	// An event without an app renders nothing on both paths.
	env := renderInput{s: [4]string{"a", "b", "c", "d"}, at: time.Unix(0, 0)}.envelopes()[0]
	checkRender(t, env, time.UTC)
}

// FuzzRenderMatchesEncodingJSON is TestRenderMatchesEncodingJSON over the
// fuzzer's strings, numbers, flags, instant and zone offset.
func FuzzRenderMatchesEncodingJSON(f *testing.F) {
	f.Add("c-1", "<b>&", "\u2028", "\xff", int64(9), int64(1), int64(2), int64(3), uint16(0xffff), int64(0), int32(0))
	f.Add("", "汉字", "a\"b", "\x00", int64(1), int64(-1), int64(0), int64(1<<62), uint16(0x0a55), int64(1764000000), int32(-43200))
	f.Add("x", "", "", "", int64(-3), int64(0), int64(0), int64(0), uint16(0), int64(-62135596800), int32(3661))
	f.Fuzz(func(t *testing.T, s0, s1, s2, s3 string, n0, n1, n2, n3 int64, flags uint16, unix int64, offset int32) {
		in := renderInput{s: [4]string{s0, s1, s2, s3}, n: [4]int64{n0, n1, n2, n3}, flags: flags, at: time.Unix(unix, int64(n1)%1e9)}
		loc := time.FixedZone("fuzz", int(offset%(100*3600)))
		for _, env := range in.envelopes() {
			checkRender(t, env, loc)
		}
	})
}

func BenchmarkRender(b *testing.B) {
	env := events.Envelope{Recorded: events.Recorded{ID: "0193a4b2-7c1d-7e2f-8a3b-4c5d6e7f8091"},
		Payload: &catalog.FamilyMemberUpdated{ChannelUserID: "ch-user-000123", OpenUserID: 123456, Changed: []string{"name"},
			Member: catalog.Member{MemberID: 99, AppUserID: "app-user-42", FamilyGroupID: 7, AppGroupID: 3}},
		Metadata: events.Metadata{AppID: 17, OccurredAt: time.Date(2026, 11, 24, 6, 30, 0, 0, time.UTC)}}
	for _, c := range []struct {
		name   string
		render func(events.Envelope, *time.Location, int64) (Rendered, bool)
	}{{"direct", RenderFor}, {"marshal", renderForMarshal}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := c.render(env, time.UTC, 0); !ok {
					b.Fatal("not rendered")
				}
			}
		})
	}
}
