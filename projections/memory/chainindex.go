package memory

// chainIndex finds a table's rows by a key that several rows may share (a
// phone's users, a user's groups and members, a group's members): a
// placeIndex of one place per distinct key, its head, and beside it the
// link of every place to the next place with the same key. A key shared
// by thousands of rows (a placeholder phone, a care home's) takes one slot
// of the placeIndex, not a run of thousands of slots that every add,
// lookup and remove of that key or of any key hashing into the run would
// walk; an add is a probe for the head and two links, a lookup a probe
// and then the key's own rows only. The head is the row of the lowest
// id, so the first row of a key is found without walking its chain; the
// rest of the chain is in no order (a reader that wants id order sorts).
//
// The links are the index's own, by place, not the rows': a snapshot's
// copy-on-write keeps rows, which hold nothing the index changes.
//
// As for placeIndex, the caller tells the index about rows: is(p) says
// whether the row at place p has the key at hand, less(a, b) whether the
// row at a has a lower id than the one at b, hashOf(p) is the hash of the
// key of the row at p, all read from the table, which holds every row the
// index holds.
type chainIndex struct {
	heads placeIndex
	links []*[rowChunk]uint32 // by place: the next place of its key plus one, zero for none
}

// newChainIndex makes an index with room for n places before it grows.
func newChainIndex(n int) chainIndex {
	return chainIndex{heads: newPlaceIndex(n), links: make([]*[rowChunk]uint32, 0, (n+rowChunk-1)/rowChunk)}
}

// first is the head of the key whose hash is h, the place of its row of
// the lowest id; false if no row has the key.
func (c *chainIndex) first(h uint64, is func(uint32) bool) (uint32, bool) {
	_, p, ok := c.probe(h, is)
	return p, ok
}

// probe is the slot of the key's head and the head, or the empty slot
// that ends the key's probe and false.
func (c *chainIndex) probe(h uint64, is func(uint32) bool) (int, uint32, bool) {
	x := &c.heads
	for i := x.start(h); ; i = x.next(i) {
		p, ok := x.at(i)
		if !ok || is(p) {
			return i, p, ok
		}
	}
}

// next is the place after p in its key's chain; false ends the chain.
func (c *chainIndex) next(p uint32) (uint32, bool) {
	n := c.links[p/rowChunk][p%rowChunk]
	return n - 1, n != 0
}

func (c *chainIndex) link(p, next uint32, ok bool) {
	for int(p/rowChunk) >= len(c.links) {
		c.links = append(c.links, new([rowChunk]uint32))
	}
	if !ok {
		next = ^uint32(0) // plus one is zero: no next
	}
	c.links[p/rowChunk][p%rowChunk] = next + 1
}

// add puts place, whose row's key hashes to h, in the index: as the key's
// head if its row's id is the lowest, else right after the head.
func (c *chainIndex) add(h uint64, place uint32, is func(uint32) bool, less func(a, b uint32) bool, hashOf func(uint32) uint64) {
	i, head, ok := c.probe(h, is)
	switch {
	case !ok:
		c.link(place, 0, false)
		c.heads.addAt(i, h, place, hashOf)
	case less(place, head):
		c.link(place, head, true)
		c.heads.slots[i] = place + 1
	default:
		after, more := c.next(head)
		c.link(place, after, more)
		c.link(head, place, true)
	}
}

// remove takes place, whose row's key hashes to h, out of the index. It
// walks the key's chain: to the place's predecessor, or, for the head, to
// the lowest id of the rest, which becomes the head.
func (c *chainIndex) remove(h uint64, place uint32, is func(uint32) bool, less func(a, b uint32) bool, hashOf func(uint32) uint64) {
	head, ok := c.first(h, is)
	if !ok {
		return
	}
	if head != place {
		for p := head; ; {
			q, ok := c.next(p)
			if !ok {
				return // not held
			}
			if q == place {
				after, more := c.next(place)
				c.link(p, after, more)
				c.link(place, 0, false)
				return
			}
			p = q
		}
	}
	rest, ok := c.next(place)
	c.link(place, 0, false)
	if !ok {
		c.heads.remove(h, place, hashOf)
		return
	}
	// The lowest of the rest, and the place before it, moves to the front.
	low, beforeLow, hasBefore := rest, uint32(0), false
	for p := rest; ; {
		q, ok := c.next(p)
		if !ok {
			break
		}
		if less(q, low) {
			low, beforeLow, hasBefore = q, p, true
		}
		p = q
	}
	if hasBefore {
		after, more := c.next(low)
		c.link(beforeLow, after, more)
		c.link(low, rest, true)
	}
	c.heads.replace(h, place, low)
}
