package memory

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
)

// placeIndex finds a table's rows by a key they hold: an open-addressed
// table of their places (a uint32 each, stored plus one so that zero is an
// empty slot) with linear probing, where a key's hash picks the slot its
// probe starts at and the rows themselves are compared with the key. It
// holds no key and no pointer: 4 bytes a slot at a load of at most 3/4,
// 5.3 to 10.7 bytes a row, where a Go map of key → place or of key →
// slice of ids took 40 to 130 bytes a row (its slots, a power of two of
// them, at most 7/8 full, hold the key, and each slice an allocation of
// its own). Several rows may share a key (a user's groups, a phone's
// users): a lookup walks the probe from the key's slot to the first empty
// one and takes every row that matches.
//
// The index does not know the rows: whoever grows it or removes from it
// gives the hash of the row at a place (hashOf), read from the table,
// which must still hold every row the index holds.
type placeIndex struct {
	slots []uint32
	n     int // places held
}

// newPlaceIndex makes an index with room for n places before it grows.
func newPlaceIndex(n int) placeIndex {
	return placeIndex{slots: make([]uint32, slotsFor(n))}
}

// slotsFor is the power of two of slots that holds n places at a load of
// at most 3/4, at least 8.
func slotsFor(n int) int {
	need := n + n/3 + 1
	if need <= 8 {
		return 8
	}
	return 1 << bits.Len(uint(need-1))
}

// start is the slot a probe for hash h begins at.
func (x *placeIndex) start(h uint64) int { return int(h & uint64(len(x.slots)-1)) }

// next is the slot after i.
func (x *placeIndex) next(i int) int { return (i + 1) & (len(x.slots) - 1) }

// at is the place in slot i; false ends a probe.
func (x *placeIndex) at(i int) (uint32, bool) {
	p := x.slots[i]
	return p - 1, p != 0
}

// add puts place, whose row's key hashes to h, in the index.
func (x *placeIndex) add(h uint64, place uint32, hashOf func(uint32) uint64) {
	if (x.n+1)*4 > len(x.slots)*3 {
		x.grow(hashOf)
	}
	i := x.start(h)
	for x.slots[i] != 0 {
		i = x.next(i)
	}
	x.slots[i] = place + 1
	x.n++
}

// addAt is add of a place whose probe for h ended at the empty slot i.
func (x *placeIndex) addAt(i int, h uint64, place uint32, hashOf func(uint32) uint64) {
	if (x.n+1)*4 > len(x.slots)*3 {
		x.add(h, place, hashOf) // grows, and probes the grown slots
		return
	}
	x.slots[i] = place + 1
	x.n++
}

func (x *placeIndex) grow(hashOf func(uint32) uint64) {
	old := x.slots
	x.slots = make([]uint32, 2*len(old))
	for _, p := range old {
		if p == 0 {
			continue
		}
		i := x.start(hashOf(p - 1))
		for x.slots[i] != 0 {
			i = x.next(i)
		}
		x.slots[i] = p
	}
}

// remove takes place, whose row's key hashes to h, out of the index, and
// moves back the places after it in its run that their own probes would
// no longer reach across the emptied slot (no tombstones, so a probe stays
// as short as the run).
func (x *placeIndex) remove(h uint64, place uint32, hashOf func(uint32) uint64) {
	i := x.start(h)
	for {
		p := x.slots[i]
		if p == 0 {
			return // not held
		}
		if p == place+1 {
			break
		}
		i = x.next(i)
	}
	x.n--
	mask := len(x.slots) - 1
	for {
		x.slots[i] = 0
		j := i
		for {
			j = (j + 1) & mask
			p := x.slots[j]
			if p == 0 {
				return
			}
			// p stays at j when its probe's start k lies in (i, j], taken
			// around the end of the slots.
			k := x.start(hashOf(p - 1))
			if (i < j && i < k && k <= j) || (j < i && (i < k || k <= j)) {
				continue
			}
			x.slots[i] = p
			i = j
			break
		}
	}
}

// The hashes of the indexes' keys. Ids are the platform's own, but texts
// (a partner's channel user ids, phones) are not, so a key's hash depends
// on a seed of the process's: a partner cannot choose keys that all
// probe from one slot.
var (
	hashSeed    = maphash.MakeSeed()
	hashIntSeed = maphash.String(hashSeed, "int")
)

func hashID(id int64) uint64 {
	h := (uint64(id) ^ hashIntSeed) * 0x9e3779b97f4a7c15
	return h ^ h>>29
}

func hashText(app int64, s string) uint64 { return maphash.String(hashSeed, s) ^ hashID(app) }

// hashUUID mixes both halves of u: a uuid of version 7 starts with its
// time, a version 4 is random throughout.
func hashUUID(u uuid16) uint64 {
	hi, lo := binary.LittleEndian.Uint64(u[:8]), binary.LittleEndian.Uint64(u[8:])
	return hashID(int64(hi ^ bits.RotateLeft64(lo, 32)*0xff51afd7ed558ccd))
}

// replace puts place by in the slot of place old, whose row's key hashes
// to h, as does by's (a chainIndex's new head).
func (x *placeIndex) replace(h uint64, old, by uint32) {
	for i := x.start(h); x.slots[i] != 0; i = x.next(i) {
		if x.slots[i] == old+1 {
			x.slots[i] = by + 1
			return
		}
	}
}
