package commands

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
)

// scenario is a Given/When/Then test of decisions: given events already in
// streams, when a command runs, then exactly these events are appended (or
// this error is returned and nothing is appended).
type scenario struct {
	t     *testing.T
	store events.Store
	reg   *events.Registry
	users *Users
	head  events.Position
}

var fixedNow = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func newScenario(t *testing.T) *scenario {
	t.Helper()
	store := memory.New()
	reg := catalog.Registry()
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	ids := NewAllocator(store, reg, 10)
	return &scenario{t: t, store: store, reg: reg, users: NewUsers(store, reg, ids, testNames, func() time.Time { return fixedNow }, loc)}
}

func (s *scenario) given(stream string, ps ...events.Payload) *scenario {
	s.t.Helper()
	evs := make([]events.Proposed, 0, len(ps))
	for _, p := range ps {
		ev, err := s.reg.Encode(p, events.Metadata{AppID: 1})
		if err != nil {
			s.t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if _, err := s.store.Append(context.Background(), stream, events.Any(), evs...); err != nil {
		s.t.Fatal(err)
	}
	s.mark()
	return s
}

func (s *scenario) mark() {
	recs, err := s.store.ReadAll(context.Background(), s.head, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	if len(recs) > 0 {
		s.head = recs[len(recs)-1].Position
	}
}

// then returns the domain events (ids.* excluded) appended since the last mark.
func (s *scenario) appended() []events.Payload {
	s.t.Helper()
	recs, err := s.store.ReadAll(context.Background(), s.head, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	var out []events.Payload
	for _, r := range recs {
		if r.Type == "ids.block_reserved" {
			continue
		}
		env, err := s.reg.Decode(r)
		if err != nil {
			s.t.Fatal(err)
		}
		out = append(out, env.Payload)
	}
	s.mark()
	return out
}

func (s *scenario) thenTypes(want ...string) []events.Payload {
	s.t.Helper()
	got := s.appended()
	var types []string
	for _, p := range got {
		types = append(types, p.EventType())
	}
	if !reflect.DeepEqual(types, want) {
		s.t.Fatalf("appended %v, want %v", types, want)
	}
	return got
}

func (s *scenario) thenError(err, want error) {
	s.t.Helper()
	if !errors.Is(err, want) {
		s.t.Fatalf("error %v, want %v", err, want)
	}
	if got := s.appended(); len(got) != 0 {
		s.t.Fatalf("an error must append nothing, appended %d events", len(got))
	}
}

var ctx = context.Background()

func registered(appID, openUserID int64) catalog.UserRegistered {
	return catalog.UserRegistered{AppID: appID, OpenUserID: openUserID, ChannelUserID: "c1", Profile: catalog.Profile{Name: "Li", Gender: "unknown"}}
}

func TestRegisterCreatesUserGroupsAndMembers(t *testing.T) {
	s := newScenario(t)
	res, err := s.users.Register(ctx, Register{
		AppID: 1, ChannelUserID: "c1", User: UserInput{Name: "Li Lei", Phone: domain.Val("13800138000")},
		Groups:  []GroupInput{{AppGroupID: 7, Name: "Home"}},
		Members: []MemberInput{{AppUserID: "m1", AppGroupID: 7, Name: "Han", Relationship: "SPOUSE", Height: domain.Val[int64](170)}},
	}, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || len(res.Groups) != 1 || len(res.Members) != 1 || res.Groups[0].AppGroupID != 7 || res.Members[0].AppUserID != "m1" {
		t.Fatalf("result %+v", res)
	}
	got := s.thenTypes("channel_user.bound", "user.registered", "user.family_group.created", "user.family_member.created")
	m := got[3].(*catalog.FamilyMemberCreated).Member
	if m.FamilyGroupID != res.Groups[0].FamilyGroupID || *m.Height != 170 || m.Gender != nil {
		t.Fatalf("member %+v", m)
	}
	if p := got[1].(*catalog.UserRegistered).Profile; p.Gender != "unknown" || *p.Phone != "13800138000" {
		t.Fatalf("profile %+v", p)
	}
}

func TestRegisterRepeatIsAReplay(t *testing.T) {
	s := newScenario(t)
	cmd := Register{AppID: 1, ChannelUserID: "c1", User: UserInput{Name: "Li"}, Groups: []GroupInput{{AppGroupID: 1, Name: "G"}}}
	first, err := s.users.Register(ctx, cmd, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	s.appended()
	cmd.User.Name = "Changed"
	again, err := s.users.Register(ctx, cmd, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Created || again.OpenUserID != first.OpenUserID || !reflect.DeepEqual(again.Groups, first.Groups) {
		t.Fatalf("repeat %+v, first %+v", again, first)
	}
	s.thenTypes()
}

func TestRegisterCompletesAfterCrashBetweenBindingAndUser(t *testing.T) {
	s := newScenario(t).given(testNames.BindingStream(1, "c1"), catalog.ChannelUserBound{AppID: 1, ChannelUserID: "c1", OpenUserID: 42})
	res, err := s.users.Register(ctx, Register{AppID: 1, ChannelUserID: "c1", User: UserInput{Name: "Li"}}, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.OpenUserID != 42 {
		t.Fatalf("result %+v", res)
	}
	s.thenTypes("user.registered")
}

func TestRegisterRejectsBadInput(t *testing.T) {
	cases := map[string]struct {
		cmd   Register
		field string
	}{
		"name required":      {Register{ChannelUserID: "c", User: UserInput{}}, "user.name"},
		"name too long":      {Register{ChannelUserID: "c", User: UserInput{Name: string(make([]rune, 33))}}, "user.name"},
		"phone":              {Register{ChannelUserID: "c", User: UserInput{Name: "a", Phone: domain.Val("12345678901")}}, "user.phone"},
		"birth today":        {Register{ChannelUserID: "c", User: UserInput{Name: "a", BirthDate: domain.Val("2026-11-21")}}, "user.birth_date"},
		"birth not a date":   {Register{ChannelUserID: "c", User: UserInput{Name: "a", BirthDate: domain.Val("2020-02-30")}}, "user.birth_date"},
		"gender":             {Register{ChannelUserID: "c", User: UserInput{Name: "a", Gender: domain.Val("x")}}, "user.gender"},
		"email":              {Register{ChannelUserID: "c", User: UserInput{Name: "a", Email: domain.Val("Li <li@x.cn>")}}, "user.email"},
		"avatar":             {Register{ChannelUserID: "c", User: UserInput{Name: "a", Avatar: domain.Val("ftp://x")}}, "user.avatar"},
		"channel id missing": {Register{User: UserInput{Name: "a"}}, "channel_user_id"},
		"group name":         {Register{ChannelUserID: "c", User: UserInput{Name: "a"}, Groups: []GroupInput{{AppGroupID: 1}}}, "family_groups[0].name"},
		"duplicate group":    {Register{ChannelUserID: "c", User: UserInput{Name: "a"}, Groups: []GroupInput{{1, "a"}, {1, "b"}}}, "family_groups[1].app_group_id"},
		"height":             {Register{ChannelUserID: "c", User: UserInput{Name: "a"}, Groups: []GroupInput{{1, "a"}}, Members: []MemberInput{{AppUserID: "m", AppGroupID: 1, Name: "n", Relationship: "SELF", Height: domain.Val[int64](29)}}}, "family_members[0].height"},
		"weight":             {Register{ChannelUserID: "c", User: UserInput{Name: "a"}, Groups: []GroupInput{{1, "a"}}, Members: []MemberInput{{AppUserID: "m", AppGroupID: 1, Name: "n", Relationship: "SELF", Weight: domain.Val[int64](50001)}}}, "family_members[0].weight"},
		"relationship":       {Register{ChannelUserID: "c", User: UserInput{Name: "a"}, Groups: []GroupInput{{1, "a"}}, Members: []MemberInput{{AppUserID: "m", AppGroupID: 1, Name: "n", Relationship: "COUSIN"}}}, "family_members[0].relationship"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s := newScenario(t)
			c.cmd.AppID = 1
			_, err := s.users.Register(ctx, c.cmd, Meta{})
			var v *domain.ValidationError
			if !errors.As(err, &v) || !v.Has(c.field) {
				t.Fatalf("error %v, want a validation error on %s", err, c.field)
			}
			s.thenTypes()
		})
	}
}

func TestRegisterMemberOfUnknownGroup(t *testing.T) {
	s := newScenario(t)
	_, err := s.users.Register(ctx, Register{AppID: 1, ChannelUserID: "c", User: UserInput{Name: "a"},
		Members: []MemberInput{{AppUserID: "m", AppGroupID: 9, Name: "n", Relationship: "SELF"}}}, Meta{})
	s.thenError(err, domain.ErrInvalidAppGroupID)
}

func TestProfilePatch(t *testing.T) {
	nick := "Lee"
	s := newScenario(t).given(domain.UserStream(5), catalog.UserRegistered{AppID: 1, OpenUserID: 5, Profile: catalog.Profile{Name: "Li", Gender: "male", Nickname: &nick}})
	_, err := s.users.UpdateProfile(ctx, 1, 5, ProfilePatch{Nickname: domain.Field[string]{Set: true, Null: true}, Email: domain.Val("li@example.cn")}, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	p := s.thenTypes("user.profile.updated")[0].(*catalog.UserProfileUpdated)
	if p.Profile.Nickname != nil || *p.Profile.Email != "li@example.cn" || p.Profile.Name != "Li" || p.Profile.Gender != "male" || !reflect.DeepEqual(p.Changed, []string{"nickname", "email"}) {
		t.Fatalf("update %+v", p)
	}
	// The same patch again changes nothing and appends nothing.
	if _, err := s.users.UpdateProfile(ctx, 1, 5, ProfilePatch{Nickname: domain.Field[string]{Set: true, Null: true}}, Meta{}); err != nil {
		t.Fatal(err)
	}
	s.thenTypes()
	_, err = s.users.UpdateProfile(ctx, 2, 5, ProfilePatch{Name: domain.Val("x")}, Meta{})
	s.thenError(err, domain.ErrUserNotFound)
}

func TestGroupUpsertAndDissolve(t *testing.T) {
	s := newScenario(t).given(domain.UserStream(5), registered(1, 5),
		catalog.FamilyGroupUpserted{OpenUserID: 5, FamilyGroupID: 50, AppGroupID: 7, Name: "Home", Created: true},
		catalog.FamilyMemberCreated{OpenUserID: 5, Member: catalog.Member{MemberID: 60, AppUserID: "m1", AppGroupID: 7, FamilyGroupID: 50, Name: "a", Relationship: "SELF"}},
	)
	res, err := s.users.UpsertGroup(ctx, 1, 5, GroupInput{AppGroupID: 7, Name: "Home 2"}, Meta{})
	if err != nil || res.Created || res.FamilyGroupID != 50 {
		t.Fatalf("%+v %v", res, err)
	}
	s.thenTypes("user.family_group.created")
	if _, err := s.users.UpsertGroup(ctx, 1, 5, GroupInput{AppGroupID: 7, Name: "Home 2"}, Meta{}); err != nil {
		t.Fatal(err)
	}
	s.thenTypes()
	if _, err := s.users.DissolveGroup(ctx, 1, 5, 50, Meta{}); err != nil {
		t.Fatal(err)
	}
	d := s.thenTypes("user.family_group.deleted")[0].(*catalog.FamilyGroupDissolved)
	if !reflect.DeepEqual(d.DeletedMemberIDs, []int64{60}) {
		t.Fatalf("dissolved %+v", d)
	}
	_, err = s.users.DissolveGroup(ctx, 1, 5, 50, Meta{})
	s.thenError(err, domain.ErrFamilyGroupNotFound)
	_, err = s.users.UpsertMember(ctx, 1, 5, MemberInput{AppUserID: "m2", AppGroupID: 7, Name: "b", Relationship: "SON"}, Meta{})
	s.thenError(err, domain.ErrFamilyGroupNotFound)
	again, err := s.users.UpsertGroup(ctx, 1, 5, GroupInput{AppGroupID: 7, Name: "New home"}, Meta{})
	if err != nil || !again.Created || again.FamilyGroupID == 50 {
		t.Fatalf("re-created group %+v %v", again, err)
	}
}

func TestMemberUpsertMergesAndMovesDefault(t *testing.T) {
	h := int64(170)
	s := newScenario(t).given(domain.UserStream(5), registered(1, 5),
		catalog.FamilyGroupUpserted{OpenUserID: 5, FamilyGroupID: 50, AppGroupID: 7, Name: "Home", Created: true},
		catalog.FamilyMemberCreated{OpenUserID: 5, Member: catalog.Member{MemberID: 60, AppUserID: "m1", AppGroupID: 7, FamilyGroupID: 50, Name: "a", Relationship: "SELF", Height: &h, IsDefault: true}},
	)
	res, err := s.users.UpsertMember(ctx, 1, 5, MemberInput{AppUserID: "m2", AppGroupID: 7, Name: "b", Relationship: "SON", IsDefault: domain.Val(true)}, Meta{})
	if err != nil || !res.Created {
		t.Fatalf("%+v %v", res, err)
	}
	got := s.thenTypes("user.family_member.created", "user.family_member.updated")
	if u := got[1].(*catalog.FamilyMemberUpdated); u.Member.MemberID != 60 || u.Member.IsDefault || *u.Member.Height != 170 {
		t.Fatalf("cleared default %+v", u.Member)
	}
	// Unsent fields keep their value; null clears.
	res, err = s.users.UpsertMember(ctx, 1, 5, MemberInput{AppUserID: "m1", AppGroupID: 7, Name: "a", Relationship: "SELF", Phone: domain.Val("+86 1"), Height: domain.Field[int64]{Set: true, Null: true}}, Meta{})
	if err != nil || res.Created || res.MemberID != 60 {
		t.Fatalf("%+v %v", res, err)
	}
	u := s.thenTypes("user.family_member.updated")[0].(*catalog.FamilyMemberUpdated)
	if u.Member.Height != nil || *u.Member.Phone != "+86 1" || !reflect.DeepEqual(u.Changed, []string{"phone", "height"}) {
		t.Fatalf("update %+v", u)
	}
	_, err = s.users.UpsertMember(ctx, 1, 5, MemberInput{AppUserID: "m1", AppGroupID: 7, Name: "a", Relationship: "SELF", IDNumber: domain.Val("1")}, Meta{})
	var v *domain.ValidationError
	if !errors.As(err, &v) || !v.Has("id_number") {
		t.Fatalf("id_number on upsert: %v", err)
	}
	if _, err := s.users.DeleteMember(ctx, 1, 5, 60, Meta{}); err != nil {
		t.Fatal(err)
	}
	s.thenTypes("user.family_member.deleted")
	_, err = s.users.DeleteMember(ctx, 1, 5, 60, Meta{})
	s.thenError(err, domain.ErrMemberNotFound)
}

func TestAllocatorIDsAreUniqueAcrossAllocators(t *testing.T) {
	store := memory.New()
	reg := catalog.Registry()
	a, b := NewAllocator(store, reg, 3), NewAllocator(store, reg, 3)
	seen := map[int64]bool{}
	for i := 0; i < 20; i++ {
		for _, al := range []*Allocator{a, b} {
			id, err := al.Next(ctx, KindUser)
			if err != nil {
				t.Fatal(err)
			}
			if seen[id] || id <= 0 {
				t.Fatalf("id %d repeated or not positive", id)
			}
			seen[id] = true
		}
	}
}
