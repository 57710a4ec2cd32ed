package commands

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
)

// The command shell: every command on one stream is a decision over the
// stream's state plus one call to execute, which owns what a hand-written
// loop would repeat (after the aggregate repository of
// get-eventually/go-eventually): loading the state (through the aggregate
// cache where the kind has one), the expected revision of the append,
// retrying a conflict on the new state a bounded number of times, and
// answering the stream's position when the decision changes nothing.

// source is where execute loads a stream's state and appends its decided
// payloads: an aggregateCache, or replay for kinds without one.
type source[S any] interface {
	// loadLent returns a private copy of the state, the version it was
	// read at, the position of its last event and which copy was lent.
	loadLent(ctx context.Context, s streams, stream string) (S, uint64, events.Position, uint64, error)
	// release says the lent copy is dropped without an append.
	release(stream string, lent uint64)
	// appendAfter appends at the loaded version (events.ErrConflict when
	// the stream moved) and says the lent copy is dropped.
	appendAfter(ctx context.Context, s streams, stream string, version, lent uint64, meta Meta, ps ...events.Payload) (events.AppendResult, error)
}

// replay is a source that folds the whole stream for every load (kinds
// whose streams stay short, or that keep no state worth caching).
type replay[S interface{ apply(events.Envelope) }] struct{ fresh func() S }

func (r replay[S]) loadLent(ctx context.Context, s streams, stream string) (S, uint64, events.Position, uint64, error) {
	st := r.fresh()
	v, pos, err := s.load(ctx, stream, st.apply)
	return st, v, pos, 0, err
}

func (replay[S]) release(string, uint64) {}

func (replay[S]) appendAfter(ctx context.Context, s streams, stream string, version, _ uint64, meta Meta, ps ...events.Payload) (events.AppendResult, error) {
	return s.append(ctx, stream, version, meta, ps...)
}

// execute runs load → decide → append on one stream with the loaded
// version as the expected revision, and decides again on the new state
// when another writer got there first, at most maxAttempts times
// (domain.ErrContention after that). A decision that returns no payloads
// appends nothing and answers the position of the stream's last event; an
// error from it is the command's answer and appends nothing. decide keeps
// no reference to its state (the cache may take back what it shares with
// it). meta is read after decide, so a decision may fill in what only the
// state knows (the app an order belongs to).
func execute[S any](ctx context.Context, s streams, src source[S], stream string, meta *Meta, decide func(S) ([]events.Payload, error)) (events.Position, error) {
	return run(ctx, s, src, stream, meta, maxAttempts, domain.ErrContention, decide)
}

// executeOnce is execute for a decision a lost race answers without
// deciding again: onConflict is the spec's code for it (a second review of
// a provider), or nil when the winner did what this command would have (a
// first view marked by a concurrent pull): then the loaded position
// answers, with no error.
func executeOnce[S any](ctx context.Context, s streams, src source[S], stream string, meta *Meta, onConflict error, decide func(S) ([]events.Payload, error)) (events.Position, error) {
	return run(ctx, s, src, stream, meta, 1, onConflict, decide)
}

// batchAttempts bounds executeBatch: a hot stream's batch meets every other
// node's batches, and each of them decides many requests at once.
const batchAttempts = 10 * maxAttempts

// executeBatch is execute for a decision over a batch of requests queued on
// one stream (verify-use: one leader per card decides the uses that queued
// while the previous append committed). Each payload carries its own
// request's metadata (forRequest); a conflict decides the whole batch
// again, at most batchAttempts times.
func executeBatch[S any](ctx context.Context, s streams, src source[S], stream string, decide func(S) ([]events.Payload, error)) (events.Position, error) {
	return run(ctx, s, src, stream, &Meta{}, batchAttempts, domain.ErrContention, decide)
}

// trusting is a source that can lend its cached state without reading the
// stream first (cards, which one leader per card on this node writes): the
// append's expected revision still catches another node's write, as a
// conflict. ok is false when nothing is cached; lent numbers the copy as
// loadLent's does (0: the source takes nothing back).
type trusting[S any] interface {
	loadCached(stream string) (st S, version uint64, pos events.Position, lent uint64, ok bool)
}

func run[S any](ctx context.Context, s streams, src source[S], stream string, meta *Meta, attempts int, onConflict error, decide func(S) ([]events.Payload, error)) (_ events.Position, err error) {
	// One span per command, named after the command that called execute
	// (two frames up: execute, then the command).
	ctx, span := startCommand(ctx, 2, stream)
	conflicts, loadFailed := 0, false
	defer func() { endCommand(span, conflicts, loadFailed, err) }()
	// attempts bounds the conflicts; deciding again after a decision on
	// an unread state (trusting) is not one.
	for try := 0; ; try++ {
		var (
			st            S
			version, lent uint64
			pos           events.Position
			unread        bool
			err           error
		)
		if t, ok := src.(trusting[S]); ok && try == 0 {
			st, version, pos, lent, unread = t.loadCached(stream)
		}
		if !unread {
			if st, version, pos, lent, err = src.loadLent(ctx, s, stream); err != nil {
				loadFailed = true
				return events.Position{}, err
			}
		}
		ps, err := decide(st)
		if unread && (err != nil || len(ps) == 0) {
			// A refusal or a no-op answers the stream as the store holds
			// it, not as this node last saw it: decide again on a read.
			continue
		}
		if err != nil {
			return events.Position{}, err
		}
		if len(ps) == 0 {
			src.release(stream, lent)
			return pos, nil
		}
		res, err := src.appendAfter(ctx, s, stream, version, lent, *meta, ps...)
		if events.IsConflict(err) && unread {
			// The cached state was behind the store: not a lost race.
			continue
		}
		if events.IsConflict(err) {
			conflicts++
		}
		switch {
		case events.IsConflict(err) && conflicts < attempts:
			continue
		case events.IsConflict(err) && onConflict == nil:
			return pos, nil
		case events.IsConflict(err):
			return events.Position{}, onConflict
		case err != nil:
			return events.Position{}, &appendError{err}
		}
		return res.Position, nil
	}
}

// readBack is a cached kind whose own appends the next load reads back from
// the store instead of advancing the cache from the bytes written (kinds
// whose states were never advanced that way keep exactly their semantics).
type readBack[S aggregate[S]] struct{ *aggregateCache[S] }

func (readBack[S]) appendAfter(ctx context.Context, s streams, stream string, version, _ uint64, meta Meta, ps ...events.Payload) (events.AppendResult, error) {
	return s.append(ctx, stream, version, meta, ps...)
}

// executeParts is execute for a decision that spans several streams (an
// idempotency key and the stream it names, a binding and the user it
// binds, a card batch and its cards): try loads what it needs and returns
// the parts to append, each after the version it loaded (none: nothing
// changes, and try keeps its answer). The shell appends them in one atomic
// multi-stream append where the store can, one after another in order
// elsewhere (EventStoreDB; appendAll), and runs try again on a conflict on
// any part, at most maxAttempts times. try may append a step of its own
// before it decides its parts (a card batch's renumbering): a conflict of
// that step is decided again as a part's would be. appended says whether
// the parts were written.
func executeParts(ctx context.Context, s streams, meta *Meta, try func() ([]decided, error)) (res events.AppendResult, appended bool, err error) {
	return executePartsWith(ctx, s, meta, try, nil)
}

// executePartsWith is executeParts whose append of each try's parts is
// made with the context prepare returns (nil: ctx), called after the try.
func executePartsWith(ctx context.Context, s streams, meta *Meta, try func() ([]decided, error), prepare func(context.Context) context.Context) (res events.AppendResult, appended bool, err error) {
	ctx, span := startCommand(ctx, 1, "")
	conflicts := 0
	defer func() { endCommand(span, conflicts, false, err) }()
	for range maxAttempts {
		parts, err := try()
		if events.IsConflict(err) {
			conflicts++
			continue
		}
		if err != nil || len(parts) == 0 {
			return events.AppendResult{}, false, err
		}
		actx := ctx
		if prepare != nil {
			actx = prepare(ctx)
		}
		res, err := s.appendAll(actx, *meta, parts...)
		if events.IsConflict(err) {
			if !slices.ContainsFunc(parts, func(p decided) bool { return p.unread }) {
				conflicts++
			}
			continue
		}
		if err != nil {
			return events.AppendResult{}, false, &appendError{err}
		}
		return res, true, nil
	}
	return events.AppendResult{}, false, domain.ErrContention
}

// withID is a decided payload whose event id the decision chose (derived
// from what it records), so that the same step decided again by any node
// appends the same event and the store recognises it as already written.
type withID struct {
	events.Payload
	id string
}

// forRequest is a decided payload that answers another request than the
// command's own (executeBatch): its event carries that request's metadata.
type forRequest struct {
	events.Payload
	meta Meta
}

// unwrap is the payload itself, without what the shell reads around it.
func unwrap(p events.Payload) events.Payload {
	if w, ok := p.(withID); ok {
		p = w.Payload
	}
	if w, ok := p.(forRequest); ok {
		p = w.Payload
	}
	return p
}

// appendError is a store failure of the shell's append, so a command can
// name what it was writing without wrapping its decision's own answers.
type appendError struct{ err error }

func (e *appendError) Error() string { return e.err.Error() }
func (e *appendError) Unwrap() error { return e.err }

// wrapAppend names what a command was writing when the store failed its
// append; a decision's answer (and domain.ErrContention) passes unchanged.
func wrapAppend(err error, what string) error {
	var a *appendError
	if errors.As(err, &a) {
		return fmt.Errorf("%s: %w", what, a.err)
	}
	return err
}
