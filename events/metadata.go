package events

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unsafe"

	"github.com/healthtech/partner-open-platform/events/jsoncodec"
)

// Every event carries metadata, and every follower decodes it again, so its
// JSON is written and read by hand in the one shape Encode produces; any
// other shape (an older writer, another store's round trip) goes through
// encoding/json, and both ways give the same bytes and the same values
// (TestMetadataCodecMatchesEncodingJSON, FuzzMetadataDecode).

// appendMetadata appends meta as json.Marshal would write it; ok is false
// when a value needs what only encoding/json does (escapes, a year outside
// 0–9999), and the caller falls back to it.
func appendMetadata(b []byte, meta Metadata) ([]byte, bool) {
	b = append(b, `{"schema":`...)
	b = strconv.AppendInt(b, int64(meta.Schema), 10)
	if meta.AppID != 0 {
		b = append(b, `,"app_id":`...)
		b = strconv.AppendInt(b, meta.AppID, 10)
	}
	if meta.Actor != "" {
		if !plainJSON(meta.Actor) {
			return b, false
		}
		b = append(b, `,"actor":"`...)
		b = append(b, meta.Actor...)
		b = append(b, '"')
	}
	if meta.RequestID != "" {
		if !plainJSON(meta.RequestID) {
			return b, false
		}
		b = append(b, `,"request_id":"`...)
		b = append(b, meta.RequestID...)
		b = append(b, '"')
	}
	if meta.Traceparent != "" {
		if !plainJSON(meta.Traceparent) {
			return b, false
		}
		b = append(b, `,"traceparent":"`...)
		b = append(b, meta.Traceparent...)
		b = append(b, '"')
	}
	if y := meta.OccurredAt.Year(); y < 0 || y > 9999 {
		return b, false
	}
	b = append(b, `,"occurred_at":"`...)
	b = meta.OccurredAt.AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}`...), true
}

// plainJSON reports whether s is written verbatim inside a JSON string by
// encoding/json: printable ASCII other than the quote, the backslash and
// the characters it escapes for HTML.
func plainJSON[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// encodeMetadata is json.Marshal(meta), mostly without reflection.
func encodeMetadata(meta Metadata) ([]byte, error) {
	if b, ok := appendMetadata(make([]byte, 0, 128), meta); ok {
		return b, nil
	}
	return json.Marshal(meta)
}

// decodeMetadata is json.Unmarshal(raw, &meta): the shape appendMetadata
// writes is read directly, anything else by encoding/json.
func decodeMetadata(raw []byte) (Metadata, error) {
	if meta, ok := readMetadata(raw); ok {
		return meta, nil
	}
	var meta Metadata
	err := json.Unmarshal(raw, &meta)
	return meta, err
}

// metaReader reads readMetadata's shape from r, consuming what it reads.
type metaReader struct{ r []byte }

// take consumes lit if r starts with it.
func (m *metaReader) take(lit string) bool {
	if !bytes.HasPrefix(m.r, []byte(lit)) {
		return false
	}
	m.r = m.r[len(lit):]
	return true
}

// integer consumes an integer as json.Marshal writes it.
func (m *metaReader) integer() (int64, bool) {
	r := m.r
	i := 0
	if i < len(r) && r[i] == '-' {
		i++
	}
	start := i
	for i < len(r) && r[i] >= '0' && r[i] <= '9' {
		i++
	}
	// Only canonical integers: no leading zero, nothing json.Marshal would not write.
	if i == start || (r[start] == '0' && i-start > 1) || (r[0] == '-' && r[start] == '0') {
		return 0, false
	}
	n, err := strconv.ParseInt(string(r[:i]), 10, 64)
	if err != nil {
		return 0, false
	}
	m.r = r[i:]
	return n, true
}

// str consumes the rest of a non-empty string whose opening quote is
// taken, and its closing quote, and returns the string's offsets in raw
// (the document m reads); only strings without escapes are read.
func (m *metaReader) str(raw []byte) (span, bool) {
	end := bytes.IndexByte(m.r, '"')
	if end <= 0 || !plainJSON(m.r[:end]) {
		return span{}, false
	}
	start := len(raw) - len(m.r)
	m.r = m.r[end+1:]
	return span{start, start + end}, true
}

// span is a string's offsets in a metadata document; a zero span is
// absent.
type span struct{ start, end int }

// readMetadata reads the shape appendMetadata writes (every field in order,
// optional ones omitted when zero, the time as any literal time.Time's
// UnmarshalJSON takes); ok is false otherwise.
func readMetadata(raw []byte) (meta Metadata, ok bool) {
	m := metaReader{r: raw}
	if !m.take(`{"schema":`) {
		return Metadata{}, false
	}
	n, ok := m.integer()
	if !ok || int64(int(n)) != n {
		return Metadata{}, false
	}
	meta.Schema = int(n)
	if m.take(`,"app_id":`) {
		if meta.AppID, ok = m.integer(); !ok || meta.AppID == 0 {
			return Metadata{}, false
		}
	}
	var strs [3]span // actor, request_id, traceparent
	for k, key := range [3]string{`,"actor":"`, `,"request_id":"`, `,"traceparent":"`} {
		if m.take(key) {
			if strs[k], ok = m.str(raw); !ok {
				return Metadata{}, false
			}
		}
	}
	if !m.take(`,"occurred_at":"`) {
		return Metadata{}, false
	}
	end := bytes.IndexByte(m.r, '"')
	if end < 0 || string(m.r[end:]) != `"}` {
		return Metadata{}, false
	}
	// encoding/json hands the quoted literal to time.Time's UnmarshalJSON,
	// whose value UnmarshalTime gives, with no second formatting to
	// compare.
	if err := jsoncodec.UnmarshalTime(&meta.OccurredAt, raw[len(raw)-len(m.r)-1:len(raw)-1]); err != nil {
		return Metadata{}, false // encoding/json judges
	}
	meta.Actor, meta.RequestID, meta.Traceparent = metaStrings(raw, strs)
	return meta, true
}

// metaStrings makes the strings at strs (zero spans absent) from one
// buffer of their bytes, one after the other: an event's metadata costs
// one allocation, not one per string. They are short and of one event; a
// read model that keeps one (an actor) copies it, so as not to keep the
// others.
func metaStrings(raw []byte, strs [3]span) (actor, requestID, traceparent string) {
	n := 0
	for _, sp := range strs {
		n += sp.end - sp.start
	}
	if n == 0 {
		return "", "", ""
	}
	buf := make([]byte, 0, n)
	var out [3]string
	for k, sp := range strs {
		if sp.end == 0 {
			continue
		}
		at := len(buf)
		buf = append(buf, raw[sp.start:sp.end]...)
		out[k] = unsafe.String(unsafe.SliceData(buf[at:]), sp.end-sp.start)
	}
	return out[0], out[1], out[2]
}
