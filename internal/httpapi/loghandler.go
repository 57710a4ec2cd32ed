package httpapi

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/healthtech/partner-open-platform/events/jsoncodec"
)

// LogHandler is a slog.Handler that writes slog.JSONHandler's (or
// slog.TextHandler's) bytes, default options, for flat records of strings,
// integers, floats, bools and durations, and hands any other record to that
// slog handler on the same writer. The access log uses it: slog's
// formatting, its json.Marshal of each float and the logger's
// runtime.Callers were ≈ 4 % of a Postgres snapshot read's CPU
// (measured with scripts/bench.sh), and Instrument writes
// through it without building a Record. Each line is one Write, as slog's.
type LogHandler struct {
	mu   *sync.Mutex
	w    io.Writer
	json bool
	slow slog.Handler
}

// NewJSONLogHandler writes JSON lines to w, as slog.NewJSONHandler(w, nil).
func NewJSONLogHandler(w io.Writer) *LogHandler {
	return &LogHandler{mu: new(sync.Mutex), w: w, json: true, slow: slog.NewJSONHandler(w, nil)}
}

// NewTextLogHandler writes key=value lines to w, as slog.NewTextHandler(w, nil).
func NewTextLogHandler(w io.Writer) *LogHandler {
	return &LogHandler{mu: new(sync.Mutex), w: w, slow: slog.NewTextHandler(w, nil)}
}

// Enabled reports whether level is logged (Info and above, as slog's default).
func (h *LogHandler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= slog.LevelInfo
}

// maxFastAttrs bounds the attributes a record may have to be written
// directly; larger records go to slog.
const maxFastAttrs = 16

// Handle writes r.
func (h *LogHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.NumAttrs() > maxFastAttrs {
		return h.slow.Handle(ctx, r)
	}
	var buf [maxFastAttrs]slog.Attr
	attrs := buf[:0]
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a)
		return true
	})
	if ok, err := h.write(r.Time, r.Level, r.Message, attrs); ok {
		return err
	}
	return h.slow.Handle(ctx, r)
}

// WithAttrs returns the slog handler with attrs (nothing on the access
// path uses it).
func (h *LogHandler) WithAttrs(attrs []slog.Attr) slog.Handler { return h.slow.WithAttrs(attrs) }

// WithGroup returns the slog handler with the group.
func (h *LogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.slow.WithGroup(name)
}

// writeIf writes a record of these fields stamped now, as Logger.LogAttrs
// would through h; it reports false when h is nil or declines the record.
func (h *LogHandler) writeIf(level slog.Level, msg string, attrs []slog.Attr) (bool, error) {
	if h == nil {
		return false, nil
	}
	return h.write(time.Now(), level, msg, attrs)
}

var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// write writes the line h's slog handler would for a record of these
// fields, and reports false (writing nothing) when the record is one it
// leaves to slog.
func (h *LogHandler) write(t time.Time, level slog.Level, msg string, attrs []slog.Attr) (bool, error) {
	var b []byte
	var ok bool
	bp := lineBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 16<<10 {
			lineBufs.Put(bp)
		}
	}()
	if h.json {
		b, ok = appendJSONLine((*bp)[:0], t, level, msg, attrs)
	} else {
		b, ok = appendTextLine((*bp)[:0], t, level, msg, attrs)
	}
	if !ok {
		return false, nil
	}
	*bp = b
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(b)
	return true, err
}

// appendJSONLine appends slog.JSONHandler's line for the record, or
// reports false.
func appendJSONLine(b []byte, t time.Time, level slog.Level, msg string, attrs []slog.Attr) ([]byte, bool) {
	b = append(b, '{')
	if !t.IsZero() {
		if y := t.Year(); y < 0 || y >= 10000 {
			return b, false
		}
		b = append(b, `"time":"`...)
		b = t.Round(0).AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","level":`...)
	} else {
		b = append(b, `"level":`...)
	}
	b = jsoncodec.Slog.AppendString(b, level.String())
	b = append(b, `,"msg":`...)
	b = jsoncodec.Slog.AppendString(b, msg)
	for _, a := range attrs {
		if a.Key == "" {
			return b, false // slog drops some and writes others
		}
		v := a.Value
		b = append(b, ',')
		b = jsoncodec.Slog.AppendString(b, a.Key)
		b = append(b, ':')
		switch v.Kind() {
		case slog.KindString:
			b = jsoncodec.Slog.AppendString(b, v.String())
		case slog.KindInt64:
			b = strconv.AppendInt(b, v.Int64(), 10)
		case slog.KindUint64:
			b = strconv.AppendUint(b, v.Uint64(), 10)
		case slog.KindBool:
			b = strconv.AppendBool(b, v.Bool())
		case slog.KindDuration:
			b = strconv.AppendInt(b, int64(v.Duration()), 10)
		case slog.KindFloat64:
			var ok bool
			if b, ok = appendJSONFloat(b, v.Float64()); !ok {
				return b, false
			}
		default:
			return b, false
		}
	}
	b = append(b, '}', '\n')
	return b, true
}

// appendTextLine appends slog.TextHandler's line for the record, or
// reports false.
func appendTextLine(b []byte, t time.Time, level slog.Level, msg string, attrs []slog.Attr) ([]byte, bool) {
	if !t.IsZero() {
		if y := t.Year(); y < 0 || y >= 10000 {
			return b, false
		}
		b = append(b, "time="...)
		b = appendRFC3339Millis(b, t.Round(0))
		b = append(b, " level="...)
	} else {
		b = append(b, "level="...)
	}
	b = appendTextString(b, level.String())
	b = append(b, " msg="...)
	b = appendTextString(b, msg)
	for _, a := range attrs {
		if a.Key == "" {
			return b, false
		}
		v := a.Value
		b = append(b, ' ')
		b = appendTextString(b, a.Key)
		b = append(b, '=')
		switch v.Kind() {
		case slog.KindString:
			b = appendTextString(b, v.String())
		case slog.KindInt64:
			b = strconv.AppendInt(b, v.Int64(), 10)
		case slog.KindUint64:
			b = strconv.AppendUint(b, v.Uint64(), 10)
		case slog.KindBool:
			b = strconv.AppendBool(b, v.Bool())
		case slog.KindDuration:
			b = append(b, v.Duration().String()...)
		case slog.KindFloat64:
			b = strconv.AppendFloat(b, v.Float64(), 'g', -1, 64)
		default:
			return b, false
		}
	}
	return append(b, '\n'), true
}

// appendRFC3339Millis writes t as slog's text handler does: RFC 3339 with
// exactly three digits of milliseconds.
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	t = t.Truncate(time.Millisecond).Add(time.Millisecond / 10)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...) // drop the 4th digit
}

// appendTextString writes s as slog's text handler does: as it is, or Go-quoted
// when it is empty or holds a space, '=', a quote, a control or a non-printing rune.
func appendTextString(b []byte, s string) []byte {
	if needsQuoting(s) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

func needsQuoting(s string) bool {
	if len(s) == 0 {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == ' ' || c == '=' || c == '"' || c < 0x20 {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

// appendJSONFloat writes f as json.Marshal does (slog calls it for
// floats); it declines NaN and infinities, which json.Marshal refuses.
func appendJSONFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}
