package harness

import (
	"net/http"
)

type RegisterData struct {
	OpenUserID    int64  `json:"open_user_id"`
	ChannelUserID string `json:"channel_user_id"`
	Created       bool   `json:"created"`
	FamilyGroups  []struct {
		FamilyGroupID int64 `json:"family_group_id"`
		AppGroupID    int64 `json:"app_group_id"`
	} `json:"family_groups"`
	FamilyMembers []struct {
		MemberID  int64  `json:"member_id"`
		AppUserID string `json:"app_user_id"`
	} `json:"family_members"`
}

type Snapshot struct {
	User struct {
		OpenUserID   int64   `json:"open_user_id"`
		Name         string  `json:"name"`
		Nickname     *string `json:"nickname"`
		Gender       string  `json:"gender"`
		Phone        *string `json:"phone"`
		Email        *string `json:"email"`
		BirthDate    *string `json:"birth_date"`
		Status       string  `json:"status"`
		RegisteredAt string  `json:"registered_at"`
	} `json:"user"`
	FamilyGroups []struct {
		FamilyGroupID int64  `json:"family_group_id"`
		AppGroupID    int64  `json:"app_group_id"`
		Name          string `json:"name"`
		MemberCount   int    `json:"member_count"`
	} `json:"family_groups"`
	FamilyMembers []struct {
		MemberID      int64   `json:"member_id"`
		AppUserID     string  `json:"app_user_id"`
		FamilyGroupID int64   `json:"family_group_id"`
		Name          string  `json:"name"`
		Relationship  string  `json:"relationship"`
		Height        *int64  `json:"height"`
		Weight        *int64  `json:"weight"`
		IDType        *string `json:"id_type"`
		IsDefault     bool    `json:"is_default"`
		UpdatedAt     string  `json:"updated_at"`
	} `json:"family_members"`
}

func (a *App) Snapshot(path string) Snapshot {
	a.P.T.Helper()
	var s Snapshot
	a.Expect("GET", path, nil, http.StatusOK, "0").Data(a.P.T, &s)
	return s
}

func RegisterBody(channelUserID string) map[string]any {
	return map[string]any{
		"channel_user_id": channelUserID,
		"user":            map[string]any{"name": "李雷", "phone": "13812345678", "gender": "male", "birth_date": "1990-05-01", "email": "li@example.cn"},
		"family_groups":   []any{map[string]any{"app_group_id": 10, "name": "Home"}},
		"family_members": []any{
			map[string]any{"app_user_id": "self", "app_group_id": 10, "name": "李雷", "relationship": "SELF", "height": 175, "weight": 7000, "id_type": "ID_CARD", "id_number": "110101199005010000", "is_default": true},
			map[string]any{"app_user_id": "wife", "app_group_id": 10, "name": "韩梅梅", "relationship": "SPOUSE", "blood_type": "AB"},
		},
	}
}
