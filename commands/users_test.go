package commands

import (
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/memory"
)

// Given/When/Then of the channel-binding and user decisions (pure: no store).

func TestBindDecision(t *testing.T) {
	free := &bindings{hashed: *given(t, &bindingState{})}
	then(t, decideBind(free, 1, "c1", 42), nil, catalog.ChannelUserBound{AppID: 1, ChannelUserID: "c1", OpenUserID: 42})
	bound := &bindings{hashed: *given(t, &bindingState{}, catalog.ChannelUserBound{AppID: 1, ChannelUserID: "c1", OpenUserID: 7})}
	then(t, decideBind(bound, 1, "c1", 42), nil) // bound once, for good

	// Bound on the legacy stream of a log written before hashed names: the
	// user keeps that binding and no second one is claimed.
	legacy := &bindings{legacy: *given(t, &bindingState{}, catalog.ChannelUserBound{AppID: 1, ChannelUserID: "c1", OpenUserID: 7})}
	then(t, decideBind(legacy, 1, "c1", 42), nil)
	if legacy.bound() != 7 {
		t.Fatalf("legacy binding reads as user %d, want 7", legacy.bound())
	}
	// A legacy binding freed by an erasure: the next register binds anew, hashed.
	freed := &bindings{legacy: *given(t, &bindingState{},
		catalog.ChannelUserBound{AppID: 1, ChannelUserID: "c1", OpenUserID: 7},
		catalog.ChannelUserUnbound{AppID: 1, ChannelUserID: "c1", OpenUserID: 7})}
	then(t, decideBind(freed, 1, "c1", 42), nil, catalog.ChannelUserBound{AppID: 1, ChannelUserID: "c1", OpenUserID: 42})
}

func TestUnbindDecision(t *testing.T) {
	bound := given(t, &bindingState{}, catalog.ChannelUserBound{AppID: 1, ChannelUserID: "c1", OpenUserID: 7})
	// The unbinding names the app and the user, not the channel_user_id.
	then(t, decideUnbind(bound, 1, 7), nil, catalog.ChannelUserUnbound{AppID: 1, OpenUserID: 7})
	then(t, decideUnbind(bound, 1, 8), nil) // bound to someone else: not ours to free
	freed := given(t, &bindingState{}, catalog.ChannelUserBound{AppID: 1, ChannelUserID: "c1", OpenUserID: 7},
		catalog.ChannelUserUnbound{AppID: 1, OpenUserID: 7})
	then(t, decideUnbind(freed, 1, 7), nil) // freed already
}

func TestEraseDecision(t *testing.T) {
	st := given(t, newUserState(), catalog.UserRegistered{AppID: 1, OpenUserID: 5, ChannelUserID: "li@example.com",
		Profile: catalog.Profile{Name: "Li"}, Binding: testNames.BindingStream(1, "li@example.com")})
	got := decideErase(st, "ticket 7", "operator-1", fixedNow.Add(time.Nanosecond))
	want := catalog.UserErased{AppID: 1, OpenUserID: 5, Reason: "ticket 7", ErasedBy: "operator-1", ErasedAt: fixedNow.Add(time.Nanosecond)}
	then(t, []events.Payload{got}, nil, want) // no channel_user_id
	if st.binding != testNames.BindingStream(1, "li@example.com") {
		t.Fatalf("binding %q", st.binding)
	}
	// Once erased, a state keeps the binding's (hashed) name, not the id.
	erased := given(t, newUserState(), catalog.UserRegistered{AppID: 1, OpenUserID: 5, ChannelUserID: "li@example.com",
		Binding: testNames.BindingStream(1, "li@example.com")}, want)
	if erased.channelUserID != "" || erased.binding != testNames.BindingStream(1, "li@example.com") {
		t.Fatalf("erased state keeps %q, binding %q", erased.channelUserID, erased.binding)
	}
	// A user registered before hashed names binds under the legacy name,
	// derived from the id its (clear) user.registered holds.
	old := given(t, newUserState(), catalog.UserRegistered{AppID: 1, OpenUserID: 6, ChannelUserID: "li@example.com"})
	if old.binding != domain.LegacyBindingStream(1, "li@example.com") {
		t.Fatalf("legacy binding %q", old.binding)
	}
}

func TestRegisterDecision(t *testing.T) {
	c := registerUser{
		Register: Register{AppID: 1, ChannelUserID: "c1", User: UserInput{Name: "Li", Phone: domain.Val("13800138000")},
			Groups:  []GroupInput{{AppGroupID: 7, Name: "Home"}, {AppGroupID: 8, Name: "Parents"}},
			Members: []MemberInput{{AppUserID: "m1", AppGroupID: 8, Name: "Han", Relationship: "FATHER", Height: domain.Val[int64](170), IsDefault: domain.Val(true)}}},
		Binding: "channeluserhmac-1-ab", OpenUserID: 5, GroupIDs: []int64{50, 51}, MemberIDs: []int64{60},
		Now: time.Date(2026, 11, 21, 10, 0, 0, 900, time.UTC),
	}
	then(t, decideRegister(given(t, newUserState()), c), nil,
		catalog.UserRegistered{AppID: 1, OpenUserID: 5, ChannelUserID: "c1", Profile: catalog.Profile{Name: "Li", Gender: "unknown", Phone: ptr("13800138000")}, RegisteredAt: fixedNow, Binding: "channeluserhmac-1-ab"},
		catalog.FamilyGroupUpserted{ChannelUserID: "c1", OpenUserID: 5, FamilyGroupID: 50, AppGroupID: 7, Name: "Home", Created: true},
		catalog.FamilyGroupUpserted{ChannelUserID: "c1", OpenUserID: 5, FamilyGroupID: 51, AppGroupID: 8, Name: "Parents", Created: true},
		catalog.FamilyMemberCreated{ChannelUserID: "c1", OpenUserID: 5, Member: catalog.Member{MemberID: 60, AppUserID: "m1", AppGroupID: 8, FamilyGroupID: 51, Name: "Han", Relationship: "FATHER", Height: ptr[int64](170), IsDefault: true}},
	)
	// A registered user: the register is a replay and decides nothing.
	then(t, decideRegister(given(t, newUserState(), registered(1, 5)), c), nil)
}

func TestRegisterValidation(t *testing.T) {
	r := func() rules { return newRules(fixedNow, time.UTC) }
	ok := Register{AppID: 1, ChannelUserID: "c1", User: UserInput{Name: "Li"}, Groups: []GroupInput{{AppGroupID: 7, Name: "Home"}},
		Members: []MemberInput{{AppUserID: "m1", AppGroupID: 7, Name: "Han", Relationship: "SELF"}}}
	if err := validateRegister(ok, r()); err != nil {
		t.Fatalf("valid register refused: %v", err)
	}
	bad := ok
	bad.Members = []MemberInput{{AppUserID: "m1", AppGroupID: 9, Name: "Han", Relationship: "SELF"}}
	thenError(t, nil, validateRegister(bad, r()), domain.ErrInvalidAppGroupID)
	twoDefaults := ok
	twoDefaults.Members = []MemberInput{
		{AppUserID: "m1", AppGroupID: 7, Name: "a", Relationship: "SELF", IsDefault: domain.Val(true)},
		{AppUserID: "m2", AppGroupID: 7, Name: "b", Relationship: "SON", IsDefault: domain.Val(true)},
	}
	thenInvalid(t, validateRegister(twoDefaults, r()), "family_members")
	repeated := ok
	repeated.Members = []MemberInput{ok.Members[0], ok.Members[0]}
	thenInvalid(t, validateRegister(repeated, r()), "family_members[1].app_user_id")
}

// home is user 5 of app 1 with group 50 (app group 7) and default member 60.
func home(t *testing.T, more ...events.Payload) *userState {
	return given(t, newUserState(), append([]events.Payload{registered(1, 5),
		catalog.FamilyGroupUpserted{ChannelUserID: "c1", OpenUserID: 5, FamilyGroupID: 50, AppGroupID: 7, Name: "Home", Created: true},
		catalog.FamilyMemberCreated{ChannelUserID: "c1", OpenUserID: 5, Member: member60},
	}, more...)...)
}

var member60 = catalog.Member{MemberID: 60, AppUserID: "m1", AppGroupID: 7, FamilyGroupID: 50, Name: "a", Relationship: "SELF", Height: ptr[int64](170), IsDefault: true}

func TestUpdateProfileDecision(t *testing.T) {
	got, err := decideUpdateProfile(home(t), 1, ProfilePatch{Nickname: domain.Val("Lee"), Gender: domain.Val("male")})
	then(t, got, err, catalog.UserProfileUpdated{ChannelUserID: "c1", OpenUserID: 5, Changed: []string{"nickname", "gender"},
		Profile: catalog.Profile{Name: "Li", Gender: "male", Nickname: ptr("Lee")}})

	got, err = decideUpdateProfile(home(t), 1, ProfilePatch{Name: domain.Val("Li"), Gender: domain.Val("unknown"), Email: domain.Field[string]{Set: true, Null: true}})
	then(t, got, err) // nothing differs

	got, err = decideUpdateProfile(home(t), 2, ProfilePatch{Name: domain.Val("x")})
	thenError(t, got, err, domain.ErrUserNotFound) // another app's user
	got, err = decideUpdateProfile(given(t, newUserState()), 1, ProfilePatch{Name: domain.Val("x")})
	thenError(t, got, err, domain.ErrUserNotFound)
}

func TestUpsertGroupDecision(t *testing.T) {
	res, got, err := decideUpsertGroup(home(t), upsertGroup{AppID: 1, Group: GroupInput{AppGroupID: 8, Name: "Parents"}, NewID: 51})
	then(t, got, err, catalog.FamilyGroupUpserted{ChannelUserID: "c1", OpenUserID: 5, FamilyGroupID: 51, AppGroupID: 8, Name: "Parents", Created: true})
	if !res.Created || res.FamilyGroupID != 51 {
		t.Fatalf("result %+v", res)
	}

	res, got, err = decideUpsertGroup(home(t), upsertGroup{AppID: 1, Group: GroupInput{AppGroupID: 7, Name: "Home 2"}, NewID: 51})
	then(t, got, err, catalog.FamilyGroupUpserted{ChannelUserID: "c1", OpenUserID: 5, FamilyGroupID: 50, AppGroupID: 7, Name: "Home 2"})
	if res.Created || res.FamilyGroupID != 50 {
		t.Fatalf("rename result %+v", res)
	}

	_, got, err = decideUpsertGroup(home(t), upsertGroup{AppID: 1, Group: GroupInput{AppGroupID: 7, Name: "Home"}, NewID: 51})
	then(t, got, err) // same name

	dissolved := home(t, catalog.FamilyGroupDissolved{OpenUserID: 5, FamilyGroupID: 50, AppGroupID: 7, DeletedMemberIDs: []int64{60}})
	res, got, err = decideUpsertGroup(dissolved, upsertGroup{AppID: 1, Group: GroupInput{AppGroupID: 7, Name: "Home"}, NewID: 51})
	then(t, got, err, catalog.FamilyGroupUpserted{ChannelUserID: "c1", OpenUserID: 5, FamilyGroupID: 51, AppGroupID: 7, Name: "Home", Created: true})
	if !res.Created {
		t.Fatal("a dissolved group's app_group_id makes a new group")
	}

	_, got, err = decideUpsertGroup(home(t), upsertGroup{AppID: 2, Group: GroupInput{AppGroupID: 8, Name: "x"}, NewID: 51})
	thenError(t, got, err, domain.ErrUserNotFound)
}

func TestDissolveGroupDecision(t *testing.T) {
	st := home(t, catalog.FamilyMemberCreated{OpenUserID: 5, Member: catalog.Member{MemberID: 61, AppUserID: "m2", AppGroupID: 7, FamilyGroupID: 50, Name: "b", Relationship: "SON"}})
	got, err := decideDissolveGroup(st, 1, 50)
	then(t, got, err, catalog.FamilyGroupDissolved{ChannelUserID: "c1", OpenUserID: 5, FamilyGroupID: 50, AppGroupID: 7, DeletedMemberIDs: []int64{60, 61}})

	dissolved := home(t, catalog.FamilyGroupDissolved{OpenUserID: 5, FamilyGroupID: 50, AppGroupID: 7, DeletedMemberIDs: []int64{60}})
	got, err = decideDissolveGroup(dissolved, 1, 50)
	thenError(t, got, err, domain.ErrFamilyGroupNotFound)
	got, err = decideDissolveGroup(home(t), 1, 99)
	thenError(t, got, err, domain.ErrFamilyGroupNotFound)
	got, err = decideDissolveGroup(home(t), 2, 50)
	thenError(t, got, err, domain.ErrUserNotFound)
}

func TestUpsertMemberDecision(t *testing.T) {
	res, got, err := decideUpsertMember(home(t), upsertMember{AppID: 1, NewID: 61,
		Member: MemberInput{AppUserID: "m2", AppGroupID: 7, Name: "b", Relationship: "SON", IsDefault: domain.Val(true)}})
	cleared := member60
	cleared.IsDefault = false
	then(t, got, err,
		catalog.FamilyMemberCreated{ChannelUserID: "c1", OpenUserID: 5, Member: catalog.Member{MemberID: 61, AppUserID: "m2", AppGroupID: 7, FamilyGroupID: 50, Name: "b", Relationship: "SON", IsDefault: true}},
		catalog.FamilyMemberUpdated{ChannelUserID: "c1", OpenUserID: 5, Changed: []string{"is_default"}, Member: cleared})
	if !res.Created || res.MemberID != 61 {
		t.Fatalf("result %+v", res)
	}

	// Unsent fields keep their value; null clears.
	res, got, err = decideUpsertMember(home(t), upsertMember{AppID: 1, NewID: 61,
		Member: MemberInput{AppUserID: "m1", AppGroupID: 7, Name: "a", Relationship: "SELF", Phone: domain.Val("+86 1"), Height: domain.Field[int64]{Set: true, Null: true}}})
	updated := member60
	updated.Phone, updated.Height = ptr("+86 1"), nil
	then(t, got, err, catalog.FamilyMemberUpdated{ChannelUserID: "c1", OpenUserID: 5, Changed: []string{"phone", "height"}, Member: updated})
	if res.Created || res.MemberID != 60 {
		t.Fatalf("update result %+v", res)
	}

	_, got, err = decideUpsertMember(home(t), upsertMember{AppID: 1, NewID: 61, Member: MemberInput{AppUserID: "m1", AppGroupID: 7, Name: "a", Relationship: "SELF"}})
	then(t, got, err) // nothing differs

	_, got, err = decideUpsertMember(home(t), upsertMember{AppID: 1, NewID: 61, Member: MemberInput{AppUserID: "m2", AppGroupID: 8, Name: "b", Relationship: "SON"}})
	thenError(t, got, err, domain.ErrFamilyGroupNotFound)
	_, got, err = decideUpsertMember(home(t), upsertMember{AppID: 2, NewID: 61, Member: MemberInput{AppUserID: "m2", AppGroupID: 7, Name: "b", Relationship: "SON"}})
	thenError(t, got, err, domain.ErrUserNotFound)
}

func TestDeleteMemberDecision(t *testing.T) {
	got, err := decideDeleteMember(home(t), 1, 60)
	then(t, got, err, catalog.FamilyMemberDeleted{ChannelUserID: "c1", OpenUserID: 5, MemberID: 60, AppUserID: "m1", FamilyGroupID: 50})

	got, err = decideDeleteMember(home(t, catalog.FamilyMemberDeleted{OpenUserID: 5, MemberID: 60, AppUserID: "m1", FamilyGroupID: 50}), 1, 60)
	thenError(t, got, err, domain.ErrMemberNotFound)
	got, err = decideDeleteMember(home(t, catalog.FamilyGroupDissolved{OpenUserID: 5, FamilyGroupID: 50, AppGroupID: 7, DeletedMemberIDs: []int64{60}}), 1, 60)
	thenError(t, got, err, domain.ErrMemberNotFound)
	got, err = decideDeleteMember(home(t), 2, 60)
	thenError(t, got, err, domain.ErrUserNotFound)
}

// An upsert that updates a member or renames a group takes no id: the next
// member and group created get the ids right after the previous ones.
func TestUpdatesTakeNoID(t *testing.T) {
	store := memory.New()
	u := NewUsers(store, catalog.Registry(), NewAllocator(store, catalog.Registry(), 1), testNames, time.Now, time.UTC)
	reg, err := u.Register(ctx, Register{AppID: 1, ChannelUserID: "c1", User: UserInput{Name: "Li"},
		Groups: []GroupInput{{AppGroupID: 7, Name: "Home"}}}, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	id := reg.OpenUserID
	member := func(appUserID, name string) MemberResult {
		t.Helper()
		res, err := u.UpsertMember(ctx, 1, id, MemberInput{AppUserID: appUserID, AppGroupID: 7, Name: name, Relationship: "SON"}, Meta{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	group := func(appGroupID int64, name string) GroupResult {
		t.Helper()
		res, err := u.UpsertGroup(ctx, 1, id, GroupInput{AppGroupID: appGroupID, Name: name}, Meta{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := member("a", "one")
	if again := member("a", "two"); again.Created || again.MemberID != first.MemberID {
		t.Fatalf("update answered %+v, want member %d updated", again, first.MemberID)
	}
	if next := member("b", "three"); !next.Created || next.MemberID != first.MemberID+1 {
		t.Fatalf("next member %+v, want id %d", next, first.MemberID+1)
	}
	g := group(8, "Parents")
	if renamed := group(8, "Folks"); renamed.Created || renamed.FamilyGroupID != g.FamilyGroupID {
		t.Fatalf("rename answered %+v, want group %d renamed", renamed, g.FamilyGroupID)
	}
	if next := group(9, "Kids"); !next.Created || next.FamilyGroupID != g.FamilyGroupID+1 {
		t.Fatalf("next group %+v, want id %d", next, g.FamilyGroupID+1)
	}
}
