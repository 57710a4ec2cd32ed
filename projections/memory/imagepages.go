package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"

	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory/snapfile"
)

// pageRows bounds the rows one hold of a paged read model's lock reads
// while a snapshot is written: its keys are listed and its rows read that
// many at a time, the lock released in between (a variable for tests).
// A hold of 4,096 rows is about half a millisecond of map lookups.
var pageRows = 4096

// errImageReset is a paged image whose read model was emptied (a rebuild or
// a restore) while the snapshot was being written: the write fails, and
// the reset's own invalidation drops any older snapshot.
var errImageReset = errors.New("projections/memory: read model reset while its image was written")

// prior is a row as it was when a paged image began: the value, and
// whether the key existed then.
type prior[V any] struct {
	v   V
	had bool
}

// cow is the copy-on-write side of one table of a paged image: the first
// write to a key after the image began keeps the key's row as it was, so
// the image reads every row at its checkpoint although the projector goes
// on writing between the image's pages. It holds one entry per key written
// during the snapshot write (about one per event), not a copy of the
// table; it is nil while no paged image reads the table.
type cow[K comparable, V any] map[K]prior[V]

// keep keeps key k's row as it is (get reads it from the store's table),
// unless a write since the image began kept it already or no image is
// being read; every write to the table calls it before it changes the
// key's row, with the write lock held.
func (c cow[K, V]) keep(k K, get func(K) (V, bool)) {
	if c == nil {
		return
	}
	if _, kept := c[k]; !kept {
		v, had := get(k)
		c[k] = prior[V]{v: v, had: had}
	}
}

// keepIn is keep for a table that is a map.
func (c cow[K, V]) keepIn(live map[K]V, k K) {
	if c != nil {
		c.keep(k, func(k K) (V, bool) { v, ok := live[k]; return v, ok })
	}
}

// paging is a read model's side of its paged images, guarded by the read
// model's lock: how many times it was reset (its maps replaced), and the
// paged image being read, if any.
type paging struct {
	gen   uint64
	image *pagedImage
}

// imageTable is one table of a paged image, whatever its rows.
type imageTable interface {
	// begin installs the table's copy-on-write side and end removes it;
	// the caller holds the write lock.
	begin()
	end()
	// list gathers the table's keys at the checkpoint; the caller holds
	// the read lock, and step releases and takes it again.
	list(step func())
	// order puts the listed keys in the file's order, outside the lock,
	// calling pace between parts of the work.
	order(pace func())
	// rows counts the table's rows at the checkpoint.
	rows() int
	// reserve readies the page for n rows, outside the lock.
	reserve(n int)
	// read appends the rows [from, to) as they were at the checkpoint to
	// the page; the caller holds the read lock.
	read(from, to int) error
	// lend sets the image's slice of the table to the page.
	lend(im *snapfile.Image)
}

// pagedTables are the tables of read model f that a snapshot write reads
// a page at a time, with its lock and paging state; none for a read model
// imaged whole (Image).
func (s *Store) pagedTables(f projections.ReadModel) (*sync.RWMutex, *paging, map[snapfile.Table]imageTable) {
	switch f {
	case projections.ReadModelUsers:
		return &s.usersMu, &s.usersPaging, map[snapfile.Table]imageTable{
			snapfile.TableUsers: rowsByID(&s.usersCOW, &s.users, userRow.user,
				func(im *snapfile.Image, rows []projections.User) { im.Users = rows }),
			snapfile.TableGroups: rowsByID(&s.groupsCOW, &s.groups, groupRow.view,
				func(im *snapfile.Image, rows []projections.Group) { im.Groups = rows }),
			snapfile.TableMembers: rowsByID(&s.membersCOW, &s.members, memberRow.member,
				func(im *snapfile.Image, rows []projections.Member) { im.Members = rows }),
		}
	case projections.ReadModelDeliveries:
		return &s.deliveriesMu, &s.deliveriesPaging, map[snapfile.Table]imageTable{
			// In feed order, as Image writes them, from the feed index.
			snapfile.TableDeliveries: &feedTable{s: s},
			// By delivery id, each delivery's attempts in their order.
			snapfile.TableAttempts: inMap(&s.attempts, &pagedTable[string, []projections.Attempt, attemptsKey, projections.Attempt]{
				cow:     &s.attemptsCOW,
				entry:   func(id string, as []projections.Attempt) attemptsKey { return attemptsKey{id, len(as)} },
				key:     func(k attemptsKey) string { return k.id },
				compare: func(a, b attemptsKey) int { return strings.Compare(a.id, b.id) },
				count:   func(k attemptsKey) int { return k.n },
				put: func(page []projections.Attempt, _ string, as []projections.Attempt, from, to int) []projections.Attempt {
					return append(page, as[from:to]...)
				},
				set: func(im *snapfile.Image, rows []projections.Attempt) { im.Attempts = rows },
			}),
		}
	case projections.ReadModelReports:
		return &s.reportsMu, &s.reportsPaging, map[snapfile.Table]imageTable{
			snapfile.TableReports: rowsByID(&s.reportsCOW, &s.reports, reportRow.view, func(im *snapfile.Image, rows []projections.Report) { im.Reports = rows }),
		}
	case projections.ReadModelOrders:
		return &s.ordersMu, &s.ordersPaging, map[snapfile.Table]imageTable{
			snapfile.TableGoods:  byID(&s.goodsCOW, &s.goods, func(im *snapfile.Image, rows []projections.Goods) { im.Goods = rows }),
			snapfile.TableOrders: byID(&s.ordersCOW, &s.orders, func(im *snapfile.Image, rows []projections.Order) { im.Orders = rows }),
		}
	}
	return nil, nil, nil
}

// byID is a map of one row per int64 key, in key order.
func byID[V any](c *cow[int64, V], live *map[int64]V, set func(*snapfile.Image, []V)) *pagedTable[int64, V, int64, V] {
	return inMap(live, &pagedTable[int64, V, int64, V]{
		cow:     c,
		entry:   func(k int64, _ V) int64 { return k },
		key:     func(k int64) int64 { return k },
		compare: cmp.Compare[int64],
		put:     func(page []V, _ int64, v V, _, _ int) []V { return append(page, v) },
		set:     set,
	})
}

// inMap makes t read the store's map live (its lookup, size and rows).
func inMap[K comparable, V, E, O any](live *map[K]V, t *pagedTable[K, V, E, O]) *pagedTable[K, V, E, O] {
	t.get = func(k K) (V, bool) { v, ok := (*live)[k]; return v, ok }
	t.size = func() int { return len(*live) }
	t.each = func(yield func(K, V) bool) {
		for k, v := range *live {
			if !yield(k, v) {
				return
			}
		}
	}
	return t
}

// rowsByID is a table (idTable) of rows R, written as projections' rows V
// in key order, their optional fields in an arena that every page reuses.
func rowsByID[R idRow, V any](c *cow[int64, R], t *idTable[R], view func(R, *ptrArena) V, set func(*snapfile.Image, []V)) *pagedTable[int64, R, int64, V] {
	var a ptrArena
	return &pagedTable[int64, R, int64, V]{
		cow: c, get: func(k int64) (R, bool) { return t.row(k) }, size: func() int { return t.len() },
		each:    func(yield func(int64, R) bool) { t.each(yield) },
		entry:   func(k int64, _ R) int64 { return k },
		key:     func(k int64) int64 { return k },
		compare: cmp.Compare[int64],
		put: func(page []V, _ int64, r R, _, _ int) []V {
			if len(page) == 0 { // a page begins: the last one's rows are written
				a.reset()
			}
			return append(page, view(r, &a))
		},
		set: set,
	}
}

// attemptsKey is a delivery's place in the attempts table: its id, and
// how many attempts it had at the checkpoint.
type attemptsKey struct {
	id string
	n  int
}

// pagedTable is one table of a paged image: rows V by key K, listed as
// entries E in the file's order and written as rows O.
type pagedTable[K comparable, V, E, O any] struct {
	cow *cow[K, V] // the store's copy-on-write side of the table
	// The store's table: a lookup, its size, and its rows in no order.
	get  func(K) (V, bool)
	size func() int
	each func(yield func(K, V) bool)
	// entry is a key's place in the file's order, from its row; key is
	// the entry's key; compare orders entries (equal for one key only).
	entry   func(K, V) E
	key     func(E) K
	compare func(E, E) int
	// count is how many rows of the file a key has (nil: one).
	count func(E) int
	// put appends rows [from, to) of key k's row v to the page.
	put func(page []O, k K, v V, from, to int) []O
	set func(*snapfile.Image, []O)

	priors cow[K, V] // the image's copy-on-write side
	keys   []E       // the entries at the checkpoint, in order
	listed int       // keys[:listed] came from the map
	total  int       // the rows of keys (count set)
	page   []O       // reused by every page
	// Where the next page begins when count is set (pages are then read in
	// order): row next of the file, key nextKey's row nextFirst. A key's
	// rows may span two pages.
	next, nextKey, nextFirst int
}

func (t *pagedTable[K, V, E, O]) begin() {
	*t.cow = cow[K, V]{}
	t.priors = *t.cow
	t.next, t.nextKey, t.nextFirst = 0, 0, 0
}

func (t *pagedTable[K, V, E, O]) end() { *t.cow = nil }

// list lists every key not written since the image began from the table
// (each), then every key written since from its prior. A table may be
// written between two steps of its range: a key present throughout is
// listed once, or twice with the same entry (listed, then written); a key
// created since the image began is not listed (its prior says it was
// not there); a key deleted or moved before the range reached it is
// listed from its prior.
func (t *pagedTable[K, V, E, O]) list(step func()) {
	t.keys = make([]E, 0, t.size()+len(t.priors))
	n := 0
	t.each(func(k K, v V) bool {
		if _, kept := t.priors[k]; !kept {
			t.keys = append(t.keys, t.entry(k, v))
		}
		if n++; n%pageRows == 0 {
			step()
		}
		return true
	})
	t.listed = len(t.keys)
	for k, p := range t.priors {
		if p.had {
			t.keys = append(t.keys, t.entry(k, p.v))
		}
	}
}

// order sorts the listed entries and drops duplicates (a key listed from
// the map and from its prior), calling pace between parts of the sort.
func (t *pagedTable[K, V, E, O]) order(pace func()) {
	pacedSort(t.keys[:t.listed], t.compare, pace)
	t.keys = slices.CompactFunc(mergeSorted(t.keys, t.listed, t.compare), func(a, b E) bool { return t.compare(a, b) == 0 })
	if t.count != nil {
		t.total = 0
		for _, e := range t.keys {
			t.total += t.count(e)
		}
	}
}

// sortRun is how many keys pacedSort sorts or moves between two calls
// of its pace: sorted whole, the 100,000 keys of one table held a snapshot
// write's core for 10–30 ms.
const sortRun = 4096

// pacedSort sorts es by compare in place, calling pace after each sortRun
// keys compared or sorted. A range longer than sortRun is partitioned
// around the median of its first, middle and last keys, its shorter side
// sorted first so the stack stays shallow; a range of at most sortRun keys
// is sorted whole. A range still long after 2·log₂(n) partitions (a bad
// run of pivots) is heap sorted, so the sort is n log n at worst. It
// allocates nothing: a buffer of the keys' size (a merge sort's) was a
// tenth of a snapshot write's garbage.
func pacedSort[E any](es []E, compare func(E, E) int, pace func()) {
	if len(es) <= sortRun {
		slices.SortFunc(es, compare)
		return
	}
	s := pacedSorter[E]{compare: compare, pace: pace}
	s.quick(es, 2*bits.Len(uint(len(es))))
}

// pacedSorter is one pacedSort call: its order, its pace and the keys
// handled since it last paced.
type pacedSorter[E any] struct {
	compare func(E, E) int
	pace    func()
	done    int
}

// tick counts n keys handled, pacing once sortRun were.
func (s *pacedSorter[E]) tick(n int) {
	if s.done += n; s.done >= sortRun {
		s.done = 0
		s.pace()
	}
}

func (s *pacedSorter[E]) quick(es []E, depth int) {
	for len(es) > sortRun {
		if depth == 0 {
			s.heapSort(es)
			return
		}
		depth--
		m := s.partition(es)
		if m < len(es)-m {
			s.quick(es[:m], depth)
			es = es[m+1:]
		} else {
			s.quick(es[m+1:], depth)
			es = es[:m]
		}
	}
	slices.SortFunc(es, s.compare)
	s.tick(len(es))
}

// partition puts the median of es's first, middle and last keys at the
// returned index m, every key before m no greater and every key after
// it no smaller. Keys equal to the pivot stop both scans, so a range of
// equal keys is cut in half.
func (s *pacedSorter[E]) partition(es []E) int {
	a, b, c := 0, len(es)/2, len(es)-1
	if s.compare(es[b], es[a]) < 0 {
		a, b = b, a
	}
	if s.compare(es[c], es[b]) < 0 {
		b = c
		if s.compare(es[b], es[a]) < 0 {
			b = a
		}
	}
	es[0], es[b] = es[b], es[0]
	pivot := es[0]
	i, j := 1, len(es)-1
	for {
		for i <= j && s.compare(es[i], pivot) < 0 {
			i++
			s.tick(1)
		}
		for i <= j && s.compare(pivot, es[j]) < 0 {
			j--
			s.tick(1)
		}
		if i >= j {
			break
		}
		es[i], es[j] = es[j], es[i]
		i++
		j--
		s.tick(2)
	}
	es[0], es[j] = es[j], es[0]
	return j
}

// heapSort sorts es in place through a max-heap, ticking once per key moved.
func (s *pacedSorter[E]) heapSort(es []E) {
	for i := len(es)/2 - 1; i >= 0; i-- {
		s.siftDown(es, i, len(es))
	}
	for end := len(es) - 1; end > 0; end-- {
		es[0], es[end] = es[end], es[0]
		s.siftDown(es, 0, end)
	}
}

func (s *pacedSorter[E]) siftDown(es []E, root, n int) {
	for {
		child := 2*root + 1
		if child >= n {
			return
		}
		if child+1 < n && s.compare(es[child], es[child+1]) < 0 {
			child++
		}
		if s.compare(es[root], es[child]) >= 0 {
			return
		}
		es[root], es[child] = es[child], es[root]
		root = child
		s.tick(1)
	}
}

// mergeSorted merges the sorted runs es[:n] and es[n:] in place, moving
// the second run (the keys written during the image, few) aside.
func mergeSorted[E any](es []E, n int, compare func(E, E) int) []E {
	b := slices.Clone(es[n:])
	slices.SortFunc(b, compare)
	i, j := n-1, len(b)-1
	for w := len(es) - 1; j >= 0; w-- {
		if i >= 0 && compare(es[i], b[j]) > 0 {
			es[w] = es[i]
			i--
		} else {
			es[w] = b[j]
			j--
		}
	}
	return es
}

func (t *pagedTable[K, V, E, O]) rows() int {
	if t.count == nil {
		return len(t.keys)
	}
	return t.total
}

// reserve makes the page before the lock is taken, and once per write:
// grown row by row under the lock it cost several times its size in
// copies and held the lock for the allocations.
func (t *pagedTable[K, V, E, O]) reserve(n int) {
	if cap(t.page) < n {
		t.page = make([]O, 0, n)
	}
	t.page = t.page[:0]
}

// read appends rows [from, to): key from's row, or, when a key has
// several (count set), the rows from where the last page ended, so no
// list of where each key's rows begin is kept.
func (t *pagedTable[K, V, E, O]) read(from, to int) error {
	i, first := from, 0 // key i, from its row first
	if t.count != nil {
		if from != t.next {
			return errPageOutOfOrder
		}
		i, first = t.nextKey, t.nextFirst
	}
	for at := from; at < to; i++ {
		k := t.key(t.keys[i])
		v, err := t.row(k)
		if err != nil {
			return err
		}
		n := 1
		if t.count != nil {
			n = t.count(t.keys[i])
			if t.count(t.entry(k, v)) != n {
				return fmt.Errorf("projections/memory: key %v of the image changed its rows without a prior", k)
			}
		}
		last := min(n, first+to-at)
		t.page = t.put(t.page, k, v, first, last)
		at += last - first
		if t.nextKey, t.nextFirst = i+1, 0; last < n {
			t.nextKey, t.nextFirst = i, last
		}
		first = 0
	}
	t.next = to
	return nil
}

// row is key k's row at the checkpoint: its prior if it was written since
// the image began, else the map's.
func (t *pagedTable[K, V, E, O]) row(k K) (V, error) {
	if p, kept := t.priors[k]; kept {
		if !p.had {
			return p.v, fmt.Errorf("projections/memory: row %v of the image did not exist at its checkpoint", k)
		}
		return p.v, nil
	}
	v, ok := t.get(k)
	if !ok {
		return v, fmt.Errorf("projections/memory: row %v of the image is gone without a prior", k)
	}
	return v, nil
}

func (t *pagedTable[K, V, E, O]) lend(im *snapfile.Image) { t.set(im, t.page) }

// pagedImage lends a read model's tables to snapfile.Write at the
// checkpoint the image was taken at (snapfile.Pager).
type pagedImage struct {
	s      *Store
	mu     *sync.RWMutex
	paging *paging
	gen    uint64 // the read model's generation when the image began
	tables map[snapfile.Table]imageTable
}

// imageToWrite is read model f's image for a snapshot write. A read model
// with paged tables (the users, the deliveries, the reports and the
// orders, the ones that grow with every user) is lent a page at a time while the file is written
// instead of being copied whole under its lock: its checkpoint is read and
// its copy-on-write side installed in one short hold of the write lock,
// then its keys are listed under the read lock, pageRows at a time, and
// its rows are read by the returned image's pager, a page at a time, as
// snapfile.Write encodes them. end must be called once the image is no
// longer read; until then every write to the read model keeps its key's
// row as it was. pace (when not nil) is called whenever the listing released
// the lock, and after each table's keys are put in order, so a paced write
// rests between them.
//
// Unlike Image, no hold of the lock copies every row: a snapshot of a
// large read model neither stops the projector for the whole copy nor
// allocates a second copy of every row for the collector to scan.
func (s *Store) imageToWrite(ctx context.Context, f projections.ReadModel, pace func()) (im snapfile.Image, end func(), err error) {
	if pace == nil {
		pace = func() {}
	}
	mu, pg, tables := s.pagedTables(f)
	if tables == nil {
		im, err = s.Image(ctx, f)
		return im, func() {}, err
	}
	if err := ctx.Err(); err != nil {
		return snapfile.Image{}, nil, err
	}
	p := &pagedImage{s: s, mu: mu, paging: pg, tables: tables}
	im = snapfile.Image{ReadModel: f, Paged: p, BodiesInLog: s.bodiesInLog(f)}
	mu.Lock()
	if pg.image != nil {
		mu.Unlock()
		return snapfile.Image{}, nil, fmt.Errorf("projections/memory: a paged image of the %s read model is already being read", f)
	}
	s.cpMu.Lock()
	im.Checkpoint = s.checkpoints[string(f)]
	s.cpMu.Unlock()
	pg.image, p.gen = p, pg.gen
	for _, t := range tables {
		t.begin()
	}
	mu.Unlock()
	end = func() {
		mu.Lock()
		if pg.image == p {
			pg.image = nil
			for _, t := range tables {
				t.end()
			}
		}
		mu.Unlock()
	}
	mu.RLock()
	for _, t := range tables {
		t.list(func() {
			mu.RUnlock()
			s.imageStepped()
			pace()
			mu.RLock()
		})
	}
	reset := pg.gen != p.gen
	mu.RUnlock()
	if reset {
		end()
		return snapfile.Image{}, nil, errImageReset
	}
	for _, t := range tables {
		t.order(pace)
		pace()
	}
	return im, end, nil
}

// Len implements snapfile.Pager.
func (p *pagedImage) Len(t snapfile.Table) (int, bool) {
	if pt, ok := p.tables[t]; ok {
		return pt.rows(), true
	}
	return 0, false
}

// Page implements snapfile.Pager: it reads the table's rows [from, to),
// holding the read lock for at most pageRows rows at a time.
func (p *pagedImage) Page(t snapfile.Table, from, to int, page *snapfile.Image) error {
	pt, ok := p.tables[t]
	if !ok {
		return fmt.Errorf("projections/memory: the image has no paged table %d", t)
	}
	pt.reserve(to - from)
	for at := from; at < to; {
		next := min(at+pageRows, to)
		p.mu.RLock()
		var err error
		if p.paging.gen != p.gen {
			err = errImageReset
		} else {
			err = pt.read(at, next)
		}
		p.mu.RUnlock()
		p.s.imageStepped()
		if err != nil {
			return err
		}
		at = next
	}
	pt.lend(page)
	return nil
}

// imageStepped runs the test hook (SetImageStep) after a paged image
// released the read lock between two of its steps.
func (s *Store) imageStepped() {
	if s.imageStep != nil {
		s.imageStep()
	}
}
