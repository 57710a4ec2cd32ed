// Package memory is the embedded-mode read model: it is rebuilt from the
// event log at every start and answers the query API from maps, so reads
// are index lookups and never scans.
package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/subscribe"
	"github.com/healthtech/partner-open-platform/internal/nonces"
	"github.com/healthtech/partner-open-platform/projections"
)

// Store keeps every read model in memory, each read model behind its own
// RWMutex: many readers, one Update at a time per read model, and read models
// project concurrently.
//
// Update applies writes in place under the write lock with an undo log, so
// the Tx reads see the transaction's own writes and a failing fn (or a write
// that would break an index) leaves nothing behind. Times are stored in UTC
// truncated to microseconds, as PostgreSQL keeps them, so both stores give
// the same answers.
type Store struct {
	usersMu, deliveriesMu, reportsMu, ordersMu, benefitsMu, auditMu sync.RWMutex

	closed atomic.Bool // the nonce and binding uses refuse after Close

	cpMu        sync.Mutex
	checkpoints map[string]events.Position
	// The users read model's tables (userrows.go) and the indexes of
	// their places (userindex.go).
	users        idTable[userRow]   // by OpenUserID
	byChannel    placeIndex         // users by (AppID, ChannelUserID)
	byPhone      chainIndex         // users by (AppID, Phone)
	groups       idTable[groupRow]  // by FamilyGroupID
	userGroups   chainIndex         // groups by OpenUserID
	members      idTable[memberRow] // by MemberID
	userMembers  chainIndex         // members by OpenUserID
	groupMembers chainIndex         // members by FamilyGroupID
	// The paged images of the users, deliveries, reports and orders read
	// models (imagepages.go): their paging state and the copy-on-write
	// sides of their tables, nil while no image is read, each guarded by
	// its read model's lock.
	usersPaging, deliveriesPaging, reportsPaging, ordersPaging paging
	usersCOW                                                   cow[int64, userRow]
	groupsCOW                                                  cow[int64, groupRow]
	membersCOW                                                 cow[int64, memberRow]
	deliveriesCOW                                              cow[string, deliveryRow]
	attemptsCOW                                                cow[string, []projections.Attempt]
	reportsCOW                                                 cow[int64, reportRow]
	goodsCOW                                                   cow[int64, projections.Goods]
	ordersCOW                                                  cow[int64, projections.Order]
	// imageStep (tests only) runs whenever a paged image released the
	// read model's lock between two of its steps.
	imageStep func()
	deliveryIndexes
	reportIndexes
	orderIndexes
	benefitIndexes
	auditIndexes

	// nonces and bindings have their own locks and are left alone by
	// Reset: they are security state, not read models derived from the log.
	nonces   nonceSet
	bindings nonceSet

	// onReset (see OnReset) hears of every reset, after the read model is empty.
	onReset func(projections.ReadModel)

	// bodyLog (see KeepBodiesInLog) reads the bodies of final deliveries,
	// which the rows then do not hold; nil: every row holds its body.
	bodyLog BodyLog
}

// OnReset registers fn to be called after a read model is emptied for a
// rebuild (outside the read model's lock): a snapshot of the read model taken
// before must then be dropped, or a restart would bring the old rows back.
// Call it before the store is used.
func (s *Store) OnReset(fn func(projections.ReadModel)) { s.onReset = fn }

var (
	_ projections.UserStore     = (*Store)(nil)
	_ projections.UserTx        = (*tx)(nil)
	_ projections.DeliveryStore = (*Store)(nil)
	_ projections.DeliveryTx    = (*tx)(nil)
	_ projections.ReportStore   = (*Store)(nil)
	_ projections.ReportTx      = (*tx)(nil)
	_ nonces.Store              = (*Store)(nil)
	_ projections.OrderStore    = (*Store)(nil)
	_ projections.OrderTx       = (*tx)(nil)
	_ projections.BenefitStore  = (*Store)(nil)
	_ projections.BenefitTx     = (*tx)(nil)
	_ projections.AuditStore    = (*Store)(nil)
	_ projections.AuditTx       = (*tx)(nil)
)

// New returns an empty store, ready for the projection runtime to fill.
func New() *Store {
	s := &Store{nonces: newNonceSet(), bindings: newNonceSet()}
	s.init()
	return s
}

func (s *Store) init() {
	s.checkpoints = map[string]events.Position{}
	s.initUsers()
	s.initDeliveries()
	s.initReports()
	s.initOrders()
	s.benefitIndexes = newBenefitIndexes()
	s.auditIndexes = newAuditIndexes()
}

func (s *Store) initUsers() {
	s.presizeUsers(rowCounts{})
}

// readModel returns the lock of a read model and how to empty it.
func (s *Store) readModel(f projections.ReadModel) (*sync.RWMutex, func(), error) {
	switch f {
	case projections.ReadModelUsers:
		return &s.usersMu, s.initUsers, nil
	case projections.ReadModelDeliveries:
		return &s.deliveriesMu, s.initDeliveries, nil
	case projections.ReadModelReports:
		return &s.reportsMu, s.initReports, nil
	case projections.ReadModelOrders:
		return &s.ordersMu, s.initOrders, nil
	case projections.ReadModelBenefits:
		return &s.benefitsMu, func() { s.benefitIndexes = newBenefitIndexes() }, nil
	case projections.ReadModelAudit:
		return &s.auditMu, func() { s.auditIndexes = newAuditIndexes() }, nil
	}
	return nil, nil, fmt.Errorf("projections/memory: no read-model family %q", f)
}

// Checkpoint returns the named projection's position, zero if it never ran.
func (s *Store) Checkpoint(ctx context.Context, projection string) (events.Position, error) {
	if err := ctx.Err(); err != nil {
		return events.Position{}, err
	}
	s.cpMu.Lock()
	defer s.cpMu.Unlock()
	return s.checkpoints[projection], nil
}

// Update runs fn under the write lock, applying each write at once and
// recording how to revert it; if fn (or a write) fails, the undo log restores
// the state fn started from. fn must use only its Tx: calling the Store's
// own methods from inside fn would deadlock.
func (s *Store) Update(ctx context.Context, projection string, pos events.Position, fn func(projections.UserTx) error) error {
	return s.update(ctx, &s.usersMu, projection, pos, func(t *tx) error { return fn(t) })
}

// update is every read model's Update: the read model's write lock, one undo log,
// one checkpoint.
func (s *Store) update(ctx context.Context, mu *sync.RWMutex, projection string, pos events.Position, fn func(*tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	t := &tx{s: s}
	committed := false
	defer func() { // also when fn panics
		t.s = nil // a Tx kept past its Update must not write
		if !committed {
			for i := len(t.undo) - 1; i >= 0; i-- {
				t.undo[i]()
			}
		}
	}()
	if err := fn(t); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.cpMu.Lock()
	defer s.cpMu.Unlock()
	if pos.Less(s.checkpoints[projection]) {
		return fmt.Errorf("%w: %s to %v", subscribe.ErrCheckpointBackwards, projection, pos)
	}
	s.checkpoints[projection] = pos
	committed = true
	return nil
}

// UpdateReports is the reports read model's Update.
func (s *Store) UpdateReports(ctx context.Context, projection string, pos events.Position, fn func(projections.ReportTx) error) error {
	return s.update(ctx, &s.reportsMu, projection, pos, func(t *tx) error { return fn(t) })
}

// UpdateOrders is the orders read model's Update.
func (s *Store) UpdateOrders(ctx context.Context, projection string, pos events.Position, fn func(projections.OrderTx) error) error {
	return s.update(ctx, &s.ordersMu, projection, pos, func(t *tx) error { return fn(t) })
}

// UpdateBenefits is the benefits read model's Update.
func (s *Store) UpdateBenefits(ctx context.Context, projection string, pos events.Position, fn func(projections.BenefitTx) error) error {
	return s.update(ctx, &s.benefitsMu, projection, pos, func(t *tx) error { return fn(t) })
}

// ResetReadModel empties one read model and its checkpoint; the others keep serving.
func (s *Store) ResetReadModel(ctx context.Context, f projections.ReadModel) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	mu, empty, err := s.readModel(f)
	if err != nil {
		return err
	}
	mu.Lock()
	held := s.counts(f)
	empty()
	s.presize(f, held)
	s.cpMu.Lock()
	delete(s.checkpoints, string(f))
	s.cpMu.Unlock()
	mu.Unlock()
	if s.onReset != nil {
		s.onReset(f)
	}
	return nil
}

// Reset drops every row and checkpoint, for a rebuild from the log; the
// nonces stay, as the log cannot rebuild them.
func (s *Store) Reset(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	func() {
		for _, mu := range []*sync.RWMutex{&s.usersMu, &s.deliveriesMu, &s.reportsMu, &s.ordersMu, &s.benefitsMu, &s.auditMu} {
			mu.Lock()
			defer mu.Unlock()
		}
		s.cpMu.Lock()
		defer s.cpMu.Unlock()
		s.init()
	}()
	if s.onReset != nil {
		for _, f := range projections.ReadModels {
			s.onReset(f)
		}
	}
	return nil
}

// User returns the user if it belongs to appID.
func (s *Store) User(ctx context.Context, appID, openUserID int64) (projections.User, error) {
	if err := ctx.Err(); err != nil {
		return projections.User{}, err
	}
	s.usersMu.RLock()
	defer s.usersMu.RUnlock()
	u := s.users.get(openUserID)
	if u == nil || u.appID != appID {
		return projections.User{}, projections.ErrNotFound
	}
	return u.user(nil), nil
}

// UserByChannelID finds a user by the partner's own id within appID.
func (s *Store) UserByChannelID(ctx context.Context, appID int64, channelUserID string) (projections.User, error) {
	if err := ctx.Err(); err != nil {
		return projections.User{}, err
	}
	s.usersMu.RLock()
	defer s.usersMu.RUnlock()
	u := s.userByChannel(appID, channelUserID)
	if u == nil {
		return projections.User{}, projections.ErrNotFound
	}
	return u.user(nil), nil
}

// Groups returns the user's non-dissolved groups with their live member counts.
func (s *Store) Groups(ctx context.Context, appID, openUserID int64) ([]projections.Group, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.usersMu.RLock()
	defer s.usersMu.RUnlock()
	var out []projections.Group
	var places [8]uint32
	for _, p := range s.groupsOf(openUserID, places[:0]) {
		r := s.groups.rows.at(p)
		if r.appID != appID || r.dissolved {
			continue
		}
		g := r.group()
		g.MemberCount = s.liveCount(r.id)
		out = append(out, g)
	}
	return out, nil
}

// Members returns the user's non-deleted members, optionally only those
// updated strictly after updatedAfter.
func (s *Store) Members(ctx context.Context, appID, openUserID int64, updatedAfter time.Time) ([]projections.Member, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	filter := !updatedAfter.IsZero()
	s.usersMu.RLock()
	defer s.usersMu.RUnlock()
	var out []projections.Member
	var places [8]uint32
	for _, p := range s.membersOf(openUserID, places[:0]) {
		m := s.members.rows.at(p)
		if m.appID != appID || m.deleted() || (filter && !fromMicros(m.updated).After(updatedAfter)) {
			continue
		}
		out = append(out, m.member(nil))
	}
	return out, nil
}

// Member returns one member row even when soft-deleted, so that tests and
// tools can see what DeleteMember recorded.
func (s *Store) Member(ctx context.Context, appID, memberID int64) (projections.Member, error) {
	if err := ctx.Err(); err != nil {
		return projections.Member{}, err
	}
	s.usersMu.RLock()
	defer s.usersMu.RUnlock()
	m := s.members.get(memberID)
	if m == nil || m.appID != appID {
		return projections.Member{}, projections.ErrNotFound
	}
	return m.member(nil), nil
}

// Close is a no-op: the store holds no resources beyond memory.
// Close ends the replay guard's uses (they fail, as on every adapter); the
// read models stay readable, as they hold nothing to release.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

// ---- writes ----

// tx applies writes to the locked store and keeps the undo log of its Update.
type tx struct {
	s    *Store
	undo []func()
	// puts are the deliveries PutDelivery wrote and the rows they
	// replaced, for its undo, in chunks that never grow (putUndo).
	puts [][]deliveryPut
	// owned: a restore's tx, whose rows were decoded for it alone, so its
	// puts keep them without defensive copies and record no undo (a
	// failed restore empties the whole read model).
	owned bool
}

// keepUndo records how to revert a write, unless the tx is a restore's.
// fn is made (an allocation) whether or not it is kept: the puts a restore
// runs for every row of a table test owned before making theirs.
func (t *tx) keepUndo(fn func()) {
	if !t.owned {
		t.undo = append(t.undo, fn)
	}
}

var errTxDone = errors.New("projections/memory: Tx used after its Update returned")

func (t *tx) check(ctx context.Context) error {
	if t.s == nil {
		return errTxDone
	}
	return ctx.Err()
}

// User reads a user as this transaction sees it, whatever its app.
func (t *tx) User(ctx context.Context, openUserID int64) (projections.User, error) {
	if err := t.check(ctx); err != nil {
		return projections.User{}, err
	}
	u := t.s.users.get(openUserID)
	if u == nil {
		return projections.User{}, projections.ErrNotFound
	}
	return u.user(nil), nil
}

// Group reads a group, dissolved or not, as this transaction sees it.
func (t *tx) Group(ctx context.Context, familyGroupID int64) (projections.Group, error) {
	if err := t.check(ctx); err != nil {
		return projections.Group{}, err
	}
	r := t.s.groups.get(familyGroupID)
	if r == nil {
		return projections.Group{}, projections.ErrNotFound
	}
	g := r.group()
	g.MemberCount = t.s.liveCount(familyGroupID)
	return g, nil
}

func (t *tx) PutUser(ctx context.Context, u projections.User) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	u = normUser(u)
	if holder := s.userByChannel(u.AppID, u.ChannelUserID); holder != nil && holder.id != u.OpenUserID {
		return &ChannelConflictError{AppID: u.AppID, ChannelUserID: u.ChannelUserID, OpenUserID: holder.id}
	}
	next := packUser(u)
	old, had := s.users.row(u.OpenUserID)
	s.setUser(old, had, next, true)
	t.keepUndo(func() { s.setUser(next, true, old, had) })
	return nil
}

// setUser replaces cur (if had) by next (if keep) in the users' table and
// indexes; the undo of a write is the same call with the sides swapped.
// The indexes' keys are the rows' own texts.
func (s *Store) setUser(cur userRow, had bool, next userRow, keep bool) {
	if had {
		s.usersCOW.keep(cur.id, s.users.row)
	}
	if keep {
		s.usersCOW.keep(next.id, s.users.row)
	}
	if had {
		s.unindexUser(cur, keep, next)
		s.users.del(cur.id)
	}
	if keep {
		s.indexUser(s.users.set(next.id, next), cur, had, next)
	}
}

func (t *tx) PutGroup(ctx context.Context, g projections.Group) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	next := packGroup(normGroup(g))
	old, had := s.groups.row(g.FamilyGroupID)
	s.setGroup(old, had, next, true)
	t.keepUndo(func() { s.setGroup(next, true, old, had) })
	return nil
}

func (s *Store) setGroup(cur groupRow, had bool, next groupRow, keep bool) {
	if had {
		s.groupsCOW.keep(cur.id, s.groups.row)
	}
	if keep {
		s.groupsCOW.keep(next.id, s.groups.row)
	}
	if had {
		s.unindexGroup(cur, keep, next)
		s.groups.del(cur.id)
	}
	if keep {
		s.indexGroup(s.groups.set(next.id, next), cur, had, next)
	}
}

func (t *tx) PutMember(ctx context.Context, m projections.Member) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	next := packMember(normMember(m))
	old, had := s.members.row(m.MemberID)
	s.setMember(old, had, next, true)
	t.keepUndo(func() { s.setMember(next, true, old, had) })
	return nil
}

func (t *tx) DeleteMember(ctx context.Context, memberID int64, at time.Time) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	old, had := s.members.row(memberID)
	if !had {
		return nil
	}
	next := old
	next.updated = micros(normTime(at))
	next.deletedAt, next.has = next.updated, next.has|memberDeleted|memberDeletedAt
	s.setMember(old, true, next, true)
	t.undo = append(t.undo, func() { s.setMember(next, true, old, true) })
	return nil
}

// EraseUser drops the user, their groups and their members.
func (t *tx) EraseUser(ctx context.Context, openUserID int64) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	for _, p := range s.membersOf(openUserID, nil) {
		old := *s.members.rows.at(p)
		s.setMember(old, true, memberRow{}, false)
		t.undo = append(t.undo, func() { s.setMember(memberRow{}, false, old, true) })
	}
	for _, p := range s.groupsOf(openUserID, nil) {
		old := *s.groups.rows.at(p)
		s.setGroup(old, true, groupRow{}, false)
		t.undo = append(t.undo, func() { s.setGroup(groupRow{}, false, old, true) })
	}
	if old, had := s.users.row(openUserID); had {
		s.setUser(old, true, userRow{}, false)
		t.undo = append(t.undo, func() { s.setUser(userRow{}, false, old, true) })
	}
	return nil
}

func (s *Store) setMember(cur memberRow, had bool, next memberRow, keep bool) {
	if had {
		s.membersCOW.keep(cur.id, s.members.row)
	}
	if keep {
		s.membersCOW.keep(next.id, s.members.row)
	}
	if had {
		s.unindexMember(cur, keep, next)
		s.members.del(cur.id)
	}
	if keep {
		s.indexMember(s.members.set(next.id, next), cur, had, next)
	}
}

// insertID adds id to the sorted ids unless present.
func insertID(ids []int64, id int64) []int64 {
	i, found := slices.BinarySearch(ids, id)
	if found {
		return ids
	}
	return slices.Insert(ids, i, id)
}

func removeID(ids []int64, id int64) []int64 {
	i, found := slices.BinarySearch(ids, id)
	if !found {
		return ids
	}
	return slices.Delete(ids, i, i+1)
}

// ChannelConflictError refuses a PutUser whose (AppID, ChannelUserID) another
// user already holds, as the Postgres store's unique index does, so that
// both stores fail the same projector bug the same way.
type ChannelConflictError struct {
	AppID         int64
	ChannelUserID string
	OpenUserID    int64 // the user holding it
}

func (e *ChannelConflictError) Error() string {
	return fmt.Sprintf("projections/memory: channel user id %q of app %d is held by open user %d",
		e.ChannelUserID, e.AppID, e.OpenUserID)
}

// ---- copies and normalisation ----

func normTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func normUser(u projections.User) projections.User {
	u.RegisteredAt, u.UpdatedAt = normTime(u.RegisteredAt), normTime(u.UpdatedAt)
	return u
}

func normMember(m projections.Member) projections.Member {
	if m.DeletedAt != nil {
		d := normTime(*m.DeletedAt)
		m.DeletedAt = &d
	}
	m.UpdatedAt = normTime(m.UpdatedAt)
	return m
}

func cloneStr(p *string) *string {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func cloneInt(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func normGroup(g projections.Group) projections.Group {
	g.MemberCount = 0
	g.CreatedAt, g.UpdatedAt = normTime(g.CreatedAt), normTime(g.UpdatedAt)
	return g
}
