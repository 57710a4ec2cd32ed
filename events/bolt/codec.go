package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// recordV1 tags the record encoding so a later layout can coexist with it.
const recordV1 = 1

// encodeParts lays a record out as: version, stream, revision, id, type,
// created (unix nanoseconds), data, meta; strings and bytes are uvarint
// length-prefixed. The position is the record's key, so it is not stored.
// It also returns the data and meta as they lie in the encoded value
// (capacity clipped; nil when empty, as decode has them).
func encodeParts(r events.Recorded) (b, data, meta []byte) {
	n := 1 + 6*binary.MaxVarintLen64 + len(r.Stream) + len(r.ID) + len(r.Type) + len(r.Data) + len(r.Meta)
	b = make([]byte, 0, n)
	b = append(b, recordV1)
	b = appendBytes(b, []byte(r.Stream))
	b = binary.AppendUvarint(b, r.Revision)
	b = appendBytes(b, []byte(r.ID))
	b = appendBytes(b, []byte(r.Type))
	b = binary.AppendVarint(b, r.Created.UnixNano())
	b = appendBytes(b, r.Data)
	if len(r.Data) > 0 {
		data = b[len(b)-len(r.Data) : len(b) : len(b)]
	}
	b = appendBytes(b, r.Meta)
	if len(r.Meta) > 0 {
		meta = b[len(b)-len(r.Meta) : len(b) : len(b)]
	}
	return b, data, meta
}

func appendBytes(b, v []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(v))), v...)
}

var errCorrupt = errors.New("corrupt record")

// decode copies everything out of v (bbolt's memory is only valid inside
// the transaction) in two allocations: a replay decodes every event of the
// log, and five allocations per event (three strings, data, meta) were a
// large share of a rebuild's garbage. The stream, id and type are
// substrings of one string, so a read model that keeps an event's id or
// type keeps those few bytes, not the event's data; data and meta share one
// copy, each with its capacity clipped so that an append to data cannot
// write into meta.
func decode(seq uint64, v []byte) (events.Recorded, error) {
	if len(v) == 0 || v[0] != recordV1 {
		return events.Recorded{}, fmt.Errorf("event %d: %w: unknown version", seq, errCorrupt)
	}
	d := decoder{buf: v[1:]}
	r := events.Recorded{Position: events.Position{Commit: seq, Prepare: seq}}
	stream := d.bytes()
	r.Revision = d.uvarint()
	id, typ := d.bytes(), d.bytes()
	r.Created = time.Unix(0, d.varint()).UTC()
	data, meta := d.bytes(), d.bytes()
	if d.err != nil || len(d.buf) != 0 {
		return events.Recorded{}, fmt.Errorf("event %d: %w", seq, errCorrupt)
	}
	var sb strings.Builder
	sb.Grow(len(stream) + len(id) + len(typ))
	sb.Write(stream)
	sb.Write(id)
	sb.Write(typ)
	strs := sb.String()
	r.Stream, r.ID, r.Type = strs[:len(stream)], strs[len(stream):len(stream)+len(id)], strs[len(stream)+len(id):]
	if n := len(data) + len(meta); n > 0 {
		b := make([]byte, 0, n)
		b = append(append(b, data...), meta...)
		r.Data, r.Meta = clipped(b[:len(data)]), clipped(b[len(data):])
	}
	return r, nil
}

// decoder reads fields in order and remembers the first error.
type decoder struct {
	buf []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.buf)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.buf)) {
		d.err = errCorrupt
		return nil
	}
	v := d.buf[:n]
	d.buf = d.buf[n:]
	return v
}

// clipped is b with its capacity clipped; empty is nil, as the other
// adapters have it.
func clipped(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b[:len(b):len(b)]
}
