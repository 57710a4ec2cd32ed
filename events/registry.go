package events

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Payload is a domain event's data. Its type name is stable and dotted
// (user.family_member.created); renaming a field means a new schema version
// with an upcaster, never an edit of history.
type Payload interface {
	EventType() string
}

// Metadata travels with every event so auditors know who caused it and when,
// and subscribers know which app it belongs to without decoding the data.
type Metadata struct {
	Schema    int    `json:"schema"`
	AppID     int64  `json:"app_id,omitempty"`
	Actor     string `json:"actor,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	// Traceparent is the W3C trace context of the request that wrote the
	// event (empty when tracing was off), so that the work the event
	// causes later, on any node, links to that request's trace.
	Traceparent string    `json:"traceparent,omitempty"`
	OccurredAt  time.Time `json:"occurred_at"`
}

// Upcaster rewrites the JSON of one schema version into the next one.
type Upcaster func(json.RawMessage) (json.RawMessage, error)

// Registry maps type names to Go types so the log can be decoded, refusing
// duplicate names (two structs claiming one name would corrupt history).
type Registry struct {
	mu        sync.RWMutex
	types     map[string]entry
	upcasters map[string]map[int]Upcaster
}

type entry struct {
	typ    reflect.Type
	schema int
	direct DirectDecoder // nil: encoding/json only
	encode DirectEncoder // nil: encoding/json only
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{types: map[string]entry{}, upcasters: map[string]map[int]Upcaster{}}
}

// Register adds a payload type at its current schema version.
func (r *Registry) Register(p Payload, schema int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := p.EventType()
	if _, dup := r.types[name]; dup {
		return fmt.Errorf("events: type %q registered twice", name)
	}
	t := reflect.TypeOf(p)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	r.types[name] = entry{typ: t, schema: schema}
	return nil
}

// MustRegister registers payload types at start-up, where a duplicate is a programming error.
func (r *Registry) MustRegister(schema int, ps ...Payload) {
	for _, p := range ps {
		if err := r.Register(p, schema); err != nil {
			panic(err)
		}
	}
}

// RegisterDecoder gives a registered type a direct decoder for its hot
// read path; Decode still uses encoding/json for whatever d leaves undecided.
func (r *Registry) RegisterDecoder(eventType string, d DirectDecoder) error {
	return r.attach(eventType, "decoder", func(e *entry) bool {
		had := e.direct != nil
		if !had {
			e.direct = d
		}
		return had
	})
}

// RegisterEncoder gives a registered type a direct encoder for its hot
// append path; Encode still uses encoding/json for whatever e declines.
func (r *Registry) RegisterEncoder(eventType string, enc DirectEncoder) error {
	return r.attach(eventType, "encoder", func(e *entry) bool {
		had := e.encode != nil
		if !had {
			e.encode = enc
		}
		return had
	})
}

// attach installs one direct hook (what names it in errors) on a
// registered type with set, which reports whether the type had one
// already: a type is never given a hook it was not registered for, nor two.
func (r *Registry) attach(eventType, what string, set func(*entry) (had bool)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.types[eventType]
	if !ok {
		return fmt.Errorf("events: %s for unregistered type %q", what, eventType)
	}
	if set(&e) {
		return fmt.Errorf("events: %s for %q registered twice", what, eventType)
	}
	r.types[eventType] = e
	return nil
}

// RegisterUpcaster converts data of schema version from to from+1 on read.
func (r *Registry) RegisterUpcaster(eventType string, from int, up Upcaster) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.upcasters[eventType] == nil {
		r.upcasters[eventType] = map[int]Upcaster{}
	}
	r.upcasters[eventType][from] = up
}

// Known reports whether the registry can decode the type.
func (r *Registry) Known(eventType string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	_, ok := r.types[eventType]
	return ok
}

// Upcasts reports whether data of eventType may be rewritten on read (an
// upcaster is registered for it): a reader that takes a member straight
// from the stored JSON may do so only for a type that is not.
func (r *Registry) Upcasts(eventType string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.upcasters[eventType]) > 0
}

// Encode turns a payload into an event ready to append, with a fresh
// time-ordered UUID (version 7, RFC 9562): the IDs of successive appends
// sort after each other, so an embedded log's index of IDs grows at its end
// instead of dirtying a random page per append, and a retry still finds its
// event by ID as with any other UUID. The type's direct encoder, if any,
// writes the data (the same bytes json.Marshal writes); encoding/json
// whatever it declines.
func (r *Registry) Encode(p Payload, meta Metadata) (Proposed, error) {
	r.mu.RLock()
	e, ok := r.types[p.EventType()]
	r.mu.RUnlock()
	if !ok {
		return Proposed{}, fmt.Errorf("events: type %q is not registered", p.EventType())
	}
	if e.encode != nil {
		if data, ok := e.encode(nil, p); ok {
			return encoded(p, e.schema, data, meta)
		}
	}
	data, err := json.Marshal(p)
	if err != nil {
		return Proposed{}, fmt.Errorf("events: encode %s: %w", p.EventType(), err)
	}
	return encoded(p, e.schema, data, meta)
}

// encoded completes an encoded payload with its metadata and event id.
func encoded(p Payload, schema int, data []byte, meta Metadata) (Proposed, error) {
	meta.Schema = schema
	if meta.OccurredAt.IsZero() {
		meta.OccurredAt = time.Now()
	}
	meta.OccurredAt = meta.OccurredAt.UTC()
	m, err := encodeMetadata(meta)
	if err != nil {
		return Proposed{}, fmt.Errorf("events: encode metadata: %w", err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Proposed{}, fmt.Errorf("events: event id: %w", err)
	}
	return Proposed{ID: id.String(), Type: p.EventType(), Data: data, Meta: m}, nil
}

// Envelope is a decoded event: the log record, its typed payload and metadata.
type Envelope struct {
	Recorded
	Payload  Payload
	Metadata Metadata
}

// Decode turns a recorded event into its typed payload, upcasting old
// schemas first; the type's direct decoder, if any, reads the (upcast)
// data, and encoding/json whatever it leaves undecided.
func (r *Registry) Decode(rec Recorded) (Envelope, error) {
	var meta Metadata
	if len(rec.Meta) > 0 {
		var err error
		if meta, err = decodeMetadata(rec.Meta); err != nil {
			return Envelope{}, fmt.Errorf("events: metadata of %s: %w", rec.ID, err)
		}
	}
	r.mu.RLock()
	e, ok := r.types[rec.Type]
	ups := r.upcasters[rec.Type]
	r.mu.RUnlock()
	if !ok {
		return Envelope{}, fmt.Errorf("events: type %q is not registered", rec.Type)
	}
	data := rec.Data
	for v := meta.Schema; v < e.schema; v++ {
		up, ok := ups[v]
		if !ok {
			return Envelope{}, fmt.Errorf("events: no upcaster for %s from schema %d", rec.Type, v)
		}
		var err error
		if data, err = up(data); err != nil {
			return Envelope{}, fmt.Errorf("events: upcast %s from schema %d: %w", rec.Type, v, err)
		}
	}
	if e.direct != nil {
		if p, ok := e.direct(data); ok {
			return Envelope{Recorded: rec, Payload: p, Metadata: meta}, nil
		}
	}
	ptr := reflect.New(e.typ)
	if err := json.Unmarshal(data, ptr.Interface()); err != nil {
		return Envelope{}, fmt.Errorf("events: decode %s %s: %w", rec.Type, rec.ID, err)
	}
	p, ok := ptr.Interface().(Payload)
	if !ok {
		p = ptr.Elem().Interface().(Payload)
	}
	return Envelope{Recorded: rec, Payload: p, Metadata: meta}, nil
}
