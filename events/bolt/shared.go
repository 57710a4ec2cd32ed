package bolt

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	bbolt "go.etcd.io/bbolt"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/internal/tail"
)

// Shared subscription reads. A node runs about ten followers (every
// read model, the app directory, the dispatcher, the relay, the
// erasure follower), and every one reads every event. Subscriptions
// therefore read the log once per node and share what was read:
//
//   - the tail, from the recent ring, is handed out as the ring holds it:
//     each read is a sub-slice of one commit's own slice of records (capacity
//     clipped), records and bytes shared, no copies;
//   - the catch-up, past the ring, reads bbolt in aligned blocks of
//     blockSize sequences kept in a small FIFO cache, each read a sub-slice
//     of one block (shared like the ring's), and concurrent readers
//     of one block wait for a single read of it; a follower far behind the
//     others (further than the cache holds) reads its blocks again itself,
//     so a slow follower never holds the others back nor pins memory.
//
// The bytes every subscriber gets are shared: they are read-only (see
// events.Subscription). internal/sharedguard, for tests, checks that no consumer
// writes into them.

// blockSize is how many sequences one catch-up block holds: a page of a
// subscription, so aligned readers take one block per page.
const blockSize = tail.PageSize

// maxBlocks bounds the catch-up cache (8,192 events, like the ring).
const maxBlocks = 32

// block is one aligned run of blockSize sequences read from bbolt; recs
// and err are set once done is closed.
type block struct {
	done chan struct{}
	recs []events.Recorded
	sums []uint32 // sharedguard: the records' checksums when read
	err  error
}

// blockCache holds the last blocks read for subscriptions' catch-up.
type blockCache struct {
	mu     sync.Mutex
	blocks map[uint64]*block
	order  []uint64 // FIFO of block indexes, oldest first
}

// get returns block idx, reading it with load unless it is cached or being
// read by another subscription (then it waits for that read).
func (c *blockCache) get(idx uint64, load func() ([]events.Recorded, error)) ([]events.Recorded, error) {
	c.mu.Lock()
	if c.blocks == nil {
		c.blocks = map[uint64]*block{}
	}
	if b, ok := c.blocks[idx]; ok {
		c.mu.Unlock()
		<-b.done
		return b.recs, b.err
	}
	b := &block{done: make(chan struct{})}
	c.blocks[idx] = b
	c.order = append(c.order, idx)
	for len(c.order) > maxBlocks {
		old := c.blocks[c.order[0]]
		delete(c.blocks, c.order[0])
		c.order = c.order[1:]
		go checkEvicted(old) // waits for a read still in flight
	}
	c.mu.Unlock()
	b.recs, b.err = load()
	if b.err == nil && guarding() {
		b.sums = sumsOf(b.recs)
	}
	if b.err != nil {
		c.mu.Lock()
		if c.blocks[idx] == b {
			delete(c.blocks, idx)
			for i, k := range c.order {
				if k == idx {
					c.order = append(c.order[:i], c.order[i+1:]...)
					break
				}
			}
		}
		c.mu.Unlock()
	}
	close(b.done)
	return b.recs, b.err
}

// checkAll verifies every cached block (sharedguard).
func (c *blockCache) checkAll() {
	c.mu.Lock()
	blocks := make([]*block, 0, len(c.blocks))
	for _, b := range c.blocks {
		blocks = append(blocks, b)
	}
	c.mu.Unlock()
	for _, b := range blocks {
		checkEvicted(b)
	}
}

func checkEvicted(b *block) {
	<-b.done
	if b.sums != nil {
		checkSums("catch-up block", b.recs, b.sums)
	}
}

// startAfter is the first sequence strictly after a position.
func startAfter(after events.Position) uint64 {
	if after.Prepare < after.Commit {
		return after.Commit
	}
	return after.Commit + 1
}

// readShared is the subscriptions' ReadFunc: ReadAll whose records share
// their bytes with every other subscription's (read-only).
func (s *Store) readShared(ctx context.Context, after events.Position, limit int) ([]events.Recorded, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	start := startAfter(after)
	durable := s.durable.Load()
	if out, ok := s.recent.readShared(start, durable, limit); ok {
		return out, nil
	}
	if limit <= 0 {
		return s.ReadAll(ctx, after, limit)
	}
	if start > durable {
		return []events.Recorded{}, nil
	}
	end := min(start+uint64(limit)-1, durable) // inclusive
	idx := (start - 1) / blockSize
	first, last := idx*blockSize+1, (idx+1)*blockSize
	upto := min(last, end)
	if last > durable {
		// The head's block is not complete yet: read it alone, uncached.
		recs, err := s.readRange(start, upto)
		if err != nil {
			return nil, s.wrap("read all", err)
		}
		return recs, nil
	}
	recs, err := s.blocks.get(idx, func() ([]events.Recorded, error) { return s.readRange(first, last) })
	if err != nil {
		return nil, s.wrap("read all", err)
	}
	if uint64(len(recs)) != blockSize {
		return nil, fmt.Errorf("events/bolt: read all: block %d holds %d events, want %d", idx, len(recs), blockSize)
	}
	// At most the rest of one block, shared as it is (the next read takes
	// the next block): records and bytes are read-only.
	from, to := int(start-first), int(upto-first+1)
	return recs[from:to:to], nil
}

// readRange reads sequences [from, to] from bbolt.
func (s *Store) readRange(from, to uint64) ([]events.Recorded, error) {
	out := make([]events.Recorded, 0, to-from+1)
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketLog).Cursor()
		for k, v := c.Seek(be(from)); k != nil; k, v = c.Next() {
			seq := binary.BigEndian.Uint64(k)
			if seq > to {
				break
			}
			rec, err := decode(seq, v)
			if err != nil {
				return err
			}
			out = append(out, rec)
		}
		return nil
	})
	s.decoded.Add(uint64(len(out)))
	return out, err
}
