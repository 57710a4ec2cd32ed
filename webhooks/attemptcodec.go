package webhooks

import (
	"strconv"
	"time"

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
	b = events.AppendJSONString(b, ev.DeliveryID, true)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(ev.Attempt), 10)
	b = append(b, `,"at":`...)
	if b, ok = appendJSONTime(b, ev.At); !ok {
		return b, false
	}
	b = append(b, `,"url":`...)
	b = events.AppendJSONString(b, ev.URL, true)
	if ev.StatusCode != 0 {
		b = append(b, `,"status_code":`...)
		b = strconv.AppendInt(b, int64(ev.StatusCode), 10)
	}
	b = append(b, `,"latency_ms":`...)
	b = strconv.AppendInt(b, ev.LatencyMS, 10)
	if ev.Error != "" {
		b = append(b, `,"error":`...)
		b = events.AppendJSONString(b, ev.Error, true)
	}
	if ev.ErrorClass != "" {
		b = append(b, `,"error_class":`...)
		b = events.AppendJSONString(b, ev.ErrorClass, true)
	}
	b = append(b, `,"outcome":`...)
	b = events.AppendJSONString(b, ev.Outcome, true)
	if ev.NextAttemptAt != nil {
		b = append(b, `,"next_attempt_at":`...)
		if b, ok = appendJSONTime(b, *ev.NextAttemptAt); !ok {
			return b, false
		}
	}
	if ev.ResponseExcerpt != "" {
		b = append(b, `,"response_excerpt":`...)
		b = events.AppendJSONString(b, ev.ResponseExcerpt, true)
	}
	if ev.OpenUserID != 0 {
		b = append(b, `,"open_user_id":`...)
		b = strconv.AppendInt(b, ev.OpenUserID, 10)
	}
	if ev.SourceStream != "" {
		b = append(b, `,"source_stream":`...)
		b = events.AppendJSONString(b, ev.SourceStream, true)
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
