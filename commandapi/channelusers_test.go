package commandapi

import (
	"fmt"
	"net/http"
	"testing"
)

func TestRegisterAnswersAndReplaysIdempotently(t *testing.T) {
	h := newHarness(t)
	body := map[string]any{
		"channel_user_id": "cu-1", "user": map[string]any{"name": "Ann"},
		"family_groups":  []any{map[string]any{"app_group_id": 7, "name": "home"}},
		"family_members": []any{map[string]any{"app_user_id": "m-1", "app_group_id": 7, "name": "Bo", "relationship": "SON"}},
	}
	first := h.do("POST", "/open/v1/channel/users", body, as(h.appA), "X-Request-Id", "req-register-1")
	expect(t, "register", first, http.StatusCreated, "0")
	if got := first.Header.Get("X-Request-Id"); got != "req-register-1" {
		t.Fatalf("request id echoed as %q", got)
	}
	d := first.Data(t)
	if d["channel_user_id"] != "cu-1" || d["created"] != true || first.Num(t, "open_user_id") <= 0 {
		t.Fatalf("register data: %s", first.Raw)
	}
	if g := d["family_groups"].([]any); len(g) != 1 || g[0].(map[string]any)["app_group_id"] != float64(7) {
		t.Fatalf("family_groups: %s", first.Raw)
	}
	if m := d["family_members"].([]any); len(m) != 1 || m[0].(map[string]any)["app_user_id"] != "m-1" {
		t.Fatalf("family_members: %s", first.Raw)
	}

	// The same channel user again is the same user, not created, and appends nothing.
	before := h.head()
	again := h.do("POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "cu-1", "user": map[string]any{"name": "Ann"}}, as(h.appA))
	if again.Status != http.StatusOK || again.Num(t, "open_user_id") != first.Num(t, "open_user_id") || again.Data(t)["created"] != false {
		t.Fatalf("second register: %d %s", again.Status, again.Raw)
	}

	// An Idempotency-Key replays the first answer, marked, without appending again.
	keyed := map[string]any{"channel_user_id": "cu-2", "user": map[string]any{"name": "Cy"}}
	k1 := h.do("POST", "/open/v1/channel/users", keyed, as(h.appA), "Idempotency-Key", "k-1")
	expect(t, "keyed register", k1, http.StatusCreated, "0")
	mid := h.head()
	if mid == before {
		t.Fatal("keyed register appended nothing")
	}
	k2 := h.do("POST", "/open/v1/channel/users", keyed, as(h.appA), "Idempotency-Key", "k-1")
	expect(t, "replayed register", k2, http.StatusCreated, "0")
	if k2.Header.Get("Idempotent-Replayed") != "true" || string(k2.Env.Data) != string(k1.Env.Data) {
		t.Fatalf("replay: header %q data %s, want true and %s", k2.Header.Get("Idempotent-Replayed"), k2.Env.Data, k1.Env.Data)
	}
	if h.head() != mid {
		t.Fatal("a replay appended")
	}
	// The key with another body is refused and appends nothing.
	h.refuses(t, []refusal{{
		name: "key reused", method: "POST", path: "/open/v1/channel/users",
		body:   map[string]any{"channel_user_id": "cu-3", "user": map[string]any{"name": "Di"}},
		sign:   func(r *http.Request, b []byte) { r.Header.Set("Idempotency-Key", "k-1"); as(h.appA)(r, b) },
		Status: http.StatusUnprocessableEntity, code: "IDEMPOTENCY_KEY_REUSED",
	}})
}

func TestChannelUserRefusalsAppendNothing(t *testing.T) {
	h := newHarness(t)
	id := h.register(h.appA, "cu-1")
	user := fmt.Sprintf("/open/v1/channel/users/%d", id)
	suspended := h.appB
	suspended.AppID, suspended.AppKey, suspended.Suspended = 9003, "key-s", true
	h.dir.Put(suspended)
	h.refuses(t, []refusal{
		{"unsigned", "POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "x", "user": map[string]any{"name": "A"}}, nil, http.StatusUnauthorized, "HTTP_401"},
		{"wrong secret", "POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "x", "user": map[string]any{"name": "A"}},
			func(r *http.Request, b []byte) {
				bad := h.appA
				bad.AppSecret = "not-the-secret"
				as(bad)(r, b)
			}, http.StatusUnauthorized, "HTTP_401"},
		{"stale timestamp", "POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "x", "user": map[string]any{"name": "A"}},
			schemeM(h.appA, testNow.Unix()-3600), http.StatusUnauthorized, "HTTP_401"},
		{"suspended app", "POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "x", "user": map[string]any{"name": "A"}},
			as(suspended), http.StatusForbidden, "APP_SUSPENDED"},
		{"not JSON", "POST", "/open/v1/channel/users", "{", as(h.appA), http.StatusBadRequest, "HTTP_400"},
		{"missing name", "POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "x", "user": map[string]any{}}, as(h.appA), http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"user not an object", "POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "x", "user": "Ann"}, as(h.appA), http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"member of an unknown group", "POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "x", "user": map[string]any{"name": "A"},
			"family_members": []any{map[string]any{"app_user_id": "m", "app_group_id": 5, "name": "B", "relationship": "SON"}}}, as(h.appA), http.StatusUnprocessableEntity, "INVALID_APP_GROUP_ID"},
		{"patch missing user", "PATCH", "/open/v1/channel/users/999999", map[string]any{"nickname": "n"}, as(h.appA), http.StatusNotFound, "USER_NOT_FOUND"},
		// Another app's user is not found, exactly as a missing id.
		{"patch another app's user", "PATCH", user, map[string]any{"nickname": "n"}, as(h.appB), http.StatusNotFound, "USER_NOT_FOUND"},
		{"group on another app's user", "POST", user + "/family-groups", map[string]any{"app_group_id": 1, "name": "g"}, as(h.appB), http.StatusNotFound, "USER_NOT_FOUND"},
		{"member on another app's user", "POST", user + "/family-members", map[string]any{"app_user_id": "m", "app_group_id": 1, "name": "B", "relationship": "SON"}, as(h.appB), http.StatusNotFound, "USER_NOT_FOUND"},
		{"bad path id", "PATCH", "/open/v1/channel/users/abc", map[string]any{"nickname": "n"}, as(h.appA), http.StatusUnprocessableEntity, "VALIDATION_ERROR"},
		{"dissolve missing group", "DELETE", user + "/family-groups/424242", nil, as(h.appA), http.StatusNotFound, "FAMILY_GROUP_NOT_FOUND"},
		{"delete missing member", "DELETE", user + "/family-members/424242", nil, as(h.appA), http.StatusNotFound, "FAMILY_MEMBER_NOT_FOUND"},
	})
}

func TestFamilyGroupsAndMembers(t *testing.T) {
	h := newHarness(t)
	id := h.register(h.appA, "cu-1")
	user := fmt.Sprintf("/open/v1/channel/users/%d", id)

	g := h.do("POST", user+"/family-groups", map[string]any{"app_group_id": 3, "name": "home"}, as(h.appA))
	expect(t, "group", g, http.StatusCreated, "0")
	groupID := g.Num(t, "family_group_id")
	if g.Num(t, "app_group_id") != 3 || g.Data(t)["name"] != "home" || g.Data(t)["created"] != true {
		t.Fatalf("group data: %s", g.Raw)
	}
	renamed := h.do("POST", user+"/family-groups", map[string]any{"app_group_id": 3, "name": "house"}, as(h.appA))
	if renamed.Status != http.StatusOK || renamed.Num(t, "family_group_id") != groupID || renamed.Data(t)["created"] != false {
		t.Fatalf("group upsert: %d %s", renamed.Status, renamed.Raw)
	}

	m := h.do("POST", user+"/family-members", map[string]any{"app_user_id": "m-1", "app_group_id": 3, "name": "Bo", "relationship": "SON", "height": 120}, as(h.appA))
	expect(t, "member", m, http.StatusCreated, "0")
	memberID := m.Num(t, "member_id")
	if m.Data(t)["app_user_id"] != "m-1" {
		t.Fatalf("member data: %s", m.Raw)
	}

	p := h.do("PATCH", user, map[string]any{"nickname": "annie"}, schemeH(h.appA, "nonce-patch"))
	expect(t, "patch by scheme H", p, http.StatusOK, "0")

	// Another app cannot delete the member or dissolve the group.
	h.refuses(t, []refusal{
		{"delete another app's member", "DELETE", fmt.Sprintf("%s/family-members/%d", user, memberID), nil, as(h.appB), http.StatusNotFound, "USER_NOT_FOUND"},
		{"dissolve another app's group", "DELETE", fmt.Sprintf("%s/family-groups/%d", user, groupID), nil, as(h.appB), http.StatusNotFound, "USER_NOT_FOUND"},
	})
	expect(t, "delete member", h.do("DELETE", fmt.Sprintf("%s/family-members/%d", user, memberID), nil, as(h.appA)), http.StatusOK, "0")
	expect(t, "dissolve group", h.do("DELETE", fmt.Sprintf("%s/family-groups/%d", user, groupID), nil, as(h.appA)), http.StatusOK, "0")
	h.refuses(t, []refusal{
		{"delete member twice", "DELETE", fmt.Sprintf("%s/family-members/%d", user, memberID), nil, as(h.appA), http.StatusNotFound, "FAMILY_MEMBER_NOT_FOUND"},
	})
}

func TestSchemeHAtTheWriteEdge(t *testing.T) {
	h := newHarness(t)
	body := map[string]any{"channel_user_id": "cu-h", "user": map[string]any{"name": "Hana"}}
	r := h.do("POST", "/open/v1/channel/users", body, schemeH(h.appA, "n-1"))
	expect(t, "scheme H register", r, http.StatusCreated, "0")

	requireH := h.appB
	requireH.RequireSchemeH = true
	h.dir.Put(requireH)
	h.refuses(t, []refusal{
		{"nonce replayed", "POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "cu-h2", "user": map[string]any{"name": "H"}}, schemeH(h.appA, "n-1"), http.StatusUnauthorized, "HTTP_401"},
		{"bad scheme H signature", "POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "cu-h3", "user": map[string]any{"name": "H"}},
			func(req *http.Request, b []byte) { schemeH(h.appA, "n-2")(req, b); req.Header.Set("X-Signature", "00") }, http.StatusUnauthorized, "HTTP_401"},
		{"scheme M for an app that requires H", "POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "cu-h4", "user": map[string]any{"name": "H"}}, as(requireH), http.StatusUnauthorized, "HTTP_401"},
	})
	r = h.do("POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "cu-h5", "user": map[string]any{"name": "H"}}, schemeH(requireH, "n-3"))
	expect(t, "scheme H of an app that requires it", r, http.StatusCreated, "0")
}
