package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// A chain index finds under a key every place held with that key and
// none removed, its head the place of the lowest id, through adds in and
// out of id order, removes of heads and of places mid-chain, and growth.
// The keys' hashes are chosen here (a few values, some near the last
// slot), so that the heads of different keys share probes.
func TestChainIndexFindsWhatItHolds(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 50 {
		keyOf := map[uint32]uint64{} // place -> its row's key
		idOf := map[uint32]int64{}   // place -> its row's id
		hash := func(k uint64) uint64 { return k*0x10001 - 3 }
		hashOf := func(p uint32) uint64 {
			k, ok := keyOf[p]
			if !ok {
				t.Fatalf("round %d: the index asked for the hash of place %d, which it does not hold", round, p)
			}
			return hash(k)
		}
		has := func(k uint64) func(uint32) bool { return func(p uint32) bool { return keyOf[p] == k } }
		less := func(a, b uint32) bool { return idOf[a] < idOf[b] }
		x := newChainIndex(r.IntN(20))
		var free []uint32
		next := uint32(0)
		for step := range 3000 {
			if len(keyOf) > 0 && r.IntN(5) < 2 {
				p := randomHeld(r, keyOf)
				k := keyOf[p]
				x.remove(hash(k), p, has(k), less, hashOf)
				delete(keyOf, p)
				delete(idOf, p)
				free = append(free, p)
			} else {
				p := next
				if len(free) > 0 && r.IntN(2) == 0 {
					p, free = free[len(free)-1], free[:len(free)-1]
				} else {
					next++
				}
				k := uint64(r.IntN(16))
				keyOf[p], idOf[p] = k, r.Int64N(1<<20) // ids in no order
				x.add(hash(k), p, has(k), less, hashOf)
			}
			if step%50 != 0 {
				continue
			}
			keys := 0
			for k := range uint64(16) {
				var want, got []uint32
				for p, pk := range keyOf {
					if pk == k {
						want = append(want, p)
					}
				}
				head, ok := x.first(hash(k), has(k))
				for p := head; ok; p, ok = x.next(p) {
					got = append(got, p)
					if len(got) > len(keyOf) {
						t.Fatalf("round %d, step %d: key %d's chain loops", round, step, k)
					}
				}
				if len(want) > 0 {
					keys++
					if low := slices.MinFunc(want, func(a, b uint32) int { return int(idOf[a] - idOf[b]) }); idOf[head] != idOf[low] {
						t.Fatalf("round %d, step %d: key %d's head has id %d, the lowest is %d", round, step, k, idOf[head], idOf[low])
					}
				}
				slices.Sort(want)
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Fatalf("round %d, step %d: key %d finds places %v, want %v", round, step, k, got, want)
				}
			}
			if x.heads.n != keys {
				t.Fatalf("round %d, step %d: the index holds %d heads for %d keys", round, step, x.heads.n, keys)
			}
		}
	}
}

// Rows sharing a key cost what rows of distinct keys do: 10,000 users of
// one phone (a partner's placeholder) and 1,000 members of one group take
// a slot each of their indexes' probes, so that an add or a lookup of
// their key, or of any other, probes a few slots, not a run of thousands
// of rows, while the reads still give the lowest id with the phone and
// the group's every member.
func TestSharedKeysProbeAFewSlots(t *testing.T) {
	ctx := context.Background()
	s := New()
	shared := "13800000000"
	const sharing, own, members = 10000, 1000, 1000
	var users []projections.User
	for i := range sharing + own {
		phone := shared
		if i >= sharing {
			phone = fmt.Sprint(13900000000 + i)
		}
		users = append(users, projections.User{AppID: 1, OpenUserID: int64(i + 1), ChannelUserID: fmt.Sprint("c", i+1), Phone: &phone})
	}
	put := func(commit int, fn func(projections.UserTx) error) {
		t.Helper()
		if err := s.Update(ctx, "users", events.Position{Commit: uint64(commit), Prepare: uint64(commit)}, fn); err != nil {
			t.Fatal(err)
		}
	}
	for i, u := range users {
		put(i+1, func(tx projections.UserTx) error { return tx.PutUser(ctx, u) })
	}
	put(len(users)+1, func(tx projections.UserTx) error {
		if err := tx.PutGroup(ctx, projections.Group{AppID: 1, OpenUserID: 1, FamilyGroupID: 7}); err != nil {
			return err
		}
		for i := range members {
			if err := tx.PutMember(ctx, projections.Member{AppID: 1, OpenUserID: int64(i%2 + 1), MemberID: int64(i + 1), FamilyGroupID: 7}); err != nil {
				return err
			}
		}
		return nil
	})

	// probe is how many slots of x a probe for h walks (what an add of
	// its key or a lookup of a key not held walks).
	probe := func(x *placeIndex, h uint64) int {
		n := 0
		for i := x.start(h); x.slots[i] != 0; i = x.next(i) {
			n++
		}
		return n
	}
	if n := probe(&s.byPhone.heads, hashText(1, shared)); n > 64 {
		t.Errorf("a probe for the shared phone walks %d slots", n)
	}
	total := 0
	for _, u := range users[sharing-1:] {
		total += probe(&s.byPhone.heads, hashText(1, *u.Phone))
	}
	if mean := float64(total) / float64(own+1); mean > 8 {
		t.Errorf("a probe for a phone walks %.1f slots on average", mean)
	}
	for name, c := range map[string]struct {
		x  *placeIndex
		id int64
	}{"group 7's members": {&s.groupMembers.heads, 7}, "user 1's members": {&s.userMembers.heads, 1}, "user 2's members": {&s.userMembers.heads, 2}} {
		if n := probe(c.x, hashID(c.id)); n > 64 {
			t.Errorf("a probe for %s walks %d slots", name, n)
		}
	}

	if u, err := s.UserByPhone(ctx, 1, shared); err != nil || u.OpenUserID != 1 {
		t.Errorf("UserByPhone gives user %d (%v), want 1", u.OpenUserID, err)
	}
	put(len(users)+2, func(tx projections.UserTx) error { return tx.EraseUser(ctx, 1) })
	if u, err := s.UserByPhone(ctx, 1, shared); err != nil || u.OpenUserID != 2 {
		t.Errorf("after user 1's erasure UserByPhone gives user %d (%v), want 2", u.OpenUserID, err)
	}
	got, err := s.Members(ctx, 1, 2, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != members/2 || !slices.IsSortedFunc(got, func(a, b projections.Member) int { return int(a.MemberID - b.MemberID) }) {
		t.Errorf("user 2 has %d members (in id order: %v), want %d in id order", len(got), slices.IsSortedFunc(got, func(a, b projections.Member) int { return int(a.MemberID - b.MemberID) }), members/2)
	}
}
