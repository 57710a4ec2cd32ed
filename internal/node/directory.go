package node

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/auth"
	"github.com/healthtech/partner-open-platform/projections/directory"
)

// directoryWait bounds how long a lookup waits for a directory to reach
// the event store's head before it decides with what the directory holds.
const directoryWait = 5 * time.Second

// follower lets a directory that follows the log (apps, tokens, operators)
// answer from a state at least as new as the event store's head read after
// the question was asked, so that whatever any node acknowledged before a
// request arrived here is seen by it: an app created, a token issued or an
// operator named through node A works on node B at once, and a secret
// rotation, suspension, token revocation or operator revocation takes effect
// on B as soon as A has answered.
//
// Head reads are coalesced: at most one is in flight per directory, and
// every lookup that arrived before it started waits for the next one, so a
// busy node makes far fewer reads than lookups while each lookup still gets
// a head read that started after it arrived.
type follower struct {
	store  headReader
	runner directoryRunner
	// maxAge is how old the head a hit is decided on may be: 0 means read
	// after the lookup arrived (changes apply on every node at once); a
	// positive bound saves reads at the price of changes taking up to that
	// long on other nodes; negative means hits never wait (one node alone:
	// each of its writes waits for its own directory before answering).
	maxAge time.Duration
	log    *slog.Logger

	mu        sync.Mutex
	confirmed time.Time // start of the latest head read the directory has reached
	flight    *headRead
}

// headReader reads the position of the log's last event (events.Store).
type headReader interface {
	Head(ctx context.Context) (events.Position, error)
}

// directoryRunner is the projection that fills a directory
// (subscribe.Runner).
type directoryRunner interface {
	Name() string
	Position() events.Position
	WaitFor(ctx context.Context, pos events.Position) error
}

// headRead is one coalesced read of the head and wait for the directory.
type headRead struct {
	started time.Time
	done    chan struct{}
	err     error
}

// await returns once the directory has applied the log up to a head read
// that started no earlier than since, or after directoryWait with the cause.
func (f *follower) await(since time.Time) error {
	// The common case, a head read confirmed recently enough, returns
	// without the timer and context of a wait (every authenticated request
	// asks, so its cost shows in a CPU profile).
	f.mu.Lock()
	current := !f.confirmed.Before(since)
	f.mu.Unlock()
	if current {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), directoryWait)
	defer cancel()
	for {
		f.mu.Lock()
		if !f.confirmed.Before(since) {
			f.mu.Unlock()
			return nil
		}
		fl := f.flight
		if fl == nil {
			fl = &headRead{started: time.Now(), done: make(chan struct{})}
			f.flight = fl
			go f.read(fl)
		}
		f.mu.Unlock()
		select {
		case <-fl.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if fl.err != nil && !fl.started.Before(since) {
			return fl.err // the read that would have answered this lookup failed
		}
	}
}

func (f *follower) read(fl *headRead) {
	ctx, cancel := context.WithTimeout(context.Background(), directoryWait)
	defer cancel()
	head, err := f.store.Head(ctx)
	if err == nil {
		err = f.runner.WaitFor(ctx, head)
	}
	f.mu.Lock()
	if err == nil && fl.started.After(f.confirmed) {
		f.confirmed = fl.started
	}
	f.flight, fl.err = nil, err
	f.mu.Unlock()
	close(fl.done)
}

// current reports, without waiting, whether a hit looked up now is
// already known current (see hit).
func (f *follower) current() bool {
	if f.maxAge < 0 {
		return true
	}
	since := time.Now().Add(-f.maxAge)
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.confirmed.Before(since)
}

// confirmAt waits until the directory has applied the log up to head,
// which a statement sent at sent read (a signed write's claim), and then
// counts as a head read started at sent: lookups that arrived before it
// need no read of their own.
func (f *follower) confirmAt(what string, head events.Position, sent time.Time) error {
	// The directory is usually past head already (a signed request per
	// read, few changes): no timer then.
	if f.runner.Position().Less(head) {
		if err := f.waitFor(head); err != nil {
			f.log.Warn("directory lookup: could not confirm the entry is current; deciding with what the directory holds",
				"directory", f.runner.Name(), "lookup", what, "err", err)
			return err
		}
	}
	f.mu.Lock()
	if sent.After(f.confirmed) {
		f.confirmed = sent
	}
	f.mu.Unlock()
	return nil
}

// waitFor waits, within directoryWait, until the directory has applied
// the log up to head.
func (f *follower) waitFor(head events.Position) error {
	ctx, cancel := context.WithTimeout(context.Background(), directoryWait)
	defer cancel()
	return f.runner.WaitFor(ctx, head)
}

// confirm waits, per maxAge, until a hit looked up at since is known
// current, with a head read of its own (coalesced, see await).
func (f *follower) confirm(what string, since time.Time) error {
	if f.maxAge < 0 {
		return nil
	}
	err := f.await(since.Add(-f.maxAge))
	if err != nil {
		f.log.Warn("directory lookup: could not confirm the entry is current; deciding with what the directory holds",
			"directory", f.runner.Name(), "lookup", what, "err", err)
	}
	return err
}

// miss waits until the directory has seen everything acknowledged before
// now: a lookup that found nothing may be about something another node
// (or this one, a moment ago) just wrote. It returns why it could not
// confirm that (the head unreadable, the directory not there within
// directoryWait): the miss is then this node's lag, not an answer.
func (f *follower) miss(what string) error {
	if err := f.await(time.Now()); err != nil {
		f.log.Warn("directory lookup: could not reach the event store's head; a miss is not confirmed",
			"directory", f.runner.Name(), "lookup", what, "err", err)
		return fmt.Errorf("%w: %w", auth.ErrDirectoryUnconfirmed, err)
	}
	return nil
}

// hit waits, per maxAge, until a found entry is known to be current; it
// reports whether the caller should look again.
func (f *follower) hit(what string) bool {
	if f.maxAge < 0 {
		return false
	}
	if err := f.await(time.Now().Add(-f.maxAge)); err != nil {
		f.log.Warn("directory lookup: could not confirm the entry is current; deciding with what the directory holds",
			"directory", f.runner.Name(), "lookup", what, "err", err)
	}
	return true
}

// lookup finds with find, waiting for the directory as the follower says;
// a miss it could not confirm at the log's head counts as not found.
func lookup[T any](f *follower, what string, find func() (T, bool)) (T, bool) {
	v, ok, _ := lookupChecked(f, what, find)
	return v, ok
}

// lookupChecked is lookup that tells an unconfirmed miss apart: not found
// with an error wrapping auth.ErrDirectoryUnconfirmed.
func lookupChecked[T any](f *follower, what string, find func() (T, bool)) (T, bool, error) {
	v, ok := find()
	if !ok {
		err := f.miss(what)
		if v, ok = find(); !ok && err != nil {
			return v, false, err
		}
		return v, ok, nil
	}
	if f.hit(what) {
		v, ok = find()
	}
	return v, ok, nil
}

// appDirectory is the app directory that authentication and the OAuth
// token checks use (see follower). A retired sandbox app (its developer
// took the production credentials that replace it) is unknown here, so its
// credentials are refused like an unknown app's: 401 on every scheme.
type appDirectory struct {
	apps *directory.Apps
	f    *follower
}

// ByID finds an app by id as of the log's head (see follower).
func (d appDirectory) ByID(id int64) (domain.App, bool) {
	app, ok, _ := d.ByIDChecked(id)
	return app, ok
}

// ByIDChecked is ByID telling a miss it could not confirm at the log's
// head apart (auth.CheckedDirectory).
func (d appDirectory) ByIDChecked(id int64) (domain.App, bool, error) {
	return lookupChecked(d.f, "app by id", func() (domain.App, bool) { return unlessRetired(d.apps.ByID(id)) })
}

var _ auth.DeferredDirectory = appDirectory{}

// ByIDDeferred is ByIDChecked answering a hit at once (current: already
// known current); the caller confirms it with ConfirmAt or Confirm.
func (d appDirectory) ByIDDeferred(id int64) (domain.App, bool, bool, error) {
	if app, ok := d.ByIDHeld(id); ok {
		return app, true, d.f.current(), nil
	}
	app, ok, err := d.ByIDChecked(id)
	return app, ok, true, err
}

// ByIDHeld is the app as the directory holds it, without waiting.
func (d appDirectory) ByIDHeld(id int64) (domain.App, bool) {
	return unlessRetired(d.apps.ByID(id))
}

// ConfirmAt waits until the directory has applied the log up to head,
// read by a statement sent at sent (see follower.confirmAt).
func (d appDirectory) ConfirmAt(head events.Position, sent time.Time) error {
	return d.f.confirmAt("app by id", head, sent)
}

// Confirm waits until a hit looked up at since is known current.
func (d appDirectory) Confirm(since time.Time) error { return d.f.confirm("app by id", since) }

// unlessRetired hides a retired app from authentication.
func unlessRetired(app domain.App, ok bool) (domain.App, bool) {
	if !ok || app.Retired {
		return domain.App{}, false
	}
	return app, true
}

// ByKey finds an app by key as of the log's head (see follower).
func (d appDirectory) ByKey(key string) (domain.App, bool) {
	app, ok, _ := d.ByKeyChecked(key)
	return app, ok
}

// ByKeyChecked is ByKey telling a miss it could not confirm at the log's
// head apart (auth.CheckedDirectory).
func (d appDirectory) ByKeyChecked(key string) (domain.App, bool, error) {
	return lookupChecked(d.f, "app by key", func() (domain.App, bool) { return unlessRetired(d.apps.ByKey(key)) })
}

// Token finds a live OAuth access token: one issued through another node
// a moment ago is found, one revoked there is refused.
func (d appDirectory) Token(hash string, now time.Time) (int64, string, bool) {
	type found struct {
		app   int64
		scope string
	}
	t, ok := lookup(d.f, "access token", func() (found, bool) {
		app, scope, ok := d.apps.Token(hash, now)
		return found{app, scope}, ok
	})
	return t.app, t.scope, ok
}

// Uploader finds a reporting side registered through any node.
func (d appDirectory) Uploader(hash string) (directory.Uploader, bool) {
	return lookup(d.f, "uploader token", func() (directory.Uploader, bool) { return d.apps.Uploader(hash) })
}

// operatorDirectory finds named operators for authentication (see
// follower): one named through another node works here at once, one
// revoked there is refused here.
type operatorDirectory struct {
	ops *directory.Operators
	f   *follower
}

// OperatorByTokenHash finds a live named operator as of the log's head.
func (d operatorDirectory) OperatorByTokenHash(hash string) (auth.Operator, bool) {
	op, ok := lookup(d.f, "operator token", func() (directory.Operator, bool) { return d.ops.ByTokenHash(hash) })
	return auth.Operator{ID: op.OperatorID, Name: op.Name, Role: op.Role}, ok
}
