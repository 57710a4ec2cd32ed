package commandapi

import (
	"context"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/internal/idempotency"
)

func userInput(o *httpapi.Object) commands.UserInput {
	if o == nil {
		return commands.UserInput{}
	}
	return commands.UserInput{
		Name: o.RequiredString("name"), Nickname: o.String("nickname"), Gender: o.String("gender"),
		Avatar: o.String("avatar"), Phone: o.String("phone"), Email: o.String("email"), BirthDate: o.String("birth_date"),
	}
}

func groupInput(o *httpapi.Object) commands.GroupInput {
	return commands.GroupInput{AppGroupID: o.RequiredInt("app_group_id"), Name: o.RequiredString("name")}
}

func memberInput(o *httpapi.Object) commands.MemberInput {
	return commands.MemberInput{
		AppUserID: o.RequiredString("app_user_id"), AppGroupID: o.RequiredInt("app_group_id"),
		Name: o.RequiredString("name"), Relationship: o.RequiredString("relationship"),
		Gender: o.String("gender"), BirthDate: o.String("birth_date"), Phone: o.String("phone"),
		IDType: o.String("id_type"), IDNumber: o.String("id_number"),
		Height: o.Int("height"), Weight: o.Int("weight"), BloodType: o.String("blood_type"), IsDefault: o.Bool("is_default"),
	}
}

type groupRef struct {
	FamilyGroupID int64 `json:"family_group_id"`
	AppGroupID    int64 `json:"app_group_id"`
}

type memberRef struct {
	MemberID  int64  `json:"member_id"`
	AppUserID string `json:"app_user_id"`
}

func (a *API) register(c *call) error {
	var cmd commands.Register
	if err := c.decode(func(o *httpapi.Object) {
		cmd = commands.Register{AppID: c.app.AppID, ChannelUserID: o.RequiredString("channel_user_id"), User: userInput(o.Object("user", true))}
		for _, g := range o.Array("family_groups", 100) {
			cmd.Groups = append(cmd.Groups, groupInput(g))
		}
		for _, m := range o.Array("family_members", 100) {
			cmd.Members = append(cmd.Members, memberInput(m))
		}
	}); err != nil {
		return err
	}
	ctx := c.r.Context()
	if idempotency.Promising(ctx) {
		// Only a store that records the answer with the append takes a
		// promise; elsewhere the answer is recorded after it, as written.
		ctx = commands.PromiseRegistered(ctx, func(ctx context.Context, res commands.RegisterResult) context.Context {
			c.aboutUser(res.OpenUserID)
			return c.promiseOn(ctx, res.Created, registerAnswerOf(res))
		})
	}
	res, err := a.Users.Register(ctx, cmd, c.meta)
	if err != nil {
		return err
	}
	c.aboutUser(res.OpenUserID)
	c.answer(res.Position, res.Created, registerAnswerOf(res))
	return nil
}

// The answers below are structs whose fields are in the order encoding/json
// sorts a map's keys, so they encode to the bytes the maps they replace
// encoded to (answers_test.go holds them to that), at a third of the cost:
// no map to build, sort and reflect over per write.

// registerAnswer is a register's data.
type registerAnswer struct {
	ChannelUserID string      `json:"channel_user_id"`
	Created       bool        `json:"created"`
	FamilyGroups  []groupRef  `json:"family_groups"`
	FamilyMembers []memberRef `json:"family_members"`
	OpenUserID    int64       `json:"open_user_id"`
}

// registerAnswerOf is res as the register answers it; the lists are never
// nil (they encode as [], not null).
func registerAnswerOf(res commands.RegisterResult) registerAnswer {
	groups := make([]groupRef, 0, len(res.Groups))
	for _, g := range res.Groups {
		groups = append(groups, groupRef{g.FamilyGroupID, g.AppGroupID})
	}
	members := make([]memberRef, 0, len(res.Members))
	for _, m := range res.Members {
		members = append(members, memberRef{m.MemberID, m.AppUserID})
	}
	return registerAnswer{ChannelUserID: res.ChannelUserID, Created: res.Created, FamilyGroups: groups, FamilyMembers: members, OpenUserID: res.OpenUserID}
}

// groupAnswer is a group upsert's data.
type groupAnswer struct {
	AppGroupID    int64  `json:"app_group_id"`
	Created       bool   `json:"created"`
	FamilyGroupID int64  `json:"family_group_id"`
	Name          string `json:"name"`
}

func groupAnswerOf(res commands.GroupResult) groupAnswer {
	return groupAnswer{AppGroupID: res.AppGroupID, Created: res.Created, FamilyGroupID: res.FamilyGroupID, Name: res.Name}
}

// memberAnswer is a member upsert's data.
type memberAnswer struct {
	AppUserID string `json:"app_user_id"`
	Created   bool   `json:"created"`
	MemberID  int64  `json:"member_id"`
}

func memberAnswerOf(res commands.MemberResult) memberAnswer {
	return memberAnswer{AppUserID: res.AppUserID, Created: res.Created, MemberID: res.MemberID}
}

func (a *API) patchUser(c *call) error {
	ids, err := c.ids("openUserId")
	if err != nil {
		return err
	}
	c.aboutUser(ids[0])
	var p commands.ProfilePatch
	if err := c.decode(func(o *httpapi.Object) {
		p = commands.ProfilePatch{
			Name: o.String("name"), Nickname: o.String("nickname"), Gender: o.String("gender"), Avatar: o.String("avatar"),
			Phone: o.String("phone"), Email: o.String("email"), BirthDate: o.String("birth_date"),
		}
	}); err != nil {
		return err
	}
	// The answer is the same whether the profile changed or not.
	pos, err := a.Users.UpdateProfile(c.promise(false, nil), c.app.AppID, ids[0], p, c.meta)
	if err != nil {
		return err
	}
	c.answer(pos, false, nil)
	return nil
}

func (a *API) upsertGroup(c *call) error {
	ids, err := c.ids("openUserId")
	if err != nil {
		return err
	}
	c.aboutUser(ids[0])
	var g commands.GroupInput
	if err := c.decode(func(o *httpapi.Object) { g = groupInput(o) }); err != nil {
		return err
	}
	res, err := a.Users.UpsertGroup(c.r.Context(), c.app.AppID, ids[0], g, c.meta)
	if err != nil {
		return err
	}
	c.answer(res.Position, res.Created, groupAnswerOf(res))
	return nil
}

func (a *API) dissolveGroup(c *call) error {
	ids, err := c.ids("openUserId", "groupId")
	if err != nil {
		return err
	}
	c.aboutUser(ids[0])
	if err := c.claim(); err != nil {
		return err
	}
	pos, err := a.Users.DissolveGroup(c.r.Context(), c.app.AppID, ids[0], ids[1], c.meta)
	if err != nil {
		return err
	}
	c.answer(pos, false, nil)
	return nil
}

func (a *API) upsertMember(c *call) error {
	ids, err := c.ids("openUserId")
	if err != nil {
		return err
	}
	c.aboutUser(ids[0])
	var m commands.MemberInput
	if err := c.decode(func(o *httpapi.Object) { m = memberInput(o) }); err != nil {
		return err
	}
	res, err := a.Users.UpsertMember(c.r.Context(), c.app.AppID, ids[0], m, c.meta)
	if err != nil {
		return err
	}
	c.answer(res.Position, res.Created, memberAnswerOf(res))
	return nil
}

func (a *API) deleteMember(c *call) error {
	ids, err := c.ids("openUserId", "memberId")
	if err != nil {
		return err
	}
	c.aboutUser(ids[0])
	if err := c.claim(); err != nil {
		return err
	}
	pos, err := a.Users.DeleteMember(c.r.Context(), c.app.AppID, ids[0], ids[1], c.meta)
	if err != nil {
		return err
	}
	c.answer(pos, false, nil)
	return nil
}
