package commandapi

import (
	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
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
	res, err := a.Users.Register(c.r.Context(), cmd, c.meta)
	if err != nil {
		return err
	}
	groups := make([]groupRef, 0, len(res.Groups))
	for _, g := range res.Groups {
		groups = append(groups, groupRef{g.FamilyGroupID, g.AppGroupID})
	}
	members := make([]memberRef, 0, len(res.Members))
	for _, m := range res.Members {
		members = append(members, memberRef{m.MemberID, m.AppUserID})
	}
	c.answer(res.Position, res.Created, map[string]any{
		"open_user_id": res.OpenUserID, "channel_user_id": res.ChannelUserID, "created": res.Created,
		"family_groups": groups, "family_members": members,
	})
	return nil
}

func (a *API) patchUser(c *call) error {
	ids, err := c.ids("openUserId")
	if err != nil {
		return err
	}
	var p commands.ProfilePatch
	if err := c.decode(func(o *httpapi.Object) {
		p = commands.ProfilePatch{
			Name: o.String("name"), Nickname: o.String("nickname"), Gender: o.String("gender"), Avatar: o.String("avatar"),
			Phone: o.String("phone"), Email: o.String("email"), BirthDate: o.String("birth_date"),
		}
	}); err != nil {
		return err
	}
	pos, err := a.Users.UpdateProfile(c.r.Context(), c.app.AppID, ids[0], p, c.meta)
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
	var g commands.GroupInput
	if err := c.decode(func(o *httpapi.Object) { g = groupInput(o) }); err != nil {
		return err
	}
	res, err := a.Users.UpsertGroup(c.r.Context(), c.app.AppID, ids[0], g, c.meta)
	if err != nil {
		return err
	}
	c.answer(res.Position, res.Created, map[string]any{
		"family_group_id": res.FamilyGroupID, "app_group_id": res.AppGroupID, "name": res.Name, "created": res.Created,
	})
	return nil
}

func (a *API) dissolveGroup(c *call) error {
	ids, err := c.ids("openUserId", "groupId")
	if err != nil {
		return err
	}
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
	var m commands.MemberInput
	if err := c.decode(func(o *httpapi.Object) { m = memberInput(o) }); err != nil {
		return err
	}
	res, err := a.Users.UpsertMember(c.r.Context(), c.app.AppID, ids[0], m, c.meta)
	if err != nil {
		return err
	}
	c.answer(res.Position, res.Created, map[string]any{"member_id": res.MemberID, "app_user_id": res.AppUserID, "created": res.Created})
	return nil
}

func (a *API) deleteMember(c *call) error {
	ids, err := c.ids("openUserId", "memberId")
	if err != nil {
		return err
	}
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
