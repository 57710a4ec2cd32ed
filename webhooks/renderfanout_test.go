package webhooks

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"
)

// A fan-out's body for an added endpoint, made from the default
// endpoint's rendering with the id put in, is RenderFor's for that
// endpoint byte for byte (its id, body, event, app, dead letter, only),
// for every type over the render test's 400 generated sets (odd strings,
// escapes, zones, a body id of another app's plugin measurement).
func TestFanOutBodyFromTheDefaultsIsRenderFors(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	ints := []int64{0, 1, -1, 42, 1 << 53, -1 << 63, 1<<63 - 1}
	copied := 0
	for i := 0; i < 400; i++ {
		var in renderInput
		for j := range in.s {
			in.s[j] = oddStrings[rng.IntN(len(oddStrings))]
			in.n[j] = ints[rng.IntN(len(ints))]
		}
		in.n[0] = 1 + rng.Int64N(1000)
		in.flags = uint16(rng.Uint32())
		in.at = time.Unix(rng.Int64N(4e9), rng.Int64N(1e9))
		loc := renderZones[rng.IntN(len(renderZones))]
		for _, env := range in.envelopes() {
			r, ok := Render(env, loc)
			if !ok {
				continue
			}
			for _, ep := range []int64{2, 7, 1 << 40} {
				got, gotOK := forEndpoint(r, env, loc, ep)
				want, wantOK := RenderFor(env, loc, ep)
				if gotOK != wantOK || !bytes.Equal(got.Body, want.Body) || got.deliveryID != want.deliveryID || got.Event != want.Event ||
					got.AppID != want.AppID || got.DeadLetter != want.DeadLetter || got.Only != want.Only || got.Endpoint != want.Endpoint {
					t.Fatalf("%T to endpoint %d:\n copied   %v %+v\n%s\n rendered %v %+v\n%s", env.Payload, ep, gotOK, got, got.Body, wantOK, want, want.Body)
				}
				if got.id(ep, env.ID) != want.id(ep, env.ID) {
					t.Fatalf("%T to endpoint %d: delivery id %q, want %q", env.Payload, ep, got.id(ep, env.ID), want.id(ep, env.ID))
				}
				if want.deliveryID != "" && !bytes.Equal(got.Body, r.Body) {
					copied++
				}
			}
		}
	}
	if copied == 0 {
		t.Fatal("no body was made by copying: the test checks nothing")
	}
}

func BenchmarkFanOutBody(b *testing.B) {
	env := renderInput{s: [4]string{"c-1", "nick", "x", "y"}, n: [4]int64{9, 1, 2, 3}, flags: 0xffff, at: time.Unix(1764000000, 0)}.envelopes()[0]
	r, ok := Render(env, time.UTC)
	if !ok {
		b.Fatal("not rendered")
	}
	b.Run("render", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			RenderFor(env, time.UTC, 7)
		}
	})
	b.Run("copy", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			forEndpoint(r, env, time.UTC, 7)
		}
	})
}
