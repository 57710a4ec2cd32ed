package users_test

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/e2e/harness"
	"github.com/healthtech/partner-open-platform/internal/node"
)

func TestChannelUsersEndToEnd(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		clock := &harness.ShiftClock{}
		cfg.Now = clock.Now
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")

		// One-step register: 201, ids to persist.
		var reg harness.RegisterData
		a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
		if !reg.Created || reg.OpenUserID <= 0 || reg.ChannelUserID != "u-1" || len(reg.FamilyGroups) != 1 || len(reg.FamilyMembers) != 2 {
			t.Fatalf("register: %+v", reg)
		}
		user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)

		// Read your writes: the snapshot shows everything at once, phone masked.
		s := a.Snapshot(user)
		if s.User.Name != "李雷" || s.User.Phone == nil || *s.User.Phone != "138****5678" || s.User.Status != "ACTIVE" || s.User.Gender != "male" {
			t.Fatalf("user %+v", s.User)
		}
		if _, err := time.Parse("2006-01-02 15:04:05", s.User.RegisteredAt); err != nil {
			t.Fatalf("registered_at %q", s.User.RegisteredAt)
		}
		if len(s.FamilyGroups) != 1 || s.FamilyGroups[0].MemberCount != 2 || s.FamilyGroups[0].AppGroupID != 10 {
			t.Fatalf("groups %+v", s.FamilyGroups)
		}
		if len(s.FamilyMembers) != 2 || *s.FamilyMembers[0].Height != 175 || *s.FamilyMembers[0].IDType != "ID_CARD" || !s.FamilyMembers[0].IsDefault {
			t.Fatalf("members %+v", s.FamilyMembers)
		}

		// Idempotent repeat: 200, same ids, created=false, nothing changed.
		before := p.EventCount()
		var again harness.RegisterData
		body := harness.RegisterBody("u-1")
		body["user"].(map[string]any)["name"] = "Someone else"
		a.Expect("POST", "/open/v1/channel/users", body, http.StatusOK, "0").Data(t, &again)
		if again.Created || again.OpenUserID != reg.OpenUserID || fmt.Sprint(again.FamilyGroups) != fmt.Sprint(reg.FamilyGroups) || fmt.Sprint(again.FamilyMembers) != fmt.Sprint(reg.FamilyMembers) {
			t.Fatalf("repeat %+v vs %+v", again, reg)
		}
		if p.EventCount() != before {
			t.Fatal("a repeated register appended events")
		}

		// PATCH: only sent fields change; nickname null clears.
		a.Expect("PATCH", user, map[string]any{"nickname": "Lee"}, http.StatusOK, "0")
		a.Expect("PATCH", user, map[string]any{"email": nil, "birth_date": "1991-01-01"}, http.StatusOK, "0")
		s = a.Snapshot(user)
		if s.User.Nickname == nil || *s.User.Nickname != "Lee" || s.User.Email != nil || *s.User.BirthDate != "1991-01-01" || s.User.Name != "李雷" {
			t.Fatalf("after patch %+v", s.User)
		}
		a.Expect("PATCH", user, map[string]any{"nickname": nil}, http.StatusOK, "0")
		if s = a.Snapshot(user); s.User.Nickname != nil {
			t.Fatalf("nickname not cleared: %v", *s.User.Nickname)
		}

		// Group upsert: 201 new, 200 repeat renames only.
		var g struct {
			FamilyGroupID int64  `json:"family_group_id"`
			Name          string `json:"name"`
			Created       bool   `json:"created"`
		}
		a.Expect("POST", user+"/family-groups", map[string]any{"app_group_id": 20, "name": "Parents"}, http.StatusCreated, "0").Data(t, &g)
		a.Expect("POST", user+"/family-groups", map[string]any{"app_group_id": 20, "name": "My parents"}, http.StatusOK, "0")
		s = a.Snapshot(user)
		if len(s.FamilyGroups) != 2 || s.FamilyGroups[1].Name != "My parents" || s.FamilyGroups[1].FamilyGroupID != g.FamilyGroupID {
			t.Fatalf("groups %+v", s.FamilyGroups)
		}

		// Member upsert: 201 then 200; updated_after filters members only.
		// updated_at has second precision on the wire: the node's clock
		// moves on two seconds, so the member's is after mark whatever the
		// sub-second part of either.
		mark := clock.Now()
		clock.Advance(2 * time.Second)
		var m struct {
			MemberID int64 `json:"member_id"`
			Created  bool  `json:"created"`
		}
		a.Expect("POST", user+"/family-members", map[string]any{"app_user_id": "dad", "app_group_id": 20, "name": "Dad", "relationship": "FATHER"}, http.StatusCreated, "0").Data(t, &m)
		a.Expect("POST", user+"/family-members", map[string]any{"app_user_id": "dad", "app_group_id": 20, "name": "Dad", "relationship": "FATHER", "weight": 8000}, http.StatusOK, "0")
		since := a.Snapshot(user + "?updated_after=" + strings.ReplaceAll(mark.Format(time.RFC3339Nano), "+", "%2B"))
		if len(since.FamilyMembers) != 1 || since.FamilyMembers[0].MemberID != m.MemberID || *since.FamilyMembers[0].Weight != 8000 || len(since.FamilyGroups) != 2 || since.User.Name == "" {
			t.Fatalf("incremental snapshot %+v", since)
		}

		// channel_user_id fallback lookup.
		if s := a.Snapshot("/open/v1/channel/users/0?channel_user_id=u-1"); s.User.OpenUserID != reg.OpenUserID {
			t.Fatalf("fallback found %d", s.User.OpenUserID)
		}
		a.Expect("GET", "/open/v1/channel/users/0?channel_user_id=nobody", nil, http.StatusNotFound, "USER_NOT_FOUND")

		// Dissolve cascades to members; it is irreversible.
		a.Expect("DELETE", fmt.Sprintf("%s/family-groups/%d", user, g.FamilyGroupID), nil, http.StatusOK, "0")
		s = a.Snapshot(user)
		if len(s.FamilyGroups) != 1 || len(s.FamilyMembers) != 2 {
			t.Fatalf("after dissolve %+v", s)
		}
		a.Expect("DELETE", fmt.Sprintf("%s/family-groups/%d", user, g.FamilyGroupID), nil, http.StatusNotFound, "FAMILY_GROUP_NOT_FOUND")
		a.Expect("POST", user+"/family-members", map[string]any{"app_user_id": "mum", "app_group_id": 20, "name": "Mum", "relationship": "MOTHER"}, http.StatusNotFound, "FAMILY_GROUP_NOT_FOUND")
		a.Expect("DELETE", fmt.Sprintf("%s/family-members/%d", user, m.MemberID), nil, http.StatusNotFound, "FAMILY_MEMBER_NOT_FOUND")

		// Delete a member.
		a.Expect("DELETE", fmt.Sprintf("%s/family-members/%d", user, reg.FamilyMembers[1].MemberID), nil, http.StatusOK, "0")
		s = a.Snapshot(user)
		if len(s.FamilyMembers) != 1 || s.FamilyGroups[0].MemberCount != 1 {
			t.Fatalf("after member delete %+v", s)
		}

		// INVALID_APP_GROUP_ID on register.
		bad := harness.RegisterBody("u-2")
		bad["family_groups"] = []any{}
		a.Expect("POST", "/open/v1/channel/users", bad, http.StatusUnprocessableEntity, "INVALID_APP_GROUP_ID")

		// Tenancy: another app sees nothing, exactly as a missing id.
		other := p.CreateApp("other")
		other.Expect("GET", user, nil, http.StatusNotFound, "USER_NOT_FOUND")
		other.Expect("PATCH", user, map[string]any{"name": "x"}, http.StatusNotFound, "USER_NOT_FOUND")
		other.Expect("POST", user+"/family-groups", map[string]any{"app_group_id": 1, "name": "x"}, http.StatusNotFound, "USER_NOT_FOUND")
		other.Expect("GET", "/open/v1/channel/users/0?channel_user_id=u-1", nil, http.StatusNotFound, "USER_NOT_FOUND")
		var mine harness.RegisterData
		other.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &mine)
		if mine.OpenUserID == reg.OpenUserID {
			t.Fatal("two apps share an open_user_id for the same channel_user_id")
		}
		a.Expect("GET", "/open/v1/channel/users/999999", nil, http.StatusNotFound, "USER_NOT_FOUND")
	})
}

func TestBadInputChangesNothing(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	a := p.CreateApp("partner")
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
	user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
	before := p.EventCount()

	cases := []struct {
		name, method, path string
		body               any
		status             int
		code               string
		field              string
	}{
		{"malformed json", "POST", "/open/v1/channel/users", `{"channel_user_id":`, 400, "HTTP_400", ""},
		{"not an object", "POST", "/open/v1/channel/users", `[1,2]`, 400, "HTTP_400", ""},
		{"trailing garbage", "POST", "/open/v1/channel/users", `{"a":1} {}`, 400, "HTTP_400", ""},
		{"empty body", "POST", "/open/v1/channel/users", ``, 400, "HTTP_400", ""},
		{"too large", "POST", "/open/v1/channel/users", `{"x":"` + strings.Repeat("a", 1<<20) + `"}`, 413, "PAYLOAD_TOO_LARGE", ""},
		{"wrong type", "POST", "/open/v1/channel/users", map[string]any{"channel_user_id": 5, "user": map[string]any{"name": "a"}}, 422, "VALIDATION_ERROR", "channel_user_id"},
		{"user missing", "POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "x"}, 422, "VALIDATION_ERROR", "user"},
		{"nested wrong type", "POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "x", "user": map[string]any{"name": "a", "phone": 13812345678}}, 422, "VALIDATION_ERROR", "user.phone"},
		{"bad phone", "POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "x", "user": map[string]any{"name": "a", "phone": "1381234567"}}, 422, "VALIDATION_ERROR", "user.phone"},
		{"array item type", "POST", "/open/v1/channel/users", map[string]any{"channel_user_id": "x", "user": map[string]any{"name": "a"}, "family_groups": []any{"g"}}, 422, "VALIDATION_ERROR", "family_groups[0]"},
		{"fractional id", "POST", user + "/family-groups", map[string]any{"app_group_id": 1.5, "name": "a"}, 422, "VALIDATION_ERROR", "app_group_id"},
		{"group name too long", "POST", user + "/family-groups", map[string]any{"app_group_id": 1, "name": strings.Repeat("家", 65)}, 422, "VALIDATION_ERROR", "name"},
		{"height out of range", "POST", user + "/family-members", map[string]any{"app_user_id": "x", "app_group_id": 10, "name": "a", "relationship": "SON", "height": 301}, 422, "VALIDATION_ERROR", "height"},
		{"blood type", "POST", user + "/family-members", map[string]any{"app_user_id": "x", "app_group_id": 10, "name": "a", "relationship": "SON", "blood_type": "C"}, 422, "VALIDATION_ERROR", "blood_type"},
		{"is_default type", "POST", user + "/family-members", map[string]any{"app_user_id": "x", "app_group_id": 10, "name": "a", "relationship": "SON", "is_default": "yes"}, 422, "VALIDATION_ERROR", "is_default"},
		{"patch name null", "PATCH", user, map[string]any{"name": nil}, 422, "VALIDATION_ERROR", "name"},
		{"patch future birth", "PATCH", user, map[string]any{"birth_date": "2999-01-01"}, 422, "VALIDATION_ERROR", "birth_date"},
		{"path not integer", "PATCH", "/open/v1/channel/users/abc", map[string]any{"name": "a"}, 422, "VALIDATION_ERROR", "openUserId"},
		{"path negative", "DELETE", user + "/family-members/-3", nil, 422, "VALIDATION_ERROR", "memberId"},
		{"bad updated_after", "GET", user + "?updated_after=yesterday", nil, 422, "VALIDATION_ERROR", "updated_after"},
		{"unknown route", "GET", "/open/v1/nothing", nil, 404, "NOT_FOUND", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := a.Expect(c.method, c.path, c.body, c.status, c.code)
			if c.field != "" {
				if _, ok := res.Env.Errors[c.field]; !ok {
					t.Fatalf("errors %v lack %q", res.Env.Errors, c.field)
				}
			}
			if res.Env.Success {
				t.Fatal("success=true on an error")
			}
		})
	}
	if after := p.EventCount(); after != before {
		t.Fatalf("bad input appended %d events", after-before)
	}
}

func TestSchemeMFailuresAre401AndAppendNothing(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir()})
	a := p.CreateApp("partner")
	b := p.CreateApp("other")
	before := p.EventCount()
	body := harness.RegisterBody("u-1")
	cases := map[string]func(r *http.Request){
		"wrong signature": func(r *http.Request) { r.Header.Set("X-Signature", strings.Repeat("0", 32)) },
		"not hex":         func(r *http.Request) { r.Header.Set("X-Signature", "zz") },
		"missing app id":  func(r *http.Request) { r.Header.Del("X-App-Id") },
		"unknown app":     func(r *http.Request) { r.Header.Set("X-App-Id", "987654") },
		"missing time":    func(r *http.Request) { r.Header.Del("X-Timestamp") },
		"time as text":    func(r *http.Request) { r.Header.Set("X-Timestamp", "now") },
		"missing sig":     func(r *http.Request) { r.Header.Del("X-Signature") },
		"other app's id":  func(r *http.Request) { r.Header.Set("X-App-Id", fmt.Sprint(b.ID)) },
		"body changed":    func(r *http.Request) { r.Body = http.NoBody; r.ContentLength = 0 },
		"millisecond time": func(r *http.Request) {
			// Correctly signed, but with milliseconds: outside the window.
			ts := fmt.Sprint(time.Now().UnixMilli())
			r.Header.Set("X-Timestamp", ts)
			r.Header.Set("X-Signature", harness.SignM(a.Key, ts, a.Secret, harness.Encode(t, body)))
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			req := a.Request("POST", "/open/v1/channel/users", body, time.Now())
			mutate(req)
			res := p.Send(req)
			if res.Status != http.StatusUnauthorized || res.Code() != "HTTP_401" {
				t.Fatalf("got %d %s", res.Status, res.Raw)
			}
		})
	}
	// Well outside and well inside the 300 s window: the timestamp is
	// truncated to its second and the server checks it later (seconds
	// later on a loaded machine), which moves a signed time towards the
	// past; an edge of 1 s would race that.
	for _, skew := range []time.Duration{-301 * time.Second, 360 * time.Second} {
		res := p.Send(a.Request("POST", "/open/v1/channel/users", body, time.Now().Add(skew)))
		if res.Status != http.StatusUnauthorized {
			t.Fatalf("skew %v accepted: %d", skew, res.Status)
		}
	}
	for _, skew := range []time.Duration{-240 * time.Second, 290 * time.Second} {
		res := p.Send(a.Request("GET", "/open/v1/channel/users/0?channel_user_id=x", nil, time.Now().Add(skew)))
		if res.Status != http.StatusNotFound {
			t.Fatalf("skew %v refused: %d %s", skew, res.Status, res.Raw)
		}
	}
	if after := p.EventCount(); after != before {
		t.Fatalf("unauthenticated requests appended %d events", after-before)
	}
}

func TestConcurrentRegistersOfOneUser(t *testing.T) {
	t.Parallel()
	harness.ReadModels(t, func(t *testing.T, cfg node.Config) {
		p := harness.Start(t, cfg)
		a := p.CreateApp("partner")
		const n = 50
		var wg sync.WaitGroup
		results := make([]harness.Response, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = a.Do("POST", "/open/v1/channel/users", harness.RegisterBody("same"))
			}()
		}
		wg.Wait()
		created, repeated := 0, 0
		ids := map[int64]bool{}
		for _, res := range results {
			var d harness.RegisterData
			switch res.Status {
			case http.StatusCreated:
				created++
			case http.StatusOK:
				repeated++
			default:
				t.Fatalf("status %d %s", res.Status, res.Raw)
			}
			res.Data(t, &d)
			ids[d.OpenUserID] = true
		}
		if created != 1 || repeated != n-1 || len(ids) != 1 {
			t.Fatalf("created %d, repeated %d, distinct ids %d", created, repeated, len(ids))
		}
	})
}

func TestRestartKeepsEveryAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := harness.Start(t, node.Config{DataDir: dir})
	a := p.CreateApp("partner")
	var reg harness.RegisterData
	a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusCreated, "0").Data(t, &reg)
	user := fmt.Sprintf("/open/v1/channel/users/%d", reg.OpenUserID)
	a.Expect("PATCH", user, map[string]any{"nickname": "after"}, http.StatusOK, "0")
	a.Expect("POST", user+"/family-groups", map[string]any{"app_group_id": 99, "name": "Second"}, http.StatusCreated, "0")
	want := a.Snapshot(user)
	p.Stop()

	q := harness.Start(t, node.Config{DataDir: dir})
	b := &harness.App{P: q, ID: a.ID, Key: a.Key, Secret: a.Secret}
	if err := q.Node.WaitCaughtUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := b.Snapshot(user)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after restart\n got %+v\nwant %+v", got, want)
	}
	// New ids after a restart never reuse old ones.
	var next harness.RegisterData
	b.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-2"), http.StatusCreated, "0").Data(t, &next)
	if next.OpenUserID == reg.OpenUserID || next.FamilyGroups[0].FamilyGroupID == reg.FamilyGroups[0].FamilyGroupID {
		t.Fatalf("ids reused: %+v vs %+v", next, reg)
	}
}

func TestPartnerRateLimitAnswers429(t *testing.T) {
	t.Parallel()
	p := harness.Start(t, node.Config{DataDir: t.TempDir(), PartnerRateLimit: 5})
	a := p.CreateApp("partner")
	b := p.CreateApp("other")
	before := p.EventCount()
	for i := 0; i < 5; i++ {
		a.Expect("GET", "/open/v1/channel/users/0?channel_user_id=x", nil, http.StatusNotFound, "USER_NOT_FOUND")
	}
	res := a.Expect("POST", "/open/v1/channel/users", harness.RegisterBody("u-1"), http.StatusTooManyRequests, "HTTP_429")
	if res.Header.Get("Retry-After") == "" || res.Header.Get("X-RateLimit-Limit") != "5" {
		t.Fatalf("429 headers %v", res.Header)
	}
	if p.EventCount() != before {
		t.Fatal("a refused request appended events")
	}
	b.Expect("GET", "/open/v1/channel/users/0?channel_user_id=x", nil, http.StatusNotFound, "USER_NOT_FOUND")
}
