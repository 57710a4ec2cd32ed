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
	users       map[int64]projections.User // by OpenUserID
	byChannel   map[channelKey]int64       // (AppID, ChannelUserID) -> OpenUserID
	byPhone     map[phoneKey][]int64       // (AppID, Phone) -> OpenUserIDs, sorted
	groups      map[int64]projections.Group
	userGroups  map[int64][]int64 // OpenUserID -> FamilyGroupIDs, sorted
	members     map[int64]projections.Member
	userMembers map[int64][]int64 // OpenUserID -> MemberIDs, sorted
	liveCount   map[int64]int     // FamilyGroupID -> non-deleted members
	// The paged images of the users, deliveries, reports and orders read
	// models (imagepages.go): their paging state and the copy-on-write
	// sides of their tables, nil while no image is read, each guarded by
	// its read model's lock.
	usersPaging, deliveriesPaging, reportsPaging, ordersPaging paging
	usersCOW                                                   cow[int64, projections.User]
	groupsCOW                                                  cow[int64, projections.Group]
	membersCOW                                                 cow[int64, projections.Member]
	deliveriesCOW                                              cow[string, deliveryRow]
	attemptsCOW                                                cow[string, []projections.Attempt]
	reportsCOW                                                 cow[int64, projections.Report]
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
}

// OnReset registers fn to be called after a read model is emptied for a
// rebuild (outside the read model's lock): a snapshot of the read model taken
// before must then be dropped, or a restart would bring the old rows back.
// Call it before the store is used.
func (s *Store) OnReset(fn func(projections.ReadModel)) { s.onReset = fn }

type channelKey struct {
	app     int64
	channel string
}

type phoneKey struct {
	app   int64
	phone string
}

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
	s.usersPaging.gen++
	s.users = map[int64]projections.User{}
	s.byChannel = map[channelKey]int64{}
	s.byPhone = map[phoneKey][]int64{}
	s.groups = map[int64]projections.Group{}
	s.userGroups = map[int64][]int64{}
	s.members = map[int64]projections.Member{}
	s.userMembers = map[int64][]int64{}
	s.liveCount = map[int64]int{}
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
	u, ok := s.users[openUserID]
	if !ok || u.AppID != appID {
		return projections.User{}, projections.ErrNotFound
	}
	return copyUser(u), nil
}

// UserByChannelID finds a user by the partner's own id within appID.
func (s *Store) UserByChannelID(ctx context.Context, appID int64, channelUserID string) (projections.User, error) {
	if err := ctx.Err(); err != nil {
		return projections.User{}, err
	}
	s.usersMu.RLock()
	defer s.usersMu.RUnlock()
	id, ok := s.byChannel[channelKey{appID, channelUserID}]
	if !ok {
		return projections.User{}, projections.ErrNotFound
	}
	return copyUser(s.users[id]), nil
}

// Groups returns the user's non-dissolved groups with their live member counts.
func (s *Store) Groups(ctx context.Context, appID, openUserID int64) ([]projections.Group, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.usersMu.RLock()
	defer s.usersMu.RUnlock()
	var out []projections.Group
	for _, id := range s.userGroups[openUserID] {
		g := s.groups[id]
		if g.AppID != appID || g.Dissolved {
			continue
		}
		g.MemberCount = s.liveCount[id]
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
	for _, id := range s.userMembers[openUserID] {
		m := s.members[id]
		if m.AppID != appID || m.Deleted || (filter && !m.UpdatedAt.After(updatedAfter)) {
			continue
		}
		out = append(out, copyMember(m))
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
	m, ok := s.members[memberID]
	if !ok || m.AppID != appID {
		return projections.Member{}, projections.ErrNotFound
	}
	return copyMember(m), nil
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
	// owned: a restore's tx, whose rows were decoded for it alone, so its
	// puts keep them without defensive copies and record no undo (a
	// failed restore empties the whole read model).
	owned bool
}

// keepUndo records how to revert a write, unless the tx is a restore's.
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
	u, ok := t.s.users[openUserID]
	if !ok {
		return projections.User{}, projections.ErrNotFound
	}
	return copyUser(u), nil
}

// Group reads a group, dissolved or not, as this transaction sees it.
func (t *tx) Group(ctx context.Context, familyGroupID int64) (projections.Group, error) {
	if err := t.check(ctx); err != nil {
		return projections.Group{}, err
	}
	g, ok := t.s.groups[familyGroupID]
	if !ok {
		return projections.Group{}, projections.ErrNotFound
	}
	g.MemberCount = t.s.liveCount[familyGroupID]
	return g, nil
}

func (t *tx) PutUser(ctx context.Context, u projections.User) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	if t.owned {
		u.RegisteredAt, u.UpdatedAt = normTime(u.RegisteredAt), normTime(u.UpdatedAt)
	} else {
		u = normUser(u)
	}
	if holder, taken := s.byChannel[channelKey{u.AppID, u.ChannelUserID}]; taken && holder != u.OpenUserID {
		return &ChannelConflictError{AppID: u.AppID, ChannelUserID: u.ChannelUserID, OpenUserID: holder}
	}
	old, had := s.users[u.OpenUserID]
	s.setUser(old, had, u, true)
	t.keepUndo(func() { s.setUser(u, true, old, had) })
	return nil
}

func (s *Store) setUser(cur projections.User, had bool, next projections.User, keep bool) {
	if had {
		s.usersCOW.keep(s.users, cur.OpenUserID)
	}
	if keep {
		s.usersCOW.keep(s.users, next.OpenUserID)
	}
	if had {
		delete(s.byChannel, channelKey{cur.AppID, cur.ChannelUserID})
		delete(s.users, cur.OpenUserID)
		if cur.Phone != nil {
			k := phoneKey{cur.AppID, *cur.Phone}
			if ids := removeID(s.byPhone[k], cur.OpenUserID); len(ids) == 0 {
				delete(s.byPhone, k)
			} else {
				s.byPhone[k] = ids
			}
		}
	}
	if keep {
		s.users[next.OpenUserID] = next
		s.byChannel[channelKey{next.AppID, next.ChannelUserID}] = next.OpenUserID
		if next.Phone != nil {
			k := phoneKey{next.AppID, *next.Phone}
			s.byPhone[k] = insertID(s.byPhone[k], next.OpenUserID)
		}
	}
}

func (t *tx) PutGroup(ctx context.Context, g projections.Group) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	g = normGroup(g)
	old, had := s.groups[g.FamilyGroupID]
	s.setGroup(old, had, g, true)
	t.keepUndo(func() { s.setGroup(g, true, old, had) })
	return nil
}

func (s *Store) setGroup(cur projections.Group, had bool, next projections.Group, keep bool) {
	if had {
		s.groupsCOW.keep(s.groups, cur.FamilyGroupID)
	}
	if keep {
		s.groupsCOW.keep(s.groups, next.FamilyGroupID)
	}
	if had && (!keep || cur.OpenUserID != next.OpenUserID) {
		s.userGroups[cur.OpenUserID] = removeID(s.userGroups[cur.OpenUserID], cur.FamilyGroupID)
		if len(s.userGroups[cur.OpenUserID]) == 0 {
			delete(s.userGroups, cur.OpenUserID)
		}
	}
	if had {
		delete(s.groups, cur.FamilyGroupID)
	}
	if keep {
		s.groups[next.FamilyGroupID] = next
		s.userGroups[next.OpenUserID] = insertID(s.userGroups[next.OpenUserID], next.FamilyGroupID)
	}
}

func (t *tx) PutMember(ctx context.Context, m projections.Member) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	if !t.owned {
		m = copyMember(m)
	}
	m = normMemberTimes(m)
	old, had := s.members[m.MemberID]
	s.setMember(old, had, m, true)
	t.keepUndo(func() { s.setMember(m, true, old, had) })
	return nil
}

func (t *tx) DeleteMember(ctx context.Context, memberID int64, at time.Time) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	s := t.s
	old, had := s.members[memberID]
	if !had {
		return nil
	}
	at = normTime(at)
	next := old
	next.Deleted, next.DeletedAt, next.UpdatedAt = true, &at, at
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
	for _, id := range append([]int64(nil), s.userMembers[openUserID]...) {
		old := s.members[id]
		s.setMember(old, true, projections.Member{}, false)
		t.undo = append(t.undo, func() { s.setMember(projections.Member{}, false, old, true) })
	}
	for _, id := range append([]int64(nil), s.userGroups[openUserID]...) {
		old := s.groups[id]
		s.setGroup(old, true, projections.Group{}, false)
		t.undo = append(t.undo, func() { s.setGroup(projections.Group{}, false, old, true) })
	}
	if old, had := s.users[openUserID]; had {
		s.setUser(old, true, projections.User{}, false)
		t.undo = append(t.undo, func() { s.setUser(projections.User{}, false, old, true) })
	}
	return nil
}

func (s *Store) setMember(cur projections.Member, had bool, next projections.Member, keep bool) {
	if had {
		s.membersCOW.keep(s.members, cur.MemberID)
	}
	if keep {
		s.membersCOW.keep(s.members, next.MemberID)
	}
	if had {
		if !cur.Deleted {
			s.addLive(cur.FamilyGroupID, -1)
		}
		if !keep || cur.OpenUserID != next.OpenUserID {
			s.userMembers[cur.OpenUserID] = removeID(s.userMembers[cur.OpenUserID], cur.MemberID)
			if len(s.userMembers[cur.OpenUserID]) == 0 {
				delete(s.userMembers, cur.OpenUserID)
			}
		}
		delete(s.members, cur.MemberID)
	}
	if keep {
		if !next.Deleted {
			s.addLive(next.FamilyGroupID, 1)
		}
		s.members[next.MemberID] = next
		s.userMembers[next.OpenUserID] = insertID(s.userMembers[next.OpenUserID], next.MemberID)
	}
}

func (s *Store) addLive(groupID int64, d int) {
	n := s.liveCount[groupID] + d
	if n == 0 {
		delete(s.liveCount, groupID)
		return
	}
	s.liveCount[groupID] = n
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

func copyUser(u projections.User) projections.User {
	u.Nickname, u.Avatar, u.Phone = cloneStr(u.Nickname), cloneStr(u.Avatar), cloneStr(u.Phone)
	u.Email, u.BirthDate = cloneStr(u.Email), cloneStr(u.BirthDate)
	return u
}

func normUser(u projections.User) projections.User {
	u = copyUser(u)
	u.RegisteredAt, u.UpdatedAt = normTime(u.RegisteredAt), normTime(u.UpdatedAt)
	return u
}

func normGroup(g projections.Group) projections.Group {
	g.MemberCount = 0
	g.CreatedAt, g.UpdatedAt = normTime(g.CreatedAt), normTime(g.UpdatedAt)
	return g
}

func copyMember(m projections.Member) projections.Member {
	m.Gender, m.BirthDate, m.Phone = cloneStr(m.Gender), cloneStr(m.BirthDate), cloneStr(m.Phone)
	m.IDType, m.IDNumber, m.BloodType = cloneStr(m.IDType), cloneStr(m.IDNumber), cloneStr(m.BloodType)
	m.Height, m.Weight = cloneInt(m.Height), cloneInt(m.Weight)
	if m.DeletedAt != nil {
		d := *m.DeletedAt
		m.DeletedAt = &d
	}
	return m
}

// normMemberTimes truncates a member's times in place (DeletedAt's
// pointee too): the caller owns the row.
func normMemberTimes(m projections.Member) projections.Member {
	if m.DeletedAt != nil {
		*m.DeletedAt = normTime(*m.DeletedAt)
	}
	m.UpdatedAt = normTime(m.UpdatedAt)
	return m
}
