package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/internal/tail"
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

// readGroup answers every read of group in one round trip. A read of a
// page (tail.PageSize events) is answered from the aligned pages that
// hold it (alignedPages), fetched once for every read that needs them.
func (s *Store) readGroup(ctx context.Context, group []*readReq) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	var keys []readKey
	answers := map[readKey][]events.Recorded{}
	// fetched holds what this round trip read, by query.
	fetched := map[readKey][]events.Recorded{}
	queued := map[readKey]bool{}
	b := &pgx.Batch{}
	need := func(k readKey) {
		if queued[k] {
			return
		}
		if recs, ok := s.pages.get(k); ok {
			fetched[k] = recs
			return
		}
		queued[k] = true
		keys = append(keys, k)
		b.Queue(readAllQuery, k.start, k.limit)
	}
	var paged []readKey // reads answered from aligned pages
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
		if first, second, ok := alignedPages(k); ok {
			paged = append(paged, k)
			need(first)
			if second != (readKey{}) {
				need(second)
			}
			continue
		}
		need(k)
	}
	var err error
	if len(keys) > 0 {
		s.dbReads.Add(1)
		err = func() error {
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
				fetched[k] = recs
				s.pages.put(k, recs)
			}
			return br.Close()
		}()
	}
	if err == nil {
		for k, recs := range fetched {
			if _, asked := answers[k]; asked {
				answers[k] = recs
			}
		}
		for _, k := range paged {
			answers[k] = fromPages(k, fetched)
		}
	}
	for _, r := range group {
		if err != nil {
			r.err = fmt.Errorf("shared read: %w", err)
			continue
		}
		// Each subscription gets its own slice; the events' bytes are
		// shared and never written.
		r.recs = append([]events.Recorded(nil), answers[readKey{r.start, r.limit}]...)
	}
}

// alignedPages names the pages of the log that hold a read of one page
// from k.start: the aligned page (positions 1-256, 257-512, ...) holding
// k.start and, unless k.start begins it, the next one. ok is false for a
// read of another size.
func alignedPages(k readKey) (first, second readKey, ok bool) {
	if k.limit != tail.PageSize || k.start < 1 {
		return readKey{}, readKey{}, false
	}
	first = readKey{(k.start-1)/k.limit*k.limit + 1, k.limit}
	if first.start != k.start {
		second = readKey{first.start + k.limit, k.limit}
	}
	return first, second, true
}

// fromPages cuts the read k out of its aligned pages (alignedPages):
// the events of the first from k.start on, then those of the second
// past them, at most k.limit. A full page holds every position from its
// start to its last event (positions are distinct and visible in order),
// so the two cover every position from k.start to the second's last; a
// short page reached the log's head, and nothing follows it.
func fromPages(k readKey, fetched map[readKey][]events.Recorded) []events.Recorded {
	first, second, _ := alignedPages(k)
	out := make([]events.Recorded, 0, k.limit)
	next := uint64(k.start) // the lowest position still to take
	for _, page := range [][]events.Recorded{fetched[first], fetched[second]} {
		for _, rec := range page {
			if int64(len(out)) == k.limit {
				return out
			}
			if rec.Position.Commit >= next {
				out = append(out, rec)
				next = rec.Position.Commit + 1
			}
		}
		if int64(len(page)) < k.limit {
			break // the head
		}
	}
	return out
}

// Catch-up pages. Read models replaying together (a rebuild, a start far
// behind) read the same pages of the log within a few thousand events of
// each other (events/subscribe paces a rebuild's members), each page
// after the others' read of it had already gone: every rebuilt read model
// fetched and decoded the whole log itself. A full page is final (the
// positions it holds were all visible, and nothing is ever inserted below
// a visible position), so the reader keeps the last full pages it read
// and answers the same read again from them.

// maxPages bounds the catch-up pages kept (8,192 events, like the pace
// window's reach in events/subscribe).
const maxPages = 32

// pageCache is the last full pages the shared reader read, by their
// read; only the reader goroutine uses it.
type pageCache struct {
	pages map[readKey][]events.Recorded
	order []readKey // oldest first
}

func (c *pageCache) get(k readKey) ([]events.Recorded, bool) {
	recs, ok := c.pages[k]
	return recs, ok
}

// put keeps a page that holds as many events as its read asked for (a
// shorter one reached the head, which may still grow).
func (c *pageCache) put(k readKey, recs []events.Recorded) {
	if k.limit <= 0 || int64(len(recs)) != k.limit {
		return
	}
	if c.pages == nil {
		c.pages = make(map[readKey][]events.Recorded, maxPages)
	}
	if _, ok := c.pages[k]; ok {
		return
	}
	c.pages[k] = recs
	c.order = append(c.order, k)
	if len(c.order) > maxPages {
		delete(c.pages, c.order[0])
		c.order = c.order[1:]
	}
}
