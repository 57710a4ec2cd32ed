package measureplugin

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// -update regenerates testdata/vectors.json from the implementation; the
// committed file is then checked against an independent reference below.
var update = flag.Bool("update", false, "rewrite testdata/vectors.json from the implementation")

const vectorsPath = "testdata/vectors.json"

type signVector struct {
	AppKey      string `json:"appKey"`
	AppSecret   string `json:"appSecret"`
	ThirdUserID string `json:"thirdUserId"`
	Timestamp   string `json:"timestamp"`
	Nonce       string `json:"nonce"`
	SignedText  string `json:"signedText"`
	Sign        string `json:"sign"`
}

type profileVector struct {
	AppKey      string `json:"appKey"`
	AppSecret   string `json:"appSecret"`
	ThirdUserID string `json:"thirdUserId"`
	Key         string `json:"key"` // hex, HKDF output
	IV          string `json:"iv"`  // hex
	AAD         string `json:"aad"`
	Plaintext   string `json:"plaintext"`
	UserProfile string `json:"userProfile"`
}

type launchVector struct {
	AppSecret string `json:"appSecret"`
	Launch    Launch `json:"launch"`
	Sandbox   bool   `json:"sandbox"`
	URL       string `json:"url"`
}

type vectorFile struct {
	Comment string          `json:"comment"`
	Sign    []signVector    `json:"sign"`
	Profile []profileVector `json:"profile"`
	URL     []launchVector  `json:"url"`
}

// ---- independent reference, straight from RFC 2104, RFC 5869 and the package comment ----

// refHMAC is HMAC-SHA256 built from SHA-256 alone, so it shares no code with crypto/hmac.
func refHMAC(key, msg []byte) []byte {
	const block = 64
	if len(key) > block {
		k := sha256.Sum256(key)
		key = k[:]
	}
	k := make([]byte, block)
	copy(k, key)
	ipad, opad := make([]byte, block), make([]byte, block)
	for i := range k {
		ipad[i] = k[i] ^ 0x36
		opad[i] = k[i] ^ 0x5c
	}
	inner := sha256.Sum256(append(ipad, msg...))
	outer := sha256.Sum256(append(opad, inner[:]...))
	return outer[:]
}

// refHKDF is RFC 5869 extract-then-expand over refHMAC.
func refHKDF(secret, salt, info []byte, n int) []byte {
	prk := refHMAC(salt, secret)
	var out, t []byte
	for i := byte(1); len(out) < n; i++ {
		t = refHMAC(prk, append(append(append([]byte{}, t...), info...), i))
		out = append(out, t...)
	}
	return out[:n]
}

func refSign(secret, appKey, user, ts, nonce string) string {
	return hex.EncodeToString(refHMAC([]byte(secret), []byte(appKey+"|"+user+"|"+ts+"|"+nonce)))
}

func refKey(secret string) []byte {
	return refHKDF([]byte(secret), []byte("partner-open-platform/plugin"), []byte("userProfile v1"), 32)
}

func refSeal(t testing.TB, secret, appKey, user string, iv, plaintext []byte) string {
	t.Helper()
	block, err := aes.NewCipher(refKey(secret))
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	sealed := gcm.Seal(nil, iv, plaintext, []byte(appKey+"|"+user))
	return base64.StdEncoding.EncodeToString(append(append([]byte{}, iv...), sealed...))
}

// The reference primitives themselves are checked against the RFCs' published vectors.
func TestReferenceHMACMatchesRFC4231(t *testing.T) {
	got := hex.EncodeToString(refHMAC([]byte("Jefe"), []byte("what do ya want for nothing?")))
	if want := "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"; got != want {
		t.Fatalf("RFC 4231 case 2: %s", got)
	}
	long := bytes.Repeat([]byte{0xaa}, 131)
	got = hex.EncodeToString(refHMAC(long, []byte("Test Using Larger Than Block-Size Key - Hash Key First")))
	if want := "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"; got != want {
		t.Fatalf("RFC 4231 case 6: %s", got)
	}
}

func TestReferenceHKDFMatchesRFC5869(t *testing.T) {
	ikm := bytes.Repeat([]byte{0x0b}, 22)
	salt, _ := hex.DecodeString("000102030405060708090a0b0c")
	info, _ := hex.DecodeString("f0f1f2f3f4f5f6f7f8f9")
	got := hex.EncodeToString(refHKDF(ikm, salt, info, 42))
	want := "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
	if got != want {
		t.Fatalf("RFC 5869 A.1: %s", got)
	}
}

// ---- generation ----

func buildVectors(t *testing.T) vectorFile {
	const (
		ak  = "ak_sandbox_7f3a9c"
		sk  = "sk_sandbox_2b8e4d1f6a0c9e75d3"
		ts  = "1767225600"
		ak2 = "ak_prod_91c0"
		sk2 = "sk_prod_0e5f7a2c4b6d8e1f3a5c7e9b"
	)
	users := []struct{ appKey, secret, user, ts, nonce string }{
		{ak, sk, "user-10001", ts, "3f9a1c7e5b2d4f608e1a9c3b5d7f0e2a"},
		{ak, sk, "张三 +&=/?#%", ts, "0123456789abcdef0123456789abcdef"},
		{ak2, sk2, "u@example.com", "1800000000", "c0ffee00c0ffee00c0ffee00c0ffee00"},
	}
	var vf vectorFile
	vf.Comment = "Published vectors for package measureplugin (launch sign, userProfile v1, launch URL). " +
		"sign = hex(HMAC-SHA256(appSecret, signedText)); key = HKDF-SHA256(appSecret, salt \"partner-open-platform/plugin\", info \"userProfile v1\", 32); " +
		"userProfile = base64std(iv || AES-256-GCM(key, iv, plaintext, aad)). Regenerate only with go test ./internal/measureplugin -run TestVectors -update."
	for _, u := range users {
		vf.Sign = append(vf.Sign, signVector{
			AppKey: u.appKey, AppSecret: u.secret, ThirdUserID: u.user, Timestamp: u.ts, Nonce: u.nonce,
			SignedText: u.appKey + "|" + u.user + "|" + u.ts + "|" + u.nonce,
			Sign:       Sign(u.secret, u.appKey, u.user, u.ts, u.nonce),
		})
	}
	profiles := []struct {
		appKey, secret, user, iv string
		p                        Profile
	}{
		{ak, sk, "user-10001", "000102030405060708090a0b", Profile{
			Phone: "13800138000", Gender: "female", BirthDate: "1990-05-17", Height: 165, Weight: 5820,
			Name: "李四", Metadata: "order=42&src=ward 3",
		}},
		{ak, sk, "user-10001", "a1b2c3d4e5f60718293a4b5c", Profile{}},
		{ak, sk, "张三 +&=/?#%", "ffeeddccbbaa998877665544", Profile{Gender: "male", BirthDate: "1961-12-01", Height: 172, Metadata: "<visit id=\"7\">"}},
		{ak2, sk2, "u@example.com", "5e5e5e5e5e5e5e5e5e5e5e5e", Profile{Phone: "19912345678", Weight: 7125}},
	}
	for _, c := range profiles {
		iv, _ := hex.DecodeString(c.iv)
		key, err := profileKey(c.secret)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := marshalProfile(c.p)
		if err != nil {
			t.Fatal(err)
		}
		up, err := encryptWithIV(c.secret, c.appKey, c.user, c.p, iv)
		if err != nil {
			t.Fatal(err)
		}
		vf.Profile = append(vf.Profile, profileVector{
			AppKey: c.appKey, AppSecret: c.secret, ThirdUserID: c.user,
			Key: hex.EncodeToString(key), IV: c.iv, AAD: c.appKey + "|" + c.user,
			Plaintext: string(plain), UserProfile: up,
		})
	}
	// Each URL vector is a complete launch that Verify accepts at its own timestamp.
	for _, c := range []struct {
		sign, profile int
		device, mode  string
		sandbox       bool
	}{
		{1, 2, DeviceBodyComposition, ModeBodyComposition, true},
		{2, 3, DeviceMultiBioMonitor, ModeBloodPressure, false},
	} {
		s, p := vf.Sign[c.sign], vf.Profile[c.profile]
		l := Launch{
			AppKey: s.AppKey, ThirdUserID: s.ThirdUserID, UserProfile: p.UserProfile, Timestamp: s.Timestamp,
			Nonce: s.Nonce, Sign: s.Sign, DeviceKey: c.device, MeasureMode: c.mode, Sandbox: c.sandbox,
		}
		vf.URL = append(vf.URL, launchVector{AppSecret: s.AppSecret, Launch: l, Sandbox: c.sandbox, URL: l.URL()})
	}
	return vf
}

func loadVectors(t *testing.T) vectorFile {
	t.Helper()
	if *update {
		vf := buildVectors(t)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(vf); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.FromSlash(vectorsPath), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.FromSlash(vectorsPath))
	if err != nil {
		t.Fatal(err)
	}
	var vf vectorFile
	if err := json.Unmarshal(b, &vf); err != nil {
		t.Fatal(err)
	}
	if len(vf.Sign) == 0 || len(vf.Profile) == 0 || len(vf.URL) == 0 {
		t.Fatal("vectors file is missing a section")
	}
	return vf
}

// ---- checks ----

func TestVectorsSign(t *testing.T) {
	for _, v := range loadVectors(t).Sign {
		if v.SignedText != v.AppKey+"|"+v.ThirdUserID+"|"+v.Timestamp+"|"+v.Nonce {
			t.Errorf("%s: signedText does not follow the documented layout", v.ThirdUserID)
		}
		if got := refSign(v.AppSecret, v.AppKey, v.ThirdUserID, v.Timestamp, v.Nonce); got != v.Sign {
			t.Errorf("%s: reference %s, vector %s", v.ThirdUserID, got, v.Sign)
		}
		if got := Sign(v.AppSecret, v.AppKey, v.ThirdUserID, v.Timestamp, v.Nonce); got != v.Sign {
			t.Errorf("%s: Sign %s, vector %s", v.ThirdUserID, got, v.Sign)
		}
		if !VerifySign(v.AppSecret, v.AppKey, v.ThirdUserID, v.Timestamp, v.Nonce, v.Sign) {
			t.Errorf("%s: VerifySign refused its vector", v.ThirdUserID)
		}
	}
}

func TestVectorsProfile(t *testing.T) {
	for _, v := range loadVectors(t).Profile {
		if got := hex.EncodeToString(refKey(v.AppSecret)); got != v.Key {
			t.Errorf("%s: reference key %s, vector %s", v.ThirdUserID, got, v.Key)
		}
		if v.AAD != v.AppKey+"|"+v.ThirdUserID {
			t.Errorf("%s: aad does not follow the documented layout", v.ThirdUserID)
		}
		iv, err := hex.DecodeString(v.IV)
		if err != nil || len(iv) != 12 {
			t.Fatalf("%s: iv %q", v.ThirdUserID, v.IV)
		}
		if got := refSeal(t, v.AppSecret, v.AppKey, v.ThirdUserID, iv, []byte(v.Plaintext)); got != v.UserProfile {
			t.Errorf("%s: reference userProfile %s, vector %s", v.ThirdUserID, got, v.UserProfile)
		}
		raw, _ := base64.StdEncoding.DecodeString(v.UserProfile)
		if !bytes.Equal(raw[:12], iv) || len(raw) != 12+len(v.Plaintext)+16 {
			t.Errorf("%s: layout is not iv || ciphertext || 16-byte tag", v.ThirdUserID)
		}

		p, err := DecryptProfile(v.AppSecret, v.AppKey, v.ThirdUserID, v.UserProfile)
		if err != nil {
			t.Fatalf("%s: DecryptProfile: %v", v.ThirdUserID, err)
		}
		var want Profile
		if err := json.Unmarshal([]byte(v.Plaintext), &want); err != nil {
			t.Fatal(err)
		}
		if p != want {
			t.Errorf("%s: decrypted %+v, want %+v", v.ThirdUserID, p, want)
		}
		got, err := encryptWithIV(v.AppSecret, v.AppKey, v.ThirdUserID, want, iv)
		if err != nil || got != v.UserProfile {
			t.Errorf("%s: encryptWithIV %s (%v), vector %s", v.ThirdUserID, got, err, v.UserProfile)
		}
	}
}

func TestVectorsURL(t *testing.T) {
	for _, v := range loadVectors(t).URL {
		l := v.Launch
		l.Sandbox = v.Sandbox
		if got := l.URL(); got != v.URL {
			t.Errorf("URL\n got %s\nwant %s", got, v.URL)
		}
		if strings.HasSuffix(v.URL, "&env=sandbox") != v.Sandbox {
			t.Errorf("env=sandbox presence wrong in %s", v.URL)
		}
		back, err := ParseLaunchURL(v.URL)
		if err != nil || back != l {
			t.Errorf("ParseLaunchURL = %+v, %v; want %+v", back, err, l)
		}
		ts, _ := strconv.ParseInt(l.Timestamp, 10, 64)
		if _, err := back.Verify(v.AppSecret, time.Unix(ts, 0)); err != nil {
			t.Errorf("Verify refused URL vector %s: %v", l.ThirdUserID, err)
		}
	}
}
