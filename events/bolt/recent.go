package bolt

import (
	"sync"

	"github.com/healthtech/partner-open-platform/events"
)

// recentSize is how many of the last committed events the store keeps in
// memory for ReadAll: a follower less than this far behind the head reads
// from memory; one further behind (catching up at start) reads bbolt.
const recentSize = 8192

// recentRing holds the events of sequences [first, next), at most
// recentSize of them, in a ring indexed by sequence. Sequences are
// contiguous: bbolt's NextSequence rolls back with a failed commit.
type recentRing struct {
	mu   sync.RWMutex
	recs []events.Recorded
	sums []uint32 // sharedguard: each slot's checksum when pushed
	// commits holds, per slot, the commit's own slice of records that the
	// slot's record is in and its index there: subscriptions are handed
	// sub-slices of these (never written once pushed) instead of copies.
	commits     []commitRef
	first, next uint64
}

// commitRef places a record in its commit's slice.
type commitRef struct {
	recs []events.Recorded
	at   int
}

// reset empties the ring; the next event committed will be seq.
func (r *recentRing) reset(seq uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.recs == nil {
		r.recs = make([]events.Recorded, recentSize)
		r.commits = make([]commitRef, recentSize)
	}
	r.checkAll()
	clear(r.recs)
	clear(r.commits)
	r.first, r.next = seq, seq
}

// push adds a commit's events, which follow the ring's last one; anything
// else (not expected) empties the ring, so ReadAll falls back to bbolt.
// The ring keeps recs itself: nothing may write into it afterwards.
func (r *recentRing) push(recs []events.Recorded) {
	if len(recs) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if recs[0].Position.Commit != r.next {
		r.checkAll()
		clear(r.recs)
		clear(r.commits)
		r.first, r.next = recs[len(recs)-1].Position.Commit+1, recs[len(recs)-1].Position.Commit+1
		return
	}
	guard := guarding()
	if guard && r.sums == nil {
		// The guard was turned on since this ring filled: sum what it holds.
		r.sums = make([]uint32, recentSize)
		for seq := r.first; seq < r.next; seq++ {
			r.sums[seq%recentSize] = sumOf(&r.recs[seq%recentSize])
		}
	}
	for i, rec := range recs {
		slot := rec.Position.Commit % recentSize
		r.commits[slot] = commitRef{recs, i}
		if guard {
			if old := &r.recs[slot]; old.Position.Commit != 0 && old.Position.Commit >= r.first {
				checkSum("recent ring", old, r.sums[slot])
			}
			r.sums[slot] = sumOf(&rec)
		}
		r.recs[slot] = rec
		r.next = rec.Position.Commit + 1
	}
	if r.next-r.first > recentSize {
		r.first = r.next - recentSize
	}
}

// read returns copies of the events from sequence start up to durable (at
// most limit when positive), with ok false when the ring does not hold
// start (evicted, or never seen since Open): bbolt has it then. The bytes
// of a page are copied into one allocation; the strings are shared, as
// strings are immutable.
func (r *recentRing) read(start, durable uint64, limit int) ([]events.Recorded, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if start < r.first || start > r.next {
		return nil, false
	}
	end := min(durable+1, r.next) // exclusive
	if end <= start {
		return []events.Recorded{}, true
	}
	if limit > 0 && end-start > uint64(limit) {
		end = start + uint64(limit)
	}
	out := make([]events.Recorded, 0, end-start)
	size := 0
	for seq := start; seq < end; seq++ {
		rec := &r.recs[seq%recentSize]
		size += len(rec.Data) + len(rec.Meta)
	}
	buf := make([]byte, 0, size)
	take := func(b []byte) []byte {
		if len(b) == 0 {
			return nil
		}
		at := len(buf)
		buf = append(buf, b...)
		return buf[at:len(buf):len(buf)]
	}
	for seq := start; seq < end; seq++ {
		rec := r.recs[seq%recentSize]
		rec.Data, rec.Meta = take(rec.Data), take(rec.Meta)
		out = append(out, rec)
	}
	return out, true
}

// readAt copies into out[i] the event at positions[i] that the ring
// holds, up to durable, each event's bytes in one allocation for all, and
// returns the indexes of the positions left to read from bbolt: those of
// an event the ring does not hold (no position of another form, none past
// durable, which hold no event).
func (r *recentRing) readAt(positions []events.Position, durable uint64, out []events.Recorded) (rest []int) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	size := 0
	for _, pos := range positions {
		if seq := pos.Commit; pos.Prepare == seq && seq >= r.first && seq < r.next && seq <= durable {
			rec := &r.recs[seq%recentSize]
			size += len(rec.Data) + len(rec.Meta)
		}
	}
	buf := make([]byte, 0, size)
	take := func(b []byte) []byte {
		if len(b) == 0 {
			return nil
		}
		at := len(buf)
		buf = append(buf, b...)
		return buf[at:len(buf):len(buf)]
	}
	for i, pos := range positions {
		seq := pos.Commit
		switch {
		case pos.Prepare != seq || seq == 0 || seq > durable:
		case seq >= r.first && seq < r.next:
			rec := r.recs[seq%recentSize]
			rec.Data, rec.Meta = take(rec.Data), take(rec.Meta)
			out[i] = rec
		default:
			rest = append(rest, i)
		}
	}
	return rest
}

// readShared is read without any copy: it returns a sub-slice of the
// commit's own slice of records holding start (so at most the rest of that
// commit: the next read takes the next commit), shared by every
// subscription, records and bytes read-only; its capacity is clipped so an
// append by a reader cannot reach what follows.
func (r *recentRing) readShared(start, durable uint64, limit int) ([]events.Recorded, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if start < r.first || start > r.next {
		return nil, false
	}
	end := min(durable+1, r.next) // exclusive
	if end <= start {
		return []events.Recorded{}, true
	}
	if limit > 0 && end-start > uint64(limit) {
		end = start + uint64(limit)
	}
	ref := r.commits[start%recentSize]
	upto := min(len(ref.recs), ref.at+int(end-start))
	return ref.recs[ref.at:upto:upto], true
}

// checkAll verifies every record the ring holds (sharedguard); callers hold
// the write lock or own the ring.
func (r *recentRing) checkAll() {
	if r.sums == nil {
		return
	}
	for seq := r.first; seq < r.next; seq++ {
		slot := seq % recentSize
		checkSum("recent ring", &r.recs[slot], r.sums[slot])
	}
}
