package postgres

import (
	"context"
	"fmt"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/internal/tail"
)

// Followers that handle few of the log's events (the app and operator
// directories, rebuilt in memory at every start) would otherwise read the
// whole log at each start to find them: a million events is tens of
// seconds of rows fetched only to be skipped. SubscribeAllFor lets such a
// follower jump over a stretch holding none of its types: when a page of
// the ordinary shared read is full and holds nothing the follower wants,
// the subscription asks, through the (type, position) index, where the
// next event of a wanted type is, and delivers the event just before it
// (or the head) in place of the stretch. That event is of a type the
// follower ignores, so it only moves the follower's position, as every
// skipped event did; positions are gapless, so it exists. A follower near
// the head, or one whose pages hold events it wants, reads exactly as
// through SubscribeAll, sharing the reads of every other follower.

// typesQuery lists the types the log holds with a loose scan of the
// (type, position) index (one probe per type, whatever the log's length),
// and the head, in one snapshot: an event at or below that head is of one
// of those types.
const typesQuery = `WITH RECURSIVE t(type) AS (
    (SELECT type FROM es_events ORDER BY type LIMIT 1)
  UNION ALL
    SELECT (SELECT e.type FROM es_events e WHERE e.type > t.type ORDER BY e.type LIMIT 1) FROM t WHERE t.type IS NOT NULL
)
SELECT (` + HeadQuery + `), coalesce(array_agg(type) FILTER (WHERE type IS NOT NULL), '{}') FROM t`

// nextOfQuery is the first position in [$2, $3] holding one of the types
// $1, by one descent of the (type, position) index per type. As in
// HeadOfTypesQuery, each probe is written so that only that index serves
// it: the start is a row comparison on (type, position), the order is
// (type, position), and the head bounds the probes' results outside them.
// With the type and position bounded column by column, the planner (not
// knowing which type a probe looks for, and taking a range of positions
// for a small share of the log) walked the primary key forward from $2
// filtering on type, which for a type the log holds only early (the
// directories' app and operator events) reads every event after $2, once
// per type, on every skip.
const nextOfQuery = `SELECT min(n.position) FROM unnest($1::text[]) AS w(type),
LATERAL (SELECT e.position FROM es_events e WHERE (e.type, e.position) >= (w.type, $2::bigint) AND e.type <= w.type
         ORDER BY e.type, e.position LIMIT 1) AS n
WHERE n.position <= $3`

// atQuery reads the event at one position.
const atQuery = `SELECT ` + columns + ` FROM es_events WHERE position = $1`

// SubscribeAllFor is SubscribeAll for a follower that handles only the
// event types wants accepts: it may deliver, in place of a stretch of
// events none of which wants accepts, only the last event of the stretch.
// Every event wants accepts is delivered, in order.
func (s *Store) SubscribeAllFor(ctx context.Context, after events.Position, wants func(eventType string) bool) (events.Subscription, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	return tail.SubscribeExact(ctx, after, s.readSkipping(wants), s.notify), nil
}

// readSkipping is the ReadFunc of SubscribeAllFor.
func (s *Store) readSkipping(wants func(string) bool) tail.ReadFunc {
	return func(ctx context.Context, after events.Position, limit int) ([]events.Recorded, error) {
		page, err := s.readShared(ctx, after, limit)
		if err != nil || limit <= 0 || len(page) < limit {
			return page, err // at or near the head: nothing worth skipping
		}
		for _, rec := range page {
			if wants(rec.Type) {
				return page, nil
			}
		}
		last := page[len(page)-1]
		jump, err := s.skipFrom(ctx, startAfter(last.Position), wants)
		if err != nil || jump.ID == "" {
			return page, err
		}
		// The page from the jump on, so that a page shorter than limit
		// still means the log's end (tail.SubscribeExact).
		return s.readShared(ctx, position(int64(jump.Position.Commit)-1), limit)
	}
}

// skipFrom returns the event just before the first one at or after start
// whose type wants accepts, or the head's when there is none; zero when
// that is before start (nothing to skip).
func (s *Store) skipFrom(ctx context.Context, start int64, wants func(string) bool) (events.Recorded, error) {
	var (
		head  int64
		types []string
	)
	if err := s.pool.QueryRow(ctx, typesQuery).Scan(&head, &types); err != nil {
		return events.Recorded{}, s.wrap("read all: types", err)
	}
	var wanted []string
	for _, t := range types {
		if wants(t) {
			wanted = append(wanted, t)
		}
	}
	to := head
	if len(wanted) > 0 {
		var next *int64
		if err := s.pool.QueryRow(ctx, nextOfQuery, wanted, start, head).Scan(&next); err != nil {
			return events.Recorded{}, s.wrap("read all: next wanted", err)
		}
		if next != nil {
			to = *next - 1
		}
	}
	if to < start {
		return events.Recorded{}, nil
	}
	rows, err := s.pool.Query(ctx, atQuery, to)
	if err != nil {
		return events.Recorded{}, s.wrap("read all: skip", err)
	}
	recs, err := collect(rows)
	if err != nil {
		return events.Recorded{}, s.wrap("read all: skip", err)
	}
	if len(recs) != 1 {
		return events.Recorded{}, s.wrap("read all: skip", fmt.Errorf("no event at position %d below the head %d", to, head))
	}
	return recs[0], nil
}
