package measureplugin

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	tKey    = "ak_test_1"
	tSecret = "sk_test_0123456789abcdef"
	tUser   = "user-42"
)

var tNow = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

func fieldsOf(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		var fe FieldError
		if e == nil {
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		if errors.As(e, &fe) {
			out = append(out, fe.Field)
		}
	}
	walk(err)
	return out
}

// ---- signature and timestamp ----

func TestSignIsLowerHexAndVerifyIsStrict(t *testing.T) {
	ts := strconv.FormatInt(tNow.Unix(), 10)
	s := Sign(tSecret, tKey, tUser, ts, "n1")
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(s) {
		t.Fatalf("sign %q is not 64 lower-case hex", s)
	}
	if !VerifySign(tSecret, tKey, tUser, ts, "n1", s) {
		t.Fatal("own signature refused")
	}
	if !VerifySign(tSecret, tKey, tUser, ts, "n1", strings.ToUpper(s)) {
		t.Error("upper-case hex of the right MAC refused")
	}
	for name, c := range map[string][6]string{
		"secret":    {"x" + tSecret, tKey, tUser, ts, "n1", s},
		"appKey":    {tSecret, tKey + "x", tUser, ts, "n1", s},
		"user":      {tSecret, tKey, tUser + "x", ts, "n1", s},
		"timestamp": {tSecret, tKey, tUser, strconv.FormatInt(tNow.Unix()+1, 10), "n1", s},
		"nonce":     {tSecret, tKey, tUser, ts, "n2", s},
		"short":     {tSecret, tKey, tUser, ts, "n1", s[:62]},
		"not hex":   {tSecret, tKey, tUser, ts, "n1", "zz" + s[2:]},
		"empty":     {tSecret, tKey, tUser, ts, "n1", ""},
		"longer":    {tSecret, tKey, tUser, ts, "n1", s + "00"},
	} {
		if VerifySign(c[0], c[1], c[2], c[3], c[4], c[5]) {
			t.Errorf("%s: changed input still verifies", name)
		}
	}
}

func TestCheckTimestamp(t *testing.T) {
	now := tNow.Unix()
	ts := func(d int64) string { return strconv.FormatInt(now+d, 10) }
	for _, c := range []struct {
		ts   string
		want error
	}{
		{ts(0), nil},
		{ts(300), nil},
		{ts(-300), nil},
		{ts(301), ErrTimestampWindow},
		{ts(-301), ErrTimestampWindow},
		{strconv.FormatInt(tNow.UnixMilli(), 10), ErrTimestampFormat}, // 13-digit ms
		{ts(0)[:9], ErrTimestampFormat},
		{"+" + ts(0)[1:], ErrTimestampFormat},
		{" " + ts(0)[1:], ErrTimestampFormat},
		{"-123456789", ErrTimestampFormat},
		{"１７７３４８０４１３", ErrTimestampFormat}, // full-width digits
		{"", ErrTimestampFormat},
		{"0000000000", ErrTimestampWindow},
	} {
		if err := CheckTimestamp(c.ts, tNow); err != c.want {
			t.Errorf("CheckTimestamp(%q) = %v, want %v", c.ts, err, c.want)
		}
	}
	// Sub-second clock positions do not widen or narrow the window.
	if err := CheckTimestamp(ts(-300), tNow.Add(999*time.Millisecond)); err != nil {
		t.Errorf("-300 with fractional now: %v", err)
	}
}

// ---- profile encryption ----

func fullProfile() Profile {
	return Profile{Phone: "13912345678", Gender: "unknown", BirthDate: "2001-02-28", Height: 180, Weight: 8050,
		Name: "Zoë \"Z\" <O'Neil> & co", Metadata: "visit=9|ward=ICU ✓"}
}

func TestProfileRoundTripAndFreshIV(t *testing.T) {
	for _, p := range []Profile{{}, fullProfile(), {Metadata: strings.Repeat("m", 5000)}} {
		a, err := EncryptProfile(tSecret, tKey, tUser, p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := EncryptProfile(tSecret, tKey, tUser, p)
		if a == b {
			t.Error("two encryptions gave the same output; IV is not fresh")
		}
		got, err := DecryptProfile(tSecret, tKey, tUser, a)
		if err != nil || got != p {
			t.Errorf("round trip = %+v, %v; want %+v", got, err, p)
		}
	}
}

func TestProfileTamperingFailsAuth(t *testing.T) {
	up, _ := EncryptProfile(tSecret, tKey, tUser, fullProfile())
	raw, _ := base64.StdEncoding.DecodeString(up)
	for i := range raw {
		part := "ciphertext"
		switch {
		case i < 12:
			part = "IV"
		case i >= len(raw)-16:
			part = "tag"
		}
		for _, bit := range []byte{0x01, 0x80} {
			m := append([]byte{}, raw...)
			m[i] ^= bit
			_, err := DecryptProfile(tSecret, tKey, tUser, base64.StdEncoding.EncodeToString(m))
			if !errors.Is(err, ErrProfileAuth) {
				t.Fatalf("flipping %s byte %d: %v, want ErrProfileAuth", part, i, err)
			}
		}
	}
	// Truncating the tag or appending bytes also fails authentication.
	for _, m := range [][]byte{raw[:len(raw)-1], append(append([]byte{}, raw...), 0)} {
		if _, err := DecryptProfile(tSecret, tKey, tUser, base64.StdEncoding.EncodeToString(m)); !errors.Is(err, ErrProfileAuth) {
			t.Errorf("length change: %v", err)
		}
	}
}

func TestProfileBoundToSecretAppAndUser(t *testing.T) {
	up, _ := EncryptProfile(tSecret, tKey, tUser, fullProfile())
	for name, c := range map[string][3]string{
		"wrong secret":   {tSecret + "x", tKey, tUser},
		"other app":      {tSecret, "ak_test_2", tUser},
		"other user":     {tSecret, tKey, "user-43"},
		"user case":      {tSecret, tKey, "USER-42"},
		"empty user":     {tSecret, tKey, ""},
		"shifted border": {tSecret, tKey + "|" + tUser, ""},
	} {
		if _, err := DecryptProfile(c[0], c[1], c[2], up); !errors.Is(err, ErrProfileAuth) {
			t.Errorf("%s: %v, want ErrProfileAuth", name, err)
		}
	}
}

func TestProfileFormatErrors(t *testing.T) {
	up, _ := EncryptProfile(tSecret, tKey, tUser, Profile{})
	raw, _ := base64.StdEncoding.DecodeString(up)
	for name, s := range map[string]string{
		"empty":         "",
		"not base64":    "!!!!",
		"url-safe":      strings.NewReplacer("+", "-", "/", "_").Replace(base64.StdEncoding.EncodeToString(append(raw, 0xfb, 0xff))),
		"unpadded":      strings.TrimRight(base64.StdEncoding.EncodeToString(raw[:len(raw)-1]), "="),
		"plus as space": strings.ReplaceAll(base64.StdEncoding.EncodeToString(append([]byte{0xfb}, raw...)), "+", " "),
		"27 bytes":      base64.StdEncoding.EncodeToString(make([]byte, 27)),
		"only IV":       base64.StdEncoding.EncodeToString(raw[:12]),
		"non-zero pad":  "AAB=",
		"percent-coded": url.QueryEscape(base64.StdEncoding.EncodeToString(append([]byte{0xfb, 0xff}, raw...))),
	} {
		if _, err := DecryptProfile(tSecret, tKey, tUser, s); !errors.Is(err, ErrProfileFormat) {
			t.Errorf("%s: %v, want ErrProfileFormat", name, err)
		}
	}
	// Exactly IV + tag (empty plaintext) is well-formed: it fails later, on JSON.
	iv := make([]byte, 12)
	if _, err := DecryptProfile(tSecret, tKey, tUser, refSeal(t, tSecret, tKey, tUser, iv, nil)); !errors.Is(err, ErrProfileJSON) {
		t.Errorf("empty plaintext: %v, want ErrProfileJSON", err)
	}
}

func TestProfileJSONErrors(t *testing.T) {
	iv := make([]byte, 12)
	for _, plain := range []string{"null", "[]", `"x"`, "{", `{"height":"180"}`, `{"phone":1}`, `{} {}`, "\xff{}"} {
		up := refSeal(t, tSecret, tKey, tUser, iv, []byte(plain))
		if _, err := DecryptProfile(tSecret, tKey, tUser, up); !errors.Is(err, ErrProfileJSON) {
			t.Errorf("%q: %v, want ErrProfileJSON", plain, err)
		}
	}
	// Unknown members are ignored, so newer hosts can add fields.
	up := refSeal(t, tSecret, tKey, tUser, iv, []byte(` {"height":170,"blood_type":"A"}`))
	if p, err := DecryptProfile(tSecret, tKey, tUser, up); err != nil || p.Height != 170 {
		t.Errorf("unknown member: %+v, %v", p, err)
	}
}

func TestEncryptWithIVRejectsWrongIVLength(t *testing.T) {
	for _, n := range []int{0, 11, 13, 16} {
		if _, err := encryptWithIV(tSecret, tKey, tUser, Profile{}, make([]byte, n)); err == nil {
			t.Errorf("IV of %d bytes accepted", n)
		}
	}
}

// ---- devices and profile rules ----

func TestReportType(t *testing.T) {
	want := map[[2]string]string{
		{DeviceMultiBioMonitor, "BP"}:  "blood_pressure",
		{DeviceMultiBioMonitor, "BG"}:  "blood_glucose",
		{DeviceSpO2Ring, "SPO2"}:       "spo2",
		{DeviceECGRecorder, "ECG"}:     "ecg",
		{DeviceBodyComposition, "BCA"}: "bca",
	}
	for k, rt := range want {
		if got, err := ReportType(k[0], k[1]); got != rt || err != nil {
			t.Errorf("ReportType(%s, %s) = %q, %v; want %q", k[0], k[1], got, err, rt)
		}
	}
	for _, d := range DeviceKeys {
		for _, m := range []string{"BP", "BG", "SPO2", "ECG", "BCA"} {
			if _, ok := want[[2]string{d, m}]; ok {
				continue
			}
			if _, err := ReportType(d, m); !slicesEqual(fieldsOf(err), []string{"measureMode"}) {
				t.Errorf("ReportType(%s, %s) = %v; want measureMode error", d, m, err)
			}
		}
	}
	for _, c := range []struct{ d, m, field string }{
		{"", "BP", "deviceKey"},
		{"home_multi_bio_monitor", "BP", "deviceKey"},
		{"SCALE", "BCA", "deviceKey"},
		{DeviceMultiBioMonitor, "", "measureMode"},
		{DeviceMultiBioMonitor, "bp", "measureMode"},
	} {
		if _, err := ReportType(c.d, c.m); !slicesEqual(fieldsOf(err), []string{c.field}) {
			t.Errorf("ReportType(%q, %q) = %v; want %s error", c.d, c.m, err, c.field)
		}
	}
	if len(DeviceKeys) != 4 || len(modes) != 4 {
		t.Fatalf("devices: %v", DeviceKeys)
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

func TestValidateBodyCompositionRequirements(t *testing.T) {
	ok := Profile{Gender: "male", BirthDate: "1980-01-01", Height: 175}
	if err := ok.validateAt(DeviceBodyComposition, tNow); err != nil {
		t.Fatalf("complete BCA profile refused: %v", err)
	}
	for _, c := range []struct {
		p    Profile
		want []string
	}{
		{Profile{}, []string{"height", "gender", "birth_date"}},
		{Profile{Gender: "male", BirthDate: "1980-01-01"}, []string{"height"}},
		{Profile{Height: 175, BirthDate: "1980-01-01"}, []string{"gender"}},
		{Profile{Height: 175, Gender: "male"}, []string{"birth_date"}},
		{Profile{Height: 175, Gender: "other", BirthDate: "1980-01-01"}, []string{"gender"}},
	} {
		if got := fieldsOf(c.p.validateAt(DeviceBodyComposition, tNow)); !slicesEqual(got, c.want) {
			t.Errorf("%+v: fields %v, want %v", c.p, got, c.want)
		}
	}
	// Other devices need none of the three.
	for _, d := range DeviceKeys[:3] {
		if err := (Profile{}).validateAt(d, tNow); err != nil {
			t.Errorf("%s: empty profile refused: %v", d, err)
		}
	}
}

func TestValidateFormats(t *testing.T) {
	for _, c := range []struct {
		p     Profile
		field string // "" = valid
	}{
		{Profile{Phone: "13800138000"}, ""},
		{Profile{Phone: "19999999999"}, ""},
		{Profile{Phone: "12800138000"}, "phone"},
		{Profile{Phone: "1380013800"}, "phone"},
		{Profile{Phone: "138001380001"}, "phone"},
		{Profile{Phone: "+8613800138000"}, "phone"},
		{Profile{Phone: "1380013800\n"}, "phone"},
		{Profile{Phone: "1380013８000"}, "phone"},
		{Profile{Gender: "female"}, ""},
		{Profile{Gender: "Female"}, "gender"},
		{Profile{Gender: "f"}, "gender"},
		{Profile{BirthDate: "2026-03-14"}, ""}, // today
		{Profile{BirthDate: "2026-03-15"}, "birth_date"},
		{Profile{BirthDate: "1900-01-01"}, ""},
		{Profile{BirthDate: "1899-12-31"}, "birth_date"},
		{Profile{BirthDate: "1990-02-30"}, "birth_date"},
		{Profile{BirthDate: "1990/02/03"}, "birth_date"},
		{Profile{BirthDate: "1990-2-3"}, "birth_date"},
		{Profile{BirthDate: "1990-02-03 00:00:00"}, "birth_date"},
		{Profile{Height: 30}, ""},
		{Profile{Height: 300}, ""},
		{Profile{Height: 29}, "height"},
		{Profile{Height: 301}, "height"},
		{Profile{Height: -170}, "height"},
		{Profile{Weight: 100}, ""},
		{Profile{Weight: 50000}, ""},
		{Profile{Weight: 99}, "weight"},
		{Profile{Weight: 50001}, "weight"},
		{Profile{Weight: 65}, "weight"}, // kg instead of kg × 100
		{Profile{Name: "王\xff"}, "name"},
		{Profile{Metadata: "\xc3"}, "metadata"},
		{fullProfile(), ""},
	} {
		got := fieldsOf(c.p.validateAt(DeviceMultiBioMonitor, tNow))
		want := []string{}
		if c.field != "" {
			want = []string{c.field}
		}
		if !slicesEqual(got, want) {
			t.Errorf("%+v: fields %v, want %v", c.p, got, want)
		}
	}
	// Every problem is reported, and each names its field in the message.
	err := Profile{Phone: "1", Gender: "x", Height: 1, Weight: 1}.validateAt(DeviceSpO2Ring, tNow)
	if got := fieldsOf(err); !slicesEqual(got, []string{"phone", "gender", "height", "weight"}) {
		t.Errorf("joined fields %v", got)
	}
	for _, f := range []string{"phone:", "gender:", "height:", "weight:"} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("message %q does not name %s", err, f)
		}
	}
	// The exported form uses the real clock.
	if err := (Profile{BirthDate: time.Now().AddDate(0, 0, 2).Format(time.DateOnly)}).Validate(DeviceECGRecorder); err == nil {
		t.Error("future birth date accepted by Validate")
	}
}

// ---- launch ----

func TestNewLaunch(t *testing.T) {
	p := Profile{Gender: "female", BirthDate: "1992-07-01", Height: 160, Phone: "13700001111", Metadata: "m-1"}
	l, err := NewLaunch(tKey, tSecret, tUser, p, DeviceBodyComposition, ModeBodyComposition, false, tNow)
	if err != nil {
		t.Fatal(err)
	}
	if l.AppKey != tKey || l.ThirdUserID != tUser || l.DeviceKey != DeviceBodyComposition || l.MeasureMode != "BCA" || l.Sandbox {
		t.Errorf("fields: %+v", l)
	}
	if l.Timestamp != "1773480413" {
		t.Errorf("timestamp %q", l.Timestamp)
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(l.Nonce) {
		t.Errorf("nonce %q is not 16 random bytes in hex", l.Nonce)
	}
	if l.Sign != refSign(tSecret, tKey, tUser, l.Timestamp, l.Nonce) {
		t.Error("sign does not match the reference")
	}
	got, err := l.Verify(tSecret, tNow.Add(299*time.Second))
	if err != nil || got != p {
		t.Errorf("Verify = %+v, %v; want %+v", got, err, p)
	}
	l2, _ := NewLaunch(tKey, tSecret, tUser, p, DeviceBodyComposition, ModeBodyComposition, false, tNow)
	if l2.Nonce == l.Nonce || l2.UserProfile == l.UserProfile {
		t.Error("nonce or IV repeated across launches")
	}
}

func TestNewLaunchRefuses(t *testing.T) {
	good := Profile{Gender: "male", BirthDate: "1970-10-10", Height: 181}
	for _, c := range []struct {
		name, key, secret, user, dev, mode string
		p                                  Profile
		field                              string
	}{
		{"no appKey", "", tSecret, tUser, DeviceMultiBioMonitor, "BP", good, "appKey"},
		{"bar in appKey", "a|b", tSecret, tUser, DeviceMultiBioMonitor, "BP", good, "appKey"},
		{"no secret", tKey, "", tUser, DeviceMultiBioMonitor, "BP", good, "appSecret"},
		{"no user", tKey, tSecret, "", DeviceMultiBioMonitor, "BP", good, "thirdUserId"},
		{"device", tKey, tSecret, tUser, "SCALE", "BP", good, "deviceKey"},
		{"mode", tKey, tSecret, tUser, DeviceSpO2Ring, "BP", good, "measureMode"},
		{"bca height", tKey, tSecret, tUser, DeviceBodyComposition, "BCA", Profile{Gender: "male", BirthDate: "1970-10-10"}, "height"},
		{"phone", tKey, tSecret, tUser, DeviceMultiBioMonitor, "BG", Profile{Phone: "110"}, "phone"},
	} {
		_, err := NewLaunch(c.key, c.secret, c.user, c.p, c.dev, c.mode, false, tNow)
		if got := fieldsOf(err); !slicesEqual(got, []string{c.field}) {
			t.Errorf("%s: %v, want %s error", c.name, err, c.field)
		}
	}
	if _, err := NewLaunch(tKey, tSecret, tUser, good, DeviceBodyComposition, "BCA", false, time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)); !errors.Is(err, ErrTimestampFormat) {
		t.Errorf("11-digit era: %v", err)
	}
}

var awkwardUsers = []string{
	"user 1", "a+b", "a&b=c", "张三", "emoji 🩺", "100%", "x?y#z", "/slash/", "tab\there", "semi;colon", "quote\"'", "plus+ and space",
}

func TestLaunchURLRoundTrip(t *testing.T) {
	for _, u := range awkwardUsers {
		for _, sandbox := range []bool{false, true} {
			l, err := NewLaunch(tKey, tSecret, u, fullProfile(), DeviceMultiBioMonitor, "BP", sandbox, tNow)
			if err != nil {
				t.Fatal(err)
			}
			s := l.URL()
			if !strings.HasPrefix(s, "plugin://platform-measure/bind?appKey=") {
				t.Fatalf("prefix: %s", s)
			}
			q := s[strings.IndexByte(s, '?')+1:]
			if strings.ContainsAny(q, " +#") {
				t.Errorf("%q: raw space, '+' or '#' in query %s", u, q)
			}
			var names []string
			for _, kv := range strings.Split(q, "&") {
				names = append(names, kv[:strings.IndexByte(kv, '=')])
			}
			wantNames := "appKey,thirdUserId,userProfile,timestamp,nonce,sign,deviceKey,measureMode"
			if sandbox {
				wantNames += ",env"
			}
			if strings.Join(names, ",") != wantNames {
				t.Errorf("%q: parameter order %v", u, names)
			}
			if strings.Contains(s, "env=sandbox") != sandbox {
				t.Errorf("%q sandbox=%v: %s", u, sandbox, s)
			}
			// What a JavaScript front end sees with decodeURIComponent on each value.
			for _, kv := range strings.Split(q, "&") {
				v, err := url.PathUnescape(kv[strings.IndexByte(kv, '=')+1:])
				if err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(kv, "thirdUserId=") && v != u {
					t.Errorf("decodeURIComponent-style decoding gave %q, want %q", v, u)
				}
			}
			back, err := ParseLaunchURL(s)
			if err != nil || back != l {
				t.Fatalf("%q: parsed %+v, %v; want %+v", u, back, err, l)
			}
			if _, err := back.Verify(tSecret, tNow); err != nil {
				t.Errorf("%q: Verify after round trip: %v", u, err)
			}
		}
	}
}

func TestParseLaunchURLRefuses(t *testing.T) {
	l, _ := NewLaunch(tKey, tSecret, tUser, Profile{}, DeviceSpO2Ring, "SPO2", false, tNow)
	good := l.URL()
	q := good[strings.IndexByte(good, '?'):]
	for name, s := range map[string]string{
		"scheme":         "https://platform-measure/bind" + q,
		"host":           "plugin://platform-measures/bind" + q,
		"path":           "plugin://platform-measure/bind/" + q,
		"no path":        "plugin://platform-measure" + q,
		"user info":      "plugin://x@platform-measure/bind" + q,
		"fragment":       good + "#frag",
		"bad escape":     good + "&x=%zz",
		"semicolon":      good + ";x=1",
		"env production": good + "&env=production",
		"env twice":      good + "&env=sandbox&env=sandbox",
		"env empty":      good + "&env=",
		"dup user":       good + "&thirdUserId=other",
		"missing sign":   strings.Replace(good, "&sign="+l.Sign, "", 1),
		"empty nonce":    strings.Replace(good, "nonce="+l.Nonce, "nonce=", 1),
		"empty":          "",
		"garbage":        "::::",
	} {
		if _, err := ParseLaunchURL(s); !errors.Is(err, ErrLaunchURL) {
			t.Errorf("%s: %v, want ErrLaunchURL", name, err)
		}
	}
	_, err := ParseLaunchURL(good + "&thirdUserId=other")
	if got := fieldsOf(err); !slicesEqual(got, []string{"thirdUserId"}) {
		t.Errorf("duplicate should name thirdUserId: %v", err)
	}
	// Unknown parameters are ignored and the order of known ones does not matter.
	if back, err := ParseLaunchURL(good + "&utm=x"); err != nil || back != l {
		t.Errorf("extra parameter: %v", err)
	}
	v, _ := url.ParseQuery(q[1:])
	if back, err := ParseLaunchURL("plugin://platform-measure/bind?" + v.Encode()); err != nil || back != l {
		t.Errorf("re-ordered form-encoded query: %+v, %v", back, err)
	}
}

func TestLaunchVerifyRefuses(t *testing.T) {
	p := Profile{Gender: "male", BirthDate: "1970-10-10", Height: 181}
	l, _ := NewLaunch(tKey, tSecret, tUser, p, DeviceBodyComposition, "BCA", false, tNow)
	other, _ := NewLaunch(tKey, tSecret, "user-43", p, DeviceBodyComposition, "BCA", false, tNow)
	noBCA, _ := NewLaunch(tKey, tSecret, tUser, Profile{}, DeviceMultiBioMonitor, "BP", false, tNow)

	mod := func(f func(*Launch)) Launch { c := l; f(&c); return c }
	resign := func(c Launch) Launch { c.Sign = Sign(tSecret, c.AppKey, c.ThirdUserID, c.Timestamp, c.Nonce); return c }
	for name, c := range map[string]struct {
		l    Launch
		now  time.Time
		want error
	}{
		"stale":           {l, tNow.Add(301 * time.Second), ErrTimestampWindow},
		"future":          {l, tNow.Add(-301 * time.Second), ErrTimestampWindow},
		"ms timestamp":    {resign(mod(func(c *Launch) { c.Timestamp += "000" })), tNow, ErrTimestampFormat},
		"wrong sign":      {mod(func(c *Launch) { c.Sign = other.Sign }), tNow, ErrSign},
		"user swapped":    {mod(func(c *Launch) { c.ThirdUserID = "user-43" }), tNow, ErrSign},
		"profile swapped": {mod(func(c *Launch) { c.UserProfile = other.UserProfile }), tNow, ErrProfileAuth},
		"nonce with bar":  {resign(mod(func(c *Launch) { c.Nonce = "a|b" })), tNow, ErrNonceFormat},
		"nonce too long":  {resign(mod(func(c *Launch) { c.Nonce = strings.Repeat("a", 65) })), tNow, ErrNonceFormat},
		"bad base64":      {mod(func(c *Launch) { c.UserProfile = "%%%" }), tNow, ErrProfileFormat},
	} {
		if _, err := c.l.Verify(tSecret, c.now); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if _, err := l.Verify(tSecret+"x", tNow); !errors.Is(err, ErrSign) {
		t.Errorf("wrong secret: %v", err)
	}
	// Device and mode are not signed, but the profile must still satisfy the device actually launched.
	switched := noBCA
	switched.DeviceKey, switched.MeasureMode = DeviceBodyComposition, "BCA"
	if got := fieldsOf(mustErr(switched.Verify(tSecret, tNow))); !slicesEqual(got, []string{"height", "gender", "birth_date"}) {
		t.Errorf("device switched to BCA: fields %v", got)
	}
	bad := l
	bad.MeasureMode = "BP"
	if got := fieldsOf(mustErr(bad.Verify(tSecret, tNow))); !slicesEqual(got, []string{"measureMode"}) {
		t.Errorf("bad mode: %v", got)
	}
}

func mustErr(_ Profile, err error) error { return err }

func TestHostJSONMatchesSpec(t *testing.T) {
	l, _ := NewLaunch(tKey, tSecret, tUser, Profile{}, DeviceMultiBioMonitor, "BP", true, tNow)
	b, err := json.Marshal(HostResponse{Code: 0, Data: l})
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Code int                    `json:"code"`
		Data map[string]interface{} `json:"data"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k, v := range m.Data {
		if _, ok := v.(string); !ok {
			t.Errorf("%s is not a string", k)
		}
		keys = append(keys, k)
	}
	want := map[string]bool{"appKey": true, "thirdUserId": true, "userProfile": true, "timestamp": true, "nonce": true, "sign": true, "deviceKey": true, "measureMode": true}
	if len(keys) != len(want) {
		t.Errorf("data keys %v", keys)
	}
	for _, k := range keys {
		if !want[k] {
			t.Errorf("unexpected data key %q", k)
		}
	}
	var req HostRequest
	if err := json.Unmarshal([]byte(`{"thirdUserId":"u","deviceKey":"HOME_SPO2_RING","measureMode":"SPO2"}`), &req); err != nil ||
		req != (HostRequest{"u", DeviceSpO2Ring, "SPO2"}) {
		t.Errorf("HostRequest: %+v, %v", req, err)
	}
}

// ---- fuzzing ----

// FuzzDecryptProfile: arbitrary input never panics, errors are always one of
// the three documented kinds, and anything that does decrypt re-encrypts to a
// value that decrypts to the same profile.
func FuzzDecryptProfile(f *testing.F) {
	up, _ := encryptWithIV(tSecret, tKey, tUser, fullProfile(), make([]byte, 12))
	f.Add(tSecret, tUser, up)
	f.Add(tSecret, tUser, "")
	f.Add("", "", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==")
	f.Add(tSecret, tUser, up[:len(up)-4])
	f.Add("k", "u", strings.Repeat("/", 64))
	f.Add(tSecret, tUser, hex.EncodeToString([]byte(up)))
	f.Fuzz(func(t *testing.T, secret, user, s string) {
		p, err := DecryptProfile(secret, tKey, user, s)
		if err != nil {
			if !errors.Is(err, ErrProfileFormat) && !errors.Is(err, ErrProfileAuth) && !errors.Is(err, ErrProfileJSON) {
				t.Fatalf("undocumented error %v", err)
			}
			return
		}
		again, err := EncryptProfile(secret, tKey, user, p)
		if err != nil {
			t.Fatal(err)
		}
		if q, err := DecryptProfile(secret, tKey, user, again); err != nil || q != p {
			t.Fatalf("re-encryption round trip: %+v, %v", q, err)
		}
	})
}

// FuzzParseLaunchURL: arbitrary strings never panic, and any accepted launch
// renders back to a URL that parses to the same launch.
func FuzzParseLaunchURL(f *testing.F) {
	for _, u := range awkwardUsers {
		l, _ := NewLaunch(tKey, tSecret, u, fullProfile(), DeviceECGRecorder, "ECG", len(u)%2 == 0, tNow)
		f.Add(l.URL())
	}
	f.Add("plugin://platform-measure/bind?appKey=a&thirdUserId=%zz")
	f.Add("plugin://platform-measure/bind?appKey=a&thirdUserId=b&userProfile=c&timestamp=d&nonce=e&sign=f&deviceKey=g&measureMode=h&env=sandbox")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLaunchURL(s)
		if err != nil {
			if !errors.Is(err, ErrLaunchURL) {
				t.Fatalf("undocumented error %v", err)
			}
			return
		}
		back, err := ParseLaunchURL(l.URL())
		if err != nil || back != l {
			t.Fatalf("URL(%+v) = %s parses to %+v, %v", l, l.URL(), back, err)
		}
		_, _ = l.Verify(tSecret, tNow) // must not panic either
	})
}
