package queryapi

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
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

// snapshotView is a snapshot as partners read it through encoding/json
// (the handler's encoder before appendSnapshot, kept as its reference). Its fields, and those of
// the views below, are in alphabetical order, as encoding/json wrote the
// maps they replace: the bytes are the same, without sorting and boxing
// each map's keys (a fifth of the snapshot handler's CPU, profile of
// BenchmarkSnapshotPostgres).
type snapshotView struct {
	FamilyGroups  []groupView  `json:"family_groups"`
	FamilyMembers []memberView `json:"family_members"`
	User          userView     `json:"user"`
}

type userView struct {
	Avatar        *string `json:"avatar"`
	BirthDate     *string `json:"birth_date"`
	ChannelUserID string  `json:"channel_user_id"`
	Email         *string `json:"email"`
	Gender        string  `json:"gender"`
	Name          string  `json:"name"`
	Nickname      *string `json:"nickname"`
	OpenUserID    int64   `json:"open_user_id"`
	Phone         *string `json:"phone"`
	RegisteredAt  string  `json:"registered_at"`
	Status        string  `json:"status"`
}

type groupView struct {
	AppGroupID    int64  `json:"app_group_id"`
	FamilyGroupID int64  `json:"family_group_id"`
	MemberCount   int    `json:"member_count"`
	Name          string `json:"name"`
}

type memberView struct {
	AppGroupID    int64   `json:"app_group_id"`
	AppUserID     string  `json:"app_user_id"`
	BirthDate     *string `json:"birth_date"`
	BloodType     *string `json:"blood_type"`
	FamilyGroupID int64   `json:"family_group_id"`
	Gender        *string `json:"gender"`
	Height        *int64  `json:"height"`
	IDType        *string `json:"id_type"`
	IsDefault     bool    `json:"is_default"`
	MemberID      int64   `json:"member_id"`
	Name          string  `json:"name"`
	Phone         *string `json:"phone"`
	Relationship  string  `json:"relationship"`
	UpdatedAt     string  `json:"updated_at"`
	Weight        *int64  `json:"weight"`
}

func (q *API) renderSnapshot(u projections.User, groups []projections.Group, members []projections.Member) snapshotView {
	var phone *string
	if u.Phone != nil {
		m := httpapi.MaskPhone(*u.Phone)
		phone = &m
	}
	out := snapshotView{
		User: userView{
			OpenUserID: u.OpenUserID, ChannelUserID: u.ChannelUserID, Name: u.Name, Nickname: u.Nickname,
			Gender: u.Gender, Avatar: u.Avatar, Phone: phone, Email: u.Email, BirthDate: u.BirthDate,
			Status: u.Status, RegisteredAt: u.RegisteredAt.In(q.Location).Format(DateTime),
		},
		FamilyGroups:  make([]groupView, 0, len(groups)),
		FamilyMembers: make([]memberView, 0, len(members)),
	}
	for _, g := range groups {
		out.FamilyGroups = append(out.FamilyGroups, groupView{
			FamilyGroupID: g.FamilyGroupID, AppGroupID: g.AppGroupID, Name: g.Name, MemberCount: g.MemberCount,
		})
	}
	for _, m := range members {
		out.FamilyMembers = append(out.FamilyMembers, memberView{
			MemberID: m.MemberID, AppUserID: m.AppUserID, AppGroupID: m.AppGroupID, FamilyGroupID: m.FamilyGroupID,
			Name: m.Name, Relationship: m.Relationship, Gender: m.Gender, BirthDate: m.BirthDate, Phone: m.Phone,
			IDType: m.IDType, Height: m.Height, Weight: m.Weight, BloodType: m.BloodType, IsDefault: m.IsDefault,
			UpdatedAt: m.UpdatedAt.In(q.Location).Format(DateTime),
		})
	}
	return out
}

// The snapshot answer appended by hand is, byte for byte and header for
// header, what httpapi.OK wrote for the typed views through encoding/json:
// every field set and every optional one absent, strings that need JSON
// escapes (quotes, control bytes, HTML characters, invalid UTF-8, U+2028),
// non-ASCII names, and the configured time zone east and west of UTC.
func TestSnapshotBytesAsEncodingJSON(t *testing.T) {
	now := time.Date(2026, 11, 23, 19, 0, 1, 0, time.FixedZone("X", 3600))
	old := httpapi.Clock
	httpapi.Clock = func() time.Time { return now }
	defer func() { httpapi.Clock = old }()
	s := func(v string) *string { return &v }
	n := func(v int64) *int64 { return &v }
	at := time.Date(2026, 1, 2, 23, 4, 5, 999999000, time.UTC)
	odd := "a\"b\\c\x00\x01\b\f\n\r\t\x1f\x7f<>&\u2028\u2029\xff\xc3 张三 🙂"
	users := []projections.User{
		{OpenUserID: 7, ChannelUserID: "c<7>&", Name: "Ann", Nickname: s("A"), Gender: "female",
			Avatar: s("https://x/a.png?x=1&y=<2>"), Phone: s("13812345678"), Email: s("a@x"), BirthDate: s("1990-01-02"), Status: "ACTIVE", RegisteredAt: at},
		{OpenUserID: 8, ChannelUserID: "c8", Status: "ACTIVE", RegisteredAt: at},
		{OpenUserID: -1 << 63, ChannelUserID: odd, Name: odd, Nickname: s(odd), Gender: odd, Avatar: s(odd), Phone: s(odd),
			Email: s(odd), BirthDate: s(odd), Status: odd, RegisteredAt: time.Unix(0, 0)},
		{OpenUserID: 9, ChannelUserID: "c9", Phone: s("12"), Status: "ERASED", RegisteredAt: at},
	}
	groups := [][]projections.Group{nil, {{FamilyGroupID: 3, AppGroupID: 4, Name: "home", MemberCount: 2}, {FamilyGroupID: 1 << 62, AppGroupID: -4, Name: odd}}}
	members := [][]projections.Member{nil, {
		{MemberID: 9, AppUserID: "m9", AppGroupID: 4, FamilyGroupID: 3, Name: "Bo", Relationship: "child", Gender: s("male"),
			BirthDate: s("2020-02-03"), Phone: s("13900000000"), IDType: s("id_card"), IDNumber: s("secret"), Height: n(120), Weight: n(-2550), BloodType: s("A"), IsDefault: true, UpdatedAt: at},
		{MemberID: 10, AppUserID: odd, Name: odd, Relationship: odd, Gender: s(odd), BirthDate: s(odd), Phone: s(odd), IDType: s(odd), BloodType: s(odd), UpdatedAt: at.Add(-time.Hour)},
	}}
	for _, loc := range []*time.Location{time.UTC, time.FixedZone("CST", 8*3600), time.FixedZone("W", -(9*3600 + 30*60))} {
		q := &API{Location: loc}
		for ui, u := range users {
			for gi, gs := range groups {
				for mi, ms := range members {
					want := httptest.NewRecorder()
					httpapi.OK(want, http.StatusOK, q.renderSnapshot(u, gs, ms))
					got := httptest.NewRecorder()
					q.writeSnapshot(got, u, gs, ms)
					if got.Code != want.Code || !reflect.DeepEqual(got.Header(), want.Header()) || !bytes.Equal(got.Body.Bytes(), want.Body.Bytes()) {
						t.Errorf("%s user %d groups %d members %d:\n got %d %v %s\nwant %d %v %s", loc, ui, gi, mi,
							got.Code, got.Header(), got.Body.Bytes(), want.Code, want.Header(), want.Body.Bytes())
					}
				}
			}
		}
	}
}

// Any string, valid UTF-8 or not, is escaped as encoding/json escapes it.
func TestSnapshotStringsAsEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", "\"", "\\", "\x00", "\x1f", "\x7f", "<", "&", "\u2028", "\u2029", "\xe2\x80", "\xff", "张", "🙂", "\xf0\x9f", " ", "/"}
	for i := 0; i < 5000; i++ {
		var sb strings.Builder
		for j := rng.IntN(12); j > 0; j-- {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		in := sb.String()
		want := encode(t, in)
		want = want[:len(want)-1] // the Encoder's newline
		if got := text.AppendString(nil, in); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s want %s", in, got, want)
		}
	}
}
