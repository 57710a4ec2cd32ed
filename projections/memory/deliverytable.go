package memory

// deliveryTable is the deliveries' rows in the order they were created
// (log order), each at a fixed place (a uint32) that the feeds and the
// subjects index hold instead of the delivery's id, and an index of them
// by id. A map of id → row kept each row in a slot of its own at the
// map's load factor (about 1.4 bytes per byte of row) and every index held
// the id (16 bytes and a pointer for the collector to follow); here a row
// costs its size and the index a place (placeIndex: 4 bytes a slot, 5.3 to
// 10.7 bytes a row, where a map of 16-byte keys to places took about 23).
// An id that is a uuid in its canonical text (every id the platform makes)
// is kept as its 16 bytes in the row, which the index by uuid compares,
// rather than as a 36-byte string in a 48-byte allocation: that index
// holds no pointer for the collector to follow. Any other id keeps its
// text, in its row's more and in an index of its own.
//
// A row is only ever removed by the undo of the batch that made it, which
// comes after every later row's undo: the last row, whose place the next
// row takes again (table.remove).
type deliveryTable struct {
	table[deliveryRow]
	byUUID placeIndex        // places by DeliveryID, for a uuid's
	byText map[string]uint32 // DeliveryID -> place, for any other
}

func newDeliveryTable(n int) deliveryTable {
	return deliveryTable{
		table:  newTable[deliveryRow](n),
		byUUID: newPlaceIndex(n),
		byText: map[string]uint32{},
	}
}

// len is how many deliveries the table holds.
func (t *deliveryTable) len() int { return t.byUUID.n + len(t.byText) }

// place is where delivery id's row is.
func (t *deliveryTable) place(id string) (uint32, bool) {
	if u, ok := parseUUID(id); ok {
		return t.placeOfUUID(u)
	}
	i, ok := t.byText[id]
	return i, ok
}

// get is delivery id's row.
func (t *deliveryTable) get(id string) (*deliveryRow, bool) {
	i, ok := t.place(id)
	if !ok {
		return nil, false
	}
	return t.at(i), true
}

// add puts r, a delivery the table does not hold, after the last row, and
// returns its place.
func (t *deliveryTable) add(r deliveryRow) uint32 {
	i := t.table.add(r)
	if r.flags&idUUID != 0 {
		t.byUUID.add(hashUUID(r.id), i, t.uuidHashAt)
	} else {
		t.byText[r.more.id] = i
	}
	return i
}

// remove takes the row at place i out; its place is taken again by the
// next add when it is the last.
func (t *deliveryTable) remove(i uint32) {
	if r := t.at(i); r.flags&idUUID != 0 {
		t.byUUID.remove(hashUUID(r.id), i, t.uuidHashAt)
	} else {
		delete(t.byText, r.more.id)
	}
	t.table.remove(i)
}

// row is a copy of delivery id's row (cow.keep's lookup).
func (t *deliveryTable) row(id string) (deliveryRow, bool) {
	if r, ok := t.get(id); ok {
		return *r, true
	}
	return deliveryRow{}, false
}

// placeOfUUID is where the delivery of id u is.
func (t *deliveryTable) placeOfUUID(u uuid16) (uint32, bool) {
	for i := t.byUUID.start(hashUUID(u)); ; i = t.byUUID.next(i) {
		p, ok := t.byUUID.at(i)
		if !ok || t.at(p).id == u {
			return p, ok
		}
	}
}

// uuidHashAt is the hash of the id of the delivery at place p
// (placeIndex's hashOf).
func (t *deliveryTable) uuidHashAt(p uint32) uint64 { return hashUUID(t.at(p).id) }
