package events

// Every follower decodes every event of its read model again, and every
// command encodes the events it appends; through encoding/json's
// reflection that was the largest share of a member upsert's CPU (≈ 66 µs
// decoding across followers, ≈ 17.5 µs encoding in appendAfter, and the
// same per delivery in the webhook dispatcher). A payload type may
// therefore register a DirectDecoder and a DirectEncoder, built on
// events/jsoncodec, which decide exactly as encoding/json does or decline;
// Registry.Decode and Registry.Encode then use encoding/json, errors
// included (catalog's FuzzDirectDecodeMatchesEncodingJSON and
// FuzzDirectEncodeMatchesEncodingJSON check both).

// DirectDecoder reads the JSON of one payload type at its current schema
// without reflection, returning a pointer to the payload as Decode does;
// ok=false means "not decided here", never "invalid", so Decode falls back
// to encoding/json, which decides.
type DirectDecoder func(data []byte) (p Payload, ok bool)

// DirectEncoder appends p's JSON, byte for byte as json.Marshal(p) writes
// it, to b without reflection; ok=false means "not decided here" (a
// payload it does not know how to write exactly), and Encode falls back to
// json.Marshal, which decides.
type DirectEncoder func(b []byte, p Payload) (out []byte, ok bool)
