// Package kafka is the event log's wire format on Kafka: how one event of
// the log becomes one message (Encode) and back (Decode). The relay's
// producer (relay/kafka) writes it and the webhook dispatcher's consumer
// (webhooks/kafka) reads it.
//
// The internal topic (default "platform.internal.events") is plumbing
// between nodes, not a published interface: every event of the log, personal
// data and webhook bookkeeping included, byte for byte, for the dispatcher
// (webhooks/kafka.PartitionSource, one reader at a time). Restrict it
// with ACLs to the platform's own principals. This comment is its message
// format. The published analytics topic is another format, package
// relay/feed's (see relay/kafka).
//
// # Topic and key (internal topic)
//
// Every event of the log becomes one message on the internal topic. The key
// is the event's stream name, so all events of
// one aggregate land in one partition, in revision order; the producer
// partitions with kafka-go's Hash balancer (FNV-1a of the key, Sarama
// compatible, not the Java client's murmur2). Across streams there is no
// order; the position says where an event sits in the global log.
//
// Delivery is at least once: after a crash or a failed write the relay
// re-sends a whole batch, so consumers de-duplicate by event id (or by
// stream and revision).
//
// # Headers
//
//	event-id    the event's UUID
//	event-type  its type name, e.g. "users.registered"
//	stream      the stream (aggregate) name, same as the key
//	revision    0-based index of the event in its stream, decimal
//	position    global log position as "commit/prepare", decimal
//	app-id      metadata field "app_id" ("" when absent)
//	schema      metadata field "schema" ("" when absent)
//
// Headers let a consumer filter without parsing the value.
//
// # Value
//
// A JSON object:
//
//	{
//	  "id": "0f8c…",                  // event id (UUID)
//	  "type": "users.registered",
//	  "stream": "user-42",
//	  "revision": 0,
//	  "position": {"commit": 17, "prepare": 17},
//	  "recorded_at": "2025-01-02T03:04:05.123456789Z",  // RFC 3339, UTC
//	  "metadata": {"schema": 1, "app_id": 7, …},         // or null
//	  "data": {…}                                        // the event's payload
//	}
//
// "metadata" and "data" are the event's JSON exactly as the log stores it,
// byte for byte (not re-encoded: key order, number spelling and whitespace
// are preserved); a missing payload is null. Bytes that are not valid JSON,
// which the platform never writes, are carried as a JSON string so that the
// message stays parseable. Numbers may exceed 2^53: JavaScript consumers
// should read positions from the header.
package kafka

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/healthtech/partner-open-platform/events"
)

// DefaultInternalTopic carries every event byte-exact to the dispatcher; it is not a published interface.
const DefaultInternalTopic = "platform.internal.events"

// Header names, exported so consumers in Go need not repeat the strings.
const (
	HeaderEventID   = "event-id"
	HeaderEventType = "event-type"
	HeaderStream    = "stream"
	HeaderRevision  = "revision"
	HeaderPosition  = "position"
	HeaderAppID     = "app-id"
	HeaderSchema    = "schema"
)

// Encode never fails, so that no single event can stall the relay.
func Encode(topic string, ev events.Recorded) kafka.Message {
	var b bytes.Buffer
	b.WriteString(`{"id":`)
	writeString(&b, ev.ID)
	b.WriteString(`,"type":`)
	writeString(&b, ev.Type)
	b.WriteString(`,"stream":`)
	writeString(&b, ev.Stream)
	fmt.Fprintf(&b, `,"revision":%d,"position":{"commit":%d,"prepare":%d},"recorded_at":`,
		ev.Revision, ev.Position.Commit, ev.Position.Prepare)
	writeString(&b, ev.Created.UTC().Format(time.RFC3339Nano))
	b.WriteString(`,"metadata":`)
	writeRaw(&b, ev.Meta)
	b.WriteString(`,"data":`)
	writeRaw(&b, ev.Data)
	b.WriteByte('}')

	return kafka.Message{
		Topic: topic,
		Key:   []byte(ev.Stream),
		Value: b.Bytes(),
		Headers: []kafka.Header{
			{Key: HeaderEventID, Value: []byte(ev.ID)},
			{Key: HeaderEventType, Value: []byte(ev.Type)},
			{Key: HeaderStream, Value: []byte(ev.Stream)},
			{Key: HeaderRevision, Value: strconv.AppendUint(nil, ev.Revision, 10)},
			{Key: HeaderPosition, Value: []byte(ev.Position.String())},
			{Key: HeaderAppID, Value: []byte(metaField(ev.Meta, "app_id"))},
			{Key: HeaderSchema, Value: []byte(metaField(ev.Meta, "schema"))},
		},
	}
}

// wire is the value's shape; RawMessage keeps metadata and data byte-exact.
type wire struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Stream     string          `json:"stream"`
	Revision   uint64          `json:"revision"`
	Position   events.Position `json:"position"`
	RecordedAt time.Time       `json:"recorded_at"`
	Metadata   json.RawMessage `json:"metadata"`
	Data       json.RawMessage `json:"data"`
}

// Decode trusts only the value; headers are a filtering convenience.
func Decode(m kafka.Message) (events.Recorded, error) {
	var w wire
	if err := json.Unmarshal(m.Value, &w); err != nil {
		return events.Recorded{}, fmt.Errorf("decode event at %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, err)
	}
	if w.ID == "" || w.Stream == "" {
		return events.Recorded{}, fmt.Errorf("decode event at %s/%d@%d: %w", m.Topic, m.Partition, m.Offset, errNotEvent)
	}
	return events.Recorded{
		ID:       w.ID,
		Stream:   w.Stream,
		Type:     w.Type,
		Revision: w.Revision,
		Position: w.Position,
		Created:  w.RecordedAt.UTC(),
		Data:     nullToNil(w.Data),
		Meta:     nullToNil(w.Metadata),
	}, nil
}

var errNotEvent = errors.New("value has no event id or stream")

func writeString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s) // a string always marshals
	b.Write(q)
}

// writeRaw embeds raw JSON unchanged; json.Marshal would compact it and
// escape HTML characters.
func writeRaw(b *bytes.Buffer, raw json.RawMessage) {
	switch {
	case len(bytes.TrimSpace(raw)) == 0:
		b.WriteString("null")
	case json.Valid(raw):
		b.Write(raw)
	default:
		writeString(b, string(raw))
	}
}

func nullToNil(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// metaField renders a top-level metadata field as header text: a string
// unquoted, a number as written, anything missing or null as "".
func metaField(meta json.RawMessage, key string) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(meta, &fields) != nil {
		return ""
	}
	v, ok := fields[key]
	if !ok || string(v) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}
