package commands

import (
	"context"
	"fmt"
	"sync"
	"time"

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
	// KindPluginApp numbers the plugin app ids issued on approval of a
	// host-plugin integration.
	KindPluginApp = "plugin_app"
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
	maxGrowth int64 // 0 or 1: every block is blockSize
	ahead     bool  // reserve the next block once half of one is used
	now       func() time.Time

	mu        sync.Mutex
	kinds     map[string]*idSequence
	onReserve map[string]func(ctx context.Context, first, last int64)
}

// OnReserve calls fn with every block of kind this allocator reserves,
// before the block's first id is handed out, so work that every id of the
// block needs can be done once per block: the node makes the data keys of a
// block of user ids in one batch there, and a register then waits for no
// key store write. Set it before the allocator is used.
func (a *Allocator) OnReserve(kind string, fn func(ctx context.Context, first, last int64)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.onReserve == nil {
		a.onReserve = map[string]func(context.Context, int64, int64){}
	}
	a.onReserve[kind] = fn
}

type idSequence struct {
	mu   sync.Mutex
	next int64 // next id to hand out
	last int64 // last id of the reserved block
	span int64 // how many ids that block holds
	// With ReserveAhead: the block reserved after the current one (its
	// first id, 0 while none), and, while a reservation runs in the
	// background, a channel closed when it ends.
	aheadFirst, aheadLast int64
	fetching              chan struct{}

	// rmu guards what a reservation reads and decides on; it is taken
	// inside mu or, by a background reservation, alone.
	rmu      sync.Mutex
	seen     uint64
	stream   idState // every reservation, as read from the stream
	size     int64   // ids the next reservation takes (grows under load)
	reserved time.Time
}

// growWithin is how short-lived a block must be for the next one to grow
// (see Allocator.Grow).
const growWithin = time.Second

// idState is an id stream as reservations decide on it: the highest id
// anyone reserved.
type idState struct{ last int64 }

func (s *idState) apply(env events.Envelope) {
	if b, ok := env.Payload.(*catalog.IDBlockReserved); ok && b.Last > s.last {
		s.last = b.Last
	}
}

// decideReserve reserves the next size ids of the kind, right after the
// highest id anyone reserved; ids stop below 2^53.
func decideReserve(st *idState, kind string, size int64) ([]events.Payload, error) {
	first := st.last + 1
	last := first + size - 1
	if last > maxID {
		return nil, fmt.Errorf("ids of kind %s exhausted", kind)
	}
	return []events.Payload{catalog.IDBlockReserved{Kind: kind, First: first, Last: last}}, nil
}

// NewAllocator reserves blockSize ids at a time per kind.
func NewAllocator(store events.Store, reg *events.Registry, blockSize int64) *Allocator {
	if blockSize < 1 {
		blockSize = 1
	}
	return &Allocator{store: store, reg: reg, blockSize: blockSize, now: time.Now, kinds: map[string]*idSequence{}}
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
	for seq.next == 0 || seq.next > seq.last {
		switch {
		case seq.aheadFirst != 0:
			seq.next, seq.last, seq.span = seq.aheadFirst, seq.aheadLast, seq.aheadLast-seq.aheadFirst+1
			seq.aheadFirst, seq.aheadLast = 0, 0
		case seq.fetching != nil:
			// The next block is being reserved: wait for it rather than
			// reserve another (then take it, or reserve if it failed).
			wait := seq.fetching
			seq.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				seq.mu.Lock()
				return 0, ctx.Err()
			}
			seq.mu.Lock()
		default:
			first, last, err := a.reserve(ctx, kind, seq)
			if err != nil {
				return 0, err
			}
			seq.next, seq.last, seq.span = first, last, last-first+1
		}
	}
	id := seq.next
	seq.next++
	if a.ahead && seq.aheadFirst == 0 && seq.fetching == nil && (seq.last-seq.next+1)*2 <= seq.span {
		seq.fetching = make(chan struct{})
		go a.reserveAhead(context.WithoutCancel(ctx), kind, seq)
	}
	return id, nil
}

// ReserveAhead makes the allocator reserve a kind's next block in the
// background once half of the current one is handed out, so that under
// load no writer waits for a reservation (an append, its fsync and the
// OnReserve hook) with every other writer of the kind queued behind it. A
// crash loses at most the rest of two blocks instead of one; ids are still
// never reused. Set it before the allocator is used.
func (a *Allocator) ReserveAhead() *Allocator {
	a.ahead = true
	return a
}

// reserveAhead reserves the block after the current one; a failure is left
// to the writer that finds the current block used up (it reserves itself
// and gets the error).
func (a *Allocator) reserveAhead(ctx context.Context, kind string, seq *idSequence) {
	first, last, err := a.reserve(ctx, kind, seq)
	seq.mu.Lock()
	defer seq.mu.Unlock()
	if err == nil {
		seq.aheadFirst, seq.aheadLast = first, last
	}
	close(seq.fetching)
	seq.fetching = nil
}

// nextSize is how many ids the sequence's next reservation takes: twice the
// last one when that block lasted less than growWithin, otherwise blockSize.
func (a *Allocator) nextSize(seq *idSequence) int64 {
	if a.maxGrowth <= 1 || seq.size == 0 || a.now().Sub(seq.reserved) >= growWithin {
		return a.blockSize
	}
	return min(seq.size*2, a.blockSize*a.maxGrowth)
}

// Grow lets a kind whose previous block lasted less than a second reserve
// twice as many ids next time, up to factor times the block size, so that
// under load the writers of a kind wait for a reservation (one append, one
// fsync, every writer of the kind queued behind it) rarely instead of every
// blockSize ids; a quiet kind goes back to the block size. A crash loses at
// most one block's rest, as before. Set it before the allocator is used.
func (a *Allocator) Grow(factor int64) *Allocator {
	a.maxGrowth = factor
	return a
}

// reserve appends the reservation of the kind's next block and returns
// it, once the OnReserve hook has run.
func (a *Allocator) reserve(ctx context.Context, kind string, seq *idSequence) (first, last int64, err error) {
	seq.rmu.Lock()
	defer seq.rmu.Unlock()
	stream := domain.IDStream(kind)
	for attempt := 0; attempt < 50; attempt++ {
		recs, err := a.store.ReadStream(ctx, stream, seq.seen, 0)
		if err != nil {
			return 0, 0, fmt.Errorf("read %s: %w", stream, err)
		}
		for _, r := range recs {
			env, err := a.reg.Decode(r)
			if err != nil {
				return 0, 0, err
			}
			seq.stream.apply(env)
			seq.seen = r.Revision + 1
		}
		ps, err := decideReserve(&seq.stream, kind, a.nextSize(seq))
		if err != nil {
			return 0, 0, err
		}
		ev, err := a.reg.Encode(ps[0], events.Metadata{Actor: "platform"})
		if err != nil {
			return 0, 0, err
		}
		_, err = a.store.Append(ctx, stream, events.AfterVersion(seq.seen), ev)
		if events.IsConflict(err) {
			continue // another writer reserved meanwhile: read it, decide again
		}
		if err != nil {
			return 0, 0, fmt.Errorf("reserve ids of kind %s: %w", kind, err)
		}
		b := ps[0].(catalog.IDBlockReserved)
		seq.size, seq.reserved = b.Last-b.First+1, a.now()
		seq.seen++
		seq.stream.last = b.Last
		a.mu.Lock()
		hook := a.onReserve[kind]
		a.mu.Unlock()
		if hook != nil {
			hook(ctx, b.First, b.Last)
		}
		return b.First, b.Last, nil
	}
	return 0, 0, fmt.Errorf("reserve ids of kind %s: %w", kind, domain.ErrContention)
}
