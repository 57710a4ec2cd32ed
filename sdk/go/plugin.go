package partneropen

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// PluginProfile is the userProfile plaintext a host server encrypts for
// the measurement plugin; zero values are omitted.
type PluginProfile struct {
	// Phone is a mainland mobile number; it enables platform_user_id binding.
	Phone string `json:"phone,omitempty"`
	// Gender is male, female or unknown.
	Gender string `json:"gender,omitempty"`
	// BirthDate is Y-m-d.
	BirthDate string `json:"birth_date,omitempty"`
	// Height is in centimetres.
	Height int `json:"height,omitempty"`
	// Weight is kilograms times 100.
	Weight int `json:"weight,omitempty"`
	// Name is a display name.
	Name string `json:"name,omitempty"`
	// Metadata is echoed as metadata in plugin.report.ready.
	Metadata string `json:"metadata,omitempty"`
}

// PluginLaunchParams are the signed parameters a host server hands its
// front end to open plugin://platform-measure/bind.
type PluginLaunchParams struct {
	// AppKey identifies the app.
	AppKey string `json:"appKey"`
	// ThirdUserID is the host's user id.
	ThirdUserID string `json:"thirdUserId"`
	// UserProfile is base64 of IV, AES-256-GCM ciphertext and tag.
	UserProfile string `json:"userProfile"`
	// Timestamp is 10-digit Unix seconds.
	Timestamp string `json:"timestamp"`
	// Nonce is single-use per app.
	Nonce string `json:"nonce"`
	// Sign is SignPluginLaunch of the above.
	Sign string `json:"sign"`
	// DeviceKey names the device (HOME_MULTI_BIO_MONITOR, ...).
	DeviceKey string `json:"deviceKey"`
	// MeasureMode is the measurement mode (BP, ...).
	MeasureMode string `json:"measureMode"`
}

// SignPluginLaunch is the launch sign: hex HMAC-SHA-256 keyed with the app
// secret over appKey|thirdUserId|timestamp|nonce.
func SignPluginLaunch(appSecret, appKey, thirdUserID, timestamp, nonce string) string {
	m := hmac.New(sha256.New, []byte(appSecret))
	m.Write([]byte(appKey + "|" + thirdUserID + "|" + timestamp + "|" + nonce))
	return hex.EncodeToString(m.Sum(nil))
}

// profile cipher parameters (userProfile v1), as the platform's plugin package.
const (
	profileSalt = "partner-open-platform/plugin"
	profileInfo = "userProfile v1"
)

// profileAEAD derives the profile cipher from the app secret by HKDF-SHA-256.
func profileAEAD(appSecret string) (cipher.AEAD, error) {
	key, err := hkdf.Key(sha256.New, []byte(appSecret), []byte(profileSalt), profileInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("partneropen: derive profile key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("partneropen: profile cipher: %w", err)
	}
	return cipher.NewGCM(block)
}

// EncryptPluginProfile seals p for one app and user (the AAD is
// appKey|thirdUserId, so a profile cannot be replayed for another user).
func EncryptPluginProfile(appSecret, appKey, thirdUserID string, p PluginProfile) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return "", fmt.Errorf("partneropen: encode profile: %w", err)
	}
	plain := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	aead, err := profileAEAD(appSecret)
	if err != nil {
		return "", err
	}
	iv := make([]byte, aead.NonceSize())
	if _, err := io.ReadFull(rand.Reader, iv); err != nil {
		return "", fmt.Errorf("partneropen: profile IV: %w", err)
	}
	out := aead.Seal(iv, iv, plain, []byte(appKey+"|"+thirdUserID))
	return base64.StdEncoding.EncodeToString(out), nil
}

// DecryptPluginProfile opens a userProfile, for a host checking its own output.
func DecryptPluginProfile(appSecret, appKey, thirdUserID, userProfile string) (PluginProfile, error) {
	raw, err := base64.StdEncoding.Strict().DecodeString(userProfile)
	if err != nil {
		return PluginProfile{}, fmt.Errorf("partneropen: userProfile base64: %w", err)
	}
	aead, err := profileAEAD(appSecret)
	if err != nil {
		return PluginProfile{}, err
	}
	if len(raw) < aead.NonceSize()+aead.Overhead() {
		return PluginProfile{}, errors.New("partneropen: userProfile too short")
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte(appKey+"|"+thirdUserID))
	if err != nil {
		return PluginProfile{}, fmt.Errorf("partneropen: userProfile authentication: %w", err)
	}
	var p PluginProfile
	if err := json.Unmarshal(plain, &p); err != nil {
		return PluginProfile{}, fmt.Errorf("partneropen: userProfile JSON: %w", err)
	}
	return p, nil
}

// NewPluginLaunch builds signed launch parameters for a host's front end:
// a fresh nonce, the current timestamp and the encrypted profile.
func (cl *Client) NewPluginLaunch(thirdUserID string, profile PluginProfile, deviceKey, measureMode string) (PluginLaunchParams, error) {
	if thirdUserID == "" || deviceKey == "" || measureMode == "" || strings.Contains(thirdUserID, "|") {
		return PluginLaunchParams{}, errors.New("partneropen: plugin launch needs thirdUserId (without |), deviceKey and measureMode")
	}
	up, err := EncryptPluginProfile(cl.appSecret, cl.appKey, thirdUserID, profile)
	if err != nil {
		return PluginLaunchParams{}, err
	}
	ts := strconv.FormatInt(cl.now().Unix(), 10)
	nonce := newNonce()
	return PluginLaunchParams{AppKey: cl.appKey, ThirdUserID: thirdUserID, UserProfile: up, Timestamp: ts, Nonce: nonce,
		Sign: SignPluginLaunch(cl.appSecret, cl.appKey, thirdUserID, ts, nonce), DeviceKey: deviceKey, MeasureMode: measureMode}, nil
}

// readLimited reads a request body up to limit bytes, refusing more.
func readLimited(r *http.Request, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("partneropen: read webhook body: %w", err)
	}
	if int64(len(b)) > limit {
		return nil, errors.New("partneropen: webhook body too large")
	}
	return b, nil
}
