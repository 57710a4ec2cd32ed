package commands

import (
	"context"
	"fmt"
	"sync"

	"github.com/healthtech/partner-open-platform/events"
)

// maxCachedStreams bounds a readCache; an evicted stream is replayed once.
const maxCachedStreams = 10000

// readCache keeps read-only aggregates (providers and benefit items as
// verify-use reads them, never deciding on their expected revision) as of
// the events already applied, so each read decodes only the events appended
// since the last one (by this node or any other) instead of the whole
// stream. It is for aggregates without personal data: nothing in it is
// sealed per person, so erasure never has to reach it.
//
// Concurrent readers of one stream share reads: a caller that finds a read
// of the stream under way waits for the next one, which starts after that
// read ends (so after the caller arrived), together with every caller that
// arrives meanwhile. Every caller still sees each event appended before its
// call, yet a stream that every verification reads (the station's
// provider, the benefit item) costs one store round trip per wave of
// callers instead of one per caller, one after another.
type readCache[S any] struct {
	mu sync.Mutex
	m  map[string]*cachedStream[S]
}

// cachedStream is one stream's state as of version events. state and
// version belong to the running read; mu guards running and queued.
type cachedStream[S any] struct {
	mu      sync.Mutex
	running *sharedRead[S] // the read under way, nil when none
	queued  *sharedRead[S] // the read that starts when running ends

	state   S
	version uint64
}

// sharedRead is one read of a stream and its result, for all who share it.
type sharedRead[S any] struct {
	done  chan struct{} // closed once state and err are set
	state S
	err   error
}

func (c *readCache[S]) entry(stream string) *cachedStream[S] {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*cachedStream[S]{}
	}
	e := c.m[stream]
	if e == nil {
		if len(c.m) >= maxCachedStreams {
			for k := range c.m { // drop an arbitrary entry
				delete(c.m, k)
				break
			}
		}
		e = &cachedStream[S]{}
		c.m[stream] = e
	}
	return e
}

// read returns the stream's current state: a copy of the cached state
// with the events appended since applied. apply must replace, never write
// through, anything the state shares with an earlier copy.
func (c *readCache[S]) read(ctx context.Context, s streams, stream string, apply func(*S, events.Envelope)) (S, error) {
	e := c.entry(stream)
	e.mu.Lock()
	if e.running == nil {
		r := &sharedRead[S]{done: make(chan struct{})}
		e.running = r
		e.mu.Unlock()
		return e.run(ctx, r, s, stream, apply)
	}
	if r := e.queued; r != nil {
		e.mu.Unlock()
		return r.wait(ctx)
	}
	// The running read may have started before this call: queue the next
	// one and run it once the running one ends.
	r := &sharedRead[S]{done: make(chan struct{})}
	prev := e.running
	e.queued = r
	e.mu.Unlock()
	<-prev.done
	e.mu.Lock()
	e.running, e.queued = r, nil
	e.mu.Unlock()
	return e.run(ctx, r, s, stream, apply)
}

// wait returns a shared read's result, or the caller's context error if
// the caller gives up first.
func (r *sharedRead[S]) wait(ctx context.Context) (S, error) {
	select {
	case <-r.done:
		return r.state, r.err
	case <-ctx.Done():
		var zero S
		return zero, ctx.Err()
	}
}

// run reads the events appended since the cached version into the cached
// state and answers everyone sharing r. Only the running read touches the
// cached state, and reads run one at a time. The store is read without the
// caller's cancellation, since the answer is others' too.
func (e *cachedStream[S]) run(ctx context.Context, r *sharedRead[S], s streams, stream string, apply func(*S, events.Envelope)) (S, error) {
	r.state, r.err = e.advance(context.WithoutCancel(ctx), s, stream, apply)
	e.mu.Lock()
	if e.queued == nil {
		e.running = nil
	}
	e.mu.Unlock()
	close(r.done)
	return r.state, r.err
}

// advance applies the events appended since the cached version; a failure
// leaves the cached state and its version as they were.
func (e *cachedStream[S]) advance(ctx context.Context, s streams, stream string, apply func(*S, events.Envelope)) (S, error) {
	recs, err := s.store.ReadStream(ctx, stream, e.version, 0)
	if err != nil {
		var zero S
		return zero, fmt.Errorf("read %s: %w", stream, err)
	}
	// Decode every new event before applying any.
	envs := make([]events.Envelope, len(recs))
	for i, r := range recs {
		if envs[i], err = s.reg.Decode(r); err != nil {
			var zero S
			return zero, fmt.Errorf("read %s: %w", stream, err)
		}
	}
	for _, env := range envs {
		apply(&e.state, env)
	}
	e.version += uint64(len(recs))
	return e.state, nil
}
