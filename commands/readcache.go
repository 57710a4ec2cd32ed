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
type readCache[S any] struct {
	mu sync.Mutex
	m  map[string]*cachedStream[S]
}

// cachedStream is one stream's state as of version events; its mutex
// orders the readers that bring it up to date.
type cachedStream[S any] struct {
	mu      sync.Mutex
	state   S
	version uint64
}

// read returns the stream's current state: a copy of the cached state
// with the events appended since applied. apply must replace, never write
// through, anything the state shares with an earlier copy.
func (c *readCache[S]) read(ctx context.Context, s streams, stream string, apply func(*S, events.Envelope)) (S, error) {
	c.mu.Lock()
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
	c.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	recs, err := s.store.ReadStream(ctx, stream, e.version, 0)
	if err != nil {
		var zero S
		return zero, fmt.Errorf("read %s: %w", stream, err)
	}
	// Decode every new event before applying any, so a failure leaves the
	// cached state and its version as they were.
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
