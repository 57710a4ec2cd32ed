package commands

import (
	"context"
	"fmt"
	"sync"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Kinds of platform id, each allocated from its own sequence.
const (
	KindApp    = "app"
	KindUser   = "user"
	KindGroup  = "family_group"
	KindMember = "member"
)

// maxID keeps ids exact in JavaScript clients (below 2^53).
const maxID = 1<<53 - 1

// Allocator hands out platform ids from blocks reserved in the event store
// (stream ids-<kind>), so every process gets unique ids without a database
// sequence and ids are never reused, even after a crash loses a block's rest.
type Allocator struct {
	store     events.Store
	reg       *events.Registry
	blockSize int64

	mu    sync.Mutex
	kinds map[string]*idSequence
}

type idSequence struct {
	mu       sync.Mutex
	next     int64 // next id to hand out
	last     int64 // last id of the reserved block
	seen     uint64
	lastSeen int64 // highest id reserved by anyone, as read from the stream
}

// NewAllocator reserves blockSize ids at a time per kind.
func NewAllocator(store events.Store, reg *events.Registry, blockSize int64) *Allocator {
	if blockSize < 1 {
		blockSize = 1
	}
	return &Allocator{store: store, reg: reg, blockSize: blockSize, kinds: map[string]*idSequence{}}
}

// Next returns a fresh id of the kind.
func (a *Allocator) Next(ctx context.Context, kind string) (int64, error) {
	a.mu.Lock()
	seq := a.kinds[kind]
	if seq == nil {
		seq = &idSequence{}
		a.kinds[kind] = seq
	}
	a.mu.Unlock()

	seq.mu.Lock()
	defer seq.mu.Unlock()
	if seq.next == 0 || seq.next > seq.last {
		if err := a.reserve(ctx, kind, seq); err != nil {
			return 0, err
		}
	}
	id := seq.next
	seq.next++
	return id, nil
}

func (a *Allocator) reserve(ctx context.Context, kind string, seq *idSequence) error {
	stream := domain.IDStream(kind)
	for attempt := 0; attempt < 50; attempt++ {
		recs, err := a.store.ReadStream(ctx, stream, seq.seen, 0)
		if err != nil {
			return fmt.Errorf("read %s: %w", stream, err)
		}
		for _, r := range recs {
			env, err := a.reg.Decode(r)
			if err != nil {
				return err
			}
			if b, ok := env.Payload.(*catalog.IDBlockReserved); ok && b.Last > seq.lastSeen {
				seq.lastSeen = b.Last
			}
			seq.seen = r.Revision + 1
		}
		first := seq.lastSeen + 1
		last := first + a.blockSize - 1
		if last > maxID {
			return fmt.Errorf("ids of kind %s exhausted", kind)
		}
		ev, err := a.reg.Encode(catalog.IDBlockReserved{Kind: kind, First: first, Last: last}, events.Metadata{Actor: "platform"})
		if err != nil {
			return err
		}
		_, err = a.store.Append(ctx, stream, events.AfterVersion(seq.seen), ev)
		if events.IsConflict(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reserve ids of kind %s: %w", kind, err)
		}
		seq.seen++
		seq.lastSeen = last
		seq.next, seq.last = first, last
		return nil
	}
	return fmt.Errorf("reserve ids of kind %s: %w", kind, domain.ErrContention)
}
