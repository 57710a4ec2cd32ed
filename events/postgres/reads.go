package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/events"
)

// Shared subscription reads. A node runs a score of followers (every
// read model, the directories, the dispatcher, the relay), and each
// commit wakes all of them at once: read alone, each would send its own
// "position >= p" query for the same few rows, about twenty per commit.
// Instead their reads queue for one reader goroutine that sends everything
// queued meanwhile in one round trip, one query per distinct (start, limit),
// so followers that are caught up share one query. Each read is sent after
// it was queued, so it is never staler than a read of its own would be: a
// follower woken by a notification still sees the commit that woke it.

// readGather is how long the first read of a group waits for the other
// followers the same commit woke: they ask within a moment of each other,
// and each round trip is a Postgres transaction (without the wait a
// commit cost about five).
const readGather = time.Millisecond

// maxReadGroup bounds how many reads share one round trip.
const maxReadGroup = 256

// readTimeout bounds one round trip of shared reads.
const readTimeout = 30 * time.Second

// readReq is one queued subscription read and, once done is closed, its
// answer.
type readReq struct {
	start int64 // the first position wanted
	limit int64 // > 0
	recs  []events.Recorded
	err   error
	done  chan struct{}
}

// readShared is the subscriptions' ReadFunc: ReadAll through the shared reader.
func (s *Store) readShared(ctx context.Context, after events.Position, limit int) ([]events.Recorded, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return s.ReadAll(ctx, after, limit)
	}
	r := &readReq{start: startAfter(after), limit: int64(limit), done: make(chan struct{})}
	select {
	case s.reads <- r:
	case <-s.readsDone:
		return nil, events.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-r.done:
	case <-s.readsDone: // closing: the reader may have stopped before this read
		return nil, events.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err() // the answer is dropped: reads change nothing
	}
	if r.err != nil {
		return nil, s.wrap("read all", r.err)
	}
	return r.recs, nil
}

// readLoop serves queued reads until ctx ends.
func (s *Store) readLoop(ctx context.Context) {
	defer s.listening.Done()
	group := make([]*readReq, 0, maxReadGroup)
	for {
		var first *readReq
		select {
		case first = <-s.reads:
		case <-ctx.Done():
			return
		}
		group = append(group[:0], first)
		gather := time.NewTimer(readGather)
	collect:
		for len(group) < maxReadGroup {
			select {
			case r := <-s.reads:
				group = append(group, r)
			case <-gather.C:
				break collect
			}
		}
		gather.Stop()
		s.readGroup(ctx, group)
		for i, r := range group {
			close(r.done)
			group[i] = nil
		}
	}
}

// readKey is what makes two reads the same query.
type readKey struct{ start, limit int64 }

// readGroup answers every read of group in one round trip.
func (s *Store) readGroup(ctx context.Context, group []*readReq) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	var keys []readKey
	answers := map[readKey][]events.Recorded{}
	b := &pgx.Batch{}
	for _, r := range group {
		k := readKey{r.start, r.limit}
		if _, ok := answers[k]; ok {
			continue
		}
		// This node's own latest commits are answered from memory
		// (recent.go), after the same gathering wait as a query, so that
		// followers still take what committed meanwhile in one page.
		if recs, ok := s.recent.read(k.start, int(k.limit)); ok {
			answers[k] = recs
			continue
		}
		answers[k] = nil
		keys = append(keys, k)
		b.Queue(readAllQuery, k.start, k.limit)
	}
	if len(keys) == 0 {
		for _, r := range group {
			r.recs = append([]events.Recorded(nil), answers[readKey{r.start, r.limit}]...)
		}
		return
	}
	s.dbReads.Add(1)
	err := func() error {
		br := s.pool.SendBatch(ctx, b)
		for _, k := range keys {
			rows, err := br.Query()
			if err != nil {
				_ = br.Close()
				return err
			}
			recs, err := collect(rows)
			if err != nil {
				_ = br.Close()
				return err
			}
			answers[k] = recs
		}
		return br.Close()
	}()
	for _, r := range group {
		if err != nil {
			r.err = fmt.Errorf("shared read: %w", err)
			continue
		}
		// Each subscription gets its own slice (it clears entries it has
		// handed out); the events' bytes are shared and never written.
		r.recs = append([]events.Recorded(nil), answers[readKey{r.start, r.limit}]...)
	}
}
