package commandapi

import (
	"bytes"
	"math/rand/v2"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// The maps the register, group and member upserts answered with before
// their answers became structs: the plain path the structs must match.

func registerAnswerMap(res commands.RegisterResult) map[string]any {
	groups := make([]groupRef, 0, len(res.Groups))
	for _, g := range res.Groups {
		groups = append(groups, groupRef{g.FamilyGroupID, g.AppGroupID})
	}
	members := make([]memberRef, 0, len(res.Members))
	for _, m := range res.Members {
		members = append(members, memberRef{m.MemberID, m.AppUserID})
	}
	return map[string]any{
		"open_user_id": res.OpenUserID, "channel_user_id": res.ChannelUserID, "created": res.Created,
		"family_groups": groups, "family_members": members,
	}
}

func groupAnswerMap(res commands.GroupResult) map[string]any {
	return map[string]any{"family_group_id": res.FamilyGroupID, "app_group_id": res.AppGroupID, "name": res.Name, "created": res.Created}
}

func memberAnswerMap(res commands.MemberResult) map[string]any {
	return map[string]any{"member_id": res.MemberID, "app_user_id": res.AppUserID, "created": res.Created}
}

// answered is the body httpapi.OK writes for data, at a fixed clock.
func answered(t testing.TB, data any) []byte {
	t.Helper()
	w := httptest.NewRecorder()
	httpapi.OK(w, 201, data)
	return w.Body.Bytes()
}

// sameAnswers fails unless every struct answer encodes exactly as its map.
func sameAnswers(t testing.TB, reg commands.RegisterResult, g commands.GroupResult, m commands.MemberResult) {
	t.Helper()
	for _, c := range []struct {
		name        string
		plain, fast any
	}{
		{"register", registerAnswerMap(reg), registerAnswerOf(reg)},
		{"group", groupAnswerMap(g), groupAnswerOf(g)},
		{"member", memberAnswerMap(m), memberAnswerOf(m)},
	} {
		want, got := answered(t, c.plain), answered(t, c.fast)
		if !bytes.Equal(want, got) {
			t.Fatalf("%s answer:\n got %s\nwant %s", c.name, got, want)
		}
	}
}

// fixClock pins the envelope's timestamp for the test.
func fixClock(t testing.TB) {
	prev := httpapi.Clock
	httpapi.Clock = func() time.Time { return time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC) }
	t.Cleanup(func() { httpapi.Clock = prev })
}

var oddStrings = []string{"", "u-1", "a\"b\\c", "<tag>&amp;", "line\nbreak\ttab", "\u2028\u2029", "日本語", "\xff\xfe bad utf-8", "\x00\x1f", "emoji 😀"}

func randomString(r *rand.Rand) string {
	if r.IntN(2) == 0 {
		return oddStrings[r.IntN(len(oddStrings))]
	}
	b := make([]byte, r.IntN(24))
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return string(b)
}

func randomInt(r *rand.Rand) int64 {
	switch r.IntN(4) {
	case 0:
		return 0
	case 1:
		return -r.Int64()
	default:
		return r.Int64()
	}
}

func TestAnswersEncodeAsTheMapsTheyReplace(t *testing.T) {
	fixClock(t)
	r := rand.New(rand.NewPCG(11, 4))
	for i := 0; i < 3000; i++ {
		reg := commands.RegisterResult{OpenUserID: randomInt(r), ChannelUserID: randomString(r), Created: r.IntN(2) == 0}
		if n := r.IntN(4); n > 0 || r.IntN(2) == 0 { // nil and empty lists both
			reg.Groups = make([]commands.GroupRef, n)
			for j := range reg.Groups {
				reg.Groups[j] = commands.GroupRef{FamilyGroupID: randomInt(r), AppGroupID: randomInt(r)}
			}
		}
		if n := r.IntN(4); n > 0 || r.IntN(2) == 0 {
			reg.Members = make([]commands.MemberRef, n)
			for j := range reg.Members {
				reg.Members[j] = commands.MemberRef{MemberID: randomInt(r), AppUserID: randomString(r)}
			}
		}
		g := commands.GroupResult{FamilyGroupID: randomInt(r), AppGroupID: randomInt(r), Name: randomString(r), Created: r.IntN(2) == 0}
		m := commands.MemberResult{MemberID: randomInt(r), AppUserID: randomString(r), Created: r.IntN(2) == 0}
		sameAnswers(t, reg, g, m)
	}
}

func FuzzAnswersEncodeAsTheMapsTheyReplace(f *testing.F) {
	for i, s := range oddStrings {
		f.Add(s, oddStrings[(i+1)%len(oddStrings)], int64(i)*1_000_003, int64(-i), i%2 == 0, uint8(i))
	}
	f.Fuzz(func(t *testing.T, a, b string, x, y int64, created bool, n uint8) {
		fixClock(t)
		reg := commands.RegisterResult{OpenUserID: x, ChannelUserID: a, Created: created}
		for j := 0; j < int(n%4); j++ {
			reg.Groups = append(reg.Groups, commands.GroupRef{FamilyGroupID: x + int64(j), AppGroupID: y})
			reg.Members = append(reg.Members, commands.MemberRef{MemberID: y - int64(j), AppUserID: b})
		}
		sameAnswers(t, reg,
			commands.GroupResult{FamilyGroupID: x, AppGroupID: y, Name: b, Created: created},
			commands.MemberResult{MemberID: y, AppUserID: a, Created: !created})
	})
}

// BenchmarkRegisterAnswer writes a register's answer (one group, no
// members) as the map it was and as the struct it is.
func BenchmarkRegisterAnswer(b *testing.B) {
	res := commands.RegisterResult{OpenUserID: 1234567890123, ChannelUserID: "bench-reg-123456", Created: true, Groups: []commands.GroupRef{{FamilyGroupID: 123456789, AppGroupID: 1}}}
	for _, c := range []struct {
		name string
		data func() any
	}{
		{"map", func() any { return registerAnswerMap(res) }},
		{"struct", func() any { return registerAnswerOf(res) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			w := httptest.NewRecorder()
			for b.Loop() {
				w.Body.Reset()
				httpapi.OK(w, 201, c.data())
			}
		})
	}
}
