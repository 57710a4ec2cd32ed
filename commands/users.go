package commands

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// userState is a channel user as decisions see it: built only from its stream.
type userState struct {
	registered    bool
	erased        bool
	appID         int64
	openUserID    int64
	channelUserID string
	// binding is the stream that binds (appID, channelUserID) to this
	// user: named by user.registered, or, for users registered before
	// hashed names, the legacy name derived from the (clear) id.
	binding      string
	profile      catalog.Profile
	groups       map[int64]*groupState     // by family_group_id, dissolved included
	activeGroups map[int64]int64           // app_group_id -> family_group_id
	members      map[int64]*catalog.Member // live members by member_id
	memberByApp  map[string]int64          // app_user_id -> member_id
	// writable marks the maps this state may write (ownGroups...): clone
	// shares them with the copy and clears the marks on both, so apply
	// copies a map before its first write after a clone and a copy handed
	// to a decision never changes under it. Values in the maps are never
	// written through (apply replaces them), so a shallow copy is enough.
	writable uint8
	// sharers counts, per map (bit i of writable), the clones taken since
	// the map was last this state's alone: reclaim takes back a map only
	// when that is 1, the dropped clone.
	sharers [4]uint32
	// erasedAt and erasureAck are the erasure and the owning app's
	// acknowledgement of it (zero until acknowledged).
	erasedAt   time.Time
	erasureAck catalog.ErasureAcknowledged
}

// Bits of userState.writable, one per map.
const (
	ownGroups uint8 = 1 << iota
	ownActiveGroups
	ownMembers
	ownMemberByApp
	ownAll = ownGroups | ownActiveGroups | ownMembers | ownMemberByApp
)

type groupState struct {
	id, appGroupID int64
	name           string
	dissolved      bool
}

func newUserState() *userState {
	return &userState{
		groups: map[int64]*groupState{}, activeGroups: map[int64]int64{},
		members: map[int64]*catalog.Member{}, memberByApp: map[string]int64{},
		writable: ownAll,
	}
}

// own makes the maps of bits writable by this state alone, copying those it
// shares with a clone (only their entries: the values are never written).
func (s *userState) own(bits uint8) {
	shared := bits &^ s.writable
	if shared&ownGroups != 0 {
		s.groups = cloneMap(s.groups)
	}
	if shared&ownActiveGroups != 0 {
		s.activeGroups = cloneMap(s.activeGroups)
	}
	if shared&ownMembers != 0 {
		s.members = cloneMap(s.members)
	}
	if shared&ownMemberByApp != 0 {
		s.memberByApp = cloneMap(s.memberByApp)
	}
	for i := range s.sharers {
		if shared&(1<<i) != 0 {
			s.sharers[i] = 0 // every clone before has the old map
		}
	}
	s.writable |= bits
}

// cloneMap is maps.Clone, except that nil becomes an empty map to write to.
func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	c := make(map[K]V, len(m)+1)
	for k, v := range m {
		c[k] = v
	}
	return c
}

func (s *userState) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.UserRegistered:
		s.registered, s.appID, s.openUserID, s.channelUserID, s.profile = true, p.AppID, p.OpenUserID, p.ChannelUserID, p.Profile
		s.binding = p.Binding
		if s.binding == "" && p.ChannelUserID != "" {
			s.binding = domain.LegacyBindingStream(p.AppID, p.ChannelUserID)
		}
	case *catalog.UserProfileUpdated:
		s.profile = p.Profile
	case *catalog.UserErased:
		// An erased user is gone for every command: USER_NOT_FOUND; none
		// of their personal data stays in a state (a cached one included).
		// New maps: a clone a decision still reads keeps the ones it has.
		s.registered, s.erased, s.profile, s.channelUserID = false, true, catalog.Profile{}, ""
		s.erasedAt = p.ErasedAt
		if s.erasedAt.IsZero() {
			s.erasedAt = env.Metadata.OccurredAt
		}
		s.groups, s.activeGroups = map[int64]*groupState{}, map[int64]int64{}
		s.members, s.memberByApp = map[int64]*catalog.Member{}, map[string]int64{}
		s.writable, s.sharers = ownAll, [4]uint32{}
	case *catalog.ErasureAcknowledged:
		if s.erasureAck.AcknowledgedAt.IsZero() {
			s.erasureAck = *p
		}
	case *catalog.FamilyGroupUpserted:
		s.own(ownGroups)
		if g, ok := s.groups[p.FamilyGroupID]; ok {
			renamed := *g
			renamed.name = p.Name
			s.groups[p.FamilyGroupID] = &renamed
			return
		}
		s.own(ownActiveGroups)
		s.groups[p.FamilyGroupID] = &groupState{id: p.FamilyGroupID, appGroupID: p.AppGroupID, name: p.Name}
		s.activeGroups[p.AppGroupID] = p.FamilyGroupID
	case *catalog.FamilyGroupDissolved:
		if g, ok := s.groups[p.FamilyGroupID]; ok {
			s.own(ownGroups | ownActiveGroups)
			dissolved := *g
			dissolved.dissolved = true
			s.groups[p.FamilyGroupID] = &dissolved
			delete(s.activeGroups, g.appGroupID)
		}
		for _, id := range p.DeletedMemberIDs {
			s.removeMember(id)
		}
	case *catalog.FamilyMemberCreated:
		s.own(ownMembers | ownMemberByApp)
		m := p.Member
		s.members[m.MemberID], s.memberByApp[m.AppUserID] = &m, m.MemberID
	case *catalog.FamilyMemberUpdated:
		s.own(ownMembers | ownMemberByApp)
		m := p.Member
		s.members[m.MemberID], s.memberByApp[m.AppUserID] = &m, m.MemberID
	case *catalog.FamilyMemberDeleted:
		s.removeMember(p.MemberID)
	}
}

func (s *userState) removeMember(id int64) {
	if m, ok := s.members[id]; ok {
		s.own(ownMembers | ownMemberByApp)
		delete(s.memberByApp, m.AppUserID)
		delete(s.members, id)
	}
}

// mapping lists the live groups and members, ordered by id, as register answers.
func (s *userState) mapping() ([]GroupRef, []MemberRef) {
	groups := []GroupRef{}
	for _, g := range s.groups {
		if !g.dissolved {
			groups = append(groups, GroupRef{FamilyGroupID: g.id, AppGroupID: g.appGroupID})
		}
	}
	slices.SortFunc(groups, func(a, b GroupRef) int { return int(a.FamilyGroupID - b.FamilyGroupID) })
	members := []MemberRef{}
	for _, m := range s.members {
		members = append(members, MemberRef{MemberID: m.MemberID, AppUserID: m.AppUserID})
	}
	slices.SortFunc(members, func(a, b MemberRef) int { return int(a.MemberID - b.MemberID) })
	return groups, members
}

// Users handles the channel-user commands of the spec.
type Users struct {
	streams
	ids *Allocator
	// names hashes channel user ids into binding stream names.
	names *domain.Pseudonyms
	// noLegacy says the log holds no binding under a legacy name
	// (WithLegacyBindings), so a register reads the hashed stream only.
	noLegacy atomic.Bool
	now      func() time.Time
	loc      *time.Location
	keys     KeyDestroyer
	warm     KeyWarmer
	// loaded keeps recently used users, read incrementally (aggregates.go).
	loaded *aggregateCache[*userState]
}

// KeyWarmer creates a subject's data key ahead of the append that needs it
// (datakeys.Keys.Warm), so a register overlaps the key's fsyncs with the binding's.
type KeyWarmer interface {
	Warm(ctx context.Context, subject string) error
}

// WithKeyWarmer makes Register create the new user's data key while it binds
// the channel user (only useful when personal fields are encrypted).
func (u *Users) WithKeyWarmer(w KeyWarmer) *Users {
	u.warm = w
	return u
}

// KeyDestroyer destroys a subject's data key (datakeys.Keys): erasure needs it.
type KeyDestroyer interface {
	Destroy(ctx context.Context, subject string) error
}

// WithKeys gives the handler the key store that Erase destroys keys in.
func (u *Users) WithKeys(k KeyDestroyer) *Users {
	u.keys = k
	return u
}

// NewUsers builds the handler; names makes the binding streams' names (the
// platform's pseudonym key: every node must use the same), loc is the
// platform time zone of Y-m-d dates.
func NewUsers(store events.Store, reg *events.Registry, ids *Allocator, names *domain.Pseudonyms, now func() time.Time, loc *time.Location) *Users {
	return &Users{streams: streams{store, reg}, ids: ids, names: names, now: now, loc: loc,
		loaded: newUserCache(DefaultAggregateCache)}
}

// newUserCache keeps users loaded; a user's personal fields are sealed with
// the key of its own stream (ErasureSubject), so the cache checks that key.
func newUserCache(n int) *aggregateCache[*userState] {
	c := newAggregateCache(newUserState, n)
	c.sealedBy = func(stream string) string { return stream }
	return c
}

// UserInput is the user object of a register call.
type UserInput struct {
	Name      string
	Nickname  domain.Field[string]
	Gender    domain.Field[string]
	Avatar    domain.Field[string]
	Phone     domain.Field[string]
	Email     domain.Field[string]
	BirthDate domain.Field[string]
}

// GroupInput is a family group as the partner writes it.
type GroupInput struct {
	AppGroupID int64
	Name       string
}

// MemberInput is a family member as the partner writes it.
type MemberInput struct {
	AppUserID    string
	AppGroupID   int64
	Name         string
	Relationship string
	Gender       domain.Field[string]
	BirthDate    domain.Field[string]
	Phone        domain.Field[string]
	IDType       domain.Field[string]
	IDNumber     domain.Field[string]
	Height       domain.Field[int64]
	Weight       domain.Field[int64]
	BloodType    domain.Field[string]
	IsDefault    domain.Field[bool]
}

// Register is the one-step register-and-bind command.
type Register struct {
	AppID         int64
	ChannelUserID string
	User          UserInput
	Groups        []GroupInput
	Members       []MemberInput
}

// GroupRef and MemberRef are the ids a partner must persist.
type GroupRef struct {
	FamilyGroupID int64
	AppGroupID    int64
}

// MemberRef pairs a platform member id with the partner's id.
type MemberRef struct {
	MemberID  int64
	AppUserID string
}

// RegisterResult answers a register, first or repeated.
type RegisterResult struct {
	OpenUserID    int64
	ChannelUserID string
	Created       bool
	Groups        []GroupRef
	Members       []MemberRef
	Position      events.Position
}

func (u *Users) rules() rules { return newRules(u.now(), u.loc) }

// validateRegister checks a register against the spec (r carries today's date).
func validateRegister(c Register, r rules) error {
	if r.required("channel_user_id", c.ChannelUserID) {
		r.maxLen("channel_user_id", c.ChannelUserID, 100)
	}
	profile := ProfilePatch{
		Name: domain.Val(c.User.Name), Nickname: c.User.Nickname, Gender: c.User.Gender, Avatar: c.User.Avatar,
		Phone: c.User.Phone, Email: c.User.Email, BirthDate: c.User.BirthDate,
	}
	r.profile(registerProfile, profile)
	seenGroups := map[int64]bool{}
	for i, g := range c.Groups {
		p := fmt.Sprintf("family_groups[%d].", i)
		r.group(p, g)
		if seenGroups[g.AppGroupID] {
			r.v.Add(p+"app_group_id", "is repeated in family_groups")
		}
		seenGroups[g.AppGroupID] = true
	}
	seenMembers := map[string]bool{}
	defaults := 0
	for i, m := range c.Members {
		p := fmt.Sprintf("family_members[%d].", i)
		r.member(p, m, true)
		if seenMembers[m.AppUserID] {
			r.v.Add(p+"app_user_id", "is repeated in family_members")
		}
		seenMembers[m.AppUserID] = true
		if m.IsDefault.Value {
			defaults++
		}
	}
	if defaults > 1 {
		r.v.Add("family_members", "at most one member may be is_default")
	}
	if err := r.v.Err(); err != nil {
		return err
	}
	for _, m := range c.Members {
		if !seenGroups[m.AppGroupID] {
			return fmt.Errorf("%w: %d", domain.ErrInvalidAppGroupID, m.AppGroupID)
		}
	}
	return nil
}

func (r rules) group(prefix string, g GroupInput) {
	if g.AppGroupID < 1 {
		r.v.Add(prefix+"app_group_id", "is required and must be a positive integer")
	}
	if r.required(prefix+"name", g.Name) {
		r.maxLen(prefix+"name", g.Name, 64)
	}
}

func (r rules) member(prefix string, m MemberInput, onRegister bool) {
	if r.required(prefix+"app_user_id", m.AppUserID) {
		r.maxLen(prefix+"app_user_id", m.AppUserID, 32)
	}
	if m.AppGroupID < 1 {
		r.v.Add(prefix+"app_group_id", "is required and must be a positive integer")
	}
	if r.required(prefix+"name", m.Name) {
		r.maxLen(prefix+"name", m.Name, 32)
	}
	if r.required(prefix+"relationship", m.Relationship) {
		r.oneOf(prefix+"relationship", m.Relationship, relationships, "SELF, SPOUSE, FATHER, MOTHER, SON, DAUGHTER, GRANDFATHER, GRANDMOTHER, BROTHER, SISTER, OTHER")
	}
	if v := m.Gender.Ptr(); v != nil {
		r.oneOf(prefix+"gender", *v, genders, "male, female, unknown")
	}
	if v := m.BirthDate.Ptr(); v != nil {
		r.date(prefix+"birth_date", *v, false)
	}
	if v := m.Phone.Ptr(); v != nil {
		r.maxLen(prefix+"phone", *v, 16)
	}
	if !onRegister {
		if m.IDType.Set {
			r.v.Add(prefix+"id_type", "is accepted only on the one-step register")
		}
		if m.IDNumber.Set {
			r.v.Add(prefix+"id_number", "is accepted only on the one-step register")
		}
	}
	if v := m.IDType.Ptr(); v != nil {
		r.maxLen(prefix+"id_type", *v, 20)
	}
	if v := m.IDNumber.Ptr(); v != nil {
		r.maxLen(prefix+"id_number", *v, 32)
	}
	if v := m.Height.Ptr(); v != nil {
		r.between(prefix+"height", *v, 30, 300)
	}
	if v := m.Weight.Ptr(); v != nil {
		r.between(prefix+"weight", *v, 100, 50000)
	}
	if v := m.BloodType.Ptr(); v != nil {
		r.oneOf(prefix+"blood_type", *v, bloodTypes, "A, B, AB, O, unknown")
	}
	if m.IsDefault.Set {
		r.notNull(prefix+"is_default", m.IsDefault.Null)
	}
}

// ProfilePatch is a PATCH of the user's basic information.
type ProfilePatch struct {
	Name      domain.Field[string]
	Nickname  domain.Field[string]
	Gender    domain.Field[string]
	Avatar    domain.Field[string]
	Phone     domain.Field[string]
	Email     domain.Field[string]
	BirthDate domain.Field[string]
}

// profileFields are the names a profile's fields are reported under.
type profileFields struct{ name, nickname, gender, avatar, phone, email, birthDate string }

func fieldsUnder(prefix string) profileFields {
	return profileFields{prefix + "name", prefix + "nickname", prefix + "gender", prefix + "avatar",
		prefix + "phone", prefix + "email", prefix + "birth_date"}
}

// The names of a register's profile fields (under "user.") and of a
// PATCH's, made once rather than per request.
var registerProfile, patchProfile = fieldsUnder("user."), fieldsUnder("")

func (r rules) profile(f profileFields, p ProfilePatch) {
	if p.Name.Set && r.notNull(f.name, p.Name.Null) && r.required(f.name, p.Name.Value) {
		r.maxLen(f.name, p.Name.Value, 32)
	}
	if v := p.Nickname.Ptr(); v != nil {
		r.maxLen(f.nickname, *v, 32)
	}
	if p.Gender.Set && r.notNull(f.gender, p.Gender.Null) {
		r.oneOf(f.gender, p.Gender.Value, genders, "male, female, unknown")
	}
	if v := p.Avatar.Ptr(); v != nil {
		r.url(f.avatar, *v, 500)
	}
	if v := p.Phone.Ptr(); v != nil {
		r.mobile(f.phone, *v)
	}
	if v := p.Email.Ptr(); v != nil {
		r.email(f.email, *v)
	}
	if v := p.BirthDate.Ptr(); v != nil {
		r.date(f.birthDate, *v, true)
	}
}

// applyProfile returns the profile after the patch and the names of changed fields.
func applyProfile(cur catalog.Profile, p ProfilePatch) (catalog.Profile, []string) {
	next := cur
	var changed []string
	setStr := func(name string, f domain.Field[string], dst **string) {
		if !f.Set {
			return
		}
		nv := f.Ptr()
		if !equalPtr(*dst, nv) {
			*dst = nv
			changed = append(changed, name)
		}
	}
	if p.Name.Set && p.Name.Value != next.Name {
		next.Name = p.Name.Value
		changed = append(changed, "name")
	}
	setStr("nickname", p.Nickname, &next.Nickname)
	if p.Gender.Set && p.Gender.Value != next.Gender {
		next.Gender = p.Gender.Value
		changed = append(changed, "gender")
	}
	setStr("avatar", p.Avatar, &next.Avatar)
	setStr("phone", p.Phone, &next.Phone)
	setStr("email", p.Email, &next.Email)
	setStr("birth_date", p.BirthDate, &next.BirthDate)
	return next, changed
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// bindingState is one (app_id, channel_user_id) binding stream.
type bindingState struct{ openUserID int64 }

func (s *bindingState) apply(env events.Envelope) {
	switch b := env.Payload.(type) {
	case *catalog.ChannelUserBound:
		s.openUserID = b.OpenUserID
	case *catalog.ChannelUserUnbound:
		s.openUserID = 0 // erased: the next register binds a new person
	}
}

// bindings is what a register knows of a channel user's binding: its
// stream (named by a keyed hash of the id) and the stream a log written
// before hashed names bound it on (domain.LegacyBindingStream), which
// nothing binds any more. legacy is read only while hashed was never
// written: a hashed binding is claimed only after the legacy one was found
// free, and a free legacy binding stays free, so the two never both bind.
type bindings struct {
	hashed, legacy bindingState
}

// bound is the open_user_id the channel user is bound to, 0 for none.
func (b *bindings) bound() int64 {
	if b.hashed.openUserID != 0 {
		return b.hashed.openUserID
	}
	return b.legacy.openUserID
}

// decideBind binds the channel user to the open_user_id allocated for it,
// on the hashed binding stream; a channel user bound on either stream
// keeps its binding (nothing decided).
func decideBind(b *bindings, appID int64, channelUserID string, openUserID int64) []events.Payload {
	if b.bound() != 0 {
		return nil
	}
	return []events.Payload{catalog.ChannelUserBound{AppID: appID, ChannelUserID: channelUserID, OpenUserID: openUserID}}
}

// registerUser is a register with everything its decision needs: the bound
// open_user_id, a group id per group and a member id per member (allocated
// up front), and the time.
type registerUser struct {
	Register
	// Binding is the (hashed) binding stream's name, kept in user.registered.
	Binding    string
	OpenUserID int64
	GroupIDs   []int64
	MemberIDs  []int64
	Now        time.Time
}

// Register binds (app_id, channel_user_id) to a new open_user_id and creates
// the user with its groups and members, or returns the existing mapping.
//
// The binding stream is claimed (NoStream) and the user stream created
// (NoStream) through the shell's multi-stream append: on a store with an
// atomic one (bbolt, Postgres, memory) one durable write, and never a
// binding without its user. Whoever wins the binding answers 201; a
// concurrent register of the same channel user conflicts on the binding,
// reads it and answers 200 with the same ids. Elsewhere (EventStoreDB) the
// binding is appended first, then the user stream; whoever creates the user
// stream answers 201 and everyone else, including a retry after a crash
// between the two appends, finds the user and answers 200 with the same ids.
func (u *Users) Register(ctx context.Context, c Register, meta Meta) (RegisterResult, error) {
	if err := validateRegister(c, u.rules()); err != nil {
		return RegisterResult{}, err
	}
	meta.AppID = c.AppID
	binding := u.names.BindingStream(c.AppID, c.ChannelUserID)
	cmd := registerUser{Register: c, Binding: binding}
	var existing RegisterResult
	var created []events.Payload
	promise, _ := ctx.Value(registerPromiseKey{}).(func(context.Context, RegisterResult) context.Context)
	var prepare func(context.Context) context.Context
	if promise != nil {
		prepare = func(actx context.Context) context.Context {
			return promise(actx, createdResult(cmd.OpenUserID, c.ChannelUserID, created, events.Position{}))
		}
	}
	// The first try guesses that the channel user is new: its binding
	// stream is claimed as never written without being read, and a bound
	// channel user conflicts there (nothing is written) and is read on the
	// next try. Only where no binding can sit under a legacy name, which
	// the append's expected revision would not see.
	guess := u.noLegacy.Load()
	res, appended, err := executePartsWith(ctx, u.streams, &meta, func() ([]decided, error) {
		unread := guess
		guess = false
		b, bindingVersion := &bindings{}, uint64(0)
		var err error
		if !unread {
			if b, bindingVersion, err = u.loadBindings(ctx, binding, c.AppID, c.ChannelUserID); err != nil {
				return nil, err
			}
		}
		if b.hashed.openUserID == 0 && b.legacy.openUserID != 0 {
			// Bound under the legacy name (its user stream may still be to
			// create, after a crash between two appends): user.registered
			// names no hashed binding, so the user's binding is derived
			// from the id, as for every user of that release.
			cmd.Binding = ""
		}
		openUserID := b.bound()
		if openUserID == 0 {
			var parts []decided
			parts, created, err = u.bindAndCreate(ctx, &cmd, b, binding, bindingVersion)
			if len(parts) > 0 {
				parts[0].unread = unread
			}
			return parts, err
		}
		st := newUserState()
		version, pos, err := u.load(ctx, domain.UserStream(openUserID), st.apply)
		if err != nil {
			return nil, err
		}
		if st.registered {
			groups, members := st.mapping()
			existing = RegisterResult{OpenUserID: openUserID, ChannelUserID: st.channelUserID, Groups: groups, Members: members, Position: pos}
			return nil, nil
		}
		if err := u.allocateRegisterIDs(ctx, &cmd); err != nil {
			return nil, err
		}
		cmd.OpenUserID, cmd.Now = openUserID, u.now()
		created = decideRegister(st, cmd)
		return []decided{{stream: domain.UserStream(openUserID), version: version, ps: created}}, nil
	}, prepare)
	switch {
	case err != nil:
		return RegisterResult{}, wrapAppend(err, "register user")
	case !appended:
		return existing, nil
	}
	return createdResult(cmd.OpenUserID, c.ChannelUserID, created, res.Position), nil
}

type registerPromiseKey struct{}

// PromiseRegistered returns ctx carrying f, which Register, run with it,
// calls with a new user's result (its Position unset) once decided and
// right before the append that creates the user, passing the context of
// that append; f returns the context to make it with. The write edge
// announces its answer that way (idempotency.Promise), so that the answer
// is recorded in the append's transaction. An existing user's register
// appends nothing and calls nothing.
func PromiseRegistered(ctx context.Context, f func(context.Context, RegisterResult) context.Context) context.Context {
	return context.WithValue(ctx, registerPromiseKey{}, f)
}

// loadBindings reads the channel user's hashed binding stream and, while
// that was never written, its legacy one; the version is the hashed
// stream's, the one a new binding is claimed on.
func (u *Users) loadBindings(ctx context.Context, hashed string, appID int64, channelUserID string) (*bindings, uint64, error) {
	b := &bindings{}
	version, _, err := u.load(ctx, hashed, b.hashed.apply)
	if err != nil || version > 0 || u.noLegacy.Load() {
		return b, version, err
	}
	_, _, err = u.load(ctx, domain.LegacyBindingStream(appID, channelUserID), b.legacy.apply)
	return b, version, err
}

// WithLegacyBindings says whether the log may hold bindings under legacy
// names (the node decides it once per log: a log that had users before
// hashed names may, one begun with them cannot). Without it a register
// reads the legacy name whenever the hashed one was never written, which
// is always right and costs one stream read per new channel user.
func (u *Users) WithLegacyBindings(possible bool) *Users {
	u.noLegacy.Store(!possible)
	return u
}

// bindAndCreate decides, for a channel user bound to nobody, its binding to
// a fresh open_user_id and the new user's stream, created together. The
// user's data key is made while the ids are allocated, and exists before
// the append seals the user's fields.
func (u *Users) bindAndCreate(ctx context.Context, cmd *registerUser, b *bindings, binding string, bindingVersion uint64) ([]decided, []events.Payload, error) {
	id, err := u.ids.Next(ctx, KindUser)
	if err != nil {
		return nil, nil, err
	}
	warmed := u.warmKey(ctx, id)
	defer func() { <-warmed }()
	if err := u.allocateRegisterIDs(ctx, cmd); err != nil {
		return nil, nil, err
	}
	cmd.OpenUserID, cmd.Now = id, u.now()
	create := decideRegister(newUserState(), *cmd)
	return []decided{
		{stream: binding, version: bindingVersion, ps: decideBind(b, cmd.AppID, cmd.ChannelUserID, id)},
		{stream: domain.UserStream(id), version: 0, ps: create},
	}, create, nil
}

// createdResult answers the register that created the user with payloads ps.
func createdResult(openUserID int64, channelUserID string, ps []events.Payload, pos events.Position) RegisterResult {
	created := newUserState()
	for _, p := range ps {
		created.apply(events.Envelope{Payload: asDecoded(p)})
	}
	groups, members := created.mapping()
	return RegisterResult{OpenUserID: openUserID, ChannelUserID: channelUserID, Created: true, Groups: groups, Members: members, Position: pos}
}

// warmed is the closed channel of a key that needs no warming.
var warmed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// warmKey starts creating the user's data key; the channel is closed when it
// is done. A failure is ignored: the user append creates the key itself.
func (u *Users) warmKey(ctx context.Context, openUserID int64) <-chan struct{} {
	if u.warm == nil {
		return warmed
	}
	subject := ErasureSubject(openUserID)
	// Usually the key was made with its block of ids (one batch) and is in
	// the cache: then there is nothing to overlap, and no goroutine to start.
	if c, ok := u.warm.(interface{ Cached(subject string) bool }); ok && c.Cached(subject) {
		return warmed
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = u.warm.Warm(ctx, subject)
	}()
	return done
}

// allocateRegisterIDs allocates, once per register, an id for every group
// and member the request names.
func (u *Users) allocateRegisterIDs(ctx context.Context, c *registerUser) error {
	if c.GroupIDs != nil || c.MemberIDs != nil {
		return nil
	}
	c.GroupIDs, c.MemberIDs = make([]int64, len(c.Groups)), make([]int64, len(c.Members))
	for i := range c.GroupIDs {
		id, err := u.ids.Next(ctx, KindGroup)
		if err != nil {
			return err
		}
		c.GroupIDs[i] = id
	}
	for i := range c.MemberIDs {
		id, err := u.ids.Next(ctx, KindMember)
		if err != nil {
			return err
		}
		c.MemberIDs[i] = id
	}
	return nil
}

// decideRegister creates the user with its groups and members; a user
// already registered decides nothing (the register is a replay). The
// command has passed validateRegister.
func decideRegister(st *userState, c registerUser) []events.Payload {
	if st.registered {
		return nil
	}
	profile, _ := applyProfile(catalog.Profile{Gender: "unknown"}, ProfilePatch{
		Name: domain.Val(c.User.Name), Nickname: c.User.Nickname, Gender: c.User.Gender, Avatar: c.User.Avatar,
		Phone: c.User.Phone, Email: c.User.Email, BirthDate: c.User.BirthDate,
	})
	ps := []events.Payload{catalog.UserRegistered{
		AppID: c.AppID, OpenUserID: c.OpenUserID, ChannelUserID: c.ChannelUserID, Profile: profile,
		RegisteredAt: c.Now.UTC().Truncate(time.Second), Binding: c.Binding,
	}}
	groupIDs := map[int64]int64{}
	for i, g := range c.Groups {
		id := c.GroupIDs[i]
		groupIDs[g.AppGroupID] = id
		ps = append(ps, catalog.FamilyGroupUpserted{ChannelUserID: c.ChannelUserID, OpenUserID: c.OpenUserID, FamilyGroupID: id, AppGroupID: g.AppGroupID, Name: g.Name, Created: true})
	}
	for i, in := range c.Members {
		m, _ := mergeMember(catalog.Member{MemberID: c.MemberIDs[i]}, in, groupIDs[in.AppGroupID])
		ps = append(ps, catalog.FamilyMemberCreated{ChannelUserID: c.ChannelUserID, OpenUserID: c.OpenUserID, Member: m})
	}
	return ps
}

// asDecoded lets a freshly decided payload be applied like a decoded one:
// a pointer, its times without a monotonic reading.
func asDecoded(p events.Payload) events.Payload {
	switch v := unwrap(p).(type) {
	case catalog.BenefitFulfilled:
		v.At = v.At.Round(0)
		return &v
	case catalog.UserRegistered:
		return &v
	case catalog.FamilyGroupUpserted:
		return &v
	case catalog.FamilyMemberCreated:
		return &v
	case catalog.FamilyMemberUpdated:
		return &v
	case catalog.CardBatchRenumbered:
		return &v
	case catalog.IdempotencyClaimed:
		return &v
	}
	return p
}

// mergeMember applies sent fields onto a member; unsent fields keep their value.
func mergeMember(cur catalog.Member, in MemberInput, familyGroupID int64) (catalog.Member, []string) {
	next := cur
	var changed []string
	str := func(name string, have *string, want string) {
		if *have != want {
			*have = want
			changed = append(changed, name)
		}
	}
	next.AppUserID = in.AppUserID
	if next.AppGroupID != in.AppGroupID || next.FamilyGroupID != familyGroupID {
		next.AppGroupID, next.FamilyGroupID = in.AppGroupID, familyGroupID
		changed = append(changed, "app_group_id")
	}
	str("name", &next.Name, in.Name)
	str("relationship", &next.Relationship, in.Relationship)
	optStr := func(name string, f domain.Field[string], dst **string) {
		if f.Set && !equalPtr(*dst, f.Ptr()) {
			*dst = f.Ptr()
			changed = append(changed, name)
		}
	}
	optInt := func(name string, f domain.Field[int64], dst **int64) {
		if f.Set && !equalPtr(*dst, f.Ptr()) {
			*dst = f.Ptr()
			changed = append(changed, name)
		}
	}
	optStr("gender", in.Gender, &next.Gender)
	optStr("birth_date", in.BirthDate, &next.BirthDate)
	optStr("phone", in.Phone, &next.Phone)
	optStr("id_type", in.IDType, &next.IDType)
	optStr("id_number", in.IDNumber, &next.IDNumber)
	optInt("height", in.Height, &next.Height)
	optInt("weight", in.Weight, &next.Weight)
	optStr("blood_type", in.BloodType, &next.BloodType)
	if in.IsDefault.Set && next.IsDefault != in.IsDefault.Value {
		next.IsDefault = in.IsDefault.Value
		changed = append(changed, "is_default")
	}
	return next, changed
}

// owned refuses a user that is not registered with this app: another
// app's user is not found, exactly as a missing one.
func (s *userState) owned(appID int64) error {
	if !s.registered || s.appID != appID {
		return domain.ErrUserNotFound
	}
	return nil
}

// change runs decide on one user's stream through the command shell (the
// user cache); no payloads appends nothing and answers the stream's position.
//
// A user this node has loaded is decided on as cached, without reading its
// stream first (trustedUsers): the append's expected revision is the
// cached version, so a user another node changed since conflicts, and the
// shell reads and decides again; a refusal or a no-op, which append
// nothing, are decided again on a read, so no answer rests on a state the
// store did not confirm.
func (u *Users) change(ctx context.Context, appID, openUserID int64, meta Meta, decide func(*userState) ([]events.Payload, error)) (events.Position, error) {
	meta.AppID = appID
	return execute(ctx, u.streams, trustedUsers{u.loaded, ctx, u.streams}, domain.UserStream(openUserID), &meta, decide)
}

// trustedUsers is the user cache as a trusting source of the command shell:
// it lends a loaded user without reading the stream (aggregateCache.cached:
// never a user whose key no longer reads), and loads and appends as the
// cache does.
type trustedUsers struct {
	*aggregateCache[*userState]
	ctx context.Context
	s   streams
}

func (t trustedUsers) loadCached(stream string) (*userState, uint64, events.Position, uint64, bool) {
	return t.cached(t.ctx, t.s, stream)
}

// decideUpdateProfile applies a validated PATCH; only sent fields that
// differ change, and no change decides nothing.
func decideUpdateProfile(st *userState, appID int64, p ProfilePatch) ([]events.Payload, error) {
	if err := st.owned(appID); err != nil {
		return nil, err
	}
	next, changed := applyProfile(st.profile, p)
	if len(changed) == 0 {
		return nil, nil
	}
	return []events.Payload{catalog.UserProfileUpdated{ChannelUserID: st.channelUserID, OpenUserID: st.openUserID, Changed: changed, Profile: next}}, nil
}

// UpdateProfile applies a PATCH; only sent fields change.
func (u *Users) UpdateProfile(ctx context.Context, appID, openUserID int64, p ProfilePatch, meta Meta) (events.Position, error) {
	r := u.rules()
	r.profile(patchProfile, p)
	if err := r.v.Err(); err != nil {
		return events.Position{}, err
	}
	return u.change(ctx, appID, openUserID, meta, func(st *userState) ([]events.Payload, error) {
		return decideUpdateProfile(st, appID, p)
	})
}

// GroupResult answers a group upsert.
type GroupResult struct {
	FamilyGroupID int64
	AppGroupID    int64
	Name          string
	Created       bool
	Position      events.Position
}

// upsertGroup is a group upsert with the id a new group would take.
type upsertGroup struct {
	AppID int64
	Group GroupInput
	NewID int64
}

// decideUpsertGroup creates a group for a new app_group_id (with NewID) or
// renames the live one; the same name again decides nothing.
func decideUpsertGroup(st *userState, c upsertGroup) (GroupResult, []events.Payload, error) {
	if err := st.owned(c.AppID); err != nil {
		return GroupResult{}, nil, err
	}
	g := c.Group
	out := GroupResult{AppGroupID: g.AppGroupID, Name: g.Name}
	if id, ok := st.activeGroups[g.AppGroupID]; ok {
		out.FamilyGroupID = id
		if st.groups[id].name == g.Name {
			return out, nil, nil
		}
		return out, []events.Payload{catalog.FamilyGroupUpserted{ChannelUserID: st.channelUserID, OpenUserID: st.openUserID, FamilyGroupID: id, AppGroupID: g.AppGroupID, Name: g.Name}}, nil
	}
	out.FamilyGroupID, out.Created = c.NewID, true
	return out, []events.Payload{catalog.FamilyGroupUpserted{ChannelUserID: st.channelUserID, OpenUserID: st.openUserID, FamilyGroupID: c.NewID, AppGroupID: g.AppGroupID, Name: g.Name, Created: true}}, nil
}

// UpsertGroup creates a group for a new app_group_id or renames the live one.
// A group id is allocated only when the user is found and has no live group
// of that app_group_id (a rename needs none), once per command.
func (u *Users) UpsertGroup(ctx context.Context, appID, openUserID int64, g GroupInput, meta Meta) (GroupResult, error) {
	r := u.rules()
	r.group("", g)
	if err := r.v.Err(); err != nil {
		return GroupResult{}, err
	}
	c := upsertGroup{AppID: appID, Group: g}
	var out GroupResult
	pos, err := u.change(ctx, appID, openUserID, meta, func(st *userState) ([]events.Payload, error) {
		if _, exists := st.activeGroups[g.AppGroupID]; !exists {
			if err := u.allocateFor(ctx, st, appID, KindGroup, &c.NewID); err != nil {
				return nil, err
			}
		}
		res, ps, err := decideUpsertGroup(st, c)
		out = res
		return ps, err
	})
	out.Position = pos
	return out, err
}

// allocateFor allocates an id into *id, once, when the user is the app's
// (a refused command allocates nothing).
func (u *Users) allocateFor(ctx context.Context, st *userState, appID int64, kind string, id *int64) error {
	if *id != 0 || st.owned(appID) != nil {
		return nil
	}
	next, err := u.ids.Next(ctx, kind)
	*id = next
	return err
}

// decideDissolveGroup soft-dissolves a live group and soft-deletes its
// members, for good.
func decideDissolveGroup(st *userState, appID, familyGroupID int64) ([]events.Payload, error) {
	if err := st.owned(appID); err != nil {
		return nil, err
	}
	g, ok := st.groups[familyGroupID]
	if !ok || g.dissolved {
		return nil, domain.ErrFamilyGroupNotFound
	}
	deleted := []int64{}
	for id, m := range st.members {
		if m.FamilyGroupID == familyGroupID {
			deleted = append(deleted, id)
		}
	}
	slices.Sort(deleted)
	return []events.Payload{catalog.FamilyGroupDissolved{ChannelUserID: st.channelUserID, OpenUserID: st.openUserID, FamilyGroupID: familyGroupID, AppGroupID: g.appGroupID, DeletedMemberIDs: deleted}}, nil
}

// DissolveGroup soft-dissolves a group and soft-deletes its members, for good.
func (u *Users) DissolveGroup(ctx context.Context, appID, openUserID, familyGroupID int64, meta Meta) (events.Position, error) {
	return u.change(ctx, appID, openUserID, meta, func(st *userState) ([]events.Payload, error) {
		return decideDissolveGroup(st, appID, familyGroupID)
	})
}

// MemberResult answers a member upsert.
type MemberResult struct {
	MemberID  int64
	AppUserID string
	Created   bool
	Position  events.Position
}

// upsertMember is a validated member upsert with the id a new member would take.
type upsertMember struct {
	AppID  int64
	Member MemberInput
	NewID  int64
}

// decideUpsertMember creates a member for a new app_user_id (with NewID) or
// merges the sent fields into the live one; marking a member is_default
// clears the flag on the user's other members.
func decideUpsertMember(st *userState, c upsertMember) (MemberResult, []events.Payload, error) {
	if err := st.owned(c.AppID); err != nil {
		return MemberResult{}, nil, err
	}
	in := c.Member
	out := MemberResult{AppUserID: in.AppUserID}
	groupID, ok := st.activeGroups[in.AppGroupID]
	if !ok {
		return MemberResult{}, nil, domain.ErrFamilyGroupNotFound
	}
	var ps []events.Payload
	if id, ok := st.memberByApp[in.AppUserID]; ok {
		out.MemberID = id
		next, changed := mergeMember(*st.members[id], in, groupID)
		if len(changed) > 0 {
			ps = append(ps, catalog.FamilyMemberUpdated{ChannelUserID: st.channelUserID, OpenUserID: st.openUserID, Changed: changed, Member: next})
		}
	} else {
		out.MemberID, out.Created = c.NewID, true
		m, _ := mergeMember(catalog.Member{MemberID: c.NewID}, in, groupID)
		ps = append(ps, catalog.FamilyMemberCreated{ChannelUserID: st.channelUserID, OpenUserID: st.openUserID, Member: m})
	}
	if in.IsDefault.Value && len(ps) > 0 {
		others := make([]int64, 0)
		for id, m := range st.members {
			if m.IsDefault && id != out.MemberID {
				others = append(others, id)
			}
		}
		slices.Sort(others)
		for _, id := range others {
			m := *st.members[id]
			m.IsDefault = false
			ps = append(ps, catalog.FamilyMemberUpdated{ChannelUserID: st.channelUserID, OpenUserID: st.openUserID, Changed: []string{"is_default"}, Member: m})
		}
	}
	return out, ps, nil
}

// UpsertMember creates a member for a new app_user_id or updates the live
// one; fields not sent keep their value, null clears an optional field.
// Marking a member is_default clears the flag on the user's other members.
// A member id is allocated only when the user is found and has no live
// member of that app_user_id (an update needs none), once per command.
func (u *Users) UpsertMember(ctx context.Context, appID, openUserID int64, in MemberInput, meta Meta) (MemberResult, error) {
	r := u.rules()
	r.member("", in, false)
	if err := r.v.Err(); err != nil {
		return MemberResult{}, err
	}
	c := upsertMember{AppID: appID, Member: in}
	var out MemberResult
	pos, err := u.change(ctx, appID, openUserID, meta, func(st *userState) ([]events.Payload, error) {
		if _, exists := st.memberByApp[in.AppUserID]; !exists {
			if err := u.allocateFor(ctx, st, appID, KindMember, &c.NewID); err != nil {
				return nil, err
			}
		}
		res, ps, err := decideUpsertMember(st, c)
		out = res
		return ps, err
	})
	out.Position = pos
	return out, err
}

// decideDeleteMember soft-deletes a live member.
func decideDeleteMember(st *userState, appID, memberID int64) ([]events.Payload, error) {
	if err := st.owned(appID); err != nil {
		return nil, err
	}
	m, ok := st.members[memberID]
	if !ok {
		return nil, domain.ErrMemberNotFound
	}
	return []events.Payload{catalog.FamilyMemberDeleted{ChannelUserID: st.channelUserID, OpenUserID: st.openUserID, MemberID: memberID, AppUserID: m.AppUserID, FamilyGroupID: m.FamilyGroupID}}, nil
}

// DeleteMember soft-deletes a live member.
func (u *Users) DeleteMember(ctx context.Context, appID, openUserID, memberID int64, meta Meta) (events.Position, error) {
	return u.change(ctx, appID, openUserID, meta, func(st *userState) ([]events.Payload, error) {
		return decideDeleteMember(st, appID, memberID)
	})
}

// ErasureSubject is the key-store subject of a channel user: every personal
// field of theirs is sealed with its key (package privacy).
func ErasureSubject(openUserID int64) string { return domain.UserStream(openUserID) }

// Forget drops a user's loaded state from this handler's cache, so a node
// that learns of another node's erasure holds none of that person's
// decrypted data in memory (the next command reloads it, erased).
func (u *Users) Forget(openUserID int64) { u.loaded.drop(domain.UserStream(openUserID)) }

// Erase erases a channel user (the right to erasure): it destroys the user's data
// key, so every personal field of theirs in the log reads as null from now
// on, appends user.erased (who, when, why) to the user's stream, and frees
// the partner's channel_user_id with channel_user.unbound on the binding
// stream. The key goes first: if an append then fails, the data is already
// unreadable and a retry finishes the job. An unknown or already erased user
// is ErrUserNotFound.
func (u *Users) Erase(ctx context.Context, openUserID int64, reason string, meta Meta) (events.Position, error) {
	if u.keys == nil {
		return events.Position{}, errors.New("users: erasure needs the key store")
	}
	// Whatever happens, this node keeps none of the user's data loaded.
	defer u.loaded.drop(domain.UserStream(openUserID))
	var binding string
	m := meta
	// The user's own appends are read back by the next load (readBack):
	// nothing of an erased user is advanced from decrypted bytes.
	res, err := execute(ctx, u.streams, readBack[*userState]{u.loaded}, domain.UserStream(openUserID), &m, func(st *userState) ([]events.Payload, error) {
		if !st.registered {
			return nil, domain.ErrUserNotFound
		}
		if err := u.keys.Destroy(ctx, ErasureSubject(openUserID)); err != nil {
			return nil, fmt.Errorf("erase user: destroy key: %w", err)
		}
		m.AppID = st.appID
		binding = st.binding
		return []events.Payload{decideErase(st, reason, meta.Actor, u.now())}, nil
	})
	if err != nil {
		return events.Position{}, wrapAppend(err, "erase user")
	}
	pos, err := u.unbind(ctx, binding, openUserID, m)
	if err != nil {
		return events.Position{}, err
	}
	if res.Less(pos) {
		return pos, nil
	}
	return res, nil
}

// decideErase records the erasure of a registered user: who, when and why,
// and no personal data (not the channel_user_id either).
func decideErase(st *userState, reason, actor string, now time.Time) catalog.UserErased {
	return catalog.UserErased{AppID: st.appID, OpenUserID: st.openUserID, Reason: reason, ErasedBy: actor, ErasedAt: now.UTC()}
}

// decideUnbind frees a binding that still binds the erased user; the event
// names the app and the user, not the channel_user_id (the stream's name
// is a keyed hash of it).
func decideUnbind(b *bindingState, appID, openUserID int64) []events.Payload {
	if b.openUserID == 0 || b.openUserID != openUserID {
		return nil
	}
	return []events.Payload{catalog.ChannelUserUnbound{AppID: appID, OpenUserID: openUserID}}
}

// unbind frees the binding stream if it still binds the erased user.
func (u *Users) unbind(ctx context.Context, binding string, openUserID int64, meta Meta) (events.Position, error) {
	if binding == "" {
		return events.Position{}, nil // a user without a readable binding name: nothing to free
	}
	pos, err := execute(ctx, u.streams, replay[*bindingState]{func() *bindingState { return &bindingState{} }}, binding, &meta, func(b *bindingState) ([]events.Payload, error) {
		return decideUnbind(b, meta.AppID, openUserID), nil
	})
	return pos, wrapAppend(err, "erase user: free the binding")
}

// ErasureAck is an app's acknowledgement of an erasure, as the partner
// sees it: the same for every acknowledge of the same erasure.
type ErasureAck struct {
	OpenUserID     int64
	ErasedAt       time.Time
	AcknowledgedAt time.Time
	// Position is where the acknowledgement is in the log (the first
	// acknowledge's append, or the stream's last event for a repeat).
	Position events.Position
}

// decideAcknowledgeErasure records the owning app's acknowledgement of an
// erasure once: a repeat decides nothing and answers the first one; a
// person who is not erased, or another app's, is ErrErasureNotFound (the
// same answer as an unknown id, so an app learns nothing of other apps).
func decideAcknowledgeErasure(st *userState, appID int64, actor string, now time.Time) ([]events.Payload, catalog.ErasureAcknowledged, error) {
	if !st.erased || st.appID != appID {
		return nil, catalog.ErasureAcknowledged{}, domain.ErrErasureNotFound
	}
	if !st.erasureAck.AcknowledgedAt.IsZero() {
		return nil, st.erasureAck, nil
	}
	ack := catalog.ErasureAcknowledged{AppID: appID, OpenUserID: st.openUserID, AcknowledgedBy: actor, AcknowledgedAt: now.UTC()}
	return []events.Payload{ack}, ack, nil
}

// AcknowledgeErasure records that app appID, which held the erased person
// openUserID, received the user.erased webhook and erased its copies. It is
// idempotent: concurrent or repeated acknowledges append one event and all
// answer the same acknowledgement.
func (u *Users) AcknowledgeErasure(ctx context.Context, appID, openUserID int64, meta Meta) (ErasureAck, error) {
	var out ErasureAck
	meta.AppID = appID
	pos, err := execute(ctx, u.streams, u.loaded, domain.UserStream(openUserID), &meta, func(st *userState) ([]events.Payload, error) {
		ps, ack, err := decideAcknowledgeErasure(st, appID, meta.Actor, u.now())
		out = ErasureAck{OpenUserID: openUserID, ErasedAt: st.erasedAt.UTC(), AcknowledgedAt: ack.AcknowledgedAt}
		return ps, err
	})
	if err != nil {
		return ErasureAck{}, wrapAppend(err, "acknowledge erasure")
	}
	out.Position = pos
	return out, nil
}
