// Package subscribe is the one runtime that follows the event log: a Runner
// reads a source from a checkpoint, batches what is already available, hands
// each batch to its Projector (which commits the checkpoint with the effect),
// owns a lease when several nodes share the work, lets readers wait for a
// position, and reports progress and lag. A Pipeline is its pipelined
// mode, for a client whose effect is written apart from its preparation
// (the webhook creation): it follows a Source (the event store or Kafka)
// and prepares the next batch while the previous one commits. Read models
// and the other log followers are its clients; it knows neither the write
// side nor the read models.
package subscribe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/lease"
)

// Projector turns events into one read model.
type Projector interface {
	// Name identifies the projection's checkpoint.
	Name() string
	// Checkpoint is the position of the last event already applied.
	Checkpoint(ctx context.Context) (events.Position, error)
	// Apply applies a batch in order and records pos (the position of the
	// batch's last event, which may be of a type the projector skipped) in
	// the same transaction, so a replayed batch is applied once.
	Apply(ctx context.Context, batch []events.Envelope, pos events.Position) error
	// Reset empties the read model and its checkpoint, for a rebuild.
	Reset(ctx context.Context) error
}

// Stats is what operators see of a projection: how far it is and how fast it goes.
type Stats struct {
	Name       string          `json:"name"`
	Position   events.Position `json:"position"`
	Applied    uint64          `json:"events_applied"`
	Rate       float64         `json:"events_per_second"`
	CaughtUp   bool            `json:"caught_up"`
	Ready      bool            `json:"ready"` // caught up at least once since start or rebuild
	Rebuilding bool            `json:"rebuilding"`
	LastError  string          `json:"last_error,omitempty"`
	Since      time.Time       `json:"since"`
	// Target is the log's head when the projection (re)started: it is
	// Ready once it has applied that far, so a restarted node never
	// answers reads that miss writes it acknowledged before.
	Target events.Position `json:"target"`
	// Percent is how much of the way to Target is done (100 once ready) and
	// ETASeconds the time left at the pace so far, for operators watching a
	// rebuild or a start. Positions grow with the log, so the share of the
	// log's positions is the share of its events.
	Percent    float64 `json:"percent"`
	ETASeconds float64 `json:"eta_seconds"`
	// Skipped lists events that failed on their own while the store worked:
	// the projection moved past them so that other tenants are not stalled.
	Skipped []SkippedEvent `json:"skipped_events,omitempty"`
	// Owner is the node projecting this read model (its PLATFORM_NODE_ID), as
	// this node last heard; absent for projections every node runs itself.
	Owner string `json:"owner,omitempty"`
}

// SkippedEvent is an event a projection could not apply, for operators.
type SkippedEvent struct {
	Position events.Position `json:"position"`
	ID       string          `json:"event_id"`
	Type     string          `json:"type"`
	Stream   string          `json:"stream"`
	Error    string          `json:"error"`
	At       time.Time       `json:"at"`
}

// checkpointIdle is how long a projector's checkpoint may lag its position
// while the log brings it only events it ignores.
const checkpointIdle = time.Second

// maxSkippedShown bounds Stats.Skipped; the metric counts every one.
const maxSkippedShown = 20

// Runner follows the event store from the projector's checkpoint, batching
// what is already available, and lets readers wait for a position.
type Runner struct {
	store      events.Store
	reg        *events.Registry
	proj       Projector
	log        *slog.Logger
	batchSize  int
	onApplied  func(name string, n int, last events.Recorded)
	onSkipped  func(name string)
	skipPoison bool
	// eager: every batch commits the checkpoint, its events for the
	// projector or not (EagerCheckpoints).
	eager bool
	// stopOnError: Run returns a failure instead of restarting.
	stopOnError bool

	mu      sync.Mutex
	pos     events.Position
	changed chan struct{}
	// heard is closed (and replaced) at every move changed is, except this
	// runner's own applies (see Heard).
	heard   chan struct{}
	stats   Stats
	rebuild chan chan error
	// afterApply sees each batch applied here (AfterApply).
	afterApply atomic.Pointer[func(batch []events.Envelope)]

	// Shared ownership (nil own: the runner always projects).
	own *Ownership
	// gen is the projection's generation as this node knows it (genKnown)
	// and awaitGen the generation a pending rebuild will have: while it is
	// ahead, announcements of the old generation no longer count.
	gen, awaitGen int64
	genKnown      bool
	owning        bool
	wantRebuild   chan struct{}
	announceKick  chan struct{}
	// announceAgain makes the next announcement go out even if nothing
	// changed since the last one (a node asked: Progress.Hello).
	announceAgain atomic.Bool
	// announceWakes counts the announcer's wake-ups (an idle owner's cost).
	announceWakes atomic.Uint64
	// pace is the group of the rebuild this runner is part of, until it
	// is ready or leaves it (see replayGroup); nil when it replays alone.
	pace *replayGroup
	// pacer paces its own subscription with the rebuild's other runners
	// that the one reader leaves out, until it is ready (see paceGroup).
	pacer *paceGroup
}

// NewRunner builds a runner; onApplied (optional) feeds metrics. With a
// nil reg the projector gets the events as stored, undecoded (Envelope's
// Payload and Metadata empty) and of every type, known or not: for
// followers of the bytes themselves, such as the erasure follower.
func NewRunner(store events.Store, reg *events.Registry, p Projector, log *slog.Logger, onApplied func(string, int, events.Recorded)) *Runner {
	return &Runner{
		store: store, reg: reg, proj: p, log: log.With("projection", p.Name()), batchSize: 512,
		onApplied: onApplied, changed: make(chan struct{}), heard: make(chan struct{}), rebuild: make(chan chan error),
		stats:       Stats{Name: p.Name(), Since: time.Now()},
		wantRebuild: make(chan struct{}, 1), announceKick: make(chan struct{}, 1),
	}
}

// defaultPoll is how soon a failed read of the shared progress or a failed
// announcement is tried again.
const defaultPoll = 2 * time.Second

// heartbeatPolls is the default Heartbeat in Polls: announcements and the
// listener's reconnect greeting (Progress.Hello) carry the news, so the
// stored progress is only a safety net for a notification lost without a
// reconnect, and re-reading it every Poll cost two Postgres transactions
// per read model and Poll on an idle node.
const heartbeatPolls = 15

// Own makes the runner project only while it holds the projection's lease
// (see Ownership); call it before Run.
func (r *Runner) Own(o Ownership) {
	if o.TTL <= 0 {
		o.TTL = lease.DefaultTTL
	}
	if o.Poll <= 0 {
		o.Poll = defaultPoll
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = heartbeatPolls * o.Poll
	}
	r.own = &o
}

// SkipPoison makes the runner move past an event that fails on its own
// while the store still accepts writes (the event is reported in Stats, the
// log and through onSkipped), instead of retrying it forever and stalling
// every tenant behind it. Only for projectors whose Apply is one
// transaction: a side-effecting projector must keep retrying.
func (r *Runner) SkipPoison(onSkipped func(name string)) {
	r.skipPoison, r.onSkipped = true, onSkipped
}

// BatchSize caps the events handed to one Apply (default 512); call it
// before Run.
func (r *Runner) BatchSize(n int) {
	if n > 0 {
		r.batchSize = n
	}
}

// EagerCheckpoints makes every batch commit the projector's checkpoint,
// even one holding none of its events, for a projector whose store keeps
// the checkpoint at no cost (in memory): its stored checkpoint then never
// lags its position, so an image taken of it (the embedded snapshot)
// holds the position reached, and a start restored from the image does
// not read again the stretch of others' events it had already passed.
// Call it before Run.
func (r *Runner) EagerCheckpoints() { r.eager = true }

// StopOnError makes Run return the first failure (wrapping its cause)
// instead of restarting after a backoff, for a caller that restarts it
// itself: one that runs it under a lease releases the lease first, so a
// healthy node can take over. Call it before Run.
func (r *Runner) StopOnError() { r.stopOnError = true }

// Name is the projector's name.
func (r *Runner) Name() string { return r.proj.Name() }

// Position is the last position applied.
func (r *Runner) Position() events.Position {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pos
}

// Stats reports progress for operators.
func (r *Runner) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Skipped = append([]SkippedEvent(nil), s.Skipped...)
	s.Position = r.pos
	d := time.Since(s.Since).Seconds()
	if d > 0 {
		s.Rate = float64(s.Applied) / d
	}
	switch {
	case s.Ready || s.Target.Commit == 0:
		s.Percent = 100
	default:
		s.Percent = min(100, 100*float64(s.Position.Commit)/float64(s.Target.Commit))
		if s.Percent > 0 {
			s.ETASeconds = d * (100 - s.Percent) / s.Percent
		}
	}
	return s
}

func (r *Runner) advance(pos events.Position, n int, caughtUp bool) {
	r.mu.Lock()
	// Never backwards: after a restart or a takeover the subscription
	// resumes from the stored checkpoint, which may lag a position already
	// reached through events this projection ignores.
	if r.pos.Less(pos) {
		r.pos = pos
	}
	r.stats.Applied += uint64(n)
	var paced *replayGroup
	var pacer *paceGroup
	if !r.stats.Ready && !pos.Less(r.stats.Target) {
		r.stats.Rebuilding = false
		r.stats.Ready = true
		paced, r.pace = r.pace, nil
		pacer, r.pacer = r.pacer, nil
	}
	r.stats.CaughtUp = caughtUp && r.stats.Ready
	r.stats.LastError = ""
	r.moved(true)
	r.mu.Unlock()
	if paced != nil {
		paced.leave(r) // ready: it reads on alone
	}
	if pacer != nil {
		pacer.leave(r) // ready: the others no longer wait for it
	}
	r.kickAnnounce()
}

// moved closes changed and, unless the move is this runner's own apply
// (own), heard. The caller holds r.mu.
func (r *Runner) moved(own bool) {
	close(r.changed)
	r.changed = make(chan struct{})
	if !own {
		close(r.heard)
		r.heard = make(chan struct{})
	}
}

// WaitFor blocks until the projection has applied pos, or ctx ends.
func (r *Runner) WaitFor(ctx context.Context, pos events.Position) error {
	for {
		r.mu.Lock()
		done := !r.pos.Less(pos)
		ch := r.changed
		r.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("projection %s did not reach %s: %w", r.Name(), pos, ctx.Err())
		}
	}
}

// Rebuild empties the read model and replays the whole log into it; it
// returns once the reset is done, and Stats shows the replay's progress.
func (r *Runner) Rebuild(ctx context.Context) error {
	if r.own != nil && r.own.Shared != nil {
		return r.rebuildShared(ctx)
	}
	done := make(chan error, 1)
	select {
	case r.rebuild <- done:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run follows the log until ctx ends, restarting after failures with
// backoff. Under Ownership it projects only while it holds the lease, and
// follows the owner's progress otherwise.
func (r *Runner) Run(ctx context.Context) error {
	if r.own != nil {
		return r.runShared(ctx)
	}
	return r.project(ctx)
}

// project follows the log and applies it until ctx ends (or, under a
// lease, until a write finds the lease lost).
func (r *Runner) project(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for {
		err := r.follow(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, lease.ErrLost) {
			return err
		}
		if errors.Is(err, errLeftGroup) {
			continue // it reads on alone, from its checkpoint
		}
		var req rebuildRequest
		if errors.As(err, &req) {
			rerr := r.reset(ctx)
			if req.done != nil {
				req.done <- rerr
			} else if rerr != nil {
				r.log.Error("rebuild failed; retrying", "err", rerr)
			}
			backoff = 100 * time.Millisecond
			continue
		}
		r.mu.Lock()
		r.stats.LastError = err.Error()
		r.mu.Unlock()
		if r.stopOnError {
			return err
		}
		r.log.Error("projection stopped; restarting", "err", err, "backoff", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

type rebuildRequest struct{ done chan error }

func (rebuildRequest) Error() string { return "rebuild requested" }

func (r *Runner) reset(ctx context.Context) error {
	if err := r.proj.Reset(ctx); err != nil {
		return fmt.Errorf("reset %s: %w", r.Name(), err)
	}
	r.mu.Lock()
	r.pos = events.Position{}
	r.stats = Stats{Name: r.Name(), Since: time.Now(), Rebuilding: true, Owner: r.stats.Owner}
	r.moved(false)
	r.mu.Unlock()
	r.kickAnnounce()
	r.log.Info("projection reset; replaying the log")
	return nil
}

// follow is one subscription from the projector's checkpoint. It reads as
// its steps: resume from the checkpoint, open the log after it, then, batch
// by batch, report being caught up when the log's head says so, wait for
// the next event (or a rebuild request), read what is already buffered
// behind it, and apply that batch with its checkpoint. It returns on the
// first failure, a rebuild request or ctx's end; project restarts it.
func (r *Runner) follow(ctx context.Context) error {
	// A member of a rebuild's group leaves it whenever this follow ends:
	// the next one reads alone, from its checkpoint.
	g := r.grouped()
	if g != nil {
		defer r.leaveGroup(g)
	}
	cp, head, err := r.resume(ctx)
	if err != nil {
		return err
	}
	if rest, err := r.store.ReadAll(ctx, cp, 1); err == nil && len(rest) == 0 {
		r.advance(cp, 0, true) // nothing to replay: caught up already
	}
	fl := &following{atEnd: true, last: cp, saved: time.Now(), head: head, buf: make([]events.Envelope, 0, r.batchSize)}
	var feed <-chan fed
	if g != nil {
		if feed = g.join(r, cp.Commit); feed != nil && g.sealed != nil {
			fl.open = g.sealed.OpenReplayed
		}
	}
	// A subscription that can be polled is read here, between waits that
	// also watch for rebuilds; other subscriptions read through pump's
	// goroutine, and a rebuild's group through its reader.
	var p events.Poller
	if feed == nil {
		subCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		sub, err := r.subscribe(subCtx, cp, head)
		if err != nil {
			return fmt.Errorf("subscribe: %w", err)
		}
		defer sub.Close()
		pacer := r.pacing()
		if pacer != nil {
			pacer.join(r, cp.Commit)
			defer pacer.leave(r)
		}
		if polled, ok := sub.(events.Poller); ok && pacer == nil {
			p = polled
		} else {
			feed = r.pump(subCtx, sub, pacer, cp.Commit)
		}
	}
	take := func() (fed, bool) {
		select {
		case it, ok := <-feed:
			if !ok {
				return fed{err: errLeftGroup}, true
			}
			return it, true
		default:
			return fed{}, false
		}
	}
	if p != nil {
		take = func() (fed, bool) {
			rec, wake, err := p.TryNext(ctx)
			return fed{rec: rec, err: err}, wake == nil
		}
	}
	for {
		r.reportCaughtUp(ctx, feed, p, fl)
		first, ok, err := r.next(ctx, feed, p)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		pg, err := r.readPage(ctx, first, take, fl)
		if err != nil {
			return err
		}
		fl.buf = pg.envs
		if err := r.commit(ctx, pg, fl); err != nil {
			return err
		}
	}
}

// following is what one follow remembers between batches.
type following struct {
	// atEnd is whether the last batch could have been the log's end. A full
	// batch cannot say; when nothing more is buffered, the log's head does,
	// so a replay whose last batch happens to be full still reports caught
	// up instead of waiting for an event that may never come.
	atEnd bool
	// last is the position of the last event read.
	last events.Position
	// saved is when the projector last committed a checkpoint.
	saved time.Time
	// head is the log's end when this follow began, and replayed whether
	// a batch has reached it since (see commit).
	head     events.Position
	replayed bool
	// buf is the batch's storage, reused from batch to batch.
	buf []events.Envelope
	// open, when set, opens the projector's events of a batch in place:
	// a rebuild's group hands them sealed (sealedStore). read and own are
	// its batch's storage.
	open func(ctx context.Context, page []events.Recorded) error
	read []fed
	own  []events.Recorded
}

// fed is one read of the subscription: an event, or why it ended. From
// a rebuild's group (others > 0) it is others events of types the
// projector does not handle, rec the last of them.
type fed struct {
	rec    events.Recorded
	err    error
	others int
}

// page is one batch as readPage took it from the feed: the events for
// the projector, how many were read in all (the projector's and the
// others'), the last one read, whether it was short (the feed held no more:
// caught up), and a subscription failure met after it, which is returned
// once the page is applied.
type page struct {
	envs     []events.Envelope
	n        int
	last     events.Recorded
	caughtUp bool
	pending  error
}

// resume reads where the projector stands and the log's head (the target
// of a start or a rebuild), and moves the runner's position up to the
// checkpoint.
func (r *Runner) resume(ctx context.Context) (cp, head events.Position, err error) {
	if err := r.syncGeneration(ctx); err != nil {
		return events.Position{}, events.Position{}, err
	}
	cp, err = r.proj.Checkpoint(ctx)
	if err != nil {
		return events.Position{}, events.Position{}, fmt.Errorf("checkpoint: %w", err)
	}
	head, err = r.store.Head(ctx)
	if err != nil {
		return events.Position{}, events.Position{}, fmt.Errorf("head of the log: %w", err)
	}
	r.mu.Lock()
	if r.pos.Less(cp) {
		r.pos = cp
	}
	if !r.stats.Ready {
		r.stats.Target = head
	}
	r.mu.Unlock()
	r.kickAnnounce()
	return cp, head, nil
}

// rebuilding is whether the runner replays the log after a rebuild's
// reset and is not ready yet.
func (r *Runner) rebuilding() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats.Rebuilding
}

// grouped is the rebuild group this runner replays with, if it is one's
// member and not ready yet.
func (r *Runner) grouped() *replayGroup {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stats.Ready {
		return nil
	}
	return r.pace
}

// pacing is the pace of the rebuild this runner replays in through its own
// subscription, if it has one and is not ready yet.
func (r *Runner) pacing() *paceGroup {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stats.Ready {
		return nil
	}
	return r.pacer
}

// leaveGroup takes the runner out of g, which no longer feeds it.
func (r *Runner) leaveGroup(g *replayGroup) {
	r.mu.Lock()
	if r.pace == g {
		r.pace = nil
	}
	r.mu.Unlock()
	g.leave(r)
}

// pump reads the subscription ahead into a buffer of one batch, so that
// readPage can take what is already available without waiting. Under a
// rebuild's pace (g not nil) it reports its position every paceStep events
// and waits there while it is too far ahead of the slowest member. The
// channel closes after the subscription's first error or when ctx ends.
func (r *Runner) pump(ctx context.Context, sub events.Subscription, g *paceGroup, from uint64) <-chan fed {
	feed := make(chan fed, r.batchSize)
	go func() {
		defer close(feed)
		at, mark := from, from
		for {
			if g != nil && at >= mark {
				if g.read(ctx, r, at) != nil {
					return // ctx ended
				}
				mark = at + paceStep
			}
			rec, err := sub.Next(ctx)
			at = rec.Position.Commit
			// Every event of the log passes here for every follower: a
			// send that does not wait is tried first, without the
			// two-case select's cost (a tenth of the follower's own CPU
			// in a rebuild); a full feed waits for room or the end.
			select {
			case feed <- fed{rec: rec, err: err}:
			default:
				select {
				case feed <- fed{rec: rec, err: err}:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return feed
}

// reportCaughtUp marks the runner caught up when the last batch was full
// but nothing more is buffered (in feed, or in p when it is polled) and
// the log's head is no further.
func (r *Runner) reportCaughtUp(ctx context.Context, feed <-chan fed, p events.Poller, fl *following) {
	if fl.atEnd || len(feed) > 0 {
		return
	}
	if b, ok := p.(interface{ Buffered() []events.Recorded }); ok && len(b.Buffered()) > 0 {
		return
	}
	if head, err := r.store.Head(ctx); err == nil && !fl.last.Less(head) {
		r.advance(fl.last, 0, true)
		fl.atEnd = true
	}
}

// next waits for the next event of the log, from feed or, when p is not
// nil, from p. It returns a rebuildRequest when one is asked for here or
// (under a shared lease) announced and still pending in storage; ok is
// false when an announcement turned out to be stale or p may have an event
// now, and the caller looks again.
func (r *Runner) next(ctx context.Context, feed <-chan fed, p events.Poller) (first fed, ok bool, err error) {
	var wake <-chan struct{}
	if p != nil {
		// Asked-for rebuilds first: on a busy log p always has an event.
		select {
		case done := <-r.rebuild:
			return fed{}, false, rebuildRequest{done}
		case <-r.wantRebuild:
			return r.wanted(ctx)
		default:
		}
		first.rec, wake, first.err = p.TryNext(ctx)
		if wake == nil {
			if first.err != nil {
				return fed{}, false, fmt.Errorf("subscription: %w", first.err)
			}
			return first, true, nil
		}
	}
	select {
	case it, ok := <-feed:
		if !ok {
			return fed{}, false, errLeftGroup
		}
		first = it
	case <-wake:
		return fed{}, false, nil
	case done := <-r.rebuild:
		return fed{}, false, rebuildRequest{done}
	case <-r.wantRebuild:
		return r.wanted(ctx)
	case <-ctx.Done():
		return fed{}, false, ctx.Err()
	}
	if first.err != nil {
		return fed{}, false, fmt.Errorf("subscription: %w", first.err)
	}
	return first, true, nil
}

// wanted answers an announced rebuild for next. Announcements repeat:
// rebuild only what storage still asks for.
func (r *Runner) wanted(ctx context.Context) (fed, bool, error) {
	pending, err := r.rebuildPending(ctx)
	if err != nil {
		return fed{}, false, err
	}
	if pending {
		return fed{}, false, rebuildRequest{}
	}
	return fed{}, false, nil
}

// readPage decodes first and whatever take has at once behind it, up to
// the batch size, into fl.buf, after opening the projector's events when
// fl says they come sealed. A full batch is not caught up: more may be
// waiting.
func (r *Runner) readPage(ctx context.Context, first fed, take func() (fed, bool), fl *following) (page, error) {
	b := page{envs: fl.buf[:0], caughtUp: true}
	if fl.open != nil {
		var err error
		if first, take, err = r.openPage(ctx, first, take, fl); err != nil {
			return b, err
		}
	}
	if err := r.addToPage(&b, first); err != nil {
		return b, err
	}
	for b.n < r.batchSize {
		it, ok := take()
		if !ok {
			return b, nil
		}
		if it.err != nil {
			b.pending = it.err
			return b, nil
		}
		if err := r.addToPage(&b, it); err != nil {
			return b, err
		}
	}
	b.caughtUp = false
	return b, nil
}

// openPage takes from take what readPage would take after first, opens
// the projector's events among them together (fl.open), and hands them to
// readPage in the same order: first, then take's replacement.
func (r *Runner) openPage(ctx context.Context, first fed, take func() (fed, bool), fl *following) (fed, func() (fed, bool), error) {
	read, n := append(fl.read[:0], first), first.count()
	for n < r.batchSize {
		it, ok := take()
		if !ok {
			break
		}
		read, n = append(read, it), n+it.count()
		if it.err != nil {
			break
		}
	}
	own := fl.own[:0]
	for _, it := range read {
		if it.others == 0 && it.err == nil {
			own = append(own, it.rec)
		}
	}
	fl.read, fl.own = read, own
	if err := fl.open(ctx, own); err != nil {
		return fed{}, nil, err
	}
	for i := range read {
		if read[i].others == 0 && read[i].err == nil {
			read[i].rec, own = own[0], own[1:]
		}
	}
	next := 1
	return read[0], func() (fed, bool) {
		if next == len(read) {
			return fed{}, false
		}
		next++
		return read[next-1], true
	}, nil
}

// count is how many events of the log it stands for.
func (it fed) count() int { return max(it.others, 1) }

// addToPage counts it in b and decodes its event when it is the projector's.
func (r *Runner) addToPage(b *page, it fed) error {
	b.last = it.rec
	if it.others > 0 {
		b.n += it.others
		return nil
	}
	b.n++
	env, ok, err := r.decode(it.rec)
	if err != nil {
		return err
	}
	if ok {
		b.envs = append(b.envs, env)
	}
	return nil
}

// commit applies a batch and its checkpoint in one Apply, then moves the
// runner's position and reports the batch. A batch with nothing for this
// projector moves its position in memory only; the checkpoint follows with
// the next batch that has work, after checkpointIdle, or with the batch
// that reaches the log's end as of the follow's start. A restart then
// re-reads a few events the projector ignores anyway, instead of every read
// model committing a transaction for every batch of the others' events
// (unless the checkpoint costs nothing: EagerCheckpoints).
func (r *Runner) commit(ctx context.Context, b page, fl *following) error {
	pos := b.last.Position
	fl.atEnd, fl.last = b.caughtUp, pos
	// The batch that ends the replay of the log as it was at the start
	// commits too: a replay of others' events that ended within
	// checkpointIdle and an idle log after it would otherwise leave the
	// checkpoint at the start, and every restart would read it all again.
	endOfReplay := !fl.replayed && !pos.Less(fl.head)
	if endOfReplay {
		fl.replayed = true
	}
	if r.eager || len(b.envs) > 0 || time.Since(fl.saved) >= checkpointIdle || endOfReplay {
		fl.saved = time.Now()
		if err := r.apply(ctx, b.envs, pos); err != nil {
			return err
		}
		if f := r.afterApply.Load(); f != nil && len(b.envs) > 0 {
			(*f)(b.envs)
		}
	}
	r.advance(pos, b.n, b.caughtUp)
	if r.onApplied != nil {
		r.onApplied(r.Name(), b.n, b.last)
	}
	if b.pending != nil {
		return fmt.Errorf("subscription: %w", b.pending)
	}
	return nil
}

// apply hands the batch to the projector in one transaction, traced. When
// poison events may be skipped, a batch that fails for its own content is
// applied again one event at a time (applyEach).
func (r *Runner) apply(ctx context.Context, envs []events.Envelope, pos events.Position) error {
	actx, span := startProjection(ctx, r.Name(), envs)
	err := r.proj.Apply(actx, envs, pos)
	endBatch(span, pos, err)
	if err == nil {
		return nil
	}
	if !r.skipPoison || ctx.Err() != nil || errors.Is(err, lease.ErrLost) || errors.Is(err, ErrCheckpointBackwards) {
		return fmt.Errorf("apply up to %s: %w", pos, err)
	}
	if err := r.applyEach(ctx, envs, pos); err != nil {
		return fmt.Errorf("apply up to %s: %w", pos, err)
	}
	return nil
}

// applyEach applies a batch that failed as a whole one event at a time. An
// event that fails twice while the store accepts the checkpoint alone (so
// the store itself is working) is skipped and reported; any other failure
// is returned, and the runner retries the batch later.
func (r *Runner) applyEach(ctx context.Context, batch []events.Envelope, pos events.Position) error {
	prev := r.Position()
	for _, env := range batch {
		err := r.proj.Apply(ctx, []events.Envelope{env}, env.Position)
		if err == nil {
			prev = env.Position
			continue
		}
		if perr := r.proj.Apply(ctx, nil, prev); perr != nil {
			return fmt.Errorf("%w (the store refuses a bare checkpoint too: %v)", err, perr)
		}
		if err = r.proj.Apply(ctx, []events.Envelope{env}, env.Position); err == nil {
			prev = env.Position
			continue
		}
		if perr := r.proj.Apply(ctx, nil, env.Position); perr != nil {
			return fmt.Errorf("%w (and skipping it failed: %v)", err, perr)
		}
		r.skipped(env, err)
		prev = env.Position
	}
	return r.proj.Apply(ctx, nil, pos)
}

func (r *Runner) skipped(env events.Envelope, err error) {
	r.log.Error("projection skipped an event it cannot apply; rebuild after the fix to apply it",
		"position", env.Position.String(), "event_id", env.ID, "type", env.Type, "stream", env.Stream, "err", err)
	r.mu.Lock()
	if len(r.stats.Skipped) < maxSkippedShown {
		r.stats.Skipped = append(r.stats.Skipped, SkippedEvent{
			Position: env.Position, ID: env.ID, Type: env.Type, Stream: env.Stream, Error: err.Error(), At: time.Now().UTC(),
		})
	}
	r.mu.Unlock()
	if r.onSkipped != nil {
		r.onSkipped(r.Name())
	}
}

// filteredStore is a store that can skip opening (decrypting) the events
// a follower ignores (privacy.Store).
type filteredStore interface {
	SubscribeAllFor(ctx context.Context, after events.Position, wants func(eventType string) bool) (events.Subscription, error)
}

// replayingStore is a filteredStore that can open a stretch the follower
// replays on its own without keeping what it opened (privacy.Store).
type replayingStore interface {
	SubscribeReplay(ctx context.Context, after, through events.Position, wants func(eventType string) bool) (events.Subscription, error)
}

// subscribe follows the log after cp; a projector that names its event
// types gets the others unopened, since decode skips them anyway. A
// rebuild's replay up to head (the log's end as the follow began) is
// opened without the store's cache of opened events: the node's live
// followers read that stretch long ago.
func (r *Runner) subscribe(ctx context.Context, cp, head events.Position) (events.Subscription, error) {
	if f, ok := r.proj.(interface{ Handles(string) bool }); ok {
		var through events.Position
		if r.rebuilding() {
			through = head
		}
		return subscribeFor(ctx, r.store, cp, through, f.Handles)
	}
	return r.store.SubscribeAll(ctx, cp)
}

// subscribeFor follows store after cp for a follower of the types wants
// accepts, opening the stretch up to through (none when zero) as a replay.
func subscribeFor(ctx context.Context, store events.Store, cp, through events.Position, wants func(string) bool) (events.Subscription, error) {
	if rs, ok := store.(replayingStore); ok && !through.IsZero() {
		return rs.SubscribeReplay(ctx, cp, through, wants)
	}
	if fs, ok := store.(filteredStore); ok {
		return fs.SubscribeAllFor(ctx, cp, wants)
	}
	return store.SubscribeAll(ctx, cp)
}

// decode skips events the projector does not handle (a read model projector
// names its types, so it decodes only its own), and event types this build does not know (written by a newer
// version during a rolling deploy) rather than stopping the projection.
func (r *Runner) decode(rec events.Recorded) (events.Envelope, bool, error) {
	if f, ok := r.proj.(interface{ Handles(string) bool }); ok && !f.Handles(rec.Type) {
		return events.Envelope{}, false, nil // not this read model's: its position still counts
	}
	if r.reg == nil {
		return events.Envelope{Recorded: rec}, true, nil
	}
	if !r.reg.Known(rec.Type) {
		r.log.Warn("skipping unknown event type", "type", rec.Type, "id", rec.ID)
		return events.Envelope{}, false, nil
	}
	env, err := r.reg.Decode(rec)
	if err != nil {
		return events.Envelope{}, false, err
	}
	return env, true, nil
}

// Changed returns a channel closed the next time the projection advances,
// so a loop can wait for new read-model state without polling.
func (r *Runner) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// Heard is closed at the next move of the projection that this runner did
// not make by applying a batch itself: progress learnt from the owner on
// another node (announced or stored), a new generation, a reset, this node
// gaining or losing the projection. A watcher that reads the batches
// applied here (AfterApply) learns the rest of the moves from Heard.
func (r *Runner) Heard() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.heard
}

// AfterApply has f see every batch of events this runner applies, once
// committed and before its position moves, replacing the f set before. The
// projection waits for f, which must not keep the batch (its storage is
// reused).
func (r *Runner) AfterApply(f func(batch []events.Envelope)) {
	r.afterApply.Store(&f)
}

// WaitReady blocks until the projection has caught up with the log once.
func (r *Runner) WaitReady(ctx context.Context) error {
	for {
		ch := r.Changed()
		if r.Stats().Ready {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// RunnerSet is a node's projections by name, for the admin rebuild route.
type RunnerSet []*Runner

// AllReadModels names every read model at once in a rebuild.
const AllReadModels = "read_models"

// Rebuild resets the named projection, or every read model for
// AllReadModels, and starts the replay; found is false for an unknown name.
// progress lists the rebuilt projections' Stats. Several projections
// rebuilt at once on this node replay through one reader (replayGroup);
// those it leaves out replay paced together (paceGroup).
func (s RunnerSet) Rebuild(ctx context.Context, name string) (progress any, found bool, err error) {
	var chosen []*Runner
	for _, run := range s {
		_, readModel := run.proj.(interface{ Handles(string) bool })
		if run.Name() == name || (name == AllReadModels && readModel) {
			chosen = append(chosen, run)
		}
	}
	if len(chosen) == 0 {
		return nil, false, nil
	}
	var g *replayGroup
	group := groupable(chosen)
	if len(group) > 1 {
		g = newReplayGroup(group[0].store, group)
		defer g.gatherDone()
		for _, run := range group {
			run.mu.Lock()
			run.pace = g
			run.mu.Unlock()
		}
	} else {
		group = nil
	}
	// The others read through subscriptions of their own, paced together.
	var alone []*Runner
	for _, run := range chosen {
		if !slices.Contains(group, run) {
			alone = append(alone, run)
		}
	}
	if len(alone) > 1 {
		p := newPaceGroup()
		defer p.gatherDone()
		for _, run := range alone {
			run.mu.Lock()
			run.pacer = p
			run.mu.Unlock()
		}
	}
	stats := make([]Stats, 0, len(chosen))
	for i, run := range chosen {
		if err := run.Rebuild(ctx); err != nil {
			if g != nil {
				// The runners not reset do not join: the group waits
				// only for the others.
				for _, rest := range chosen[i:] {
					rest.leaveGroup(g)
				}
			}
			return nil, true, err
		}
		stats = append(stats, run.Stats())
	}
	return map[string]any{"projections": stats}, true, nil
}

// groupable is the runners of chosen that one reader can feed: those that
// follow the first one's store and reset on this node (a runner whose
// rebuild goes through shared storage resets on the projection's owner).
func groupable(chosen []*Runner) []*Runner {
	var group []*Runner
	for _, run := range chosen {
		if run.own != nil && run.own.Shared != nil {
			continue
		}
		if len(group) > 0 && run.store != group[0].store {
			continue
		}
		group = append(group, run)
	}
	return group
}

// WaitFor blocks until every runner of the set has applied pos.
func (s RunnerSet) WaitFor(ctx context.Context, pos events.Position) error {
	for _, run := range s {
		if err := run.WaitFor(ctx, pos); err != nil {
			return err
		}
	}
	return nil
}
