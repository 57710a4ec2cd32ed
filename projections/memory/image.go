package memory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/healthtech/partner-open-platform/projections"
	"github.com/healthtech/partner-open-platform/projections/memory/snapfile"
)

// unsorted is a map's entries copied as they are: the copy is what an
// image makes under the read model's read lock (which holds the projector);
// the sort by key, most of an image's cost at a million rows, runs after
// the lock is released.
type unsorted[K cmp.Ordered, V any] struct {
	keys []keyAt[K]
	vals []V
}

// keyAt is a key and the index of its value, so the sort moves small
// elements, not rows.
type keyAt[K cmp.Ordered] struct {
	k K
	i int32
}

// collect copies a map's entries, unordered.
func collect[K cmp.Ordered, V any](m map[K]V) unsorted[K, V] {
	u := unsorted[K, V]{keys: make([]keyAt[K], 0, len(m)), vals: make([]V, 0, len(m))}
	for k, v := range m {
		u.keys = append(u.keys, keyAt[K]{k: k, i: int32(len(u.vals))})
		u.vals = append(u.vals, v)
	}
	return u
}

// collectRows copies a table's rows as projections' rows, unordered.
func collectRows[R idRow, V any](t *idTable[R], view func(R, *ptrArena) V) unsorted[int64, V] {
	u := unsorted[int64, V]{keys: make([]keyAt[int64], 0, t.len()), vals: make([]V, 0, t.len())}
	t.each(func(id int64, r R) bool {
		u.keys = append(u.keys, keyAt[int64]{k: id, i: int32(len(u.vals))})
		u.vals = append(u.vals, view(r, nil))
		return true
	})
	return u
}

// sorted lists the values ordered by key. It orders the copy in place,
// moving each row once along the cycles of the sort's permutation: a
// second copy of every row into a new slice was half of what a snapshot
// write allocated (rows hold pointers, so the collector then scanned it),
// and at hundreds of thousands of users the collection that followed each
// write took the two cores' spare time from the requests.
func (u unsorted[K, V]) sorted() []V {
	slices.SortFunc(u.keys, func(a, b keyAt[K]) int { return cmp.Compare(a.k, b.k) })
	// Position j takes the row at keys[j].i; a position already holding
	// its row is marked by keys[j].i == j.
	for j := range u.keys {
		if int(u.keys[j].i) == j {
			continue
		}
		first := u.vals[j]
		k := j
		for {
			from := int(u.keys[k].i)
			u.keys[k].i = int32(k)
			if from == j {
				u.vals[k] = first
				break
			}
			u.vals[k] = u.vals[from]
			k = from
		}
	}
	return u.vals
}

// Image copies one read model's rows and its checkpoint under the read model's read
// lock, so the rows are exactly the effect of the log up to the checkpoint.
// Readers go on meanwhile; the read model's projector waits for the copy only,
// not for the rows' sort into key order, which follows the lock.
func (s *Store) Image(ctx context.Context, f projections.ReadModel) (snapfile.Image, error) {
	if err := ctx.Err(); err != nil {
		return snapfile.Image{}, err
	}
	mu, _, err := s.readModel(f)
	if err != nil {
		return snapfile.Image{}, err
	}
	im := snapfile.Image{ReadModel: f, BodiesInLog: s.bodiesInLog(f)}
	var sort []func()
	mu.RLock()
	s.cpMu.Lock()
	im.Checkpoint = s.checkpoints[string(f)]
	s.cpMu.Unlock()
	switch f {
	case projections.ReadModelUsers:
		users := collectRows(&s.users, userRow.user)
		groups := collectRows(&s.groups, groupRow.view)
		members := collectRows(&s.members, memberRow.member)
		sort = append(sort, func() { im.Users, im.Groups, im.Members = users.sorted(), groups.sorted(), members.sorted() })
	case projections.ReadModelDeliveries:
		// In feed order (cursor, then id: a total order, so equal read
		// models still give equal images), which a restore needs: each
		// delivery then lands at the end of the feed indexes.
		im.Deliveries = make([]projections.Delivery, 0, len(s.feed))
		for _, i := range s.feed {
			r := s.deliveries.at(i)
			im.Deliveries = append(im.Deliveries, r.view(r.deliveryID(), &s.eventTypes))
		}
		attempts := collect(s.attempts)
		sort = append(sort, func() {
			lists := attempts.sorted()
			n := 0
			for _, list := range lists {
				n += len(list)
			}
			if n > 0 {
				im.Attempts = make([]projections.Attempt, 0, n)
			}
			for _, list := range lists {
				im.Attempts = append(im.Attempts, list...)
			}
		})
	case projections.ReadModelReports:
		reports := collectRows(&s.reports, reportRow.view)
		sort = append(sort, func() { im.Reports = reports.sorted() })
	case projections.ReadModelOrders:
		goods, orders := collect(s.goods), collect(s.orders)
		sort = append(sort, func() { im.Goods, im.Orders = goods.sorted(), orders.sorted() })
	case projections.ReadModelBenefits:
		items, providers, cards, fulfillments := collect(s.benefitItems), collect(s.providers), collect(s.cards), collect(s.fulfillments)
		sort = append(sort, func() {
			im.BenefitItems, im.Providers = items.sorted(), providers.sorted()
			im.Cards, im.Fulfillments = cards.sorted(), fulfillments.sorted()
		})
	case projections.ReadModelAudit:
		im.AuditFacts = slices.Clone(s.facts)
	}
	mu.RUnlock()
	for _, f := range sort {
		f()
	}
	return im, nil
}

// Restore replaces one read model's rows and checkpoint with the image's, under
// the read model's write lock; on failure the read model is left empty (checkpoint
// zero), so the runner replays it from the start of the log. The store
// takes the image's rows as they are (no defensive copies: a restore's
// image is decoded for it alone), so the caller must not use the image
// afterwards. It copies whatever it keeps of the texts of users, members
// and deliveries, which view a snapshot's decoded sections (snapfile.Image).
func (s *Store) Restore(ctx context.Context, im snapfile.Image) error {
	r, err := s.Restoring(ctx, snapfile.ReadModel{ReadModel: im.ReadModel, Checkpoint: im.Checkpoint, BodiesInLog: im.BodiesInLog}, tableCounts(&im))
	if err != nil {
		return err
	}
	return snapfile.RestoreWhole(r, &im)
}

// Restoring begins a restore of the read model rm names (a snapfile.Begin):
// it takes the read model's write lock, empties it and makes its big
// tables for rows (the rows of each table, by its index in the file; nil
// when not known), and the restorer it returns takes the image's rows a
// part at a time. Its End releases the lock: with the checkpoint of rm
// when every part was restored, empty (checkpoint zero, so the runner
// replays the log) after any failure. Readers wait on the lock meanwhile,
// so none sees a read model half restored.
func (s *Store) Restoring(ctx context.Context, rm snapfile.ReadModel, rows []int) (snapfile.Restorer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if rm.BodiesInLog && s.bodyLog == nil {
		// Its final deliveries' bodies are in the log, which this store
		// does not read: refused, so that the log is replayed instead.
		return nil, fmt.Errorf("%w: %s keeps bodies in the log, and this store reads no log", snapfile.ErrInvalid, rm.ReadModel)
	}
	mu, empty, err := s.readModel(rm.ReadModel)
	if err != nil {
		return nil, err
	}
	mu.Lock()
	empty()
	s.cpMu.Lock()
	delete(s.checkpoints, string(rm.ReadModel))
	s.cpMu.Unlock()
	n := func(t snapfile.Table) int {
		if int(t) < len(rows) {
			return rows[t]
		}
		return 0
	}
	s.presize(rm.ReadModel, rowCounts{users: n(snapfile.TableUsers), groups: n(snapfile.TableGroups), members: n(snapfile.TableMembers),
		deliveries: n(snapfile.TableDeliveries), attempts: n(snapfile.TableAttempts)})
	r := &restoring{s: s, ctx: ctx, rm: rm, mu: mu, empty: empty, feed: feedRestore{bodiesInLog: rm.BodiesInLog}}
	if d := n(snapfile.TableDeliveries); d > 0 && rm.ReadModel == projections.ReadModelDeliveries {
		// Nearly every delivery has a source position of its own.
		s.sources = make([]sourceCount, 0, d)
	}
	return r, nil
}

// tableCounts counts an image's rows by table.
func tableCounts(im *snapfile.Image) []int {
	return []int{
		snapfile.TableUsers: len(im.Users), snapfile.TableGroups: len(im.Groups), snapfile.TableMembers: len(im.Members),
		snapfile.TableDeliveries: len(im.Deliveries), snapfile.TableAttempts: len(im.Attempts),
	}
}

// restoring is one read model's restore (Store.Restoring): it holds the
// read model's write lock from its start to its End.
type restoring struct {
	s     *Store
	ctx   context.Context
	rm    snapfile.ReadModel
	mu    *sync.RWMutex
	empty func()
	feed  feedRestore
}

// The lanes of a restore: tables whose writes keep disjoint maps are
// restored concurrently: users (users, byChannel, byPhone), groups
// (groups, userGroups), members (members, userMembers, groupMembers),
// each index reading only its own table's rows, and attempts (attempts
// by delivery); the other tables share indexes and go one after the
// other.
const (
	laneUsers = iota
	laneGroups
	laneMembers
	laneAttempts
	laneRest
)

func (r *restoring) Lane(t snapfile.Table) int {
	switch t {
	case snapfile.TableUsers:
		return laneUsers
	case snapfile.TableGroups:
		return laneGroups
	case snapfile.TableMembers:
		return laneMembers
	case snapfile.TableAttempts:
		return laneAttempts
	}
	return laneRest
}

// Keeps: a delivery's attempts are kept as windows of their part's rows
// (restoreAttempts); every other row is packed or put by value, its
// texts copied.
func (r *restoring) Keeps(t snapfile.Table) bool { return t == snapfile.TableAttempts }

// Rows restores a part of table t: users, groups, members, deliveries,
// attempts and reports by writes of their own (restoreUsers,
// restoreDeliveries, ...),
// which keep the indexes as the projector's puts do; every other row
// through the projector's own write (a failure empties the whole read
// model: no undo is kept).
func (r *restoring) Rows(t snapfile.Table, part *snapfile.Image) error {
	s, ctx := r.s, r.ctx
	var err error
	switch t {
	case snapfile.TableUsers:
		s.restoreUsers(part.Users)
	case snapfile.TableGroups:
		s.restoreGroups(part.Groups)
	case snapfile.TableMembers:
		s.restoreMembers(part.Members)
	case snapfile.TableAttempts:
		err = s.restoreAttempts(ctx, part.Attempts)
	case snapfile.TableDeliveries:
		err = s.restoreDeliveries(part.Deliveries, &r.feed)
	case snapfile.TableReports:
		s.restoreReports(part.Reports)
	default:
		err = r.put(part)
	}
	if err != nil {
		return fmt.Errorf("restore %s: %w", r.rm.ReadModel, err)
	}
	return nil
}

// put restores the rows of part (of a table Rows does not restore by a
// write of its own) through the projector's puts, in a tx of their own.
func (r *restoring) put(part *snapfile.Image) error {
	ctx := r.ctx
	t := &tx{s: r.s, owned: true}
	defer func() { t.s = nil }()
	each := func(n int, put func(i int) error) error {
		for i := 0; i < n; i++ {
			if err := put(i); err != nil {
				return err
			}
		}
		return nil
	}
	return errors.Join(
		each(len(part.Goods), func(i int) error { return t.PutGoods(ctx, part.Goods[i]) }),
		each(len(part.Orders), func(i int) error { return t.PutOrder(ctx, part.Orders[i]) }),
		each(len(part.BenefitItems), func(i int) error { return t.PutBenefitItem(ctx, part.BenefitItems[i]) }),
		each(len(part.Providers), func(i int) error { return t.PutProvider(ctx, part.Providers[i]) }),
		each(len(part.Cards), func(i int) error { return t.PutCard(ctx, part.Cards[i]) }),
		each(len(part.Fulfillments), func(i int) error { return t.PutFulfillment(ctx, part.Fulfillments[i]) }),
		each(len(part.AuditFacts), func(i int) error { return t.AddAuditFact(ctx, part.AuditFacts[i]) }),
	)
}

// End completes the indexes made once every delivery is in (the apps'
// feeds, the source counts) and sets the checkpoint; after a failure it
// empties the read model instead. Either way it releases the lock.
func (r *restoring) End(err error) error {
	s := r.s
	defer r.mu.Unlock()
	if err == nil {
		err = s.endDeliveries(&r.feed)
	}
	if err != nil {
		r.empty()
		return err
	}
	s.cpMu.Lock()
	s.checkpoints[string(r.rm.ReadModel)] = r.rm.Checkpoint
	s.cpMu.Unlock()
	return nil
}

// restoreUsers, restoreGroups and restoreMembers fill the emptied users
// read model's tables and indexes with an image's rows: the writes of
// PutUser, PutGroup and PutMember without their lookups of an earlier row
// of the same id (or, for a user, of the same channel id), since an image
// holds each id once, as the store it was taken from did. A put makes
// three or four probes of the id's table where a restore needs the one
// that adds the row. The caller holds the read model's write lock.
func (s *Store) restoreUsers(users []projections.User) {
	for _, u := range users {
		next := packUser(normUser(u))
		s.indexUser(s.users.add(next.id, next), userRow{}, false, next)
	}
}

func (s *Store) restoreGroups(groups []projections.Group) {
	for _, g := range groups {
		next := packGroup(normGroup(g))
		s.indexGroup(s.groups.add(next.id, next), groupRow{}, false, next)
	}
}

func (s *Store) restoreMembers(members []projections.Member) {
	for _, m := range members {
		next := packMember(normMember(m))
		s.indexMember(s.members.add(next.id, next), memberRow{}, false, next)
	}
}

// clear empties a read model and its checkpoint without telling OnReset (a
// snapshot that failed its checks is being dropped already).
func (s *Store) clear(f projections.ReadModel) error {
	mu, empty, err := s.readModel(f)
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	empty()
	s.cpMu.Lock()
	delete(s.checkpoints, string(f))
	s.cpMu.Unlock()
	return nil
}

// presize makes the emptied read model f's big maps with room for n rows,
// so that filling it does not grow them step by step: a restore knows its
// image's rows (rehashing every row several times was a tenth of a start's
// CPU), a rebuild the rows the read model held before its reset (a replay
// of the same log writes about as many). The caller holds the read model's
// write lock.
func (s *Store) presize(f projections.ReadModel, n rowCounts) {
	switch f {
	case projections.ReadModelUsers:
		s.presizeUsers(n)
	case projections.ReadModelDeliveries:
		s.presizeDeliveries(n)
	}
}

// rowCounts is how many rows the big maps of a read model are made for.
type rowCounts struct{ users, groups, members, deliveries, attempts int }

// counts is what the read model f holds; the caller holds its lock.
func (s *Store) counts(f projections.ReadModel) rowCounts {
	switch f {
	case projections.ReadModelUsers:
		return rowCounts{users: s.users.len(), groups: s.groups.len(), members: s.members.len()}
	case projections.ReadModelDeliveries:
		return rowCounts{deliveries: s.deliveries.len(), attempts: len(s.attempts)}
	}
	return rowCounts{}
}

func (s *Store) presizeUsers(n rowCounts) {
	s.usersPaging.gen++
	s.users = newIDTable[userRow](n.users)
	s.byChannel = newPlaceIndex(n.users)
	s.byPhone = newChainIndex(n.users)
	s.groups = newIDTable[groupRow](n.groups)
	s.userGroups = newChainIndex(n.groups)
	s.members = newIDTable[memberRow](n.members)
	s.userMembers = newChainIndex(n.members)
	s.groupMembers = newChainIndex(n.members)
}

func (s *Store) presizeDeliveries(n rowCounts) {
	s.deliveries = newDeliveryTable(n.deliveries)
	s.attempts = make(map[string][]projections.Attempt, min(n.deliveries, n.attempts))
	s.feed = make([]uint32, 0, n.deliveries)
	s.subjects = make(map[string]*subjectRows, n.deliveries/4)
}
