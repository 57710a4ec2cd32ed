package webhooks

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Every attempt ends with an outcome event, and encoding it through
// encoding/json's reflection was 1–3.5 % of the sender's samples and
// ≈ 5 µs per outcome (BenchmarkWebhookDrain and BenchmarkOutcomeEncode,
// eighth round). appendAttempted writes
// the same bytes directly; anything it does not write exactly as
// encoding/json does (a time encoding/json refuses) falls back to it
// (FuzzAttemptedEncodeMatchesEncodingJSON).

// encodeOutcome encodes an attempt's outcome event for the log.
func (d *Dispatcher) encodeOutcome(ev catalog.DeliveryAttempted, meta events.Metadata) (events.Proposed, error) {
	data, ok := appendAttempted(make([]byte, 0, 256+len(ev.ResponseExcerpt)+len(ev.Error)), &ev)
	if !ok {
		return d.Registry.Encode(ev, meta)
	}
	return d.Registry.EncodeMarshalled(ev, data, meta)
}

// appendAttempted appends ev as json.Marshal writes it (fields in
// declaration order, omitempty ones left out when zero); ok is false when
// a time is one encoding/json refuses or writes differently.
func appendAttempted(b []byte, ev *catalog.DeliveryAttempted) ([]byte, bool) {
	var ok bool
	b = append(b, `{"delivery_id":`...)
	b = appendJSONString(b, ev.DeliveryID)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(ev.Attempt), 10)
	b = append(b, `,"at":`...)
	if b, ok = appendJSONTime(b, ev.At); !ok {
		return b, false
	}
	b = append(b, `,"url":`...)
	b = appendJSONString(b, ev.URL)
	if ev.StatusCode != 0 {
		b = append(b, `,"status_code":`...)
		b = strconv.AppendInt(b, int64(ev.StatusCode), 10)
	}
	b = append(b, `,"latency_ms":`...)
	b = strconv.AppendInt(b, ev.LatencyMS, 10)
	if ev.Error != "" {
		b = append(b, `,"error":`...)
		b = appendJSONString(b, ev.Error)
	}
	if ev.ErrorClass != "" {
		b = append(b, `,"error_class":`...)
		b = appendJSONString(b, ev.ErrorClass)
	}
	b = append(b, `,"outcome":`...)
	b = appendJSONString(b, ev.Outcome)
	if ev.NextAttemptAt != nil {
		b = append(b, `,"next_attempt_at":`...)
		if b, ok = appendJSONTime(b, *ev.NextAttemptAt); !ok {
			return b, false
		}
	}
	if ev.ResponseExcerpt != "" {
		b = append(b, `,"response_excerpt":`...)
		b = appendJSONString(b, ev.ResponseExcerpt)
	}
	if ev.OpenUserID != 0 {
		b = append(b, `,"open_user_id":`...)
		b = strconv.AppendInt(b, ev.OpenUserID, 10)
	}
	if ev.SourceStream != "" {
		b = append(b, `,"source_stream":`...)
		b = appendJSONString(b, ev.SourceStream)
	}
	return append(b, '}'), true
}

// appendJSONTime writes t as time.Time.MarshalJSON does (RFC 3339 with
// nanoseconds, quoted); ok is false for what MarshalJSON refuses: a year
// outside 0–9999 or a zone offset with seconds.
func appendJSONTime(b []byte, t time.Time) ([]byte, bool) {
	if y := t.Year(); y < 0 || y > 9999 {
		return b, false
	}
	if _, off := t.Zone(); off%60 != 0 {
		return b, false
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), true
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s quoted as encoding/json does with its default
// HTML escaping: \" \\ \n \r \t \b \f, other control characters and < > & as
// \u00XX, U+2028 and U+2029 escaped, invalid UTF-8 as \ufffd.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
