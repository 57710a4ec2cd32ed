// Package feed turns events of the log into the published analytics feed:
// a versioned envelope per business event, its data reduced to an allow-list
// of fields, personal identifiers replaced by keyed pseudonyms and personal
// fields dropped. Internal plumbing (deliveries, id blocks, tokens, nonces,
// credentials, idempotency records, card batches, uniqueness claims) and any
// type not in the table are not published at all.
//
// # Envelope
//
//	{
//	  "schema": "report.created/v1",     // <event type>/v<schema version>
//	  "id": "0f8c…",                     // event id (UUID): de-duplicate by it
//	  "type": "report.created",
//	  "occurred_at": "2026-01-02T03:04:05.123Z", // RFC 3339, UTC
//	  "stream": "report-17",             // aggregate; user and card streams pseudonymised
//	  "app_id": 7,                       // or null
//	  "pseudonym_key": "1a2b3c4d",       // id of the key that made the pseudonyms
//	  "data": {…}                        // the type's published fields, all present
//	}
//
// Every message validates against schemas/<type>.v<version>.json (JSON
// Schema draft 2020-12), embedded in this package (see Schema).
//
// # Pseudonyms
//
// A pseudonym is the first 128 bits, as 32 lower-case hex characters, of
// HMAC-SHA256(key, namespace || 0x00 || value): stable for one person (or
// member, family group, card) as long as the key stays the same, so analysts
// can join and count; not reversible without the key. Namespaces keep an
// open_user_id and a member_id with the same number apart. The key id in the
// envelope changes when the key does; pseudonyms made with different keys do
// not match.
package feed

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/privacy"
)

// Message is one analytics record: Key keeps one aggregate's events in one partition.
type Message struct {
	Key    []byte
	Value  []byte
	Type   string
	Schema string // e.g. "report.created/v1"
}

// Transformer applies the table with one pseudonym key; it is safe for concurrent use.
type Transformer struct {
	key   []byte
	keyID string
	reg   *events.Registry
}

// MinKeyLen is the shortest pseudonym key accepted: a shorter key could be guessed.
const MinKeyLen = 32

// New needs the registry to decode (and upcast) payloads before selecting fields.
func New(key []byte, reg *events.Registry) (*Transformer, error) {
	if len(key) < MinKeyLen {
		return nil, fmt.Errorf("feed: pseudonym key must be at least %d bytes, got %d", MinKeyLen, len(key))
	}
	if reg == nil {
		return nil, errors.New("feed: nil registry")
	}
	t := &Transformer{key: bytes.Clone(key), reg: reg}
	id := hmac.New(sha256.New, t.key)
	id.Write([]byte("feed pseudonym key id"))
	t.keyID = hex.EncodeToString(id.Sum(nil))[:8]
	return t, nil
}

// DeriveKey gives the default pseudonym key from the master key, so every
// node sharing the master key makes the same pseudonyms without another secret.
func DeriveKey(master []byte) []byte {
	m := hmac.New(sha256.New, master)
	m.Write([]byte("partner-open-platform analytics feed pseudonym key v1"))
	return m.Sum(nil)
}

// KeyID names the pseudonym key in every envelope, so consumers see a rotation.
func (t *Transformer) KeyID() string { return t.keyID }

// Pseudonym is exported so tests and operators can compute the pseudonym of a known id.
func (t *Transformer) Pseudonym(namespace, value string) string {
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte(namespace))
	m.Write([]byte{0})
	m.Write([]byte(value))
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// Published reports whether type has an entry in the table (and so a schema).
func Published(eventType string) bool {
	_, ok := table[eventType]
	return ok
}

// PublishedTypes lists the table's types in a stable order, for docs and tests.
func PublishedTypes() []string { return publishedOrder }

// Transform returns ok=false for every event that is not published; an error
// means a published event whose payload does not fit its table entry.
func (t *Transformer) Transform(rec events.Recorded) (Message, bool, error) {
	entry, ok := table[rec.Type]
	if !ok {
		return Message{}, false, nil
	}
	// The relay reads the log as stored: personal fields are envelopes,
	// which the feed never publishes; null lets the payload decode.
	rec.Data = privacy.Blank(rec.Type, rec.Data)
	env, err := t.reg.Decode(rec)
	if err != nil {
		return Message{}, false, fmt.Errorf("feed: %w", err)
	}
	raw, err := json.Marshal(env.Payload)
	if err != nil {
		return Message{}, false, fmt.Errorf("feed: re-encode %s %s: %w", rec.Type, rec.ID, err)
	}
	var src map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&src); err != nil {
		return Message{}, false, fmt.Errorf("feed: data of %s %s: %w", rec.Type, rec.ID, err)
	}
	data, err := t.object(src, entry.fields)
	if err != nil {
		return Message{}, false, fmt.Errorf("feed: %s %s: %w", rec.Type, rec.ID, err)
	}
	occurred := env.Metadata.OccurredAt
	if occurred.IsZero() {
		occurred = rec.Created
	}
	var appID *int64
	if env.Metadata.AppID != 0 {
		appID = &env.Metadata.AppID
	}
	schema := SchemaName(rec.Type, entry.version)
	stream := t.stream(rec.Stream)
	value, err := json.Marshal(envelope{
		Schema: schema, ID: rec.ID, Type: rec.Type, OccurredAt: occurred.UTC().Format(time.RFC3339Nano),
		Stream: stream, AppID: appID, PseudonymKey: t.keyID, Data: data,
	})
	if err != nil {
		return Message{}, false, fmt.Errorf("feed: encode %s %s: %w", rec.Type, rec.ID, err)
	}
	return Message{Key: []byte(stream), Value: value, Type: rec.Type, Schema: schema}, true, nil
}

// SchemaName is the envelope's "schema" value: "<type>/v<version>".
func SchemaName(eventType string, version int) string {
	return fmt.Sprintf("%s/v%d", eventType, version)
}

type envelope struct {
	Schema       string `json:"schema"`
	ID           string `json:"id"`
	Type         string `json:"type"`
	OccurredAt   string `json:"occurred_at"`
	Stream       string `json:"stream"`
	AppID        *int64 `json:"app_id"`
	PseudonymKey string `json:"pseudonym_key"`
	Data         object `json:"data"`
}

// object is a JSON object that keeps the table's field order.
type object []member

type member struct {
	name  string
	value any
}

// MarshalJSON writes the members in order.
func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.name)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// stream pseudonymises the streams named after a person or a card; the
// others are named after non-personal ids and stay as they are.
func (t *Transformer) stream(s string) string {
	for _, p := range pseudonymousStreams {
		if rest, ok := strings.CutPrefix(s, p.prefix); ok {
			return p.prefix + t.Pseudonym(p.namespace, rest)
		}
	}
	return s
}

func (t *Transformer) object(src map[string]any, fields []field) (object, error) {
	out := make(object, 0, len(fields))
	for _, f := range fields {
		v, err := t.value(src, f)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.out, err)
		}
		out = append(out, member{f.out, v})
	}
	return out, nil
}

func (t *Transformer) value(src map[string]any, f field) (any, error) {
	v := lookup(src, f.in)
	if v == nil {
		switch {
		case f.null:
			return nil, nil
		case f.kind.isList():
			return []any{}, nil // an absent list (omitempty) is an empty one
		}
		return nil, errors.New("missing and not nullable")
	}
	switch f.kind {
	case kRef:
		s, err := scalarText(v)
		if err != nil {
			return nil, err
		}
		return t.Pseudonym(f.ns, t.scope(src, f)+s), nil
	case kRefs:
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("want a list, got %T", v)
		}
		refs := make([]string, len(list))
		for i, e := range list {
			s, err := scalarText(e)
			if err != nil {
				return nil, err
			}
			refs[i] = t.Pseudonym(f.ns, t.scope(src, f)+s)
		}
		return refs, nil
	case kObjs:
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("want a list, got %T", v)
		}
		objs := make([]object, len(list))
		for i, e := range list {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("want objects, got %T", e)
			}
			o, err := t.object(m, f.sub)
			if err != nil {
				return nil, err
			}
			objs[i] = o
		}
		return objs, nil
	default:
		return v, nil // the schema says which scalar or list it must be
	}
}

// scope prefixes a pseudonymised value with its scope (e.g. the app of a
// third-party user id), so equal ids of different apps stay different people.
func (t *Transformer) scope(src map[string]any, f field) string {
	if f.scope == "" {
		return ""
	}
	s, _ := scalarText(lookup(src, f.scope))
	return s + "\x00"
}

func lookup(src map[string]any, path string) any {
	var cur any = src
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

func scalarText(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case json.Number:
		return v.String(), nil
	default:
		return "", fmt.Errorf("cannot pseudonymise a %T", v)
	}
}
