package httpapi

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
)

// Verbatim is JSON that must reach the client byte for byte (raw_data):
// encoding/json compacts embedded raw JSON, so WriteJSON encodes a unique
// placeholder string in its place and splices the bytes in afterwards.
type Verbatim []byte

type splice struct {
	placeholder []byte
	raw         []byte
}

// withPlaceholders replaces Verbatim values inside maps and slices of the
// response with placeholder strings, collecting what to splice back.
func withPlaceholders(v any, token string, subs *[]splice) any {
	switch x := v.(type) {
	case Verbatim:
		if x == nil || !json.Valid(x) {
			return nil
		}
		p := token + hex.EncodeToString([]byte{byte(len(*subs) >> 8), byte(len(*subs))})
		*subs = append(*subs, splice{placeholder: []byte(`"` + p + `"`), raw: x})
		return p
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[k] = withPlaceholders(val, token, subs)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = withPlaceholders(val, token, subs)
		}
		return out
	case Envelope:
		x.Data = withPlaceholders(x.Data, token, subs)
		return x
	}
	return v
}

// hasVerbatim reports whether body holds a Verbatim value where
// withPlaceholders looks for one, so that the common response, which holds
// none, neither copies its maps nor draws a placeholder token.
func hasVerbatim(v any) bool {
	switch x := v.(type) {
	case Verbatim:
		return true
	case map[string]any:
		for _, val := range x {
			if hasVerbatim(val) {
				return true
			}
		}
	case []any:
		for _, val := range x {
			if hasVerbatim(val) {
				return true
			}
		}
	case Envelope:
		return hasVerbatim(x.Data)
	}
	return false
}

// encodeVerbatim encodes body with its Verbatim values spliced in unchanged;
// false when body holds none (WriteJSON then encodes it directly). The
// placeholder token is unguessable (crypto/rand), so that no string a
// client stored can collide with it, and drawn only when a Verbatim value
// is present.
func encodeVerbatim(body any) ([]byte, bool) {
	if !hasVerbatim(body) {
		return nil, false
	}
	var subs []splice
	var t [12]byte
	_, _ = rand.Read(t[:])
	token := "verbatim-" + hex.EncodeToString(t[:]) + "-"
	prepared := withPlaceholders(body, token, &subs)
	if len(subs) == 0 {
		return nil, false
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(prepared); err != nil {
		return nil, false
	}
	out := buf.Bytes()
	for _, s := range subs {
		out = bytes.Replace(out, s.placeholder, s.raw, 1)
	}
	return out, true
}
