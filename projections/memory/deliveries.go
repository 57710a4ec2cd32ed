package memory

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/projections"
)

// Listing limits of Deliveries and Due, as the Postgres store applies them.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

// deliveryIndexes holds the deliveries and every index their reads use, so
// that the feed, the dispatcher's Due and the metrics never scan all rows.
//
// Deliveries are created in log order, so the cursor-ordered slices (and the
// source positions) grow by appends; a rolled-back Update removes from their
// tails. Updates of a delivery keep its cursor and source, and only touch
// the due heap, which is O(log n) whatever the key. The feeds and the
// subjects index hold a delivery's place in the table (4 bytes, nothing
// for the collector to follow) rather than its id.
type deliveryIndexes struct {
	deliveries deliveryTable                    // in log order, by DeliveryID
	attempts   map[string][]projections.Attempt // by DeliveryID, ordered by Attempt
	feed       []uint32                         // every delivery's place, ordered by feedKey
	appFeed    map[int64][]uint32               // per app, ordered by feedKey
	due        appDue                           // pending or retrying with a NextAttemptAt, per app
	statuses   map[string]int                   // status -> deliveries
	sources    []sourceCount                    // distinct SourcePositions, ascending
	subjects   map[string]*subjectRows          // non-empty subjects only
	eventTypes eventTypes                       // the rows' event types, numbered
}

func newDeliveryIndexes() deliveryIndexes {
	return deliveryIndexes{
		deliveries: newDeliveryTable(0),
		attempts:   map[string][]projections.Attempt{},
		appFeed:    map[int64][]uint32{},
		due:        appDue{apps: map[int64]*dueHeap{}},
		statuses:   map[string]int{},
		subjects:   map[string]*subjectRows{},
		eventTypes: newEventTypes(),
	}
}

// sourceCount is a source position and how many deliveries have it. A
// sorted slice rather than a map of counts beside a sorted slice of
// positions: deliveries are created in log order, so a new source is an
// append and a repeated one the last entry, and each source costs its 24
// bytes instead of those plus a map slot.
type sourceCount struct {
	pos events.Position
	n   int
}

func compareSource(a, b sourceCount) int { return comparePos(a.pos, b.pos) }

// subjectRows is the deliveries of one subject (user.erased blanks them):
// their places in the table, and the one copy of the subject's name that
// their rows share. The places are a slice while they are few, since a
// person has a handful of deliveries and a map of them costs a few hundred
// bytes; past subjectFewIDs they move to a set, so that blanking a subject
// of thousands (each removal one lookup) stays linear.
type subjectRows struct {
	subject string
	few     []uint32
	many    map[uint32]struct{}
}

const subjectFewIDs = 32

func (r *subjectRows) add(id uint32) {
	if r.many != nil {
		r.many[id] = struct{}{}
		return
	}
	r.few = append(r.few, id)
	if len(r.few) > subjectFewIDs {
		r.many = make(map[uint32]struct{}, 2*len(r.few))
		for _, id := range r.few {
			r.many[id] = struct{}{}
		}
		r.few = nil
	}
}

func (r *subjectRows) remove(id uint32) {
	if r.many != nil {
		delete(r.many, id)
		return
	}
	if i := slices.Index(r.few, id); i >= 0 {
		last := len(r.few) - 1
		r.few[i] = r.few[last]
		r.few = r.few[:last]
	}
}

func (r *subjectRows) len() int { return len(r.few) + len(r.many) }

// ids calls fn with each place, in no particular order.
func (r *subjectRows) ids(fn func(id uint32)) {
	for _, id := range r.few {
		fn(id)
	}
	for id := range r.many {
		fn(id)
	}
}

// initDeliveries empties the deliveries read model; a paged image of it
// being read then fails (paging.gen).
func (s *Store) initDeliveries() {
	s.deliveriesPaging.gen++
	s.deliveryIndexes = newDeliveryIndexes()
}

// feedKey orders the feed by Cursor; the log gives every delivery its own
// cursor, and the id only makes the order total should two ever tie (the
// Postgres store breaks ties the same way).
type feedKey struct {
	cursor events.Position
	id     string
}

func comparePos(a, b events.Position) int {
	if c := cmp.Compare(a.Commit, b.Commit); c != 0 {
		return c
	}
	return cmp.Compare(a.Prepare, b.Prepare)
}

func compareFeed(a, b feedKey) int {
	if c := comparePos(a.cursor, b.cursor); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// dueKey orders the dispatcher's queue: earliest NextAttemptAt, then feed order.
type dueKey struct {
	next time.Time
	feedKey
}

func compareDue(a, b dueKey) int {
	if c := a.next.Compare(b.next); c != 0 {
		return c
	}
	return compareFeed(a.feedKey, b.feedKey)
}

func feedKeyOf(d projections.Delivery) feedKey { return feedKey{d.Cursor, d.DeliveryID} }

// searchFeed is where k is or would be in feed, a feed of places.
func (s *Store) searchFeed(feed []uint32, k feedKey) (int, bool) {
	return slices.BinarySearchFunc(feed, k, func(i uint32, k feedKey) int { return s.deliveries.at(i).compareFeed(k) })
}

// insertFeed adds place i, whose row's key is k, to feed unless present;
// appends are the common case.
func (s *Store) insertFeed(feed []uint32, i uint32, k feedKey) []uint32 {
	if n := len(feed); n == 0 || s.deliveries.at(feed[n-1]).compareFeed(k) < 0 {
		return append(feed, i)
	}
	at, found := s.searchFeed(feed, k)
	if found {
		return feed
	}
	return slices.Insert(feed, at, i)
}

// removeFeed takes the place whose row's key is k out of feed.
func (s *Store) removeFeed(feed []uint32, k feedKey) []uint32 {
	at, found := s.searchFeed(feed, k)
	if !found {
		return feed
	}
	return slices.Delete(feed, at, at+1)
}

// dueKeyOf reports whether d belongs in the due queue, and where.
func dueKeyOf(d projections.Delivery) (dueKey, bool) {
	if d.NextAttemptAt == nil || (d.Status != domain.DeliveryPending && d.Status != domain.DeliveryRetrying) {
		return dueKey{}, false
	}
	return dueKey{*d.NextAttemptAt, feedKeyOf(d)}, true
}

// dueHeap is a min-heap of due keys that also knows where each delivery
// sits, so a reschedule or a completed delivery is O(log n). Each key's
// index lives in a cell of its own that the map and the heap share: a
// swap writes two cells rather than hashing two delivery ids into the
// map (an outcome's removal from a drain's heap of thousands made a
// dozen swaps, a visible part of projecting it).
type dueHeap struct {
	keys []dueKey
	pos  []*int          // pos[i] is the index cell of keys[i]
	at   map[string]*int // DeliveryID -> its index cell
	// spare holds the cells of keys taken out, for the next keys put in:
	// a node that keeps up puts each delivery in and takes it out again.
	spare []*int
}

func (h *dueHeap) Len() int           { return len(h.keys) }
func (h *dueHeap) Less(i, j int) bool { return compareDue(h.keys[i], h.keys[j]) < 0 }
func (h *dueHeap) Swap(i, j int) {
	h.keys[i], h.keys[j] = h.keys[j], h.keys[i]
	h.pos[i], h.pos[j] = h.pos[j], h.pos[i]
	*h.pos[i], *h.pos[j] = i, j
}

// Push and Pop are container/heap's; set puts and takes keys with push and
// remove, which do not box a key into an interface.
func (h *dueHeap) Push(x any) { h.add(x.(dueKey)) }
func (h *dueHeap) Pop() any {
	k := h.keys[len(h.keys)-1]
	h.dropLast()
	return k
}

// add appends k at the end of the heap's slice, not yet in heap order.
func (h *dueHeap) add(k dueKey) {
	var cell *int
	if n := len(h.spare); n > 0 {
		cell, h.spare = h.spare[n-1], h.spare[:n-1]
	} else {
		cell = new(int)
	}
	*cell = len(h.keys)
	h.at[k.id] = cell
	h.keys = append(h.keys, k)
	h.pos = append(h.pos, cell)
}

// dropLast takes the last key of the heap's slice out.
func (h *dueHeap) dropLast() {
	n := len(h.keys) - 1
	delete(h.at, h.keys[n].id)
	h.spare = append(h.spare, h.pos[n])
	h.keys[n] = dueKey{}
	h.pos[n] = nil
	h.keys, h.pos = h.keys[:n], h.pos[:n]
}

// set puts id in the queue at k, or takes it out when !in.
func (h *dueHeap) set(id string, k dueKey, in bool) {
	cell, had := h.at[id]
	switch {
	case had && in:
		h.keys[*cell] = k
		heap.Fix(h, *cell)
	case had:
		i, last := *cell, len(h.keys)-1
		if i != last {
			h.Swap(i, last)
		}
		h.dropLast()
		if i != last {
			heap.Fix(h, i)
		}
	case in:
		h.add(k)
		heap.Fix(h, len(h.keys)-1)
	}
}

// appDue is the due queue as one heap per app, so that Due never reads
// the queue of an app the dispatcher cannot send to now (suspended,
// breaker open): with one heap for all, every scan walked past each of
// such an app's due rows, and a suspended app's backlog of thousands made
// every pass of the sender cost thousands of heap steps (half the CPU of a
// bulk resend of 4,000 deliveries of a suspended app, BenchmarkBulkResend).
// An app's heap leaves apps once empty, so that first and Due walk only
// the apps with something due; the emptied heaps are kept in spare for
// the next app that has, with their map and slices.
type appDue struct {
	apps  map[int64]*dueHeap
	spare []*dueHeap
}

// maxSpareHeaps bounds the emptied heaps kept: enough for the apps whose
// deliveries come and go between two scans of the sender.
const maxSpareHeaps = 64

// set puts id, a delivery of appID, in the queue at k, or takes it out when !in.
func (q *appDue) set(appID int64, id string, k dueKey, in bool) {
	h := q.apps[appID]
	if h == nil {
		if !in {
			return
		}
		if n := len(q.spare); n > 0 {
			h, q.spare = q.spare[n-1], q.spare[:n-1]
		} else {
			h = &dueHeap{at: map[string]*int{}}
		}
		q.apps[appID] = h
	}
	h.set(id, k, in)
	if h.Len() == 0 {
		delete(q.apps, appID)
		if len(q.spare) < maxSpareHeaps {
			q.spare = append(q.spare, h)
		}
	}
}

// first is the earliest key of any app, O(apps).
func (q *appDue) first() (dueKey, bool) {
	var best dueKey
	found := false
	for _, h := range q.apps {
		if k := h.keys[0]; !found || compareDue(k, best) < 0 {
			best, found = k, true
		}
	}
	return best, found
}

// dueRef is one key of one app's due heap.
type dueRef struct {
	h *dueHeap
	i int
}

func (r dueRef) key() *dueKey { return &r.h.keys[r.i] }

// frontier is the best-first walk over the apps' due heaps that lists
// their keys in order without disturbing them: O((apps + k) log) for the
// first k. It is a min-heap of references into the due heaps, written out
// rather than through container/heap: the sender's scans walk past the
// hundreds of rows it already holds at the head of the due order, and
// container/heap's interface calls and boxed ints were most of Due's CPU
// (profile of BenchmarkWebhookDrain).
type frontier struct {
	idx []dueRef
}

func (f *frontier) less(i, j int) bool { return compareDue(*f.idx[i].key(), *f.idx[j].key()) < 0 }

// push adds the key r.
func (f *frontier) push(r dueRef) {
	f.idx = append(f.idx, r)
	for j := len(f.idx) - 1; j > 0; {
		parent := (j - 1) / 2
		if !f.less(j, parent) {
			break
		}
		f.idx[j], f.idx[parent] = f.idx[parent], f.idx[j]
		j = parent
	}
}

// pop removes and returns the earliest key on the frontier.
func (f *frontier) pop() dueRef {
	top := f.idx[0]
	n := len(f.idx) - 1
	f.idx[0] = f.idx[n]
	f.idx = f.idx[:n]
	for j := 0; ; {
		l := 2*j + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && f.less(r, l) {
			m = r
		}
		if !f.less(m, j) {
			break
		}
		f.idx[j], f.idx[m] = f.idx[m], f.idx[j]
		j = m
	}
	return top
}

// setDelivery replaces cur (if had) by next (if keep) in the rows and every
// index; the undo of a write is the same call with the sides swapped. A
// replaced row keeps its place; a new one is added after the last.
func (s *Store) setDelivery(cur projections.Delivery, had bool, next projections.Delivery, keep, bodyOwned bool) {
	same := had && keep
	id := cur.DeliveryID
	if keep {
		id = next.DeliveryID
	}
	s.deliveriesCOW.keep(id, s.deliveries.row)
	at, _ := s.deliveries.place(id)
	moved := !same || cur.AppID != next.AppID || cur.Cursor != next.Cursor
	// Out of the feeds while the row still holds cur: the feeds are
	// searched by their rows' keys.
	if had && moved {
		k := feedKeyOf(cur)
		s.feed = s.removeFeed(s.feed, k)
		if app := s.removeFeed(s.appFeed[cur.AppID], k); len(app) == 0 {
			delete(s.appFeed, cur.AppID)
		} else {
			s.appFeed[cur.AppID] = app
		}
	}
	if !same || cur.Status != next.Status {
		if had {
			s.countStatus(cur.Status, -1)
		}
		if keep {
			s.countStatus(next.Status, 1)
		}
	}
	if !same || cur.SourcePosition != next.SourcePosition {
		if had {
			s.refSource(cur.SourcePosition, -1)
		}
		if keep {
			s.refSource(next.SourcePosition, 1)
		}
	}
	resubject := !same || cur.Subject != next.Subject
	if had && resubject && cur.Subject != "" {
		if r := s.subjects[cur.Subject]; r != nil {
			if r.remove(at); r.len() == 0 {
				delete(s.subjects, cur.Subject)
			}
		}
	}
	switch {
	case had && keep:
		*s.deliveries.at(at) = packDelivery(s.logged(next), &s.eventTypes, s.subjectOf(next.Subject), bodyOwned)
	case keep:
		at = s.deliveries.add(packDelivery(s.logged(next), &s.eventTypes, s.subjectOf(next.Subject), bodyOwned))
	case had:
		s.deliveries.remove(at)
	}
	if keep && resubject && next.Subject != "" {
		s.subjects[next.Subject].add(at)
	}
	if keep && moved {
		k := feedKeyOf(next)
		s.feed = s.insertFeed(s.feed, at, k)
		s.appFeed[next.AppID] = s.insertFeed(s.appFeed[next.AppID], at, k)
	}
	k, in := dueKeyOf(next)
	appID := cur.AppID
	if keep {
		appID = next.AppID
		if had && cur.AppID != appID { // moved to another app: out of its old queue
			s.due.set(cur.AppID, id, dueKey{}, false)
		}
	}
	s.due.set(appID, id, k, keep && in)
}

// restate replaces the row of delivery id at place at by next, which
// differs from it in its state alone (withState), and returns the row it
// replaced; the undo is the same call with that row.
func (s *Store) restate(id string, at uint32, next deliveryRow) deliveryRow {
	s.deliveriesCOW.keep(id, s.deliveries.row)
	r := s.deliveries.at(at)
	prev := *r
	was, is := r.head(&s.eventTypes), next.head(&s.eventTypes)
	if was.Status != is.Status {
		s.countStatus(was.Status, -1)
		s.countStatus(is.Status, 1)
	}
	*r = next
	is.DeliveryID = id
	k, in := dueKeyOf(is)
	s.due.set(r.appID, id, k, in)
	return prev
}

func (s *Store) countStatus(status string, d int) {
	if n := s.statuses[status] + d; n > 0 {
		s.statuses[status] = n
	} else {
		delete(s.statuses, status)
	}
}

// subjectOf is the subject's entry, made if it has none; nil for no subject.
func (s *Store) subjectOf(subject string) *subjectRows {
	if subject == "" {
		return nil
	}
	r := s.subjects[subject]
	if r == nil {
		// A copy: subject may be a view of a bigger text (a restore's
		// decoded section) that the entry must not keep alive.
		r = &subjectRows{subject: strings.Clone(subject)}
		s.subjects[r.subject] = r
	}
	return r
}

func (s *Store) refSource(p events.Position, d int) {
	k := sourceCount{pos: p}
	i, found := len(s.sources)-1, false
	if i < 0 || s.sources[i].pos != p { // not the last one: search
		i, found = slices.BinarySearchFunc(s.sources, k, compareSource)
	} else {
		found = true
	}
	switch {
	case !found && d > 0:
		k.n = d
		s.sources = slices.Insert(s.sources, i, k)
	case !found:
	case s.sources[i].n+d <= 0:
		s.sources = slices.Delete(s.sources, i, i+1)
	default:
		s.sources[i].n += d
	}
}

// ---- reads ----

// feedEntry is the delivery at place i, the caller's own, if it passes f.
func (s *Store) feedEntry(i uint32, f domain.DeliveryFilter) (projections.Delivery, bool) {
	r := s.deliveries.at(i)
	if h := r.head(&s.eventTypes); !h.Matches(f) {
		return projections.Delivery{}, false
	}
	return r.read(r.deliveryID(), &s.eventTypes), true
}

// UpdateDeliveries shares Update's lock, undo log and checkpoints, so both projections replay alike.
func (s *Store) UpdateDeliveries(ctx context.Context, projection string, pos events.Position, fn func(projections.DeliveryTx) error) error {
	return s.update(ctx, &s.deliveriesMu, projection, pos, func(t *tx) error { return fn(t) })
}

// Delivery enforces tenancy here, in the lookup, so no caller can forget it (appID 0: operators).
func (s *Store) Delivery(ctx context.Context, appID int64, id string) (projections.Delivery, []projections.Attempt, error) {
	if err := ctx.Err(); err != nil {
		return projections.Delivery{}, nil, err
	}
	s.deliveriesMu.RLock()
	r, ok := s.deliveries.get(id)
	if !ok || (appID != 0 && r.appID != appID) {
		s.deliveriesMu.RUnlock()
		return projections.Delivery{}, nil, projections.ErrNotFound
	}
	as := make([]projections.Attempt, len(s.attempts[id]))
	for i, a := range s.attempts[id] {
		as[i] = copyAttempt(a)
	}
	d := []projections.Delivery{r.read(id, &s.eventTypes)}
	s.deliveriesMu.RUnlock()
	// A body in the log is read without the lock, which writers wait on.
	if err := s.fillBodies(ctx, d); err != nil {
		return projections.Delivery{}, nil, err
	}
	return d[0], as, nil
}

// Deliveries walks a cursor index from f.After, so a feed page costs its
// rows, not the log's; the bodies of the page's final deliveries are read
// from the log, one event each, once the page is listed (unless
// f.WithoutBodies: then they are nil).
func (s *Store) Deliveries(ctx context.Context, f domain.DeliveryFilter) ([]projections.Delivery, error) {
	out, err := s.listDeliveries(ctx, f)
	if err != nil || f.WithoutBodies {
		return out, err
	}
	if err := s.fillBodies(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// listDeliveries is Deliveries under the read lock, the bodies in the log
// left nil.
func (s *Store) listDeliveries(ctx context.Context, f domain.DeliveryFilter) ([]projections.Delivery, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit := clampLimit(f.Limit)
	from, to := normTime(f.From), normTime(f.To)
	s.deliveriesMu.RLock()
	defer s.deliveriesMu.RUnlock()
	keys := s.feed
	if f.AppID != 0 {
		keys = s.appFeed[f.AppID]
	}
	g := f
	g.From, g.To = from, to
	var out []projections.Delivery
	if f.Newest {
		// Walk down from the last key below f.Before (the end when zero).
		i := len(keys) - 1
		if f.Before != (events.Position{}) {
			i = sort.Search(len(keys), func(i int) bool { return comparePos(s.deliveries.at(keys[i]).cursorAt(), f.Before) >= 0 }) - 1
		}
		for ; i >= 0 && len(out) < limit; i-- {
			if d, ok := s.feedEntry(keys[i], g); ok {
				out = append(out, d)
			}
		}
		return out, nil
	}
	i := sort.Search(len(keys), func(i int) bool { return comparePos(s.deliveries.at(keys[i]).cursorAt(), f.After) > 0 })
	for ; i < len(keys) && len(out) < limit; i++ {
		if d, ok := s.feedEntry(keys[i], g); ok {
			out = append(out, d)
		}
	}
	return out, nil
}

func clampLimit(n int) int {
	switch {
	case n <= 0:
		return defaultLimit
	case n > maxLimit:
		return maxLimit
	}
	return n
}

// Due walks the apps' due heaps best-first, leaving out the skipped apps'
// heaps, so the dispatcher's frequent polls cost O((apps + limit) log)
// whatever the backlog of an app it cannot send to.
func (s *Store) Due(ctx context.Context, now time.Time, limit int, skipApps ...int64) ([]domain.DueDelivery, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = defaultLimit
	}
	now = normTime(now)
	s.deliveriesMu.RLock()
	defer s.deliveriesMu.RUnlock()
	var out []domain.DueDelivery
	f := &frontier{idx: make([]dueRef, 0, len(s.due.apps)+min(limit, 1024)+2)}
	// Many tenants' endpoints may be skipped at once (breakers open): a
	// set keeps this pass linear in the apps rather than apps × skipped.
	skip := func(id int64) bool { return slices.Contains(skipApps, id) }
	if len(skipApps) > 16 {
		set := make(map[int64]struct{}, len(skipApps))
		for _, id := range skipApps {
			set[id] = struct{}{}
		}
		skip = func(id int64) bool { _, ok := set[id]; return ok }
	}
	for appID, h := range s.due.apps {
		if !skip(appID) {
			f.push(dueRef{h, 0})
		}
	}
	for len(f.idx) > 0 && len(out) < limit {
		r := f.pop()
		k := r.key()
		if k.next.After(now) {
			break // every key left is later still
		}
		d, _ := s.deliveries.get(k.id)
		out = append(out, domain.DueDelivery{DeliveryID: k.id, AppID: d.appID, EndpointID: d.endpointID})
		for _, c := range [2]int{2*r.i + 1, 2*r.i + 2} {
			if c < r.h.Len() {
				f.push(dueRef{r.h, c})
			}
		}
	}
	return out, nil
}

// NextDue reads the apps' heap roots, so the dispatcher can sleep exactly until the next attempt.
func (s *Store) NextDue(ctx context.Context) (time.Time, bool, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, false, err
	}
	s.deliveriesMu.RLock()
	defer s.deliveriesMu.RUnlock()
	k, ok := s.due.first()
	return k.next, ok, nil
}

// CountByStatus copies counters the writes keep, so metrics never scan the deliveries.
func (s *Store) CountByStatus(ctx context.Context) (map[string]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.deliveriesMu.RLock()
	defer s.deliveriesMu.RUnlock()
	out := make(map[string]int, len(s.statuses))
	for k, v := range s.statuses {
		out[k] = v
	}
	return out, nil
}

// LastSource reads the top of the counted source positions, which survive replaces and rollbacks.
func (s *Store) LastSource(ctx context.Context) (events.Position, error) {
	if err := ctx.Err(); err != nil {
		return events.Position{}, err
	}
	s.deliveriesMu.RLock()
	defer s.deliveriesMu.RUnlock()
	if len(s.sources) == 0 {
		return events.Position{}, nil
	}
	return s.sources[len(s.sources)-1].pos, nil
}

// ---- writes ----

// Delivery reads a delivery as this transaction sees it, whatever its app.
func (t *tx) Delivery(ctx context.Context, id string) (projections.Delivery, error) {
	if err := t.check(ctx); err != nil {
		return projections.Delivery{}, err
	}
	r, ok := t.s.deliveries.get(id)
	if !ok {
		return projections.Delivery{}, projections.ErrNotFound
	}
	d := []projections.Delivery{r.read(id, &t.s.eventTypes)}
	if err := t.s.fillBodies(ctx, d); err != nil {
		return projections.Delivery{}, err
	}
	return d[0], nil
}

func (t *tx) SubjectDeliveries(ctx context.Context, subject string) ([]projections.Delivery, error) {
	if err := t.check(ctx); err != nil {
		return nil, err
	}
	var out []projections.Delivery
	if r := t.s.subjects[subject]; r != nil {
		r.ids(func(i uint32) {
			row := t.s.deliveries.at(i)
			out = append(out, row.read(row.deliveryID(), &t.s.eventTypes))
		})
	}
	return out, nil
}

func (t *tx) PutDelivery(ctx context.Context, d projections.Delivery) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	if !t.owned {
		d = copyDelivery(d)
	}
	normDeliveryTimes(&d)
	row, had := s.deliveries.get(d.DeliveryID)
	var old projections.Delivery
	if had {
		old = row.view(d.DeliveryID, &s.eventTypes)
	}
	s.setDelivery(old, had, d, true, t.owned)
	t.putUndo(d, old, had)
	return nil
}

// deliveryPut is one PutDelivery of a tx: the delivery written and the row
// it replaced (had).
type deliveryPut struct {
	put, old projections.Delivery
	had      bool
}

// putUndo records how to revert a PutDelivery. The two deliveries go into
// the tx's chunks, and the undo reads them from there, so neither goes to
// the heap on its own at every delivery a rebuild applies. A chunk
// is never grown, so an undo's slice of it stays valid; chunks double up
// to maxPutChunk, so a tx of one put (a live write) makes one of one.
func (t *tx) putUndo(put, old projections.Delivery, had bool) {
	if t.owned {
		return
	}
	n := len(t.puts)
	if n == 0 || len(t.puts[n-1]) == cap(t.puts[n-1]) {
		size := 1
		if n > 0 {
			size = min(2*cap(t.puts[n-1]), maxPutChunk)
		}
		t.puts, n = append(t.puts, make([]deliveryPut, 0, size)), n+1
	}
	chunk := append(t.puts[n-1], deliveryPut{put, old, had})
	t.puts[n-1] = chunk
	s, i := t.s, len(chunk)-1
	t.undo = append(t.undo, func() {
		p := &chunk[i]
		s.setDelivery(p.put, true, p.old, p.had, true) // old views a row's own body
	})
}

// maxPutChunk bounds a chunk of a tx's puts.
const maxPutChunk = 64

// UpdateDeliveryState replaces the row's state fields in place and keeps
// its body, id, positions and subject as they are, so that an outcome
// makes no copy of the body (Delivery and PutDelivery each make one): only
// the status counts and the due queue follow a change of state.
func (t *tx) UpdateDeliveryState(ctx context.Context, id string, fn func(st *projections.DeliveryState)) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	at, ok := s.deliveries.place(id)
	if !ok {
		return projections.ErrNotFound
	}
	r := s.deliveries.at(at)
	d := r.head(&s.eventTypes)
	st := d.State()
	st.Erased = r.erased()
	// fn replaces pointers, never writes through them: the row's own
	// pointees stay shared with a kept image and the undo.
	fn(&st)
	if st.NextAttemptAt != d.NextAttemptAt {
		st.NextAttemptAt = normTimePtr(st.NextAttemptAt)
	}
	if st.LastStatus != d.LastStatus {
		st.LastStatus = cloneIntPtr(st.LastStatus)
	}
	if st.LastError != d.LastError {
		st.LastError = cloneStr(st.LastError)
	}
	if st.LastErrorClass != d.LastErrorClass {
		st.LastErrorClass = cloneStr(st.LastErrorClass)
	}
	st.UpdatedAt = normTime(st.UpdatedAt)
	prev := s.restate(id, at, s.logBody(r.withState(st)))
	t.keepUndo(func() { s.restate(id, at, prev) })
	return nil
}

func (t *tx) AddAttempt(ctx context.Context, a projections.Attempt) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	a = normAttempt(a)
	old, had := s.attempts[a.DeliveryID]
	// A new slice, so the undo (and a paged image) can put the old one
	// back as it was.
	s.attemptsCOW.keepIn(s.attempts, a.DeliveryID)
	next := slices.Clone(old)
	i, found := slices.BinarySearchFunc(next, a.Attempt, func(x projections.Attempt, n int) int {
		return cmp.Compare(x.Attempt, n)
	})
	if found {
		next[i] = a
	} else {
		next = slices.Insert(next, i, a)
	}
	s.attempts[a.DeliveryID] = next
	t.undo = append(t.undo, func() {
		if had {
			s.attempts[a.DeliveryID] = old
		} else {
			delete(s.attempts, a.DeliveryID)
		}
	})
	return nil
}

// ClearExcerpts replaces the delivery's attempts by copies without excerpts.
func (t *tx) ClearExcerpts(ctx context.Context, id string) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	old, had := s.attempts[id]
	if !had {
		return nil
	}
	s.attemptsCOW.keepIn(s.attempts, id)
	next := slices.Clone(old)
	for i := range next {
		next[i].ResponseExcerpt = ""
	}
	s.attempts[id] = next
	t.undo = append(t.undo, func() { s.attempts[id] = old })
	return nil
}

// ---- copies and normalisation ----

func cloneIntPtr(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneTime(p *time.Time) *time.Time {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// copyDelivery gives the store its own copy of a caller's delivery's
// pointees; the body is never nil (the Postgres store reads an empty
// bytea), and packDelivery copies what its row keeps of it.
func copyDelivery(d projections.Delivery) projections.Delivery {
	if d.Body == nil {
		d.Body = []byte{}
	}
	d.NextAttemptAt, d.LastStatus, d.LastError = cloneTime(d.NextAttemptAt), cloneIntPtr(d.LastStatus), cloneStr(d.LastError)
	d.LastErrorClass = cloneStr(d.LastErrorClass)
	return d
}

// normDeliveryTimes truncates a delivery's times in place (NextAttemptAt's
// pointee too): the caller owns the row.
func normDeliveryTimes(d *projections.Delivery) {
	if d.NextAttemptAt != nil {
		*d.NextAttemptAt = normTime(*d.NextAttemptAt)
	}
	d.CreatedAt, d.UpdatedAt = normTime(d.CreatedAt), normTime(d.UpdatedAt)
}

func copyAttempt(a projections.Attempt) projections.Attempt {
	a.StatusCode, a.Error, a.ErrorClass = cloneIntPtr(a.StatusCode), cloneStr(a.Error), cloneStr(a.ErrorClass)
	return a
}

func normAttempt(a projections.Attempt) projections.Attempt {
	a = copyAttempt(a)
	a.At = normTime(a.At)
	return a
}

// restoreAttempts fills the emptied attempts map with an image's
// attempts: each delivery's run of attempts (an image lists them by
// delivery, in their order) is kept as the delivery's list, a window of
// the image's slice, without AddAttempt's copy of the list and undo per
// attempt. A later AddAttempt copies a list before it changes
// it, so the lists may share the slice. What follows a run out of that
// order (an attempt number not above the one before, a delivery met
// again after another's) goes through AddAttempt. The caller holds the
// read model's write lock and owns as.
func (s *Store) restoreAttempts(ctx context.Context, as []projections.Attempt) error {
	t := &tx{s: s, owned: true}
	for i := 0; i < len(as); {
		id := as[i].DeliveryID
		j := i + 1
		for j < len(as) && as[j].DeliveryID == id && as[j].Attempt > as[j-1].Attempt {
			j++
		}
		if _, had := s.attempts[id]; had {
			for ; i < j; i++ {
				if err := t.AddAttempt(ctx, as[i]); err != nil {
					return err
				}
			}
			continue
		}
		for k := i; k < j; k++ {
			as[k].At = normTime(as[k].At)
		}
		s.attempts[id] = as[i:j:j]
		i = j
	}
	return nil
}

// feedRestore is what a restore of deliveries carries from one part of
// them to the next.
type feedRestore struct {
	n        int     // deliveries restored
	last     feedKey // the last one's key (its own copy)
	unsorted bool    // a source position came before one restored earlier
	// bodiesInLog: a nil body is in the log (snapfile.Image.BodiesInLog),
	// else an erased one.
	bodiesInLog bool
}

// restoreDeliveries adds rows, the next part of an image's deliveries
// (unique ids), to the emptied deliveries read model's indexes, each index
// built by a goroutine of its own: the same state PutDelivery row by row
// gives (the due heap gets its keys in the same order), but on every
// core, since one lane of puts would be the longest part of a restore. The
// rows go in feed order, so each lands at the end of the feed indexes (an
// append) instead of in their middle: in key order a restore of n
// deliveries would move O(n²) bytes. Images of format 3 and later are written
// in that order; a part out of order is sorted (an older image, whole),
// and a part that does not follow the one before is refused. endDeliveries
// completes the indexes once every part is in. The caller holds the read
// model's write lock.
func (s *Store) restoreDeliveries(rows []projections.Delivery, st *feedRestore) error {
	if len(rows) == 0 { // another read model's image: not ours to touch
		return nil
	}
	byFeed := func(a, b projections.Delivery) int { return compareFeed(feedKeyOf(a), feedKeyOf(b)) }
	if !slices.IsSortedFunc(rows, byFeed) {
		slices.SortFunc(rows, byFeed)
	}
	if st.n > 0 && compareFeed(st.last, feedKeyOf(rows[0])) >= 0 {
		return errors.New("deliveries out of feed order")
	}
	for i := range rows {
		normDeliveryTimes(&rows[i])
	}
	var wg sync.WaitGroup
	lane := func(fn func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn()
		}()
	}
	// The subjects index is built in the rows' lane: a row points to its
	// subject's entry.
	// Row i takes place first+i of the table: the feed's lane needs no
	// other.
	first := s.deliveries.n
	// A snapshot's rows view its decoded bytes (snapfile.Image), which a
	// restore reuses for the next part: every text an index or a row
	// keeps is copied out of them.
	lane(func() {
		for i := range rows {
			d := &rows[i]
			subj := s.subjectOf(d.Subject)
			r := packDelivery(s.logged(*d), &s.eventTypes, subj, true)
			if d.Body == nil && !st.bodiesInLog {
				r.flags &^= bodyLogged // a nil body is an erased one (empty)
			}
			at := s.deliveries.add(ownTexts(r))
			if subj != nil {
				subj.add(at)
			}
		}
	})
	lane(func() {
		for i := range rows {
			s.feed = append(s.feed, first+uint32(i))
		}
	})
	lane(func() {
		for i := range rows {
			d := &rows[i]
			s.statuses[d.Status]++
			if k, in := dueKeyOf(*d); in {
				k.id = strings.Clone(k.id)
				s.due.set(d.AppID, k.id, k, true)
			}
		}
	})
	lane(func() {
		// Feed order is nearly source order: count runs of a position;
		// endDeliveries sorts and merges them only if a position came
		// out of order.
		for i := range rows {
			p := rows[i].SourcePosition
			n := len(s.sources)
			switch {
			case n > 0 && s.sources[n-1].pos == p:
				s.sources[n-1].n++
				continue
			case n > 0 && comparePos(s.sources[n-1].pos, p) > 0:
				st.unsorted = true
			}
			s.sources = append(s.sources, sourceCount{pos: p, n: 1})
		}
	})
	wg.Wait()
	st.n += len(rows)
	k := feedKeyOf(rows[len(rows)-1])
	st.last = feedKey{cursor: k.cursor, id: strings.Clone(k.id)}
	if n := s.deliveries.len(); n != st.n {
		return fmt.Errorf("%d deliveries share an id with another", st.n-n)
	}
	return nil
}

// endDeliveries completes the indexes of a restore of st.n deliveries
// (restoreDeliveries): each app's feed, made at its length (grown by
// appends, the slices kept up to a quarter of their length unused), and
// the source counts in order.
func (s *Store) endDeliveries(st *feedRestore) error {
	if st.n == 0 {
		return nil
	}
	perApp := map[int64]int{}
	for _, at := range s.feed {
		perApp[s.deliveries.at(at).appID]++
	}
	for app, n := range perApp {
		s.appFeed[app] = make([]uint32, 0, n)
	}
	for _, at := range s.feed {
		app := s.deliveries.at(at).appID
		s.appFeed[app] = append(s.appFeed[app], at)
	}
	if st.unsorted {
		slices.SortStableFunc(s.sources, compareSource)
		merged := s.sources[:0]
		for _, c := range s.sources {
			if m := len(merged); m > 0 && merged[m-1].pos == c.pos {
				merged[m-1].n += c.n
			} else {
				merged = append(merged, c)
			}
		}
		s.sources = merged
	}
	if len(s.sources) < cap(s.sources)*3/4 {
		s.sources = slices.Clone(s.sources)
	}
	return nil
}
