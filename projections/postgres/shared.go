package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/batch"
)

var _ subscribe.Shared = (*Store)(nil)

// progressChannel is the LISTEN/NOTIFY channel on which read models' owners
// announce their progress and operators' rebuild requests are broadcast.
const progressChannel = "platform_projection_progress"

// Progress implements subscribe.Shared: the read model's generation, the
// generation a pending rebuild asked for, and its checkpoint. Reads asked
// for within progressGather of each other share one statement: a node's
// read models check their progress at the same moments (every Heartbeat,
// on a common grid), and one statement each was most of an idle node's
// transactions. A read is always sent after it was asked for.
func (s *Store) Progress(ctx context.Context, projection string) (subscribe.Progress, error) {
	r := &progressReq{projection: projection, done: make(chan struct{})}
	s.progress.Add(r, progressGather, s.progressBatch)
	select {
	case <-r.done:
		return r.p, r.err
	case <-ctx.Done():
		return subscribe.Progress{}, ctx.Err()
	}
}

// progressGather is how long the first progress read of a group waits
// for others.
const progressGather = 3 * time.Millisecond

// progressTimeout bounds one group's statement; each caller waits only
// until its own context ends.
const progressTimeout = 30 * time.Second

// progressGroup gathers the progress reads asked for meanwhile into one
// statement.
type progressGroup = batch.Group[*progressReq]

type progressReq struct {
	projection string
	p          subscribe.Progress
	err        error
	done       chan struct{}
}

// progressBatch reads the progress of every queued read's projection in
// one statement.
func (s *Store) progressBatch(queue []*progressReq) []*progressReq {
	names := make([]string, 0, len(queue))
	seen := map[string]bool{}
	for _, r := range queue {
		if !seen[r.projection] {
			seen[r.projection] = true
			names = append(names, r.projection)
		}
	}
	got, err := s.readProgress(names)
	for _, r := range queue {
		r.p, r.err = got[r.projection], err
		close(r.done)
	}
	return nil
}

// readProgress reads the progress of each of names in one statement.
func (s *Store) readProgress(names []string) (map[string]subscribe.Progress, error) {
	ctx, cancel := context.WithTimeout(context.Background(), progressTimeout)
	defer cancel()
	rows, _ := s.pool.Query(ctx, `
SELECT p.projection, coalesce(g.generation, 0), coalesce(g.requested, 0), coalesce(c.commit_pos, 0), coalesce(c.prepare_pos, 0)
FROM unnest($1::text[]) AS p(projection)
LEFT JOIN family_generations g USING (projection)
LEFT JOIN checkpoints c USING (projection)`, names)
	out := make(map[string]subscribe.Progress, len(names))
	var (
		name            string
		p               subscribe.Progress
		commit, prepare int64
	)
	_, err := pgx.ForEachRow(rows, []any{&name, &p.Generation, &p.Requested, &commit, &prepare}, func() error {
		p.Position = events.Position{Commit: uint64(commit), Prepare: uint64(prepare)}
		out[name] = p
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("projections/postgres: progress of %v: %w", names, err)
	}
	return out, nil
}

// notice is a Progress on the wire (NOTIFY payloads are text).
type notice struct {
	Projection string `json:"p"`
	Generation int64  `json:"g"`
	Requested  int64  `json:"q,omitempty"`
	Commit     uint64 `json:"c,omitempty"`
	Prepare    uint64 `json:"r,omitempty"`
	TCommit    uint64 `json:"tc,omitempty"`
	TPrepare   uint64 `json:"tr,omitempty"`
	Applied    uint64 `json:"n,omitempty"`
	CaughtUp   bool   `json:"u,omitempty"`
	Owner      string `json:"o,omitempty"`
	// Hello: a node's listener (re)connected (Projection is empty).
	Hello bool `json:"h,omitempty"`
}

func (n notice) progress() subscribe.Progress {
	return subscribe.Progress{
		Generation: n.Generation, Requested: n.Requested,
		Position: events.Position{Commit: n.Commit, Prepare: n.Prepare},
		Target:   events.Position{Commit: n.TCommit, Prepare: n.TPrepare},
		Applied:  n.Applied, CaughtUp: n.CaughtUp, Owner: n.Owner, Hello: n.Hello,
	}
}

func (s *Store) notify(ctx context.Context, q queryer, n notice) error {
	payload, err := json.Marshal(n)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, `SELECT pg_notify($1, $2)`, progressChannel, string(payload))
	return err
}

// queryer is a pool or a transaction: a notification sent in a
// transaction goes out when it commits, and not at all if it rolls back.
type queryer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Announce implements subscribe.Shared. The read models a node owns
// announce together: one event wakes every runner within a moment, and
// each announcing on its own cost a Postgres transaction per read model
// per event (most of a delivered webhook's transactions), so announcements
// wait up to announceGather for each other and go out in one statement.
func (s *Store) Announce(ctx context.Context, projection string, p subscribe.Progress) error {
	n := notice{
		Projection: projection, Generation: p.Generation, Requested: p.Requested,
		Commit: p.Position.Commit, Prepare: p.Position.Prepare, TCommit: p.Target.Commit, TPrepare: p.Target.Prepare,
		Applied: p.Applied, CaughtUp: p.CaughtUp, Owner: p.Owner,
	}
	if !s.others.present(ctx, s) {
		// Nobody else would hear it: a node alone sends none, and one that
		// joins greets first (Hello), which makes every owner announce.
		return nil
	}
	if err := s.announce.send(ctx, s, n); err != nil {
		return fmt.Errorf("projections/postgres: announce %s: %w", projection, err)
	}
	return nil
}

// helloPrefix begins a listener's greeting, the statement its session
// last ran while it waits for notifications (see peers).
const helloPrefix = `SELECT pg_notify('` + progressChannel + `', '{"p":"","g":0,"h":true`

// peersCheck is how often a node that has heard no other node's greeting
// looks for other listeners of the announcements anyway: a node of an
// older version listens without greeting.
const peersCheck = 30 * time.Second

// peers remembers whether another node listens for announcements: it has
// greeted (Hello from another Store), or a look at pg_stat_activity found
// another session whose last statement listened on the channel or greeted.
type peers struct {
	seen    atomic.Bool
	mu      sync.Mutex
	checked time.Time
}

func (p *peers) present(ctx context.Context, s *Store) bool {
	if p.seen.Load() {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen.Load() || time.Since(p.checked) < peersCheck {
		return p.seen.Load()
	}
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()
  AND (query = $1 OR (query LIKE $2 AND position($3 IN query) = 0))`,
		`LISTEN `+progressChannel, helloPrefix+`%`, s.instance).Scan(&n)
	if err != nil {
		return true // unsure: announce
	}
	p.checked = time.Now()
	if n > 0 {
		p.seen.Store(true)
	}
	return n > 0
}

// announceGather is how long the first announcement of a group waits for
// the node's other read models to announce the same event: short beside
// a read's bounded wait for another node's progress, long beside the
// moments between the runners a commit wakes.
const announceGather = 5 * time.Millisecond

// announcer groups the node's announcements: the first of a group waits
// announceGather, then every notice queued meanwhile goes out in one
// statement (one transaction, notifications in queue order) and each
// caller gets its outcome.
type announcer struct{ batch.Group[announcement] }

func (a *announcer) send(ctx context.Context, s *Store, n notice) error {
	done := make(chan error, 1)
	a.Add(announcement{n: n, done: done}, announceGather, s.announceBatch)
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// announcement is one queued notice and where its caller waits.
type announcement struct {
	n    notice
	done chan error
}

// announceBatch sends the queued notices in one statement.
func (s *Store) announceBatch(queue []announcement) []announcement {
	// A later notice of a read model supersedes an earlier one.
	latest := map[string]int{}
	for i, a := range queue {
		latest[a.n.Projection] = i
	}
	payloads := make([]string, 0, len(latest))
	var err error
	for i, a := range queue {
		if latest[a.n.Projection] != i {
			continue
		}
		var b []byte
		if b, err = json.Marshal(a.n); err != nil {
			break
		}
		payloads = append(payloads, string(b))
	}
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = s.pool.Exec(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p`, progressChannel, payloads)
		cancel()
	}
	for _, a := range queue {
		a.done <- err
	}
	return nil
}

// RequestRebuild implements subscribe.Shared: one statement asks for the
// generation after the current one (requests made before the owner starts
// share it), and the notification goes out with its commit.
func (s *Store) RequestRebuild(ctx context.Context, projection string) (int64, error) {
	var gen, want int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
INSERT INTO family_generations AS g (projection, generation, requested, requested_at)
VALUES ($1, 0, 1, now())
ON CONFLICT (projection) DO UPDATE SET
    requested = greatest(g.requested, g.generation + 1), requested_at = now()
RETURNING generation, requested`, projection).Scan(&gen, &want)
		if err != nil {
			return err
		}
		return s.notify(ctx, tx, notice{Projection: projection, Generation: gen, Requested: want})
	})
	if err != nil {
		return 0, fmt.Errorf("projections/postgres: request the rebuild of %s: %w", projection, err)
	}
	return want, nil
}

// nextGeneration, inside a read model's reset, moves its generation past every
// request so far; the announcement of the new generation goes out with
// the commit, together with the truncation.
func (s *Store) nextGeneration(ctx context.Context, tx pgx.Tx, projection string) error {
	var gen int64
	err := tx.QueryRow(ctx, `
INSERT INTO family_generations AS g (projection, generation, requested, rebuilt_at)
VALUES ($1, 1, 1, now())
ON CONFLICT (projection) DO UPDATE SET
    generation = greatest(g.generation + 1, g.requested), rebuilt_at = now()
RETURNING generation`, projection).Scan(&gen)
	if err != nil {
		return err
	}
	return s.notify(ctx, tx, notice{Projection: projection, Generation: gen})
}

// Watch implements subscribe.Shared. The node's one LISTEN connection
// starts with the first watcher and reconnects after failures (announcements
// sent meanwhile are lost: the runners' polls cover them).
func (s *Store) Watch(projection string) (<-chan subscribe.Progress, func()) {
	return s.watch.add(s, projection)
}

// watcher fans one LISTEN connection out to the runners watching.
type watcher struct {
	mu     sync.Mutex
	subs   map[*subscriber]struct{}
	cancel context.CancelFunc
	done   chan struct{}
	closed bool
}

type subscriber struct {
	projection string
	ch         chan subscribe.Progress
}

func (w *watcher) add(s *Store, projection string) (<-chan subscribe.Progress, func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	sub := &subscriber{projection: projection, ch: make(chan subscribe.Progress, 16)}
	if w.closed {
		return sub.ch, func() {}
	}
	if w.subs == nil {
		w.subs = map[*subscriber]struct{}{}
	}
	w.subs[sub] = struct{}{}
	if w.cancel == nil {
		ctx, cancel := context.WithCancel(context.Background())
		w.cancel, w.done = cancel, make(chan struct{})
		go w.listen(ctx, s)
	}
	return sub.ch, func() {
		w.mu.Lock()
		delete(w.subs, sub)
		w.mu.Unlock()
	}
}

func (w *watcher) close() {
	w.mu.Lock()
	w.closed = true
	cancel, done := w.cancel, w.done
	w.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// deliver hands n to the watchers of its projection; a full channel loses
// its oldest entry, since a later announcement supersedes it.
func (w *watcher) deliver(n notice) {
	p := n.progress()
	w.mu.Lock()
	defer w.mu.Unlock()
	for sub := range w.subs {
		if sub.projection != n.Projection && !n.Hello {
			continue
		}
		for {
			select {
			case sub.ch <- p:
			default:
				select {
				case <-sub.ch:
				default:
				}
				continue
			}
			break
		}
	}
}

func (w *watcher) listen(ctx context.Context, s *Store) {
	defer close(w.done)
	for ctx.Err() == nil {
		conn, err := s.pool.Acquire(ctx)
		if err == nil {
			_, err = conn.Exec(ctx, `LISTEN `+progressChannel)
		}
		if err == nil {
			// Announcements may have been missed while this node was not
			// listening: the greeting, which comes back to this connection
			// too, makes every owner, on any node, announce again and this
			// node's followers re-read the stored progress.
			_, err = conn.Exec(ctx, helloPrefix+`,"o":"`+s.instance+`"}')`)
		}
		for err == nil {
			var n *pgconn.Notification
			n, err = conn.Conn().WaitForNotification(ctx)
			if err != nil {
				break
			}
			var msg notice
			if json.Unmarshal([]byte(n.Payload), &msg) == nil {
				if msg.Hello && msg.Owner != s.instance {
					s.others.seen.Store(true)
				}
				w.deliver(msg)
			}
		}
		if conn != nil {
			_ = conn.Hijack().Close(context.Background()) // it may be mid-wait: never back to the pool
		}
		// A lost listener only slows followers down to their poll, which
		// logs if the database is unreachable.
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
