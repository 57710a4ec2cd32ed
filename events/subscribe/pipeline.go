package subscribe

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/lease"
)

// Source is what a Pipeline follows: the event store from a checkpoint
// (StoreSource) or the partitions of a Kafka topic (webhooks/kafka). Opening it
// resumes after what was last committed through it.
type Source interface {
	Open(ctx context.Context) (Feed, error)
}

// Feed is an open Source.
type Feed interface {
	// Next blocks until events arrive and returns them with what arrived
	// meanwhile, as one batch in a slice of its own (the caller may keep
	// it), in order (per stream for a partitioned source), with the mark
	// that counts them as processed. It returns no events once the source
	// or ctx ended.
	Next(ctx context.Context) ([]events.Recorded, Mark, error)
	// Commit records that the batches of marks, given in order, have their
	// effects committed: a restart resumes after them. It is called in
	// batch order, one call at a time, and only for committed batches.
	Commit(ctx context.Context, marks []Mark) error
	// Close stops reading; what was committed stays committed. It is
	// called once, after the last Commit.
	Close() error
}

// Mark is what a Source needs to count a batch as processed: a log
// position for the event store, partition offsets for Kafka.
type Mark any

// Pipeline follows a Source in two overlapping stages: Prepare runs on
// each batch as it arrives (the work that only reads: decode, wait for
// read models, plan, encode) while earlier batches' Commit (the effect,
// written) is in flight, and every batch prepared while a commit ran is
// committed in the next call of Commit, together, in order. A batch then
// waits for at most one commit ahead of its own, not for the previous
// batch's preparation and commit.
//
// The source's checkpoint (or offsets) advances only over committed
// batches, in order, after their Commit returned: when Prepare or Commit
// fails, the pipeline stops with that error once the commit in flight
// ended, and no batch after a failed commit is committed, so a restart
// redoes exactly the uncommitted batches (Commit must be idempotent). When
// ctx ends (or, under a lease, the lease is lost) the pipeline stops
// without error and the staged batches are redone after the restart.
type Pipeline[P any] struct {
	// Name names the pipeline in errors, logs and its lease.
	Name    string
	Source  Source
	Prepare func(context.Context, []events.Recorded) (P, error)
	Commit  func(context.Context, []P) error
	Log     *slog.Logger
	// Leases, when set, makes the pipeline run only while this node (Holder)
	// holds the lease named Lease for TTL (default lease.DefaultTTL): nodes
	// sharing a source take turns, and one takes over within the TTL when
	// the holder dies. A lost lease stops the pipeline as a stop does, and
	// it campaigns again.
	Leases lease.Store
	Lease  string
	Holder string
	TTL    time.Duration
}

// Run follows the source until ctx ends, or returns the first failure for
// the caller to restart it after a backoff (under a lease, released first,
// so a healthy node can take over).
func (p Pipeline[P]) Run(ctx context.Context) error {
	if p.Leases == nil {
		return p.runOnce(ctx)
	}
	log := p.logger().With("lease", p.Lease)
	ttl := p.TTL
	if ttl <= 0 {
		ttl = lease.DefaultTTL
	}
	return lease.RunHeld(ctx, p.Leases, p.Lease, p.Holder, ttl, log, p.runOnce)
}

func (p Pipeline[P]) logger() *slog.Logger {
	if p.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Log.With("pipeline", p.Name)
}

// runOnce opens the source and runs the stages until ctx ends or one fails.
func (p Pipeline[P]) runOnce(ctx context.Context) error {
	feed, err := p.Source.Open(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%s: open the source: %w", p.Name, err)
	}
	err = p.stages(ctx, feed)
	if cerr := feed.Close(); cerr != nil && err == nil && ctx.Err() == nil {
		err = fmt.Errorf("%s: close the source: %w", p.Name, cerr)
	}
	return err
}

// maxStaged bounds the prepared batches waiting for a commit, and how many
// one commit takes together.
const maxStaged = 64

type staged[P any] struct {
	p    P
	mark Mark
}

// stages runs the preparation here and the commits in a goroutine of their
// own, until ctx ends or a stage fails.
func (p Pipeline[P]) stages(parent context.Context, feed Feed) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	// queue is bounded so that a slow commit holds the preparation back
	// (and the source behind it) rather than memory growing.
	queue := make(chan staged[P], maxStaged)
	commitErr := make(chan error, 1)
	committerDone := make(chan struct{})
	go func() {
		defer close(committerDone)
		if err := p.commitAll(ctx, feed, queue); err != nil {
			commitErr <- err
			cancel() // stops the preparation; nothing after this batch commits
		}
	}()
	err := p.prepareAll(ctx, feed, queue)
	<-committerDone
	if parent.Err() != nil {
		return nil // stopping: what was not committed is redone after the restart
	}
	select {
	case cerr := <-commitErr:
		return cerr // the first failure; a prepare error after it is its echo
	default:
		return err
	}
}

// prepareAll prepares batches as they arrive and stages them, until the
// source or ctx ends or a preparation fails; it closes queue.
func (p Pipeline[P]) prepareAll(ctx context.Context, feed Feed, queue chan<- staged[P]) error {
	defer close(queue)
	for {
		batch, mark, err := feed.Next(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		if len(batch) == 0 {
			return nil
		}
		pctx, span := startStage(ctx, p.Name, "prepare", len(batch), batch)
		prepared, err := p.Prepare(pctx, batch)
		endBatch(span, events.Position{}, err)
		if err != nil {
			return fmt.Errorf("%s: prepare %d events from %s: %w", p.Name, len(batch), batch[0].ID, err)
		}
		select {
		case queue <- staged[P]{prepared, mark}:
		case <-ctx.Done():
			return nil
		}
	}
}

// commitAll commits what is staged, every batch staged meanwhile in one
// call, and then tells the feed their marks, until queue is closed or a
// commit fails.
func (p Pipeline[P]) commitAll(ctx context.Context, feed Feed, queue <-chan staged[P]) error {
	var ps []P
	var marks []Mark
	for first := range queue {
		ps, marks = append(ps[:0], first.p), append(marks[:0], first.mark)
	more:
		for len(ps) < maxStaged {
			select {
			case b, ok := <-queue:
				if !ok {
					break more
				}
				ps, marks = append(ps, b.p), append(marks, b.mark)
			default:
				break more
			}
		}
		cctx, span := startStage(ctx, p.Name, "commit", len(ps), nil)
		err := p.Commit(cctx, ps)
		endBatch(span, events.Position{}, err)
		if err != nil {
			return fmt.Errorf("%s: commit %d batches: %w", p.Name, len(ps), err)
		}
		if err := feed.Commit(ctx, marks); err != nil {
			return fmt.Errorf("%s: record the committed batches: %w", p.Name, err)
		}
		clear(ps) // keeps no batch alive past its commit
	}
	return nil
}

// Checkpoints keeps the position up to which a StoreSource's pipeline has
// committed every batch (relay.Checkpoints fits: a file or Postgres).
type Checkpoints interface {
	Load(ctx context.Context) (events.Position, error)
	// Save must never move the checkpoint backwards.
	Save(ctx context.Context, pos events.Position) error
}

// StoreSource is the event store as a pipeline's Source: it follows the log
// past its checkpoint, in log order.
type StoreSource struct {
	Store events.Store
	// From is where to resume when Checkpoints holds nothing yet.
	From func(ctx context.Context) (events.Position, error)
	// Checkpoints, when set, keeps the position the pipeline has committed:
	// every event at or before it has its effect recorded. A restart
	// resumes from it.
	Checkpoints Checkpoints
	// Batch bounds how many events one batch holds (default 512).
	Batch int
	// Wants, when set, selects the event types to follow: a store that
	// filters by type reads past the others without handing them over.
	Wants func(eventType string) bool
}

// checkpointEvery spaces a StoreSource's checkpoint saves: one file sync
// per batch cost the creating node a seventh of its CPU under load
// (profile of BenchmarkWebhooksEmbedded). A crash redoes at most this much
// idempotent work.
const checkpointEvery = 200 * time.Millisecond

// Open subscribes to the log after the checkpoint (or From).
func (s StoreSource) Open(ctx context.Context) (Feed, error) {
	from, err := s.resume(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var sub events.Subscription
	if s.Wants != nil {
		sub, err = events.SubscribeAllFor(ctx, s.Store, from, s.Wants)
	} else {
		sub, err = s.Store.SubscribeAll(ctx, from)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	size := s.Batch
	if size <= 0 {
		size = 512
	}
	f := &storeFeed{src: s, ctx: ctx, cancel: cancel, sub: sub, size: size,
		// A batch gathers in scratch and is handed on in a slice of its own
		// size: most batches hold a few events, and one of Batch's capacity
		// per batch was most of the bytes the creation allocated per event.
		scratch: make([]events.Recorded, 0, size),
		saved:   make(chan events.Position, 1), saverDone: make(chan struct{})}
	f.feed, f.subErr = follow(ctx, sub, size)
	go f.saveCheckpoints()
	return f, nil
}

// resume is the checkpoint when there is one, else From.
func (s StoreSource) resume(ctx context.Context) (events.Position, error) {
	if s.Checkpoints != nil {
		pos, err := s.Checkpoints.Load(ctx)
		if err != nil {
			return events.Position{}, fmt.Errorf("checkpoint: %w", err)
		}
		if !pos.IsZero() {
			return pos, nil
		}
	}
	if s.From == nil {
		return events.Position{}, nil
	}
	return s.From(ctx)
}

type storeFeed struct {
	src     StoreSource
	ctx     context.Context
	cancel  context.CancelFunc
	sub     events.Subscription
	size    int
	feed    <-chan events.Recorded
	subErr  <-chan error
	scratch []events.Recorded

	// saved hands the newest committed position to the saver;
	// lastCommitted is saved once more at Close, since a stop that lands
	// while the last batch commits can end the saver before it gets it.
	saved         chan events.Position
	saverDone     chan struct{}
	lastCommitted events.Position
}

func (f *storeFeed) Next(ctx context.Context) ([]events.Recorded, Mark, error) {
	var rec events.Recorded
	var ok bool
	select {
	case rec, ok = <-f.feed:
	case <-ctx.Done():
		return nil, nil, nil
	}
	if !ok {
		select {
		case err := <-f.subErr:
			return nil, nil, fmt.Errorf("subscription: %w", err)
		default:
			return nil, nil, nil
		}
	}
	f.scratch = fillBatch(append(f.scratch[:0], rec), f.feed, f.size)
	batch := make([]events.Recorded, len(f.scratch))
	copy(batch, f.scratch)
	clear(f.scratch) // keeps no event's bytes alive past its batch
	return batch, batch[len(batch)-1].Position, nil
}

func (f *storeFeed) Commit(_ context.Context, marks []Mark) error {
	pos, ok := marks[len(marks)-1].(events.Position)
	if !ok {
		return fmt.Errorf("a store source's mark is a position, not %T", marks[len(marks)-1])
	}
	f.lastCommitted = pos
	// Keep only the newest committed position for the saver.
	select {
	case <-f.saved:
	default:
	}
	f.saved <- pos
	return nil
}

func (f *storeFeed) Close() error {
	f.cancel()
	<-f.saverDone
	f.save(f.lastCommitted)
	return f.sub.Close()
}

// save saves pos (when set) past the feed's end, so a clean stop resumes
// exactly where it ended; saving a position twice is harmless.
func (f *storeFeed) save(pos events.Position) {
	if f.src.Checkpoints == nil || pos.IsZero() {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(f.ctx), 5*time.Second)
	defer cancel()
	_ = f.src.Checkpoints.Save(sctx, pos) // a failed save only means more idempotent work after a restart
}

// saveCheckpoints saves the newest committed position, at most every
// checkpointEvery, until the feed closes.
func (f *storeFeed) saveCheckpoints() {
	defer close(f.saverDone)
	if f.src.Checkpoints == nil {
		return
	}
	for {
		select {
		case pos := <-f.saved:
			f.save(pos)
			select {
			case <-time.After(checkpointEvery):
			case <-f.ctx.Done():
			}
		case <-f.ctx.Done():
			return
		}
	}
}

// fillBatch appends to batch what feed already holds, without waiting, up
// to size events: a batch is whatever arrived while the previous one was
// handled.
func fillBatch(batch []events.Recorded, feed <-chan events.Recorded, size int) []events.Recorded {
	for len(batch) < size {
		select {
		case rec, ok := <-feed:
			if !ok {
				return batch
			}
			batch = append(batch, rec)
		default:
			return batch
		}
	}
	return batch
}

// follow feeds the subscription's events into a channel of size until ctx
// ends; its error, unless ctx ended, is sent on the second channel before
// the first is closed.
func follow(ctx context.Context, sub events.Subscription, size int) (<-chan events.Recorded, <-chan error) {
	feed := make(chan events.Recorded, size)
	subErr := make(chan error, 1)
	go func() {
		defer close(feed)
		for {
			rec, err := sub.Next(ctx)
			if err != nil {
				if ctx.Err() == nil {
					subErr <- err
				}
				return
			}
			select {
			case feed <- rec:
			case <-ctx.Done():
				return
			}
		}
	}()
	return feed, subErr
}
