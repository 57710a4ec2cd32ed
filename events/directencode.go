package events

import "time"

// Every command encodes the events it appends, and encoding them with
// encoding/json through reflection was the largest share of a member
// upsert's encode CPU (≈ 17.5 µs per upsert in
// appendAfter, and the same per delivery in the webhook dispatcher). A
// payload type may therefore register a DirectEncoder, built on
// AppendJSONString and AppendJSONTime, that writes exactly the bytes
// json.Marshal writes; whatever it cannot write exactly (a time
// time.Time.MarshalJSON refuses) it declines, and Registry.Encode then
// uses json.Marshal, errors included (catalog's
// FuzzDirectEncodeMatchesEncodingJSON checks both).

// DirectEncoder appends p's JSON, byte for byte as json.Marshal(p) writes
// it, to b without reflection, so the hot append paths skip encoding/json;
// ok=false means "not decided here" (a payload it does not know how to
// write exactly), and Encode falls back to json.Marshal, which decides.
type DirectEncoder func(b []byte, p Payload) (out []byte, ok bool)

// AppendJSONTime appends t quoted as time.Time.MarshalJSON writes it (RFC
// 3339 with nanoseconds), so a direct encoder's times are encoding/json's;
// ok is false where MarshalJSON fails (a year outside 0–9999, a zone
// offset of 24 hours or more or with seconds), checked as MarshalJSON
// checks its own output.
func AppendJSONTime(b []byte, t time.Time) ([]byte, bool) {
	b = append(b, '"')
	n0 := len(b)
	b = t.AppendFormat(b, time.RFC3339Nano)
	switch {
	case b[n0+len("9999")] != '-':
		return b, false
	case b[len(b)-1] != 'Z':
		c := b[len(b)-len("Z07:00")]
		tail := b[len(b)-len("07:00"):]
		if ('0' <= c && c <= '9') || 10*(tail[0]-'0')+(tail[1]-'0') >= 24 {
			return b, false
		}
	}
	return append(b, '"'), true
}
