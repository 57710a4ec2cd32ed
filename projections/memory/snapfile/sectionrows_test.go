package snapfile

import (
	"encoding/binary"
	"math"
)

// The tests' forms of a section (the row count, then the rows), as a
// write makes one in its shared buffer (sections.go).

// encodeRows is rows as one section.
func (c rowCodec[T]) encodeRows(rows []T) []byte {
	return c.appendRows(make([]byte, 0, 64*len(rows)+8), rows)
}

// appendRows appends rows as one section to dst.
func (c rowCodec[T]) appendRows(dst []byte, rows []T) []byte {
	e := &rowEncoder{buf: binary.AppendUvarint(dst, uint64(len(rows)))}
	c.appendUntil(e, rows, math.MaxInt)
	return e.buf
}

// encodeSection is rows [from, to) of f's table as one section.
func encodeSection(f imageField, im *Image, from, to int) []byte {
	e := &rowEncoder{buf: binary.AppendUvarint(nil, uint64(to-from))}
	f.appendUntil(e, im, from, to, math.MaxInt)
	return e.buf
}
