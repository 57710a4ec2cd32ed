package commands

import (
	"container/list"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// DefaultAggregateCache is how many aggregates per kind a handler keeps
// loaded, so a command reads only the events appended since its stream was
// last seen instead of replaying its whole history.
const DefaultAggregateCache = 10000

// aggregate is a state that can be folded from events and copied, so a
// decision never works on the cached value itself.
type aggregate[S any] interface {
	apply(events.Envelope)
	clone() S
}

// aggregateCache keeps the loaded state of recently used streams, bounded
// (least recently used goes first). It is only ever advanced by events as
// the store holds them, never by a decision's own payloads: read back, or
// (appendAfter) the very bytes an append just wrote right after the cached
// version, decoded as a read would decode them; so a failed or conflicting
// append leaves it exactly as the store says; and every load
// reads the stream after the cached version, so another node's or an
// earlier process's appends are always seen before a decision.
//
// A cache of personal states (sealedBy set: users) over a store that seals
// personal fields per person (sealedReads: privacy.Store) keeps no plaintext
// that a read of the log would no longer reveal: it advances from its own
// appended bytes only if the person's key is still readable after the
// append, and a load whose person's key is no longer readable starts the
// entry over from revision 0, decoded as the store reads it now (erased
// fields as null), before anything decides on it.
type aggregateCache[S aggregate[S]] struct {
	fresh func() S
	max   int // 0: no cache, every load replays from revision 0
	// sealedBy names the key subject a stream's personal fields are sealed
	// with; nil for states that hold no personal data.
	sealedBy func(stream string) string

	mu      sync.Mutex
	entries map[string]*list.Element
	lru     list.List // of *cachedAggregate[S], most recent first
}

// cachedAggregate is one stream's state as of version events.
type cachedAggregate[S any] struct {
	stream  string
	mu      sync.Mutex // held while catching up and copying
	state   S          // always the fold of exactly version events
	version uint64
	pos     events.Position
	// plain says state may hold personal fields decrypted while the
	// subject's key was readable (sealed caches only).
	plain bool
	// lent counts the copies load has handed out: appendAfter compares it
	// with the count its caller's copy was taken at (see reclaimer).
	lent uint64
}

// reclaimer is a state whose clone shares parts with the original until
// either side writes (userState): reclaim, called when the latest clone is
// known to be dropped, makes the original the only owner again if no
// earlier clone shares them still.
type reclaimer interface{ reclaim() }

// sealedReads is what a store that seals personal fields per person
// (privacy.Store) tells a cache of decoded states: whether the fields sealed
// for a subject read back as written right now (false once the subject's
// key is destroyed and this process's key cache knows it).
type sealedReads interface {
	Readable(ctx context.Context, subject string) bool
}

// readable reports whether the stream's personal fields read back as
// written; true when nothing is sealed (no personal state, or a store that
// keeps personal data in clear).
func (c *aggregateCache[S]) readable(ctx context.Context, s streams, stream string) bool {
	if c.sealedBy == nil {
		return true
	}
	g, ok := s.store.(sealedReads)
	return !ok || g.Readable(ctx, c.sealedBy(stream))
}

func newAggregateCache[S aggregate[S]](fresh func() S, max int) *aggregateCache[S] {
	return &aggregateCache[S]{fresh: fresh, max: max, entries: map[string]*list.Element{}}
}

// entry returns the stream's cache entry, creating it (and evicting the
// least recently used one beyond the bound) when missing.
func (c *aggregateCache[S]) entry(stream string) *cachedAggregate[S] {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[stream]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*cachedAggregate[S])
	}
	e := &cachedAggregate[S]{stream: stream, state: c.fresh()}
	c.entries[stream] = c.lru.PushFront(e)
	for c.lru.Len() > c.max {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.entries, old.Value.(*cachedAggregate[S]).stream)
	}
	return e
}

// drop forgets a stream's state (erasure). A load already holding the old
// entry still answers correctly (it reads the store); the next one starts
// from revision 0.
func (c *aggregateCache[S]) drop(stream string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[stream]; ok {
		c.lru.Remove(el)
		delete(c.entries, stream)
	}
}

// load returns a private copy of the stream's current state, the version
// it was read at (the expected revision for the next append) and the
// position of its last event. It reads only the events after the cached
// version; with the cache disabled it replays the stream from revision 0.
func (c *aggregateCache[S]) load(ctx context.Context, s streams, stream string) (S, uint64, events.Position, error) {
	st, v, pos, _, err := c.loadLent(ctx, s, stream)
	return st, v, pos, err
}

// loadLent is load, also returning which copy of the cached state it
// lent (for appendAfter's dropped argument).
func (c *aggregateCache[S]) loadLent(ctx context.Context, s streams, stream string) (S, uint64, events.Position, uint64, error) {
	if c == nil || c.max <= 0 {
		st := c.freshOrZero()
		v, pos, err := s.load(ctx, stream, st.apply)
		return st, v, pos, 0, err
	}
	e := c.entry(stream)
	e.mu.Lock()
	defer e.mu.Unlock()
	live := c.readable(ctx, s, stream)
	if !live && e.plain { // erased since: nothing decrypted before stays
		e.state, e.version, e.pos, e.plain = c.fresh(), 0, events.Position{}, false
	}
	recs, err := s.store.ReadStream(ctx, stream, e.version, 0)
	if err != nil {
		var zero S
		return zero, 0, events.Position{}, 0, fmt.Errorf("load %s: %w", stream, err)
	}
	for _, r := range recs {
		env, err := s.reg.Decode(r)
		if err != nil { // the state stays the fold of the events before it
			var zero S
			return zero, 0, events.Position{}, 0, fmt.Errorf("load %s: %w", stream, err)
		}
		e.state.apply(env)
		e.version++
		e.pos = r.Position
		e.plain = e.plain || live
	}
	e.lent++
	return e.state.clone(), e.version, e.pos, e.lent, nil
}

// cached lends a copy of the stream's cached state without reading the
// stream (for a decision whose append carries the cached version as its
// expected revision, trustedUsers): ok is false when the stream was never
// loaded, or when its personal fields no longer read back as written (the
// next load then starts the entry over, as loadLent does), so no plaintext
// of an erased person is lent. The entry keeps its place in the bound.
// lent numbers the copy as loadLent's does, so that the append deciding on
// it lets the cached state take its maps back (appendAfter's dropped).
func (c *aggregateCache[S]) cached(ctx context.Context, s streams, stream string) (_ S, version uint64, _ events.Position, lent uint64, ok bool) {
	var zero S
	if c == nil || c.max <= 0 {
		return zero, 0, events.Position{}, 0, false
	}
	c.mu.Lock()
	el, ok := c.entries[stream]
	if ok {
		c.lru.MoveToFront(el)
	}
	c.mu.Unlock()
	if !ok {
		return zero, 0, events.Position{}, 0, false
	}
	e := el.Value.(*cachedAggregate[S])
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.version == 0 || !c.readable(ctx, s, stream) {
		return zero, 0, events.Position{}, 0, false
	}
	e.lent++ // an earlier lent copy is no longer the latest (see reclaimer)
	return e.state.clone(), e.version, e.pos, e.lent, true
}

// release tells the cache that the copy loadLent lent as number lent is
// dropped without an append (the command decided nothing): if no later
// copy was lent, the cached state takes back what it shared with it.
func (c *aggregateCache[S]) release(stream string, lent uint64) {
	if c == nil || c.max <= 0 || lent == 0 {
		return
	}
	c.mu.Lock()
	el, ok := c.entries[stream]
	c.mu.Unlock()
	if !ok {
		return
	}
	e := el.Value.(*cachedAggregate[S])
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := any(e.state).(reclaimer); ok && e.lent == lent {
		r.reclaim()
	}
}

// appendAfter appends the payloads after version (as streams.append does)
// and, when they landed right after the cached version, advances the cached
// state by decoding the appended events from the bytes written, so the next
// command on the stream reads and decrypts nothing of its own writes. Only
// for aggregates whose apply reads nothing but the payload (the events'
// Created time is not known here). A sealed cache advances only if the
// subject's key is still readable once the append landed: a key destroyed
// before the append sealed the fields as null, one destroyed after it makes
// them read as null, and either way the next load reads them back as the
// store shows them.
//
// dropped (nonzero) says the caller's copy, lent by loadLent with that
// number, is never read again: if no later copy was lent, the cached state
// shares its maps with nobody, and advancing it copies none of them.
func (c *aggregateCache[S]) appendAfter(ctx context.Context, s streams, stream string, version, dropped uint64, meta Meta, ps ...events.Payload) (events.AppendResult, error) {
	evs, err := s.encode(meta.traced(ctx), ps...)
	if err != nil {
		return events.AppendResult{}, err
	}
	res, err := s.store.Append(ctx, stream, events.AfterVersion(version), evs...)
	if err != nil || c == nil || c.max <= 0 || res.Revision != version+uint64(len(evs))-1 {
		return res, err
	}
	c.mu.Lock()
	el, ok := c.entries[stream]
	c.mu.Unlock()
	if !ok {
		return res, nil
	}
	e := el.Value.(*cachedAggregate[S])
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.version != version {
		return res, nil // another command's load moved it: it is as the store says
	}
	if !c.readable(ctx, s, stream) {
		return res, nil
	}
	if r, ok := any(e.state).(reclaimer); ok && dropped != 0 && dropped == e.lent {
		r.reclaim()
	}
	// Every event is decoded before any is applied; a change appends one
	// or two, whose envelopes stay on the stack.
	envs := make([]events.Envelope, 0, 2)
	for i, ev := range evs {
		env, err := s.reg.Decode(events.Recorded{ID: ev.ID, Stream: stream, Type: ev.Type, Revision: version + uint64(i), Data: ev.Data, Meta: ev.Meta})
		if err != nil {
			return res, nil // the next load reads them back instead
		}
		envs = append(envs, env)
	}
	for _, env := range envs {
		e.state.apply(env)
	}
	e.version += uint64(len(evs))
	e.pos = res.Position
	e.plain = e.plain || c.sealedBy != nil
	return res, nil
}

func (c *aggregateCache[S]) freshOrZero() S {
	if c == nil || c.fresh == nil {
		var zero S
		return zero
	}
	return c.fresh()
}

// clone gives a decision a user the cached one's later applies cannot
// change: the maps are shared until either side's apply writes one (see
// userState.writable), so a command copies only what its own events change,
// not every group and member. The Profile and Member values are never
// written through (their pointer fields are only ever replaced).
func (s *userState) clone() *userState {
	s.writable = 0
	for i := range s.sharers {
		s.sharers[i]++
	}
	c := *s
	c.sharers = [4]uint32{}
	return &c
}

// reclaim marks writable again each map whose one clone taken since it was
// last this state's alone is the dropped one (the caller knows the latest
// clone is dropped; a count of 1 says no earlier one still shares it).
func (s *userState) reclaim() {
	for i, n := range s.sharers {
		if n == 1 {
			s.writable |= 1 << i
			s.sharers[i] = 0
		}
	}
}

func (g *goodsState) clone() *goodsState {
	c := *g
	return &c
}

func (s *orderState) clone() *orderState {
	c := *s
	if s.created != nil {
		created := *s.created
		created.Items = slices.Clone(s.created.Items)
		c.created = &created
	}
	c.shipped = maps.Clone(s.shipped)
	return &c
}

// orderUser is as much of a user as an order needs: whether it is a
// registered user of the app. It holds no personal data, so the orders'
// cache never keeps anything an erasure would have to reach.
type orderUser struct {
	registered bool
	appID      int64
}

func (u *orderUser) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.UserRegistered:
		u.registered, u.appID = true, p.AppID
	case *catalog.UserErased:
		u.registered = false
	}
}

func (u *orderUser) clone() *orderUser {
	c := *u
	return &c
}
