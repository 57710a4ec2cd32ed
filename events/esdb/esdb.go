// Package esdb is the EventStoreDB adapter of events.Store, for deployments
// that outgrow one node: it maps the port onto the official gRPC client
// (v4) and adds only what that client leaves out.
//
// What it adds, each for a defect found by reading the client and server:
//   - Every call carries the "requires-leader: true" header on its outgoing
//     gRPC context. The client's RequiresLeader option (and its leader node
//     preference) puts the header on the incoming context, which gRPC never
//     sends, so reads could be served stale by a follower after an election.
//     With the header a follower refuses, the client reconnects to the
//     leader it names, and the adapter retries the call once.
//   - Open probes the server within a bounded time and fails with the cause;
//     the client's log goes to slog. Once a call finds the server unreachable
//     the store is "down": calls fail at once (ErrUnavailable, with the cause)
//     instead of queueing behind the client's connection loop, while one
//     background prober reconnects. Close cancels every call and subscription.
//   - Append never fails after the server accepted the write: the position
//     comes from the write result (see appendResult).
package esdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"google.golang.org/grpc/metadata"

	"github.com/healthtech/partner-open-platform/events"
)

// readPage is how many $all records ReadAll asks the server for at a time.
const readPage = 512

// requiresLeader is the header EventStoreDB reads to refuse, on a follower,
// a call that must see the leader's state.
const requiresLeader = "requires-leader"

// Timing of the connection management; variables so tests can shorten them.
var (
	// closeWait is how long Close waits for calls still inside the client.
	closeWait = 5 * time.Second
	// defaultProbeTimeout bounds Open's first contact with the server.
	defaultProbeTimeout = 10 * time.Second
	// probeMin and probeMax bound the prober's back-off while down.
	probeMin = 250 * time.Millisecond
	probeMax = 10 * time.Second
)

// Option configures Open.
type Option func(*options)

type options struct {
	log          *slog.Logger
	probeTimeout time.Duration
}

// WithLogger sends the adapter's and the client's log lines to l (default:
// slog.Default()), so an outage shows its cause in the node's log.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.log = l
		}
	}
}

// Store lets several nodes share one log on EventStoreDB; safe for
// concurrent use.
type Store struct {
	cfg          *esdb.Configuration
	log          *slog.Logger
	clog         *clientLog
	probeTimeout time.Duration
	life         context.Context // cancelled (cause events.ErrClosed) by Close
	stop         context.CancelCauseFunc

	mu       sync.Mutex
	client   *esdb.Client
	closed   bool
	down     *UnavailableError // nil while the server is believed reachable
	probing  bool
	subs     map[*subscription]struct{}
	inflight sync.WaitGroup // goroutines running inside a client
}

var _ events.Store = (*Store)(nil)

// Open connects to the server named by an esdb:// or esdb+discover://
// connection string (e.g. esdb://127.0.0.1:2113?tls=false; see
// ParseConnectionString for what is refused) and reads $all once, so that an
// unreachable server, bad credentials or TLS settings fail here, with the
// cause, rather than in the first request.
func Open(connString string, opts ...Option) (*Store, error) {
	o := options{log: slog.Default(), probeTimeout: defaultProbeTimeout}
	for _, f := range opts {
		f(&o)
	}
	cfg, err := ParseConnectionString(connString)
	if err != nil {
		return nil, err
	}
	clog := &clientLog{log: o.log}
	cfg.Logger = clog.logging()
	client, err := esdb.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("events/esdb: new client: %w", err)
	}
	life, stop := context.WithCancelCause(context.Background())
	s := &Store{
		cfg: cfg, log: o.log, clog: clog, probeTimeout: o.probeTimeout, life: life, stop: stop,
		client: client, subs: map[*subscription]struct{}{},
	}
	if err := s.firstProbe(); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("events/esdb: EventStoreDB at %s does not answer: %w", s.where(), err)
	}
	return s, nil
}

// where names the server for messages.
func (s *Store) where() string {
	if len(s.cfg.GossipSeeds) == 0 {
		return s.cfg.Address
	}
	seeds := make([]string, len(s.cfg.GossipSeeds))
	for i, e := range s.cfg.GossipSeeds {
		seeds[i] = e.String()
	}
	return strings.Join(seeds, ",")
}

// callContext derives the context of one call: it ends with the caller's,
// or with events.ErrClosed as its cause when the store closes, and carries
// the requires-leader header to the server.
func (s *Store) callContext(parent context.Context) (context.Context, func(cause error)) {
	ctx, cancel := context.WithCancelCause(parent)
	stop := context.AfterFunc(s.life, func() { cancel(events.ErrClosed) })
	return metadata.AppendToOutgoingContext(ctx, requiresLeader, "true"), func(cause error) {
		stop()
		cancel(cause)
	}
}

// do runs op with the current client on a goroutine of its own: the client
// ignores contexts while it discovers the node, so only this keeps the
// caller's context in charge. ctx must come from callContext.
//
// While the store is down, do fails at once. A not-leader refusal is retried
// once (the client has reconnected to the leader it was told about; the
// refused call did nothing). A connection failure marks the store down.
//
// op may only write variables the caller reads when do returns nil.
func (s *Store) do(ctx context.Context, op func(c *esdb.Client) error) error {
	for attempt := 0; ; attempt++ {
		if ctx.Err() != nil {
			return s.ended(ctx)
		}
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
			return s.ended(ctx)
		}
		switch {
		case err == nil:
			return nil
		case s.isClosed():
			return fmt.Errorf("%w (%v)", events.ErrClosed, err)
		case attempt == 0 && hasCode(err, esdb.ErrorCodeNotLeader):
			continue
		case isConnectionError(err):
			return s.markDown(err)
		}
		return err
	}
}

// ended explains a call whose context ended first.
func (s *Store) ended(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), events.ErrClosed) || s.isClosed() {
		return events.ErrClosed
	}
	return fmt.Errorf("no answer from EventStoreDB at %s: %w", s.where(), ctx.Err())
}

// begin hands out the current client and counts the call as in flight; it
// refuses while the store is closed or down.
func (s *Store) begin() (*esdb.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, events.ErrClosed
	}
	if s.down != nil {
		down := *s.down
		return nil, &down
	}
	s.inflight.Add(1)
	return s.client, nil
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// markDown records that the server is unreachable, starts the prober if it
// is not running, and returns the error callers get until it answers again.
func (s *Store) markDown(cause error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%w (%v)", events.ErrClosed, cause)
	}
	if s.down == nil {
		s.down = &UnavailableError{Address: s.where(), Since: time.Now(), Cause: cause}
		s.log.Warn("EventStoreDB unreachable: calls fail at once until it answers again", "address", s.where(), "err", cause)
	} else {
		s.down = &UnavailableError{Address: s.down.Address, Since: s.down.Since, Cause: cause}
	}
	if !s.probing {
		s.probing = true
		go s.probeLoop()
	}
	down := *s.down
	return &down
}

// probeLoop reconnects while the store is down, with back-off, one probe
// at a time (so nothing piles up inside the client), until a probe
// succeeds or the store closes.
func (s *Store) probeLoop() {
	wait := probeMin
	for {
		select {
		case <-s.life.Done():
			return
		case <-time.After(wait):
		}
		ctx, cancel := context.WithTimeout(s.life, s.probeTimeout)
		err := s.probe(ctx)
		cancel()
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		if err == nil {
			since := s.down.Since
			s.down, s.probing = nil, false
			s.mu.Unlock()
			s.log.Info("EventStoreDB answers again", "address", s.where(), "down_for", time.Since(since).Round(time.Millisecond).String())
			return
		}
		s.down = &UnavailableError{Address: s.down.Address, Since: s.down.Since, Cause: err}
		s.mu.Unlock()
		wait = min(2*wait, probeMax)
	}
}

// firstProbe is Open's probe, bounded by the probe timeout even while the
// client is stuck in discovery; then the client's last complaint is the
// best cause there is.
func (s *Store) firstProbe() error {
	ctx, cancel := context.WithTimeout(s.life, s.probeTimeout)
	defer cancel()
	result := make(chan error, 1)
	go func() { result <- s.probe(ctx) }()
	select {
	case err := <-result:
		return err
	case <-ctx.Done():
		if p := s.clog.lastProblem(); p != "" {
			return fmt.Errorf("no answer within %s; the client's last complaint: %s", s.probeTimeout, p)
		}
		return fmt.Errorf("no answer within %s", s.probeTimeout)
	}
}

// probe reads the newest $all record from the leader: it proves the server
// is reachable, the credentials may read $all (as subscriptions must) and
// the client is connected to the leader. A client whose discovery gave up
// is dead for good; probe replaces it and tries once more.
func (s *Store) probe(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		c, err := s.current()
		if err != nil {
			return err
		}
		callCtx, cancel := s.callContext(ctx)
		err = func() error {
			defer s.inflight.Done()
			rs, err := c.ReadAll(callCtx, esdb.ReadAllOptions{From: esdb.End{}, Direction: esdb.Backwards}, 1)
			if err != nil {
				return err
			}
			defer rs.Close()
			if _, err := rs.Recv(); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			return nil
		}()
		cancel(nil)
		if err == nil || attempt > 0 {
			return err
		}
		switch {
		case hasCode(err, esdb.ErrorCodeConnectionClosed):
			if !s.renew(c) {
				return err
			}
		case hasCode(err, esdb.ErrorCodeNotLeader):
		default:
			return err
		}
	}
}

// current hands out the client even while down (for the prober).
func (s *Store) current() (*esdb.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, events.ErrClosed
	}
	s.inflight.Add(1)
	return s.client, nil
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

// Append implements events.Store. It never reports a write the server
// accepted as failed: the result's position comes from the write itself;
// only when the server sent none (an idempotent retry on a server that
// could not look it up) is the last event read back, and if that read fails
// too, the append still succeeds, with a zero Position ("unknown": the read
// side will not wait for it) and a warning in the log.
func (s *Store) Append(ctx context.Context, stream string, expected events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	data, err := eventData(stream, evs)
	if err != nil {
		return events.AppendResult{}, err
	}
	opts := esdb.AppendToStreamOptions{ExpectedRevision: expectation(expected)}
	callCtx, cancel := s.callContext(ctx)
	defer cancel(nil)

	var w *esdb.WriteResult
	err = s.do(callCtx, func(c *esdb.Client) (err error) {
		w, err = c.AppendToStream(callCtx, stream, opts, data...)
		return err
	})
	if hasCode(err, esdb.ErrorCodeWrongExpectedVersion) {
		return events.AppendResult{}, &events.ConflictError{Stream: stream, Expected: expected, Actual: conflictActual(err)}
	}
	if err != nil {
		return events.AppendResult{}, fmt.Errorf("events/esdb: append to %s: %w", stream, err)
	}
	res, ok := appendResult(w)
	if ok {
		return res, nil
	}
	var last events.Recorded
	err = s.do(callCtx, func(c *esdb.Client) (err error) {
		last, err = readOne(callCtx, c, stream, res.Revision)
		return err
	})
	if err == nil && last.Position.Commit != noPosition {
		res.Position = last.Position
		return res, nil
	}
	s.log.Warn("EventStoreDB accepted an append but told no position; a read right after it may not see it",
		"stream", stream, "revision", res.Revision, "err", err)
	return res, nil
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

// readOne reads the event at rev.
func readOne(ctx context.Context, c *esdb.Client, stream string, rev uint64) (events.Recorded, error) {
	rs, err := c.ReadStream(ctx, stream, esdb.ReadStreamOptions{Direction: esdb.Backwards, From: esdb.Revision(rev)}, 1)
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
	callCtx, cancel := s.callContext(ctx)
	defer cancel(nil)
	out := []events.Recorded{}
	err := s.do(callCtx, func(c *esdb.Client) error {
		out = out[:0]
		rs, err := c.ReadStream(callCtx, stream, esdb.ReadStreamOptions{From: esdb.Revision(from)}, count)
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
	callCtx, cancel := s.callContext(ctx)
	defer cancel(nil)
	err := s.do(callCtx, func(c *esdb.Client) error {
		page, end = nil, pageEnd{}
		rs, err := c.ReadAll(callCtx, esdb.ReadAllOptions{From: from}, readPage)
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
	callCtx, cancel := s.callContext(ctx)
	defer cancel(nil)
	err := s.do(callCtx, func(c *esdb.Client) error {
		head = events.Position{}
		rs, err := c.ReadAll(callCtx, esdb.ReadAllOptions{From: esdb.End{}, Direction: esdb.Backwards}, readPage)
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
// subscription that filters out system events. A subscription the server
// drops (leader change, outage) ends with an error that is neither
// events.ErrClosed nor the context's: the client cannot resume it, so the
// caller subscribes again from its checkpoint.
func (s *Store) SubscribeAll(ctx context.Context, after events.Position) (events.Subscription, error) {
	subCtx, cancel := s.callContext(ctx)
	opts := esdb.SubscribeToAllOptions{From: esdb.Start{}, Filter: esdb.ExcludeSystemEventsFilter()}
	if !after.IsZero() {
		opts.From = esdb.Position{Commit: after.Commit, Prepare: after.Prepare}
	}
	var inner *esdb.Subscription
	err := s.do(subCtx, func(c *esdb.Client) error {
		var err error
		inner, err = c.SubscribeToAll(subCtx, opts)
		return err
	})
	if err != nil {
		cancel(nil)
		return nil, fmt.Errorf("events/esdb: subscribe after %s: %w", after, err)
	}
	sub := &subscription{
		store:   s,
		inner:   inner,
		ctx:     subCtx,
		cancel:  cancel,
		after:   after,
		items:   make(chan events.Recorded, 64),
		stopped: make(chan struct{}),
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = sub.Close()
		return nil, events.ErrClosed
	}
	s.subs[sub] = struct{}{}
	s.mu.Unlock()
	go sub.pump()
	return sub, nil
}

// Close implements events.Store: it cancels every call and subscription
// (their server-side streams end), then closes the client. It waits (up to
// closeWait) for calls still inside the client, because closing the client
// under a call queued in it makes that call panic; if some stay stuck, the
// connection is left for process exit to reclaim.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	subs := make([]*subscription, 0, len(s.subs))
	for sub := range s.subs {
		subs = append(subs, sub)
	}
	client := s.client
	s.mu.Unlock()

	s.stop(events.ErrClosed)
	for _, sub := range subs {
		_ = sub.Close()
	}
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
	cancel func(cause error)
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
			if isConnectionError(msg.SubscriptionDropped.Error) && s.ctx.Err() == nil {
				_ = s.store.markDown(msg.SubscriptionDropped.Error)
			}
			return
		case msg.EventAppeared == nil:
			continue // checkpoints, caught-up and fell-behind notices
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
		}
	}
}

// why names the end of a subscription: closed (subscription or store), the
// SubscribeAll context, or a server-side drop.
func (s *subscription) why(cause error) error {
	switch {
	case errors.Is(context.Cause(s.ctx), events.ErrClosed) || s.store.isClosed():
		return events.ErrClosed
	case s.ctx.Err() != nil:
		return s.ctx.Err()
	default:
		return fmt.Errorf("events/esdb: subscription dropped by EventStoreDB (subscribe again from the last checkpoint): %w", cause)
	}
}

// Next implements events.Subscription. Once closed it returns ErrClosed
// straight away; after a server-side drop it first hands out what arrived.
func (s *subscription) Next(ctx context.Context) (events.Recorded, error) {
	if s.ctx.Err() != nil {
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
	case <-ctx.Done():
		return events.Recorded{}, ctx.Err()
	}
}

// Close implements events.Subscription: it ends the server-side stream.
func (s *subscription) Close() error {
	s.once.Do(func() {
		s.cancel(events.ErrClosed)
		_ = s.inner.Close()
		s.store.mu.Lock()
		delete(s.store.subs, s)
		s.store.mu.Unlock()
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
