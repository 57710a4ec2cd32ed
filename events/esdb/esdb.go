// Package esdb is the EventStoreDB adapter of events.Store, for deployments
// that outgrow one node: it maps the port onto the official gRPC client and
// adds nothing the server already guarantees.
package esdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/internal/rules"
)

// readPage is how many $all records ReadAll asks the server for at a time.
const readPage = 512

// closeWait is how long Close waits for calls still inside the client.
var closeWait = 5 * time.Second

// Store lets several nodes share one log on EventStoreDB; safe for
// concurrent use, and it outlives client restarts after failed discovery.
type Store struct {
	cfg *esdb.Configuration

	mu       sync.Mutex
	client   *esdb.Client
	closed   bool
	done     chan struct{}  // closed by Close, so subscription pumps stop
	inflight sync.WaitGroup // calls running inside a client
}

var _ events.Store = (*Store)(nil)

// Open connects lazily (the client dials on first use) to the server named
// by an esdb:// connection string, e.g. esdb://127.0.0.1:2113?tls=false.
func Open(connString string) (*Store, error) {
	cfg, err := esdb.ParseConnectionString(connString)
	if err != nil {
		return nil, fmt.Errorf("events/esdb: parse connection string: %w", err)
	}
	// The client logs every reconnect attempt at debug level otherwise.
	cfg.Logger = esdb.NoopLogging()
	// A client whose discovery gave up is dead for good, and callers that
	// were queued on it block forever; unless told otherwise, keep
	// discovering instead, so queued calls resume once the server is back.
	if !strings.Contains(strings.ToLower(connString), "maxdiscoverattempts=") {
		cfg.MaxDiscoverAttempts = math.MaxInt32
	}
	client, err := esdb.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("events/esdb: new client: %w", err)
	}
	return &Store{cfg: cfg, client: client, done: make(chan struct{})}, nil
}

// do runs op with the current client, on its own goroutine: the official
// client ignores contexts while it discovers the node, so only this keeps
// the caller's context in charge of how long it waits. An abandoned op
// finishes (and fails on its cancelled context) once the client moves on.
//
// When discovery does give up (only if the connection string caps
// maxDiscoverAttempts), the client answers every later call with
// ErrorCodeConnectionClosed; do then swaps in a fresh client and runs op
// once more, which is safe because that error comes before anything is sent.
//
// op may only write variables the caller reads when do returns nil.
func (s *Store) do(ctx context.Context, op func(c *esdb.Client) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		c, err := s.begin()
		if err != nil {
			return err
		}
		result := make(chan error, 1)
		go func() {
			defer s.inflight.Done()
			result <- op(c)
		}()
		select {
		case err = <-result:
		case <-ctx.Done():
			return fmt.Errorf("no answer from EventStoreDB at %s: %w", s.cfg.Address, ctx.Err())
		}
		if attempt == 0 && hasCode(err, esdb.ErrorCodeConnectionClosed) && s.renew(c) {
			continue
		}
		if err != nil && s.isClosed() {
			return fmt.Errorf("%w (%v)", events.ErrClosed, err)
		}
		return err
	}
}

// begin hands out the current client and counts the call as in flight.
func (s *Store) begin() (*esdb.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, events.ErrClosed
	}
	s.inflight.Add(1)
	return s.client, nil
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// renew replaces a dead client unless another caller already did. The dead
// client is deliberately not closed: its state machine has exited, and
// closing its channel could panic a goroutine still sending on it.
func (s *Store) renew(dead *esdb.Client) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.client != dead {
		return true
	}
	c, err := esdb.NewClient(s.cfg)
	if err != nil {
		return false
	}
	s.client = c
	return true
}

// Append implements events.Store.
//
// EventStoreDB reports the position of the write, which for a batch (or an
// idempotent retry) is not necessarily the position of its last event, so
// Append reads that event back: one extra round trip per append, the price
// of an exact AppendResult.Position for read-your-writes. Servers older than
// 22.6 leave $all positions out of stream reads; then the write's position
// is used, which is right for single-event appends.
func (s *Store) Append(ctx context.Context, stream string, expected events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	if len(evs) == 0 {
		return events.AppendResult{}, rules.ErrNoEvents
	}
	data := make([]esdb.EventData, len(evs))
	for i, ev := range evs {
		id, err := uuid.Parse(ev.ID)
		if err != nil {
			return events.AppendResult{}, fmt.Errorf("events/esdb: event id %q is not a UUID: %w", ev.ID, err)
		}
		data[i] = esdb.EventData{EventID: id, EventType: ev.Type, ContentType: esdb.ContentTypeJson, Data: ev.Data, Metadata: ev.Meta}
	}
	opts := esdb.AppendToStreamOptions{ExpectedRevision: expectation(expected)}

	var w *esdb.WriteResult
	err := s.do(ctx, func(c *esdb.Client) (err error) {
		w, err = c.AppendToStream(ctx, stream, opts, data...)
		return err
	})
	if hasCode(err, esdb.ErrorCodeWrongExpectedVersion) {
		return events.AppendResult{}, &events.ConflictError{Stream: stream, Expected: expected, Actual: -1}
	}
	if err != nil {
		return events.AppendResult{}, fmt.Errorf("events/esdb: append to %s: %w", stream, err)
	}
	var last events.Recorded
	err = s.do(ctx, func(c *esdb.Client) (err error) {
		last, err = readOne(ctx, c, stream, w.NextExpectedVersion)
		return err
	})
	if err != nil {
		// The events are durable; only the position is unknown.
		return events.AppendResult{}, fmt.Errorf("events/esdb: appended to %s but could not read back revision %d: %w", stream, w.NextExpectedVersion, err)
	}
	pos := last.Position
	if pos.Commit == noPosition {
		pos = events.Position{Commit: w.CommitPosition, Prepare: w.PreparePosition}
	}
	return events.AppendResult{Revision: last.Revision, Position: pos}, nil
}

// noPosition is what servers before 22.6 put in a stream read's positions.
const noPosition = math.MaxUint64

func expectation(e events.ExpectedRevision) esdb.ExpectedRevision {
	if rev, ok := e.Revision(); ok {
		return esdb.Revision(rev)
	}
	if e.IsNoStream() {
		return esdb.NoStream{}
	}
	return esdb.Any{}
}

// readOne reads the event at rev from the leader, where the append just happened.
func readOne(ctx context.Context, c *esdb.Client, stream string, rev uint64) (events.Recorded, error) {
	rs, err := c.ReadStream(ctx, stream, esdb.ReadStreamOptions{Direction: esdb.Backwards, From: esdb.Revision(rev), RequiresLeader: true}, 1)
	if err != nil {
		return events.Recorded{}, err
	}
	defer rs.Close()
	ev, err := rs.Recv()
	if err != nil {
		return events.Recorded{}, err
	}
	rec, ok := recorded(ev)
	if !ok || rec.Revision != rev {
		return events.Recorded{}, fmt.Errorf("no event at revision %d", rev)
	}
	return rec, nil
}

// ReadStream implements events.Store.
func (s *Store) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]events.Recorded, error) {
	count := uint64(math.MaxInt64)
	if limit > 0 {
		count = uint64(limit)
	}
	out := []events.Recorded{}
	err := s.do(ctx, func(c *esdb.Client) error {
		out = out[:0]
		rs, err := c.ReadStream(ctx, stream, esdb.ReadStreamOptions{From: esdb.Revision(from)}, count)
		if err != nil {
			return err
		}
		defer rs.Close()
		for {
			ev, err := rs.Recv()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if rec, ok := recorded(ev); ok {
				out = append(out, rec)
			}
		}
	})
	if hasCode(err, esdb.ErrorCodeResourceNotFound) {
		return []events.Recorded{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("events/esdb: read %s: %w", stream, err)
	}
	return out, nil
}

// ReadAll implements events.Store; limit <= 0 reads to the end. System
// events ($-prefixed types) are skipped: they are the server's, not ours.
func (s *Store) ReadAll(ctx context.Context, after events.Position, limit int) ([]events.Recorded, error) {
	out := []events.Recorded{}
	cursor := after
	for {
		page, seen, err := s.readAllPage(ctx, cursor)
		if err != nil {
			return nil, fmt.Errorf("events/esdb: read all after %s: %w", after, err)
		}
		for _, rec := range page {
			out = append(out, rec)
			if limit > 0 && len(out) == limit {
				return out, nil
			}
		}
		if seen.last == nil {
			return out, nil
		}
		cursor = *seen.last
		if !seen.full {
			return out, nil
		}
	}
}

// pageEnd says where a $all page stopped (last position, system events
// included) and whether the server had more to give.
type pageEnd struct {
	last *events.Position
	full bool
}

// readAllPage reads one server page strictly after pos. The server starts a
// forward $all read AT the position given, so the event there is dropped.
func (s *Store) readAllPage(ctx context.Context, after events.Position) ([]events.Recorded, pageEnd, error) {
	var from esdb.AllPosition = esdb.Start{}
	if !after.IsZero() {
		from = esdb.Position{Commit: after.Commit, Prepare: after.Prepare}
	}
	var (
		page []events.Recorded
		end  pageEnd
	)
	err := s.do(ctx, func(c *esdb.Client) error {
		page, end = nil, pageEnd{}
		rs, err := c.ReadAll(ctx, esdb.ReadAllOptions{From: from}, readPage)
		if err != nil {
			return err
		}
		defer rs.Close()
		n := 0
		for {
			ev, err := rs.Recv()
			if errors.Is(err, io.EOF) {
				end.full = n == readPage
				return nil
			}
			if err != nil {
				return err
			}
			n++
			orig := ev.OriginalEvent()
			if orig == nil {
				continue
			}
			pos := position(orig.Position)
			if !after.IsZero() && !after.Less(pos) {
				continue
			}
			end.last = &pos
			if rec, ok := recorded(ev); ok && !strings.HasPrefix(rec.Type, "$") {
				page = append(page, rec)
			}
		}
	})
	if err != nil {
		return nil, pageEnd{}, err
	}
	return page, end, nil
}

// Head implements events.Store: $all read backwards from its end to the
// newest event that is not the server's own ($-typed).
func (s *Store) Head(ctx context.Context) (events.Position, error) {
	var head events.Position
	err := s.do(ctx, func(c *esdb.Client) error {
		head = events.Position{}
		rs, err := c.ReadAll(ctx, esdb.ReadAllOptions{From: esdb.End{}, Direction: esdb.Backwards}, readPage)
		if err != nil {
			return err
		}
		defer rs.Close()
		for {
			ev, err := rs.Recv()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			if rec, ok := recorded(ev); ok && !strings.HasPrefix(rec.Type, "$") {
				head = rec.Position
				return nil
			}
		}
	})
	if err != nil {
		return events.Position{}, fmt.Errorf("events/esdb: head: %w", err)
	}
	return head, nil
}

// SubscribeAll implements events.Store with a server-side catch-up
// subscription that filters out system events.
func (s *Store) SubscribeAll(ctx context.Context, after events.Position) (events.Subscription, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	opts := esdb.SubscribeToAllOptions{From: esdb.Start{}, Filter: esdb.ExcludeSystemEventsFilter()}
	if !after.IsZero() {
		opts.From = esdb.Position{Commit: after.Commit, Prepare: after.Prepare}
	}
	var inner *esdb.Subscription
	err := s.do(ctx, func(c *esdb.Client) error {
		var err error
		inner, err = c.SubscribeToAll(ctx, opts)
		return err
	})
	if err != nil {
		cancel(nil)
		return nil, fmt.Errorf("events/esdb: subscribe after %s: %w", after, err)
	}
	sub := &subscription{
		store:   s,
		inner:   inner,
		ctx:     ctx,
		cancel:  cancel,
		after:   after,
		items:   make(chan events.Recorded, 64),
		stopped: make(chan struct{}),
	}
	go sub.pump()
	return sub, nil
}

// Close implements events.Store; open subscriptions end with events.ErrClosed.
// It waits (up to closeWait) for calls inside the client, because closing
// the client under a call that is still queued in it makes that call panic;
// if some stay stuck, the connection is left for process exit to reclaim.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	client := s.client
	s.mu.Unlock()

	idle := make(chan struct{})
	go func() {
		s.inflight.Wait()
		close(idle)
	}()
	select {
	case <-idle:
		return client.Close()
	case <-time.After(closeWait):
		return errors.New("events/esdb: close: calls are still queued in the EventStoreDB client; its connection is left open so they cannot panic")
	}
}

// subscription turns the client's blocking Recv into a Next that honours
// its context: a goroutine pumps events into a channel.
type subscription struct {
	store  *Store
	inner  *esdb.Subscription
	ctx    context.Context
	cancel context.CancelCauseFunc
	after  events.Position

	items   chan events.Recorded
	stopped chan struct{} // closed by pump when it stops; err says why
	err     error
	once    sync.Once
}

func (s *subscription) pump() {
	defer close(s.stopped)
	for {
		msg := s.inner.Recv()
		switch {
		case msg.SubscriptionDropped != nil:
			s.err = s.why(msg.SubscriptionDropped.Error)
			return
		case msg.CheckPointReached != nil, msg.CaughtUp != nil, msg.FellBehind != nil:
			continue
		case msg.EventAppeared == nil:
			continue
		}
		rec, ok := recorded(msg.EventAppeared)
		if !ok || strings.HasPrefix(rec.Type, "$") || !s.after.Less(rec.Position) {
			continue
		}
		s.after = rec.Position
		select {
		case s.items <- rec:
		case <-s.ctx.Done():
			s.err = s.why(s.ctx.Err())
			return
		case <-s.store.done:
			s.err = events.ErrClosed
			return
		}
	}
}

// why names the end of a subscription: closed (subscription or store), the
// SubscribeAll context, or a server-side drop.
func (s *subscription) why(cause error) error {
	switch {
	case s.store.isClosed() || errors.Is(context.Cause(s.ctx), events.ErrClosed):
		return events.ErrClosed
	case s.ctx.Err() != nil:
		return s.ctx.Err()
	default:
		return fmt.Errorf("events/esdb: subscription dropped: %w", cause)
	}
}

// Next implements events.Subscription. Once closed it returns ErrClosed
// straight away; after a server-side drop it first hands out what arrived.
func (s *subscription) Next(ctx context.Context) (events.Recorded, error) {
	if s.store.isClosed() || s.ctx.Err() != nil {
		return events.Recorded{}, s.why(nil)
	}
	select {
	case rec := <-s.items:
		return rec, nil
	case <-s.stopped:
		select {
		case rec := <-s.items:
			return rec, nil
		default:
			return events.Recorded{}, s.err
		}
	case <-s.ctx.Done():
		return events.Recorded{}, s.why(nil)
	case <-s.store.done:
		return events.Recorded{}, events.ErrClosed
	case <-ctx.Done():
		return events.Recorded{}, ctx.Err()
	}
}

// Close implements events.Subscription.
func (s *subscription) Close() error {
	s.once.Do(func() {
		s.cancel(events.ErrClosed)
		_ = s.inner.Close()
	})
	return nil
}

// recorded translates a resolved event; ok is false for an event the server
// could not resolve (a link to a deleted event).
func recorded(ev *esdb.ResolvedEvent) (events.Recorded, bool) {
	if ev == nil || ev.Event == nil {
		return events.Recorded{}, false
	}
	e := ev.Event
	return events.Recorded{
		ID:       e.EventID.String(),
		Stream:   e.StreamID,
		Type:     e.EventType,
		Revision: e.EventNumber,
		Position: position(e.Position),
		Created:  e.CreatedDate.UTC(),
		Data:     nonEmpty(e.Data),
		Meta:     nonEmpty(e.UserMetadata),
	}, true
}

func position(p esdb.Position) events.Position {
	return events.Position{Commit: p.Commit, Prepare: p.Prepare}
}

// nonEmpty maps the server's empty payloads to nil, as the other adapters do.
func nonEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func hasCode(err error, code esdb.ErrorCode) bool {
	var e *esdb.Error
	return errors.As(err, &e) && e.Code() == code
}
