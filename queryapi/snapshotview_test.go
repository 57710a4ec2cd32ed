package queryapi

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/healthtech/partner-open-platform/projections"
)

// The snapshot's typed views encode to the very bytes the maps they replace
// did (keys sorted, nulls kept), with every field set and with every
// optional one absent, so partners see no change.
func TestSnapshotViewEncodesAsTheMapsDid(t *testing.T) {
	loc := time.FixedZone("CST", 8*3600)
	q := &API{Location: loc}
	s := func(v string) *string { return &v }
	n := func(v int64) *int64 { return &v }
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	full := projections.User{OpenUserID: 7, ChannelUserID: "c<7>&", Name: "Ann", Nickname: s("A"), Gender: "female",
		Avatar: s("https://x/a.png"), Phone: s("13812345678"), Email: s("a@x"), BirthDate: s("1990-01-02"), Status: "ACTIVE", RegisteredAt: at}
	groups := []projections.Group{{FamilyGroupID: 3, AppGroupID: 4, Name: "home", MemberCount: 2}}
	members := []projections.Member{
		{MemberID: 9, AppUserID: "m9", AppGroupID: 4, FamilyGroupID: 3, Name: "Bo", Relationship: "child", Gender: s("male"),
			BirthDate: s("2020-02-03"), Phone: s("13900000000"), IDType: s("id_card"), Height: n(120), Weight: n(2550), BloodType: s("A"), IsDefault: true, UpdatedAt: at},
		{MemberID: 10, AppUserID: "m10", Name: "Cy", Relationship: "self", UpdatedAt: at},
	}
	for _, c := range []struct {
		name    string
		u       projections.User
		groups  []projections.Group
		members []projections.Member
	}{
		{"every field", full, groups, members},
		{"optional fields absent", projections.User{OpenUserID: 8, ChannelUserID: "c8", Status: "ACTIVE", RegisteredAt: at}, nil, nil},
	} {
		got := encode(t, q.renderSnapshot(c.u, c.groups, c.members))
		want := encode(t, mapSnapshot(q, c.u, c.groups, c.members))
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, want)
		}
	}
}

func encode(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // as httpapi.WriteJSON
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// mapSnapshot is the snapshot as the handler built it before its typed views.
func mapSnapshot(q *API, u projections.User, groups []projections.Group, members []projections.Member) map[string]any {
	var phone *string
	if u.Phone != nil {
		m := httpapi.MaskPhone(*u.Phone)
		phone = &m
	}
	user := map[string]any{
		"open_user_id": u.OpenUserID, "channel_user_id": u.ChannelUserID, "name": u.Name, "nickname": u.Nickname,
		"gender": u.Gender, "avatar": u.Avatar, "phone": phone, "email": u.Email, "birth_date": u.BirthDate,
		"status": u.Status, "registered_at": u.RegisteredAt.In(q.Location).Format(DateTime),
	}
	gs := make([]map[string]any, 0, len(groups))
	for _, g := range groups {
		gs = append(gs, map[string]any{
			"family_group_id": g.FamilyGroupID, "app_group_id": g.AppGroupID, "name": g.Name, "member_count": g.MemberCount,
		})
	}
	ms := make([]map[string]any, 0, len(members))
	for _, m := range members {
		ms = append(ms, map[string]any{
			"member_id": m.MemberID, "app_user_id": m.AppUserID, "app_group_id": m.AppGroupID, "family_group_id": m.FamilyGroupID,
			"name": m.Name, "relationship": m.Relationship, "gender": m.Gender, "birth_date": m.BirthDate, "phone": m.Phone,
			"id_type": m.IDType, "height": m.Height, "weight": m.Weight, "blood_type": m.BloodType, "is_default": m.IsDefault,
			"updated_at": m.UpdatedAt.In(q.Location).Format(DateTime),
		})
	}
	return map[string]any{"user": user, "family_groups": gs, "family_members": ms}
}
