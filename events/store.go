// Package events is the write side's source of truth: an append-only log of
// streams, each stream holding one aggregate's events in revision order, and
// one global order over all streams that subscribers follow.
//
// Adapters live in subpackages named after their technology (events/bolt,
// events/esdb, events/memory); every adapter passes the conformance suite in
// events/storetest.
package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Position locates an event in the global order of all streams. It mirrors
// EventStoreDB's $all position so that its adapter needs no translation;
// embedded adapters set Commit and Prepare to the same sequence number.
// The zero Position lies before the first event.
type Position struct {
	Commit  uint64 `json:"commit"`
	Prepare uint64 `json:"prepare"`
}

// Less orders positions as the global log does.
func (p Position) Less(q Position) bool {
	if p.Commit != q.Commit {
		return p.Commit < q.Commit
	}
	return p.Prepare < q.Prepare
}

// IsZero reports whether p is the start of the log.
func (p Position) IsZero() bool { return p.Commit == 0 && p.Prepare == 0 }

// Before is the position just below p, no event's: ReadAll(ctx, p.Before(),
// 1) reads the event at p, if there is one (every store's conformance).
func (p Position) Before() Position {
	if p.Prepare == 0 {
		return Position{Commit: p.Commit - 1, Prepare: ^uint64(0)}
	}
	return Position{Commit: p.Commit, Prepare: p.Prepare - 1}
}

// LogReader reads the log in order from a position (a Store does).
type LogReader interface {
	ReadAll(ctx context.Context, after Position, limit int) ([]Recorded, error)
}

// ReadAt reads the event at pos from log; found is false when no event is
// there.
func ReadAt(ctx context.Context, log LogReader, pos Position) (rec Recorded, found bool, err error) {
	recs, err := log.ReadAll(ctx, pos.Before(), 1)
	if err != nil || len(recs) == 0 || recs[0].Position != pos {
		return Recorded{}, false, err
	}
	return recs[0], true, nil
}

// PositionReader is a store that reads the events at several positions
// in one pass (one transaction, one query): a page of a read model that
// keeps only its rows' positions (a feed page of final deliveries, whose
// bodies are in the log) reads their events so, not one ReadAt each.
type PositionReader interface {
	// ReadPositions returns the event at each of positions (in any order,
	// repeats allowed): out[i] is the one at positions[i], or the zero
	// Recorded (its Position zero) where ReadAt would find none. The
	// events are the caller's own, as ReadAll's are.
	ReadPositions(ctx context.Context, positions []Position) ([]Recorded, error)
}

// ReadPositions reads the events at positions from log: in one pass when
// log can (PositionReader), else one ReadAt each (EventStoreDB). out[i] is
// the event at positions[i], or the zero Recorded where none is. A
// decorator calls it on the store it wraps, so the capability reaches the
// adapter.
func ReadPositions(ctx context.Context, log LogReader, positions []Position) ([]Recorded, error) {
	if r, ok := log.(PositionReader); ok {
		return r.ReadPositions(ctx, positions)
	}
	out := make([]Recorded, len(positions))
	for i, pos := range positions {
		rec, found, err := ReadAt(ctx, log, pos)
		if err != nil {
			return nil, err
		}
		if found {
			out[i] = rec
		}
	}
	return out, nil
}

// String renders the position the way operators see it in logs and history.
func (p Position) String() string { return fmt.Sprintf("%d/%d", p.Commit, p.Prepare) }

// ExpectedRevision is the writer's belief about a stream's last revision;
// the append fails with a ConflictError when the belief is wrong, so two
// deciders can never both win on the same state.
type ExpectedRevision struct {
	kind     expectKind
	revision uint64
}

type expectKind uint8

const (
	expectAny expectKind = iota
	expectNoStream
	expectExact
)

// Any appends regardless of the stream's state; used only where ordering is
// all that matters (never for decisions).
func Any() ExpectedRevision { return ExpectedRevision{kind: expectAny} }

// NoStream requires that the stream has no events yet: how uniqueness claims are made.
func NoStream() ExpectedRevision { return ExpectedRevision{kind: expectNoStream} }

// Exact requires that the stream's last event has this revision (0-based).
func Exact(revision uint64) ExpectedRevision {
	return ExpectedRevision{kind: expectExact, revision: revision}
}

// AfterVersion converts an aggregate's loaded version (number of events it
// applied, 0 for a new aggregate) into the expectation for its next append.
func AfterVersion(version uint64) ExpectedRevision {
	if version == 0 {
		return NoStream()
	}
	return Exact(version - 1)
}

// IsAny, IsNoStream and Revision let adapters translate the expectation.
func (e ExpectedRevision) IsAny() bool { return e.kind == expectAny }

// IsNoStream reports whether the stream must not exist yet.
func (e ExpectedRevision) IsNoStream() bool { return e.kind == expectNoStream }

// Revision returns the exact revision expected and whether one is expected.
func (e ExpectedRevision) Revision() (uint64, bool) { return e.revision, e.kind == expectExact }

// Matches reports whether a stream holding count events satisfies e; the
// embedded adapters share it so they agree with EventStoreDB.
func (e ExpectedRevision) Matches(count uint64) bool {
	switch e.kind {
	case expectAny:
		return true
	case expectNoStream:
		return count == 0
	default:
		return count > 0 && count-1 == e.revision
	}
}

func (e ExpectedRevision) String() string {
	switch e.kind {
	case expectAny:
		return "any"
	case expectNoStream:
		return "no-stream"
	default:
		return fmt.Sprintf("revision %d", e.revision)
	}
}

// Proposed is an event a command wants to append. ID is a UUID chosen by the
// writer; re-appending the same IDs is idempotent, which makes retries safe.
type Proposed struct {
	ID   string
	Type string
	Data json.RawMessage
	Meta json.RawMessage
}

// Recorded is an event as the log holds it.
type Recorded struct {
	ID       string
	Stream   string
	Type     string
	Revision uint64 // 0-based index within the stream
	Position Position
	Created  time.Time // when the log recorded it (UTC)
	Data     json.RawMessage
	Meta     json.RawMessage
}

// AppendResult tells the writer where its last event landed, so that the
// read side can wait until it has caught up to the write (read your writes).
type AppendResult struct {
	// Revision of the last appended event.
	Revision uint64
	// Position of the last appended event: a subscriber that has handled an
	// event at or after Position has handled every event of this append.
	Position Position
}

// Store is the event-store port that commands write to and subscribers read from.
type Store interface {
	// Append atomically appends evs to stream if expected matches, returning
	// a *ConflictError (errors.Is ErrConflict) otherwise. Appending events
	// whose IDs the stream already holds at the same place succeeds without
	// writing them twice.
	Append(ctx context.Context, stream string, expected ExpectedRevision, evs ...Proposed) (AppendResult, error)
	// ReadStream returns a stream's events from revision from (inclusive) in
	// order, at most limit of them (limit <= 0: all). A missing stream
	// yields no events and no error.
	ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]Recorded, error)
	// ReadAll returns up to limit events strictly after pos in global order.
	ReadAll(ctx context.Context, after Position, limit int) ([]Recorded, error)
	// Head is the position of the last event in the log (zero when empty):
	// a node that starts answers reads only once its read models reach it,
	// so a restart never forgets an acknowledged write.
	Head(ctx context.Context) (Position, error)
	// SubscribeAll delivers every event strictly after pos in global order,
	// first catching up and then live, until ctx ends or Close is called.
	SubscribeAll(ctx context.Context, after Position) (Subscription, error)
	// Close releases the store.
	Close() error
}

// Deferrable returns a context whose appends nobody waits on in a request
// (the webhook dispatcher's delivery creations and attempt outcomes): an
// adapter whose every transaction pays a fixed cost may hold such an
// append, for a bounded time, until an append that is not deferrable
// shares its transaction, instead of giving it one of its own. Nothing
// else changes: the append returns once it is durable or refused, exactly
// as Append promises, and a deferrable append never delays another one.
// events/bolt and events/postgres honour it (groupcommit.MaxDefer bounds
// the wait); the EventStoreDB and in-memory adapters ignore it.
func Deferrable(ctx context.Context) context.Context {
	return context.WithValue(ctx, deferrableKey{}, true)
}

// IsDeferrable reports whether ctx was marked by Deferrable.
func IsDeferrable(ctx context.Context) bool {
	v, _ := ctx.Value(deferrableKey{}).(bool)
	return v
}

type deferrableKey struct{}

// FilteredSubscriber is a store that can follow the log for a follower
// that handles only the event types wants accepts: every event wants
// accepts is delivered, in order; of a stretch of others it may deliver
// only the last (which still moves the follower's position), so a
// follower of a few types need not read the whole log to find them.
type FilteredSubscriber interface {
	SubscribeAllFor(ctx context.Context, after Position, wants func(eventType string) bool) (Subscription, error)
}

// SubscribeAllFor follows s for a follower of the types wants accepts:
// through s's SubscribeAllFor when it has one, else SubscribeAll. A
// decorator calls it on the store it wraps, so the capability reaches
// the adapter.
func SubscribeAllFor(ctx context.Context, s Store, after Position, wants func(eventType string) bool) (Subscription, error) {
	if f, ok := s.(FilteredSubscriber); ok {
		return f.SubscribeAllFor(ctx, after, wants)
	}
	return s.SubscribeAll(ctx, after)
}

// Subscription is a cursor over the global log that blocks for new events.
type Subscription interface {
	// Next returns the next event, blocking until one exists, the context
	// ends, or the subscription is closed (then ErrClosed). The event's Data
	// and Meta may be shared with every other subscription of the node
	// (events/bolt, privacy): read them, never write into them.
	Next(ctx context.Context) (Recorded, error)
	Close() error
}

// Poller is a Subscription that can also be read without blocking (the
// embedded and Postgres adapters'): TryNext returns the next event, or, when
// none is to be had, a nil error and a channel closed once one may be (an
// append, or the store's Close). A follower that waits on other channels
// too reads it directly instead of through a goroutine blocked in Next.
type Poller interface {
	Subscription
	TryNext(ctx context.Context) (Recorded, <-chan struct{}, error)
}

// ErrConflict is matched (errors.Is) by every ConflictError.
var ErrConflict = errors.New("events: wrong expected revision")

// ErrClosed is returned by a closed store or subscription.
var ErrClosed = errors.New("events: closed")

// ConflictError says which stream refused an append and why.
type ConflictError struct {
	Stream   string
	Expected ExpectedRevision
	// Actual is the number of events the stream held, when known (-1 if not).
	Actual int64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("events: append to %q expected %s, stream holds %d events", e.Stream, e.Expected, e.Actual)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// IsConflict reports whether err is a wrong-expected-revision conflict.
func IsConflict(err error) bool { return err != nil && errors.Is(err, ErrConflict) }

// StreamAppend is one stream's part of an atomic multi-stream append.
type StreamAppend struct {
	Stream   string
	Expected ExpectedRevision
	Events   []Proposed
}

// MultiStreamAppender is the optional part of the port for stores that can
// append to several streams in one atomic step: a command whose decision
// spans two streams (register claims the (app, channel user) binding and
// creates the user) then pays one durable write instead of two, with no
// window in which only the first is recorded.
//
// AppendMulti checks every part exactly as Append would (its expectation,
// and an idempotent retry of events the stream already holds in place)
// and then either records every part or none: a failed expectation returns
// the *ConflictError of the first part that failed and writes nothing. The
// parts' events follow one another in the global order, in part order; the
// results are per part, in part order. Parts must name distinct streams and
// all event IDs must be distinct.
type MultiStreamAppender interface {
	AppendMulti(ctx context.Context, parts ...StreamAppend) ([]AppendResult, error)
}

// ErrMultiStreamUnsupported says that a store (EventStoreDB: its v4 client
// has no multi-stream append) cannot append to several streams atomically;
// nothing was written and the caller appends part by part instead.
var ErrMultiStreamUnsupported = errors.New("events: this store has no atomic multi-stream append")

// AppendMulti appends parts atomically when s can (MultiStreamAppender) and
// returns ErrMultiStreamUnsupported, having written nothing, when it cannot,
// so that callers keep one code path with a fallback.
func AppendMulti(ctx context.Context, s Store, parts ...StreamAppend) ([]AppendResult, error) {
	m, ok := s.(MultiStreamAppender)
	if !ok {
		return nil, ErrMultiStreamUnsupported
	}
	return m.AppendMulti(ctx, parts...)
}

// Last is the position after which a subscriber has seen every part of a
// multi-stream append: the largest of the results' positions.
func Last(results []AppendResult) Position {
	var last Position
	for _, r := range results {
		if last.Less(r.Position) {
			last = r.Position
		}
	}
	return last
}
