package webhooks

import (
	"bytes"
	"strconv"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Every attempt reloads its delivery's stream after claiming it (so an
// erasure or another node's outcome is seen), and decoding the creation
// event with encoding/json was 12 % of the sender's CPU per delivery
// (BenchmarkWebhookDrain profile): its body is a JSON document in a JSON
// string, unescaped byte by byte through reflection. The readers below
// decode the delivery events and their metadata directly. They accept a
// strict subset of JSON (known keys, each once, no nulls, canonical
// integers, valid UTF-8) and report ok=false for anything else, which the
// caller then decodes with the registry, so a value they return is always
// the one encoding/json would (FuzzDeliveryDecodeMatchesEncodingJSON).

// decodeDelivery decodes one event of a delivery stream, directly when its
// bytes are in the subset the readers take and its schema is the current
// one (so no upcaster applies), through the registry otherwise.
func (d *Dispatcher) decodeDelivery(rec events.Recorded) (events.Envelope, error) {
	if p, meta, ok := readDeliveryEvent(rec); ok && meta.Schema == d.deliverySchema(rec.Type) {
		return events.Envelope{Recorded: rec, Payload: p, Metadata: meta}, nil
	}
	return d.Registry.Decode(rec)
}

// deliverySchemas caches the schema version the registry encodes each
// delivery event type at (-1: not registered), read once per dispatcher.
type deliverySchemas struct {
	once    sync.Once
	created int
	attempt int
	resend  int
}

// deliverySchema is the registry's current schema version of a delivery
// event type, or -1 when the registry does not encode it.
func (d *Dispatcher) deliverySchema(eventType string) int {
	s := &d.schemas
	s.once.Do(func() {
		of := func(p events.Payload) int {
			ev, err := d.Registry.Encode(p, events.Metadata{})
			if err != nil {
				return -1
			}
			meta, ok := readMetadata(ev.Meta)
			if !ok {
				return -1
			}
			return meta.Schema
		}
		s.created = of(catalog.DeliveryCreated{})
		s.attempt = of(catalog.DeliveryAttempted{})
		s.resend = of(catalog.DeliveryResendRequested{})
	})
	switch eventType {
	case catalog.DeliveryCreated{}.EventType():
		return s.created
	case catalog.DeliveryAttempted{}.EventType():
		return s.attempt
	case catalog.DeliveryResendRequested{}.EventType():
		return s.resend
	}
	return -1
}

// readDeliveryEvent reads a delivery event's payload and metadata; ok is
// false when either is outside the readers' subset or the type is not a
// delivery event.
func readDeliveryEvent(rec events.Recorded) (events.Payload, events.Metadata, bool) {
	meta, ok := readMetadata(rec.Meta)
	if !ok {
		return nil, meta, false
	}
	switch rec.Type {
	case catalog.DeliveryCreated{}.EventType():
		p, ok := readCreated(rec.Data)
		return p, meta, ok
	case catalog.DeliveryAttempted{}.EventType():
		p, ok := readAttempted(rec.Data)
		return p, meta, ok
	case catalog.DeliveryResendRequested{}.EventType():
		p, ok := readResend(rec.Data)
		return p, meta, ok
	}
	return nil, meta, false
}

// readMetadata reads events.Metadata.
func readMetadata(raw []byte) (m events.Metadata, ok bool) {
	if len(raw) == 0 {
		return m, false
	}
	ok = readObject(raw, func(key []byte, r *reader) bool {
		switch string(key) {
		case "schema":
			n, ok := r.int64()
			m.Schema = int(n)
			return ok && int64(m.Schema) == n
		case "app_id":
			return r.intTo(&m.AppID)
		case "actor":
			return r.stringTo(&m.Actor)
		case "request_id":
			return r.stringTo(&m.RequestID)
		case "occurred_at":
			return r.timeTo(&m.OccurredAt)
		}
		return false
	})
	return m, ok
}

func readCreated(raw []byte) (*catalog.DeliveryCreated, bool) {
	c := &catalog.DeliveryCreated{}
	ok := readObject(raw, func(key []byte, r *reader) bool {
		switch string(key) {
		case "delivery_id":
			return r.stringTo(&c.DeliveryID)
		case "app_id":
			return r.intTo(&c.AppID)
		case "event":
			return r.stringTo(&c.Event)
		case "source_event_id":
			return r.stringTo(&c.SourceEventID)
		case "source_stream":
			return r.stringTo(&c.SourceStream)
		case "source_position":
			return r.object(func(key []byte, r *reader) bool {
				switch string(key) {
				case "commit":
					n, ok := r.int64()
					c.SourcePosition.Commit = uint64(n)
					return ok && n >= 0
				case "prepare":
					n, ok := r.int64()
					c.SourcePosition.Prepare = uint64(n)
					return ok && n >= 0
				}
				return false
			})
		case "source_recorded_at":
			return r.timeTo(&c.SourceRecordedAt)
		case "body":
			return r.stringTo(&c.Body)
		case "endpoint_id":
			return r.intTo(&c.EndpointID)
		case "deliver":
			return r.boolTo(&c.Deliver)
		case "dead_letter":
			return r.boolTo(&c.DeadLetter)
		}
		return false
	})
	return c, ok
}

func readAttempted(raw []byte) (*catalog.DeliveryAttempted, bool) {
	a := &catalog.DeliveryAttempted{}
	ok := readObject(raw, func(key []byte, r *reader) bool {
		switch string(key) {
		case "delivery_id":
			return r.stringTo(&a.DeliveryID)
		case "attempt":
			n, ok := r.int64()
			a.Attempt = int(n)
			return ok && int64(a.Attempt) == n
		case "at":
			return r.timeTo(&a.At)
		case "url":
			return r.stringTo(&a.URL)
		case "status_code":
			n, ok := r.int64()
			a.StatusCode = int(n)
			return ok && int64(a.StatusCode) == n
		case "latency_ms":
			return r.intTo(&a.LatencyMS)
		case "error":
			return r.stringTo(&a.Error)
		case "error_class":
			return r.stringTo(&a.ErrorClass)
		case "outcome":
			return r.stringTo(&a.Outcome)
		case "next_attempt_at":
			var t time.Time
			if !r.timeTo(&t) {
				return false
			}
			a.NextAttemptAt = &t
			return true
		case "response_excerpt":
			return r.stringTo(&a.ResponseExcerpt)
		case "open_user_id":
			return r.intTo(&a.OpenUserID)
		case "source_stream":
			return r.stringTo(&a.SourceStream)
		}
		return false
	})
	return a, ok
}

func readResend(raw []byte) (*catalog.DeliveryResendRequested, bool) {
	s := &catalog.DeliveryResendRequested{}
	ok := readObject(raw, func(key []byte, r *reader) bool {
		switch string(key) {
		case "delivery_id":
			return r.stringTo(&s.DeliveryID)
		case "requested_by":
			return r.stringTo(&s.RequestedBy)
		case "at":
			return r.timeTo(&s.At)
		}
		return false
	})
	return s, ok
}

// reader walks JSON text; every method consumes one value (after optional
// white space) and reports false when the value is not in the subset.
type reader struct {
	b []byte
	i int
}

func (r *reader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// readObject reads exactly one JSON object from raw (white space around it
// allowed, nothing else), calling field for each member's value; a key seen
// twice is refused, since encoding/json's last-wins merge is not followed here.
func readObject(raw []byte, field func(key []byte, r *reader) bool) bool {
	r := &reader{b: raw}
	if !r.object(field) {
		return false
	}
	r.ws()
	return r.i == len(r.b)
}

// object reads one object, refusing duplicate keys.
func (r *reader) object(field func(key []byte, r *reader) bool) bool {
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != '{' {
		return false
	}
	r.i++
	var seenBuf [16][]byte // the delivery events' keys fit: no allocation
	seen := seenBuf[:0]
	r.ws()
	if r.i < len(r.b) && r.b[r.i] == '}' {
		r.i++
		return true
	}
	for {
		key, ok := r.key()
		if !ok {
			return false
		}
		for _, k := range seen {
			if bytes.Equal(k, key) {
				return false
			}
		}
		seen = append(seen, key)
		r.ws()
		if r.i >= len(r.b) || r.b[r.i] != ':' {
			return false
		}
		r.i++
		if !field(key, r) {
			return false
		}
		r.ws()
		if r.i >= len(r.b) {
			return false
		}
		switch r.b[r.i] {
		case ',':
			r.i++
		case '}':
			r.i++
			return true
		default:
			return false
		}
	}
}

// key reads an object key without escapes (encoding/json writes none in
// the delivery events), as a slice of the input.
func (r *reader) key() ([]byte, bool) {
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return nil, false
	}
	start := r.i + 1
	for i := start; i < len(r.b); i++ {
		switch c := r.b[i]; {
		case c == '"':
			r.i = i + 1
			return r.b[start:i], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

// str reads a string literal; escapes are decoded, and invalid UTF-8 or a
// lone surrogate (which encoding/json would replace) is refused.
func (r *reader) str() (string, bool) {
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return "", false
	}
	start := r.i + 1
	i := start
	for i < len(r.b) {
		c := r.b[i]
		if c == '"' {
			s := r.b[start:i]
			if !utf8.Valid(s) {
				return "", false
			}
			r.i = i + 1
			return string(s), true
		}
		if c == '\\' {
			return r.escaped(start)
		}
		if c < 0x20 {
			return "", false
		}
		i++
	}
	return "", false
}

// escaped finishes a string literal that holds escapes, from its start.
func (r *reader) escaped(start int) (string, bool) {
	out := make([]byte, 0, 64)
	i := start
	for i < len(r.b) {
		c := r.b[i]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return "", false
			}
			r.i = i + 1
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			// Copy the run up to the next quote or backslash at once.
			j := i + 1
			for j < len(r.b) && r.b[j] != '"' && r.b[j] != '\\' && r.b[j] >= 0x20 {
				j++
			}
			out = append(out, r.b[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(r.b) {
			return "", false
		}
		i += 2
		switch r.b[i-1] {
		case '"', '\\', '/':
			out = append(out, r.b[i-1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			u, ok := hex4(r.b, i)
			if !ok {
				return "", false
			}
			i += 4
			if utf16.IsSurrogate(rune(u)) {
				if i+6 > len(r.b) || r.b[i] != '\\' || r.b[i+1] != 'u' {
					return "", false
				}
				lo, ok := hex4(r.b, i+2)
				if !ok {
					return "", false
				}
				dec := utf16.DecodeRune(rune(u), rune(lo))
				if dec == utf8.RuneError {
					return "", false
				}
				i += 6
				out = utf8.AppendRune(out, dec)
				continue
			}
			out = utf8.AppendRune(out, rune(u))
		default:
			return "", false
		}
	}
	return "", false
}

func hex4(b []byte, i int) (uint16, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var v uint16
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint16(c)
	}
	return v, true
}

// int64 reads a canonical integer (no leading zeros, no fraction or exponent).
func (r *reader) int64() (int64, bool) {
	r.ws()
	start := r.i
	i := start
	if i < len(r.b) && r.b[i] == '-' {
		i++
	}
	digits := i
	for i < len(r.b) && r.b[i] >= '0' && r.b[i] <= '9' {
		i++
	}
	if i == digits || (r.b[digits] == '0' && (i-digits > 1 || digits > start)) {
		return 0, false
	}
	if i < len(r.b) && (r.b[i] == '.' || r.b[i] == 'e' || r.b[i] == 'E') {
		return 0, false
	}
	n, err := strconv.ParseInt(string(r.b[start:i]), 10, 64)
	if err != nil {
		return 0, false
	}
	r.i = i
	return n, true
}

func (r *reader) intTo(dst *int64) bool {
	n, ok := r.int64()
	*dst = n
	return ok
}

func (r *reader) stringTo(dst *string) bool {
	s, ok := r.str()
	*dst = s
	return ok
}

func (r *reader) boolTo(dst *bool) bool {
	r.ws()
	switch {
	case bytes.HasPrefix(r.b[r.i:], []byte("true")):
		*dst, r.i = true, r.i+4
	case bytes.HasPrefix(r.b[r.i:], []byte("false")):
		*dst, r.i = false, r.i+5
	default:
		return false
	}
	return true
}

// timeTo reads a time literal without escapes through time.Time's own
// UnmarshalJSON, as encoding/json does.
func (r *reader) timeTo(dst *time.Time) bool {
	r.ws()
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return false
	}
	end := bytes.IndexByte(r.b[r.i+1:], '"')
	if end < 0 {
		return false
	}
	lit := r.b[r.i : r.i+end+2]
	if bytes.IndexByte(lit, '\\') >= 0 {
		return false
	}
	if err := dst.UnmarshalJSON(lit); err != nil {
		return false
	}
	r.i += end + 2
	return true
}
