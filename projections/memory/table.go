package memory

// rowChunk is how many rows one chunk of a table holds.
const rowChunk = 1024

// table is a read model's rows at fixed places (a uint32 each), which its
// indexes hold instead of the rows' keys, in chunks of rowChunk rows rather
// than one slice, so that a growing table never copies its rows under the
// write lock (a slice of a million 120-byte rows copied 120 MB when it
// grew) nor keeps a quarter of its length unused. A row sits in its chunk,
// not in a map's slot of its own: a map of key → row keeps each row at the
// map's load factor (a map made for n rows has a power of two of slots, up
// to twice n), and one of more than 128 bytes in an allocation of its own
// behind the slot.
//
// add puts a row after the last; remove of the last row gives its place
// back to the next add (the undo of a batch removes its rows last first),
// and of any other leaves a zero row at its place.
type table[R any] struct {
	chunks []*[rowChunk]R
	n      uint32 // places in use, the zero rows included
}

func newTable[R any](n int) table[R] {
	return table[R]{chunks: make([]*[rowChunk]R, 0, (n+rowChunk-1)/rowChunk)}
}

// at is the row at place i, which the caller got from the table.
func (t *table[R]) at(i uint32) *R { return &t.chunks[i/rowChunk][i%rowChunk] }

// add puts r after the last row and returns its place.
func (t *table[R]) add(r R) uint32 {
	i := t.n
	if int(i/rowChunk) == len(t.chunks) {
		t.chunks = append(t.chunks, new([rowChunk]R))
	}
	*t.at(i) = r
	t.n++
	return i
}

// remove zeroes the row at place i; its place is taken again by the next
// add when it is the last.
func (t *table[R]) remove(i uint32) {
	var zero R
	*t.at(i) = zero
	if i == t.n-1 {
		t.n--
	}
}

// idTable is a table of rows keyed by an int64 id (users, groups,
// members, reports), with the index of their places by id (placeIndex,
// which finds a row by comparing its id). A row removed from the middle
// (an erasure) leaves its place to the next row added rather than a zero
// row for good, so another index of places (the reports' by day) drops a
// row's place before the row is removed.
type idTable[R idRow] struct {
	rows   table[R]
	places placeIndex
	free   []uint32 // places of rows removed from the middle
}

// idRow is a row of an idTable: it knows its id.
type idRow interface{ rowID() int64 }

func newIDTable[R idRow](n int) idTable[R] {
	return idTable[R]{rows: newTable[R](n), places: newPlaceIndex(n)}
}

// len is how many rows the table holds.
func (t *idTable[R]) len() int { return t.places.n }

// place is where row id is.
func (t *idTable[R]) place(id int64) (uint32, bool) {
	for i := t.places.start(hashID(id)); ; i = t.places.next(i) {
		p, ok := t.places.at(i)
		if !ok || (*t.rows.at(p)).rowID() == id {
			return p, ok
		}
	}
}

// hashAt is the hash of the id of the row at place p (placeIndex's hashOf).
func (t *idTable[R]) hashAt(p uint32) uint64 { return hashID((*t.rows.at(p)).rowID()) }

// get is row id, nil if the table has none.
func (t *idTable[R]) get(id int64) *R {
	i, ok := t.place(id)
	if !ok {
		return nil
	}
	return t.rows.at(i)
}

// row is a copy of row id (cow.keep's lookup).
func (t *idTable[R]) row(id int64) (R, bool) {
	if r := t.get(id); r != nil {
		return *r, true
	}
	var zero R
	return zero, false
}

// set makes r, whose id is id, row id: in place if the table has one,
// else at a free place or after the last row. It returns the row's place.
func (t *idTable[R]) set(id int64, r R) uint32 {
	if i, ok := t.place(id); ok {
		*t.rows.at(i) = r
		return i
	}
	n := len(t.free)
	if n == 0 {
		return t.add(id, r)
	}
	i := t.free[n-1]
	t.free = t.free[:n-1]
	*t.rows.at(i) = r
	t.places.add(hashID(id), i, t.hashAt)
	return i
}

// add puts r, whose id is id and which the table does not hold, after the
// last row and returns its place: set without its lookup, for a restore
// (an image holds each id once).
func (t *idTable[R]) add(id int64, r R) uint32 {
	i := t.rows.add(r)
	t.places.add(hashID(id), i, t.hashAt)
	return i
}

// del removes row id, if the table has one.
func (t *idTable[R]) del(id int64) {
	i, ok := t.place(id)
	if !ok {
		return
	}
	t.places.remove(hashID(id), i, t.hashAt)
	last := i == t.rows.n-1
	t.rows.remove(i)
	if !last {
		t.free = append(t.free, i)
	}
}

// each yields every row with its id, in the order of their places, until
// yield returns false. yield may release the lock and take it again (a
// paged image's listing), as a range over a map allows: a row removed
// meanwhile is not yielded, one added may be, and one removed and added
// again may be yielded twice (the image drops a key listed twice); after
// a reset of the read model (the table replaced) the rows are the new
// table's, which the image drops.
func (t *idTable[R]) each(yield func(int64, R) bool) {
	for p := uint32(0); p < t.rows.n; p++ {
		id := (*t.rows.at(p)).rowID()
		if q, ok := t.place(id); !ok || q != p {
			continue // a free place
		}
		if !yield(id, *t.rows.at(p)) {
			return
		}
	}
}
