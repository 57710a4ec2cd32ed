package memory

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// A place index finds every place held under a key and none removed,
// through adds and removes of places whose keys share probes, runs that
// wrap around the end of the slots, and growth. The keys' hashes are
// chosen here (a few values, some near the last slot), so that removes
// move places back across emptied slots far more often than seeded hashes
// would.
func TestPlaceIndexFindsWhatItHolds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		keyOf := map[uint32]uint64{} // place -> its row's key
		hashOf := func(p uint32) uint64 {
			k, ok := keyOf[p]
			if !ok {
				t.Fatalf("round %d: the index asked for the hash of place %d, which it does not hold", round, p)
			}
			return k*0x10001 - 3 // keys 0..15 start near the end of small slots
		}
		x := newPlaceIndex(r.IntN(20))
		next := uint32(0)
		for step := range 2000 {
			if len(keyOf) > 0 && r.IntN(5) < 2 {
				p := randomHeld(r, keyOf)
				x.remove(hashOf(p), p, hashOf)
				delete(keyOf, p)
			} else {
				keyOf[next] = uint64(r.IntN(16))
				x.add(hashOf(next), next, hashOf)
				next++
			}
			if step%50 != 0 {
				continue
			}
			for k := range uint64(16) {
				var want, got []uint32
				for p, pk := range keyOf {
					if pk == k {
						want = append(want, p)
					}
				}
				for i := x.start(k*0x10001 - 3); ; i = x.next(i) {
					p, ok := x.at(i)
					if !ok {
						break
					}
					if keyOf[p] == k {
						got = append(got, p)
					}
				}
				slices.Sort(want)
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Fatalf("round %d, step %d: key %d finds places %v, want %v", round, step, k, got, want)
				}
			}
			if x.n != len(keyOf) {
				t.Fatalf("round %d, step %d: the index counts %d places, holds %d", round, step, x.n, len(keyOf))
			}
		}
	}
}

// randomHeld is one of the places keyOf holds, chosen by r alone (not by
// the order of a range over the map).
func randomHeld(r *rand.Rand, keyOf map[uint32]uint64) uint32 {
	held := make([]uint32, 0, len(keyOf))
	for p := range keyOf {
		held = append(held, p)
	}
	slices.Sort(held)
	return held[r.IntN(len(held))]
}
