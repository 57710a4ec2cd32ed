// Package postgres is the event store on PostgreSQL, for operators who run
// Postgres already and want a shared log without an EventStoreDB server.
//
// # Ordering: one writer at a time, positions stored in commit order
//
// A polled log ordered by a bigserial can lose events: two transactions draw
// 7 and 8, 8 commits first, a reader sees 8 and moves its checkpoint past 7,
// and 7 commits a moment later, behind every reader. Established Postgres
// stores close this gap in one of three ways: (a) order by the writing
// transaction's id and read only below the oldest running transaction
// (xmin of the snapshot), as watermill-sql and Marten's "high water mark"
// do in spirit; (b) let a sequencer stamp a commit sequence onto rows after
// they committed (Marten's async daemon, Postgres-as-queue designs); or (c)
// serialise appends so that positions are handed out in commit order
// (Message DB and SQLStreamStore take a lock per stream or for the log).
//
// This adapter takes (c). Every append runs in a transaction that first takes
// one transaction-scoped advisory lock (appendLock), then reads the head as
// max(position) and writes its events at head+1, head+2, ... Postgres makes a
// transaction visible (ProcArrayEndTransaction) before it releases the
// transaction's locks, so the next writer's statements, and every snapshot
// taken after that writer commits, see the previous writer's rows. Hence
// whenever a reader sees position p it sees every position below p: positions
// are gapless and visible in order, and a subscriber that reads "position >
// checkpoint ORDER BY position" can never skip a late commit. A rolled-back
// append leaves no hole either, since the next writer reuses its numbers.
//
// Why not (a): a transaction id is not a stable position. Restored into a new
// cluster, new appends get smaller ids than the restored ones and would sort
// before them, and any long transaction anywhere on the server (xmin is
// cluster-wide) stalls every subscriber. Why not (b): it needs a sequencer
// process and adds its polling delay to every read-your-writes wait. The cost
// of (c) is that appends from all processes are serialised through one lock
// held across the commit's WAL flush. Within a process a committer goroutine
// writes every append queued meanwhile in one transaction (group commit), so
// concurrent appends share the lock, the round trips and the flush; the
// README gives the measured rate beside pgbench's on the same server.
//
// The position is a stored column, never derived from ctid or an xid, so it
// survives VACUUM FULL and dump/restore. LISTEN/NOTIFY only wakes readers;
// they always read by position, and poll now and then in case a notification
// was lost with a dropped connection.
//
// Only this adapter may write es_events: a writer that skips the lock would
// break the ordering guarantee.
package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/internal/groupcommit"
	"github.com/healthtech/partner-open-platform/events/internal/rules"
	"github.com/healthtech/partner-open-platform/events/internal/tail"
)

// appendLock is the pg_advisory_xact_lock key every append holds until it
// commits, so positions are assigned in commit order (ASCII "evappend").
const appendLock int64 = 0x6576617070656e64

// channel is the LISTEN/NOTIFY channel an append notifies on commit.
const channel = "es_events"

// pollEvery bounds how long a subscriber waits for an event whose
// notification was lost without the listener's connection dropping (a
// reconnect wakes every subscriber at once); normally NOTIFY or an append
// in this process wakes it at once. Each wake-up reads the log once per
// subscriber group, so on an idle node this is its only cost.
const pollEvery = 30 * time.Second

// Store is the Postgres event store; any number of processes may share one
// database, and a Store may be used from any number of goroutines.
type Store struct {
	pool   *pgxpool.Pool
	notify *tail.Notifier

	stopListen context.CancelFunc
	listening  sync.WaitGroup // the listener and the shared reader (reads.go)
	reads      chan *readReq
	readsDone  <-chan struct{}
	closeOnce  sync.Once

	// Group commit: appends queue for one committer goroutine, which writes
	// everything queued while the previous commit ran in one transaction.
	queue *groupcommit.Queue
	// deferral holds groups of deferrable appends (events.Deferrable) for
	// a plain append to share their transaction; tests shorten or watch it.
	deferral groupcommit.Deferral
	// commits counts the transactions that wrote (tests).
	commits atomic.Uint64

	// beforeCommit, when set (tests only), runs inside an append's
	// transaction once it holds the append lock and has numbered its
	// events, before it writes them and commits. Only a two-round-trip
	// commit has such a moment, so with it set every group takes two.
	beforeCommit func(last events.Position)
	// afterCommit, when set (tests only), runs once an append's
	// transaction has committed, before the run of own commits takes it.
	afterCommit func()

	// recent is the latest run of this Store's own commits, which its
	// subscriptions read without a query (recent.go).
	recent recentLog
	// pages are the last full pages of the log the shared reader read
	// (reads.go).
	pages pageCache
	// dbReads counts the shared reader's round trips (tests).
	dbReads atomic.Int64
	// trips counts the groups committed in two round trips, and of those
	// the ones whose one-round-trip plan the server refused (tests and
	// benchmarks).
	trips struct{ two, refused atomic.Int64 }

	// instance is this Store's NOTIFY payload: the listener's echo of
	// its own appends is dropped, since the committer already woke the
	// subscriptions; the echo woke each of them a second time, into a read
	// that found nothing.
	instance string
}

var (
	_ events.Store               = (*Store)(nil)
	_ events.MultiStreamAppender = (*Store)(nil)
	_ events.PositionReader      = (*Store)(nil)
)

// Open connects to the database at url (postgres://...), brings its schema
// up to date and starts listening for appends of other processes.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("events/postgres: parse URL: %w", err)
	}
	return openConfig(ctx, cfg)
}

// openConfig is Open on a parsed pool configuration.
func openConfig(ctx context.Context, cfg *pgxpool.Config) (*Store, error) {
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("events/postgres: connect: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	lctx, stop := context.WithCancel(context.Background())
	s := &Store{pool: pool, notify: tail.NewNotifier(), stopListen: stop,
		reads: make(chan *readReq, maxReadGroup), readsDone: lctx.Done(), instance: strconv.FormatUint(rand.Uint64(), 36),
		deferral: groupcommit.Defaults()}
	s.listening.Add(2)
	go s.listen(lctx)
	go s.readLoop(lctx)
	s.queue = groupcommit.Start(maxGroup, s.commitLoop)
	return s, nil
}

// Append implements events.Store. Appends queue for one committer, which
// writes everything queued meanwhile in one transaction holding the append
// lock from before it reads the streams until its commit: the checks cannot
// race another append (in this process or another), the positions follow
// every committed one, and concurrent appends share one commit's WAL flush.
func (s *Store) Append(ctx context.Context, stream string, expected events.ExpectedRevision, evs ...events.Proposed) (events.AppendResult, error) {
	res, err := s.submit(ctx, []events.StreamAppend{{Stream: stream, Expected: expected, Events: evs}})
	if err != nil {
		return events.AppendResult{}, s.wrap("append to "+stream, err)
	}
	return res[0], nil
}

// AppendMulti implements events.MultiStreamAppender: the parts are checked
// and inserted in one transaction under the append lock, so they commit
// together or not at all.
func (s *Store) AppendMulti(ctx context.Context, parts ...events.StreamAppend) ([]events.AppendResult, error) {
	if err := rules.CheckParts(parts); err != nil {
		return nil, err
	}
	res, err := s.submit(ctx, parts)
	if err != nil {
		return nil, s.wrap(fmt.Sprintf("append to %d streams", len(parts)), err)
	}
	return res, nil
}

// submit queues parts for the committer and waits for their outcome.
func (s *Store) submit(ctx context.Context, parts []events.StreamAppend) ([]events.AppendResult, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	return s.queue.Submit(ctx, parts)
}

// maxGroup bounds how many appends share one transaction.
const maxGroup = 256

// commitTimeout bounds one group's transaction.
const commitTimeout = 30 * time.Second

func (s *Store) commitLoop(queue *groupcommit.Queue) {
	group := make([]*groupcommit.Append, 0, maxGroup)
	for first := range queue.C() {
		group = queue.Gather(append(group[:0], first), maxGroup)
		// A delivery's creation and its attempt's outcome wait, briefly,
		// for a call's append: on a node taking calls one at a time each
		// transaction is a round trip, a WAL flush, a NOTIFY and a read
		// by every follower, and a delivery otherwise costs two of them.
		group = s.deferral.Hold(queue, group)
		wrote, err := s.commit(group)
		if err != nil && len(group) > 1 {
			// One bad append (say a NUL byte in a name) must not fail the
			// others: the group rolled back, so commit each on its own.
			wrote = false
			for _, p := range group {
				w, _ := s.commit([]*groupcommit.Append{p})
				wrote = wrote || w
			}
		}
		if wrote {
			s.notify.Notify()
		}
		for _, p := range group {
			p.Done()
		}
	}
}

// commit decides and writes a group in one transaction, in queue order: each
// append sees the writes of those before it, exactly as if run one by one.
// On error nothing is written and every append of the group carries it.
//
// A group whose expectations are all exact revisions or "no stream" costs
// one round trip, and the append lock is held for none (onetrip.go). Any
// other costs two, and the lock is held for about one of them: BEGIN, the
// lock and the reads go in one pipeline, the INSERT, the NOTIFY and COMMIT
// in a second.
func (s *Store) commit(group []*groupcommit.Append) (wrote bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, s.fail(group, err)
	}
	// A connection handed back inside a transaction (any failure below
	// that did not end it) is closed by the pool, never reused.
	defer conn.Release()
	wrote, err = s.commitOn(ctx, conn.Conn(), group)
	if err != nil {
		// The commit may or may not have happened: subscriptions read
		// from Postgres until the next commit starts a run again.
		s.recent.drop()
		// Ends an open or failed transaction; if even that fails the
		// connection is not idle and the pool drops it on Release.
		_, _ = conn.Exec(ctx, "ROLLBACK")
		return false, s.fail(group, err)
	}
	if wrote {
		s.commits.Add(1)
	}
	return wrote, nil
}

// fail gives every append of a failed group the group's error.
func (s *Store) fail(group []*groupcommit.Append, err error) error {
	var pe *pgconn.PgError
	for _, p := range group {
		p.Res, p.Err = nil, err
		if errors.As(err, &pe) && pe.Code == uniqueViolation {
			// A unique (stream, revision) or id violation: some writer
			// ignored the append lock. Still a conflict, of unknown size.
			p.Err = &events.ConflictError{Stream: p.Parts[0].Stream, Expected: p.Parts[0].Expected, Actual: -1}
		}
	}
	return err
}

// commitOn runs commit's transaction on conn; on error the caller rolls back.
// A group that plan decides before reading anything goes in one round trip
// (onetrip.go); any other group, and one whose plan the server refused,
// goes in two: the reads, then the writes.
func (s *Store) commitOn(ctx context.Context, conn *pgx.Conn, group []*groupcommit.Append) (wrote bool, err error) {
	epoch := s.recent.begin()
	if s.beforeCommit == nil {
		if pl, ok := plan(group); ok {
			refused, err := s.commitOneTrip(ctx, conn, group, pl, epoch)
			if !refused {
				return err == nil, err
			}
			s.trips.refused.Add(1)
		}
	}
	s.trips.two.Add(1)
	seen, err := readCommitted(ctx, conn, group)
	if err != nil {
		return false, err
	}
	rows, next := decideGroup(group, seen)
	if len(rows.pos) == 0 {
		// Only retries and conflicts: nothing to commit.
		_, err := conn.Exec(ctx, "COMMIT")
		return false, err
	}
	if s.beforeCommit != nil {
		s.beforeCommit(position(next))
	}
	riders := ridersOf(group)
	b := &pgx.Batch{}
	results := queueWrites(b, insertQuery, rows, riders, s.instance)
	if err := sendAndCommit(ctx, conn, b); err != nil {
		return false, err
	}
	s.committed(epoch, seen.head, seen.created, rows, riders, results)
	return true, nil
}

// ridersOf is the riders of group's appends to be written with them.
func ridersOf(group []*groupcommit.Append) []*Rider {
	var riders []*Rider
	for _, p := range group {
		if r := riderOf(p); r != nil {
			riders = append(riders, r)
		}
	}
	return riders
}

// committed tells the riders their values and keeps the rows as the run of
// own commits, once a group's transaction (numbered after head, begun at
// created) committed.
func (s *Store) committed(epoch uint64, head int64, created time.Time, rows newRows, riders []*Rider, results []bool) {
	for i, r := range riders {
		if r.used.CompareAndSwap(false, true) {
			r.done(results[i])
		}
	}
	if s.afterCommit != nil {
		s.afterCommit()
	}
	s.recent.committed(epoch, head, rows, created)
}

// committed is what the first exchange with the server read under the append lock:
// the log's head, each touched stream's event count, and where each
// event ID of the group already sits.
type committed struct {
	head int64
	// created is the transaction's start (now()), which the created
	// column takes by default.
	created time.Time
	counts  map[string]int64 // committed, before this group
	found   map[string]rules.Located
}

// newRows are the events a group writes, column by column, as the
// INSERT ... SELECT unnest(...) statement takes them.
type newRows struct {
	pos, rev        []int64
	stream, id, typ []string
	data, meta      [][]byte
}

// streamCountsQuery is each of a group's streams with its committed event
// count, in one statement: the stream's last revision + 1, read as the last
// entry of the (stream, revision) index. Written as max(revision), the
// cached generic plan (estimating one row per stream from early
// statistics) aggregated every entry of the stream, so each append to a
// long stream (an app's audit facts, one per report pull) read the whole
// stream under the append lock.
const streamCountsQuery = `SELECT s, ` + countOfS + `
FROM unnest($1::text[]) AS s`

// countOfS is the committed event count of the stream named s.
const countOfS = `coalesce((SELECT revision FROM es_events WHERE stream = s ORDER BY revision DESC LIMIT 1) + 1, 0)`

// placesQuery is where each of a group's event ids already sits: one probe
// of the id index per id (the LIMIT keeps each probe a subquery of its
// own). As "id = ANY($1)" over a whole group's ids, the plan scanned the
// log instead.
const placesQuery = `SELECT e.id, e.stream, e.revision, e.position FROM unnest($1::text[]) AS i(id),
LATERAL (SELECT id, stream, revision, position FROM es_events WHERE es_events.id = i.id LIMIT 1) AS e`

// readCommitted is the first exchange with the server: open the transaction, take the
// lock, read the head, and every stream's count and every event ID's
// place as the committed log has them, each in one statement for the whole
// group. Each statement after the lock reads a fresh snapshot (READ
// COMMITTED), so it sees the previous holder's commit.
func readCommitted(ctx context.Context, conn *pgx.Conn, group []*groupcommit.Append) (committed, error) {
	var streams, ids []string
	seen := committed{counts: map[string]int64{}, found: map[string]rules.Located{}}
	for _, p := range group {
		for _, part := range p.Parts {
			if _, ok := seen.counts[part.Stream]; !ok {
				seen.counts[part.Stream] = 0
				streams = append(streams, part.Stream)
			}
			for _, ev := range part.Events {
				ids = append(ids, ev.ID)
			}
		}
	}
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SELECT pg_advisory_xact_lock($1)`, appendLock)
	b.Queue(`SELECT coalesce(max(position), 0), now() FROM es_events`)
	b.Queue(streamCountsQuery, streams)
	b.Queue(placesQuery, ids)
	br := conn.SendBatch(ctx, b)
	_, err := br.Exec()
	if err == nil {
		_, err = br.Exec()
	}
	if err == nil {
		err = br.QueryRow().Scan(&seen.head, &seen.created)
	}
	if err == nil {
		err = readPlaces(br, seen)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return seen, err
}

// readPlaces reads the group's two results of the first exchange with the
// server: each stream's committed count and the places of its event IDs.
func readPlaces(br pgx.BatchResults, seen committed) error {
	var (
		stream   string
		count    int64
		id       string
		rev, pos int64
	)
	rows, err := br.Query()
	if err != nil {
		return err
	}
	if _, err := pgx.ForEachRow(rows, []any{&stream, &count}, func() error {
		seen.counts[stream] = count
		return nil
	}); err != nil {
		return err
	}
	if rows, err = br.Query(); err != nil {
		return err
	}
	_, err = pgx.ForEachRow(rows, []any{&id, &stream, &rev, &pos}, func() error {
		seen.found[id] = rules.Located{Stream: stream, Revision: uint64(rev), Position: position(pos)}
		return nil
	})
	return err
}

// decideGroup decides every pending append in queue order on the
// committed state plus this group's own writes so far, setting each
// one's results or error, and returns the rows to write and the last
// position they take.
func decideGroup(group []*groupcommit.Append, seen committed) (rows newRows, next int64) {
	streamCount := map[string]uint64{}
	lookup := func(id string) (rules.Located, bool, error) {
		loc, ok := seen.found[id]
		return loc, ok, nil
	}
	next = seen.head
	for _, p := range group {
		p.Res, p.Err, p.Wrote = make([]events.AppendResult, len(p.Parts)), nil, false
		if err := p.Ctx.Err(); err != nil {
			p.Err = err
			continue
		}
		partCounts, replayed := checkParts(p, streamCount, seen.counts, lookup)
		if p.Err != nil {
			continue
		}
		for i, part := range p.Parts {
			if replayed[i] {
				continue
			}
			for j, ev := range part.Events {
				p.Wrote = true
				next++
				rev := partCounts[i] + uint64(j)
				rows.add(next, part.Stream, rev, ev)
				seen.found[ev.ID] = rules.Located{Stream: part.Stream, Revision: rev, Position: position(next)}
				p.Res[i] = events.AppendResult{Revision: rev, Position: position(next)}
			}
			streamCount[part.Stream] = partCounts[i] + uint64(len(part.Events))
		}
	}
	return rows, next
}

// checkParts checks every part of p before any is written (all or
// none): on a refusal it sets p.Err; otherwise it records each part's
// result for a replay and returns each part's stream count and whether
// the part is a replay of events already written.
func checkParts(p *groupcommit.Append, streamCount map[string]uint64, counts map[string]int64, lookup func(string) (rules.Located, bool, error)) (partCounts []uint64, replayed []bool) {
	partCounts = make([]uint64, len(p.Parts))
	replayed = make([]bool, len(p.Parts))
	for i, part := range p.Parts {
		count, ok := streamCount[part.Stream]
		if !ok {
			count = uint64(counts[part.Stream])
		}
		r, again, err := rules.Check(part.Stream, part.Expected, count, part.Events, lookup)
		if err != nil {
			p.Err = err
			break
		}
		p.Res[i], replayed[i], partCounts[i] = r, again, count
	}
	return partCounts, replayed
}

// add appends one event as a row at position pos and revision rev.
func (r *newRows) add(pos int64, stream string, rev uint64, ev events.Proposed) {
	data := ev.Data
	if data == nil {
		data = []byte{}
	}
	r.pos, r.rev = append(r.pos, pos), append(r.rev, int64(rev))
	r.stream, r.id, r.typ = append(r.stream, stream), append(r.id, ev.ID), append(r.typ, ev.Type)
	r.data, r.meta = append(r.data, data), append(r.meta, ev.Meta)
}

// insertQuery writes a group's rows at the positions the client numbered
// them.
const insertQuery = insertInto + `SELECT * FROM ` + unnestRows

const insertInto = `INSERT INTO es_events (position, stream, revision, id, type, data, meta)
`

const unnestRows = `unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::bytea[], $7::bytea[])`

// queueWrites queues the end of a group's transaction into b: the INSERT
// of its rows by the statement insert, the riders' statements, NOTIFY and
// COMMIT. It returns each rider's value, valid once b's batch succeeded.
func queueWrites(b *pgx.Batch, insert string, rows newRows, riders []*Rider, instance string) []bool {
	b.Queue(insert, rows.pos, rows.stream, rows.rev, rows.id, rows.typ, rows.data, rows.meta)
	results := queueRiders(b, riders)
	b.Queue(`SELECT pg_notify($1, $2)`, channel, instance)
	b.Queue(`COMMIT`)
	return results
}

// sendAndCommit sends b, which ends with COMMIT, and reads every result.
func sendAndCommit(ctx context.Context, conn *pgx.Conn, b *pgx.Batch) error {
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	// A COMMIT of a transaction that failed in the pipeline is not sent
	// (the server skips to the batch's end): only an idle connection
	// committed.
	if st := conn.PgConn().TxStatus(); st != 'I' {
		return fmt.Errorf("transaction still open after COMMIT (status %q)", st)
	}
	return nil
}

// ReadStream implements events.Store.
func (s *Store) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]events.Recorded, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	lim := int64(-1)
	if limit > 0 {
		lim = int64(limit)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+columns+` FROM es_events
WHERE stream = $1 AND revision >= $2 ORDER BY revision LIMIT CASE WHEN $3::bigint < 0 THEN NULL ELSE $3::bigint END`,
		stream, clamp(from), lim)
	if err != nil {
		return nil, s.wrap("read "+stream, err)
	}
	out, err := collect(rows)
	if err != nil {
		return nil, s.wrap("read "+stream, err)
	}
	return out, nil
}

// ReadAll implements events.Store; limit <= 0 reads to the end.
func (s *Store) ReadAll(ctx context.Context, after events.Position, limit int) ([]events.Recorded, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	lim := int64(-1)
	if limit > 0 {
		lim = int64(limit)
	}
	rows, err := s.pool.Query(ctx, readAllQuery, startAfter(after), lim)
	if err != nil {
		return nil, s.wrap("read all", err)
	}
	out, err := collect(rows)
	if err != nil {
		return nil, s.wrap("read all", err)
	}
	return out, nil
}

// ReadPositions implements events.PositionReader: one query for every
// position (an event's position is its Commit and its Prepare alike; a
// position of another form holds none).
func (s *Store) ReadPositions(ctx context.Context, positions []events.Position) ([]events.Recorded, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	out := make([]events.Recorded, len(positions))
	want := make([]int64, 0, len(positions))
	for _, pos := range positions {
		if pos.Commit == pos.Prepare && pos.Commit > 0 && pos.Commit <= 1<<62 {
			want = append(want, int64(pos.Commit))
		}
	}
	if len(want) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, readPositionsQuery, want)
	if err != nil {
		return nil, s.wrap("read positions", err)
	}
	recs, err := collect(rows)
	if err != nil {
		return nil, s.wrap("read positions", err)
	}
	at := make(map[events.Position]events.Recorded, len(recs))
	for _, rec := range recs {
		at[rec.Position] = rec
	}
	seen := make(map[events.Position]bool, len(recs))
	for i, pos := range positions {
		rec, ok := at[pos]
		if !ok {
			continue
		}
		if seen[pos] { // a repeat: bytes of its own
			rec.Data, rec.Meta = bytes.Clone(rec.Data), bytes.Clone(rec.Meta)
		}
		seen[pos], out[i] = true, rec
	}
	return out, nil
}

// Head implements events.Store: positions are visible in order, so the
// largest one visible is the last event and nothing below it is missing.
func (s *Store) Head(ctx context.Context) (events.Position, error) {
	if err := s.usable(ctx); err != nil {
		return events.Position{}, err
	}
	var head int64
	if err := s.pool.QueryRow(ctx, HeadQuery).Scan(&head); err != nil {
		return events.Position{}, s.wrap("head", err)
	}
	return position(head), nil
}

// SubscribeAll implements events.Store: catch up in pages by position, then
// wait for a notification (or the poll interval) and read on. The pages are
// read through the shared reader (reads.go).
func (s *Store) SubscribeAll(ctx context.Context, after events.Position) (events.Subscription, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	return tail.SubscribeExact(ctx, after, s.readShared, s.notify), nil
}

// Close implements events.Store; subscriptions end with events.ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.queue.Close() // the committer finishes what is queued, then stops
		s.stopListen()
		s.listening.Wait()
		s.notify.Close()
		s.pool.Close()
	})
	return nil
}

// listen wakes subscribers on every NOTIFY from any process, on every
// reconnect (notifications may have been lost meanwhile) and every pollEvery.
func (s *Store) listen(ctx context.Context) {
	defer s.listening.Done()
	for ctx.Err() == nil {
		conn, err := s.pool.Acquire(ctx)
		if err == nil {
			_, err = conn.Exec(ctx, `LISTEN `+channel)
		}
		// Every wake but the echo of an own commit drops the run of own
		// commits before it wakes anyone (recent.go).
		s.recent.setListening(err == nil)
		s.notify.Notify()
		for err == nil {
			wctx, cancel := context.WithTimeout(ctx, pollEvery)
			var n *pgconn.Notification
			n, err = conn.Conn().WaitForNotification(wctx)
			cancel()
			if err == nil && n.Payload == s.instance {
				continue // this Store's own append: its committer woke everyone
			}
			s.recent.drop()
			s.notify.Notify()
			if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				err = nil
			}
		}
		s.recent.setListening(false)
		if conn != nil {
			// The connection may be mid-wait: never hand it back to the pool.
			_ = conn.Hijack().Close(context.Background())
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (s *Store) usable(ctx context.Context) error {
	if s.queue.Closed() {
		return events.ErrClosed
	}
	return ctx.Err()
}

// wrap keeps conflicts and closing recognisable through the context added.
func (s *Store) wrap(op string, err error) error {
	var ce *events.ConflictError
	switch {
	case errors.As(err, &ce):
		return err
	case s.queue.Closed():
		return fmt.Errorf("events/postgres: %s: %w", op, events.ErrClosed)
	default:
		return fmt.Errorf("events/postgres: %s: %w", op, err)
	}
}

const columns = `position, stream, revision, id, type, data, meta, created`

// readAllQuery reads from a position on ($1), at most $2 events (all if < 0).
const readAllQuery = `SELECT ` + columns + ` FROM es_events
WHERE position >= $1 ORDER BY position LIMIT CASE WHEN $2::bigint < 0 THEN NULL ELSE $2::bigint END`

// readPositionsQuery reads the events at the positions of $1.
const readPositionsQuery = `SELECT ` + columns + ` FROM es_events WHERE position = ANY($1::bigint[])`

// startAfter is the first position strictly after after.
func startAfter(after events.Position) int64 {
	start := clamp(after.Commit) + 1
	if after.Prepare < after.Commit {
		start--
	}
	return start
}

func collect(rows pgx.Rows) ([]events.Recorded, error) {
	out := []events.Recorded{}
	var (
		pos, rev int64
		r        events.Recorded
	)
	_, err := pgx.ForEachRow(rows, []any{&pos, &r.Stream, &rev, &r.ID, &r.Type, &r.Data, &r.Meta, &r.Created}, func() error {
		rec := r
		rec.Position, rec.Revision, rec.Created = position(pos), uint64(rev), r.Created.UTC()
		out = append(out, rec)
		r.Data, r.Meta = nil, nil
		return nil
	})
	return out, err
}

// HeadQuery is the statement Head runs (one bigint, PositionAt converts
// it), for a read model in the same database that reads the head in the
// round trip of its own query (projections/postgres.Store.SeeHead).
const HeadQuery = `SELECT coalesce(max(position), 0) FROM es_events`

// HeadOfTypesQuery is HeadQuery over the events of the given types only,
// one index probe per type (es_events_type_position): the position a read
// model that applies only those types must have reached for its rows to
// reflect every event the log holds for it, whatever else is appended
// meanwhile. Types are registry names, quoted here as SQL literals; none
// gives 0. Each probe bounds the type by a range, not an equality, and
// orders by (type, position): only that index yields this order, so the
// planner descends it, rather than (not knowing which type a probe looks
// for) walking the primary key backwards filtering on type, which for a
// type the log holds only early reads the whole log after it.
func HeadOfTypesQuery(types []string) string {
	quoted := make([]string, len(types))
	for i, t := range types {
		quoted[i] = "'" + strings.ReplaceAll(t, "'", "''") + "'"
	}
	return `SELECT coalesce(max(m.position), 0) FROM unnest(ARRAY[` + strings.Join(quoted, ", ") + `]::text[]) AS w(type),
LATERAL (SELECT e.position FROM es_events e WHERE e.type >= w.type AND e.type <= w.type
    ORDER BY e.type DESC, e.position DESC LIMIT 1) AS m`
}

// PositionAt is the position of the event at the log's position column p.
func PositionAt(p int64) events.Position { return position(p) }

func position(p int64) events.Position {
	return events.Position{Commit: uint64(p), Prepare: uint64(p)}
}

// clamp keeps a uint64 from the caller inside bigint.
func clamp(n uint64) int64 {
	if n > 1<<62 {
		return 1 << 62
	}
	return int64(n)
}
