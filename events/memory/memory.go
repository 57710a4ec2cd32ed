// Package memory is the in-process event store for unit tests: fast, empty on
// start and gone on exit, yet held to the same conformance suite as the
// durable adapters so tests exercise real semantics.
package memory

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/internal/rules"
	"github.com/healthtech/partner-open-platform/events/internal/tail"
)

// Store holds a whole log in process memory so unit tests need neither disk
// nor server; position n is the n-th event appended (1-based).
type Store struct {
	mu      sync.RWMutex
	log     []events.Recorded
	streams map[string][]int // stream -> indexes into log, in revision order
	ids     map[string]int   // event id -> index into log
	closed  bool
	notify  *tail.Notifier
}

var (
	_ events.Store               = (*Store)(nil)
	_ events.MultiStreamAppender = (*Store)(nil)
	_ events.PositionReader      = (*Store)(nil)
)

// New returns an empty store, so each test starts from a clean log.
func New() *Store {
	return &Store{streams: map[string][]int{}, ids: map[string]int{}, notify: tail.NewNotifier()}
}

// Append implements events.Store.
func (s *Store) Append(ctx context.Context, stream string, expected events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	if err := ctx.Err(); err != nil {
		return events.AppendResult{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return events.AppendResult{}, events.ErrClosed
	}
	res, replayed, err := rules.Check(stream, expected, uint64(len(s.streams[stream])), evs, s.lookup)
	if err != nil || replayed {
		return res, err
	}
	res = s.write(stream, evs, time.Now().UTC())
	s.notify.Notify()
	return res, nil
}

// AppendMulti implements events.MultiStreamAppender: every part is checked
// under the one lock before any is written.
func (s *Store) AppendMulti(ctx context.Context, parts ...events.StreamAppend) ([]events.AppendResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := rules.CheckParts(parts); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, events.ErrClosed
	}
	results := make([]events.AppendResult, len(parts))
	replayed := make([]bool, len(parts))
	for i, p := range parts {
		res, again, err := rules.Check(p.Stream, p.Expected, uint64(len(s.streams[p.Stream])), p.Events, s.lookup)
		if err != nil {
			return nil, err
		}
		results[i], replayed[i] = res, again
	}
	now, wrote := time.Now().UTC(), false
	for i, p := range parts {
		if !replayed[i] {
			results[i], wrote = s.write(p.Stream, p.Events, now), true
		}
	}
	if wrote {
		s.notify.Notify()
	}
	return results, nil
}

// write records evs at the end of stream (checked already; s.mu held).
func (s *Store) write(stream string, evs []events.Proposed, now time.Time) events.AppendResult {
	idx := s.streams[stream]
	var res events.AppendResult
	for _, ev := range evs {
		seq := uint64(len(s.log)) + 1
		rec := events.Recorded{
			ID:       ev.ID,
			Stream:   stream,
			Type:     ev.Type,
			Revision: uint64(len(idx)),
			Position: events.Position{Commit: seq, Prepare: seq},
			Created:  now,
			Data:     clone(ev.Data),
			Meta:     clone(ev.Meta),
		}
		idx = append(idx, len(s.log))
		s.ids[ev.ID] = len(s.log)
		s.log = append(s.log, rec)
		res = events.AppendResult{Revision: rec.Revision, Position: rec.Position}
	}
	s.streams[stream] = idx
	return res
}

func (s *Store) lookup(id string) (rules.Located, bool, error) {
	i, ok := s.ids[id]
	if !ok {
		return rules.Located{}, false, nil
	}
	rec := s.log[i]
	return rules.Located{Stream: rec.Stream, Revision: rec.Revision, Position: rec.Position}, true, nil
}

// ReadStream implements events.Store.
func (s *Store) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]events.Recorded, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, events.ErrClosed
	}
	idx := s.streams[stream]
	if from >= uint64(len(idx)) {
		return []events.Recorded{}, nil
	}
	idx = idx[from:]
	if limit > 0 && limit < len(idx) {
		idx = idx[:limit]
	}
	out := make([]events.Recorded, len(idx))
	for i, j := range idx {
		out[i] = copyOf(s.log[j])
	}
	return out, nil
}

// ReadAll implements events.Store; limit <= 0 reads to the end.
func (s *Store) ReadAll(ctx context.Context, after events.Position, limit int) ([]events.Recorded, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, events.ErrClosed
	}
	// Positions are sequence numbers, so the event after seq n sits at index n.
	start := after.Commit
	if after.Prepare < after.Commit {
		start--
	}
	if start >= uint64(len(s.log)) {
		return []events.Recorded{}, nil
	}
	rest := s.log[start:]
	if limit > 0 && limit < len(rest) {
		rest = rest[:limit]
	}
	out := make([]events.Recorded, len(rest))
	for i, rec := range rest {
		out[i] = copyOf(rec)
	}
	return out, nil
}

// ReadPositions implements events.PositionReader: the events at
// positions, under one read lock.
func (s *Store) ReadPositions(ctx context.Context, positions []events.Position) ([]events.Recorded, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, events.ErrClosed
	}
	out := make([]events.Recorded, len(positions))
	for i, pos := range positions {
		// The event of sequence n (its Commit and Prepare) sits at index n-1.
		if pos.Commit == pos.Prepare && pos.Commit > 0 && pos.Commit <= uint64(len(s.log)) {
			out[i] = copyOf(s.log[pos.Commit-1])
		}
	}
	return out, nil
}

// Head implements events.Store.
func (s *Store) Head(ctx context.Context) (events.Position, error) {
	if err := ctx.Err(); err != nil {
		return events.Position{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return events.Position{}, events.ErrClosed
	}
	if len(s.log) == 0 {
		return events.Position{}, nil
	}
	return s.log[len(s.log)-1].Position, nil
}

// SubscribeAll implements events.Store.
func (s *Store) SubscribeAll(ctx context.Context, after events.Position) (events.Subscription, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, events.ErrClosed
	}
	return tail.Subscribe(ctx, after, s.ReadAll, s.notify), nil
}

// Close implements events.Store; subscriptions end with events.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.notify.Close()
	return nil
}

// copyOf keeps callers from mutating the log through the returned slices.
func copyOf(rec events.Recorded) events.Recorded {
	rec.Data = clone(rec.Data)
	rec.Meta = clone(rec.Meta)
	return rec
}

// clone copies b, mapping empty to nil as the durable adapters do.
func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}
