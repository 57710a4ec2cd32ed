package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// oddStrings are strings whose JSON form takes every branch of the escaper.
var oddStrings = []string{
	"", "plain", `quote " and \ backslash`, "new\nline\r\ttab", "\b\f\x00\x01\x1f\x7f", "<script>&amp;</script>",
	"\u2028\u2029", "é中文😀", "bad \xff utf-8 \xc3", "\xed\xa0\x80 surrogate", "\ufffd", "/open/v1/channel/users/:id",
}

// randomString mixes odd strings, random bytes and random runes.
func randomString(rnd *rand.Rand) string {
	var b strings.Builder
	for range rnd.IntN(4) {
		switch rnd.IntN(4) {
		case 0:
			b.WriteString(oddStrings[rnd.IntN(len(oddStrings))])
		case 1:
			for range rnd.IntN(8) {
				b.WriteByte(byte(rnd.IntN(256)))
			}
		case 2:
			for range rnd.IntN(4) {
				b.WriteRune(rune(rnd.IntN(0x110000)))
			}
		default:
			b.WriteString("abc")
		}
	}
	return b.String()
}

var oddFloats = []float64{0, math.Copysign(0, -1), 1, -1, 0.001, 1.5, 123.456, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 1.234e25,
	-5e-324, math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1)}

// randomAttr is an attribute of a random kind, some of which the direct
// writer leaves to slog (groups, any, times, empty keys).
func randomAttr(rnd *rand.Rand) slog.Attr {
	key := randomString(rnd)
	if rnd.IntN(3) > 0 {
		key = []string{"request_id", "status", "k"}[rnd.IntN(3)]
	}
	switch rnd.IntN(12) {
	case 0:
		return slog.Int64(key, rnd.Int64()-rnd.Int64())
	case 1:
		return slog.Uint64(key, rnd.Uint64())
	case 2:
		return slog.Bool(key, rnd.IntN(2) == 0)
	case 3:
		return slog.Duration(key, time.Duration(rnd.Int64()-rnd.Int64()))
	case 4:
		return slog.Float64(key, oddFloats[rnd.IntN(len(oddFloats))])
	case 5:
		return slog.Float64(key, math.Float64frombits(rnd.Uint64()))
	case 6:
		return slog.Float64(key, float64(rnd.IntN(1_000_000))/1000)
	case 7:
		return slog.Time(key, time.Unix(rnd.Int64N(1<<35), rnd.Int64N(1e9)))
	case 8:
		return slog.Group(key, slog.Int("x", 1))
	case 9:
		return slog.Any(key, errors.New(randomString(rnd)))
	case 10:
		return slog.String("", randomString(rnd))
	default:
		return slog.String(key, randomString(rnd))
	}
}

var zones = []*time.Location{time.UTC, time.FixedZone("", 8*3600), time.FixedZone("", -(5*3600 + 30*60)), time.FixedZone("odd", 3600+7)}

// sameLine requires LogHandler to write the bytes (and the error) of
// slog.JSONHandler and slog.TextHandler for r.
func sameLine(t *testing.T, r slog.Record) {
	t.Helper()
	for _, c := range []struct {
		ours   func(io.Writer) *LogHandler
		theirs func(io.Writer) slog.Handler
	}{
		{NewJSONLogHandler, func(w io.Writer) slog.Handler { return slog.NewJSONHandler(w, nil) }},
		{NewTextLogHandler, func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) }},
	} {
		var got, want bytes.Buffer
		gotErr := c.ours(&got).Handle(context.Background(), r.Clone())
		wantErr := c.theirs(&want).Handle(context.Background(), r.Clone())
		if got.String() != want.String() || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("LogHandler wrote\n%q (%v)\nslog's handler\n%q (%v)", got.String(), gotErr, want.String(), wantErr)
		}
	}
}

// LogHandler writes slog.JSONHandler's and slog.TextHandler's bytes for
// any record: the ones it writes itself (odd strings, floats in both of
// json.Marshal's formats, every integer) and the ones it hands to slog.
func TestLogHandlerMatchesSlog(t *testing.T) {
	rnd := rand.New(rand.NewPCG(11, 12))
	levels := []slog.Level{slog.LevelInfo, slog.LevelWarn, slog.LevelError, slog.LevelInfo + 2}
	for i := range 20000 {
		var at time.Time
		switch i % 5 {
		case 0:
		case 1:
			at = time.Now()
		case 2:
			at = time.Unix(rnd.Int64N(1<<38)-1<<37, rnd.Int64N(1e9)).In(zones[rnd.IntN(len(zones))])
		default:
			at = time.Unix(rnd.Int64N(1<<33), rnd.Int64N(4)*int64(time.Millisecond)).In(zones[rnd.IntN(len(zones))])
		}
		r := slog.NewRecord(at, levels[rnd.IntN(len(levels))], randomString(rnd), 0)
		for range rnd.IntN(maxFastAttrs + 3) {
			r.AddAttrs(randomAttr(rnd))
		}
		sameLine(t, r)
	}
}

// The access line as InstrumentTo sends it, field by field, with odd
// values: the direct write matches slog's for each.
func TestLogHandlerAccessLine(t *testing.T) {
	for _, s := range oddStrings {
		for _, f := range oddFloats {
			r := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
			r.AddAttrs(slog.String("request_id", s), slog.String("method", "GET"), slog.String("route", s),
				slog.Int("status", 200), slog.Float64("duration_ms", f), slog.Int64("app_id", 7), slog.String("auth_failure", s))
			sameLine(t, r)
		}
	}
}

// FuzzLogHandlerMatchesSlog: whatever the strings, numbers and instant,
// LogHandler writes slog.JSONHandler's and slog.TextHandler's bytes.
func FuzzLogHandlerMatchesSlog(f *testing.F) {
	for i, s := range oddStrings {
		f.Add(s, "route", s, int64(i), float64(i)/1000, int64(1700000000)+int64(i), int32(i*3600))
	}
	f.Add("request", "", "x", int64(-1), math.NaN(), int64(-1<<40), int32(-7))
	f.Fuzz(func(t *testing.T, msg, key, val string, n int64, fl float64, unix int64, offset int32) {
		at := time.Unix(unix, n%1e9).In(time.FixedZone("", int(offset%(30*3600))))
		r := slog.NewRecord(at, slog.LevelInfo, msg, 0)
		r.AddAttrs(slog.String(key, val), slog.Int64("n", n), slog.Float64(val, fl), slog.Uint64("u", uint64(n)),
			slog.Duration("d", time.Duration(n)), slog.Bool("b", n%2 == 0))
		sameLine(t, r)
	})
}

// BenchmarkAccessLine is one access line as Instrument writes it: through
// slog's handlers (Logger.LogAttrs) and through LogHandler directly.
func BenchmarkAccessLine(b *testing.B) {
	attrs := []slog.Attr{slog.String("request_id", "3f2a9c0d5e6b7a8c9d0e1f2a"), slog.String("method", "GET"),
		slog.String("route", "/open/v1/channel/users/:open_user_id"), slog.Int("status", 200),
		slog.Float64("duration_ms", 1.234), slog.Int64("app_id", 100001)}
	for _, c := range []struct {
		name string
		slog slog.Handler
		ours *LogHandler
	}{
		{"json", slog.NewJSONHandler(io.Discard, nil), NewJSONLogHandler(io.Discard)},
		{"text", slog.NewTextHandler(io.Discard, nil), NewTextLogHandler(io.Discard)},
	} {
		b.Run(c.name+"/slog", func(b *testing.B) {
			l := slog.New(c.slog)
			for b.Loop() {
				l.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
			}
		})
		b.Run(c.name+"/LogHandler", func(b *testing.B) {
			for b.Loop() {
				if ok, _ := c.ours.writeIf(slog.LevelInfo, "request", attrs); !ok {
					b.Fatal("declined")
				}
			}
		})
	}
}
