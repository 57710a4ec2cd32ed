package measureplugin

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Plugin page address; the host manifest declares the plugin under the alias platform-measure.
const (
	URLScheme = "plugin"
	URLHost   = "platform-measure"
	URLPath   = "/bind"
	urlPrefix = URLScheme + "://" + URLHost + URLPath + "?"
)

// HostRequest is the body the host front end sends to the host server (path chosen by the host).
type HostRequest struct {
	ThirdUserID string `json:"thirdUserId"`
	DeviceKey   string `json:"deviceKey"`
	MeasureMode string `json:"measureMode"`
}

// Launch carries everything the plugin page needs; the JSON form is the host endpoint's data object.
type Launch struct {
	AppKey      string `json:"appKey"`
	ThirdUserID string `json:"thirdUserId"`
	UserProfile string `json:"userProfile"`
	Timestamp   string `json:"timestamp"`
	Nonce       string `json:"nonce"`
	Sign        string `json:"sign"`
	DeviceKey   string `json:"deviceKey"`
	MeasureMode string `json:"measureMode"`
	// Sandbox adds env=sandbox to URL; it is not part of the spec's data object, so it is never serialised.
	Sandbox bool `json:"-"`
}

// HostResponse is the host endpoint's response body; Code is 0 on success.
type HostResponse struct {
	Code int    `json:"code"`
	Data Launch `json:"data"`
}

// NewLaunch is the one call a host server needs: it validates, encrypts the profile, and signs with a fresh nonce.
func NewLaunch(appKey, appSecret, thirdUserID string, profile Profile, deviceKey, measureMode string, sandbox bool, now time.Time) (Launch, error) {
	switch {
	case appKey == "":
		return Launch{}, FieldError{"appKey", "required"}
	case strings.Contains(appKey, "|"):
		return Launch{}, FieldError{"appKey", "must not contain '|'"}
	case appSecret == "":
		return Launch{}, FieldError{"appSecret", "required"}
	case thirdUserID == "":
		return Launch{}, FieldError{"thirdUserId", "required"}
	}
	if _, err := ReportType(deviceKey, measureMode); err != nil {
		return Launch{}, err
	}
	if err := profile.validateAt(deviceKey, now); err != nil {
		return Launch{}, err
	}
	ts, err := timestampOf(now)
	if err != nil {
		return Launch{}, err
	}
	n := make([]byte, 16)
	if _, err := rand.Read(n); err != nil {
		return Launch{}, err
	}
	nonce := hex.EncodeToString(n)
	up, err := EncryptProfile(appSecret, appKey, thirdUserID, profile)
	if err != nil {
		return Launch{}, err
	}
	return Launch{
		AppKey:      appKey,
		ThirdUserID: thirdUserID,
		UserProfile: up,
		Timestamp:   ts,
		Nonce:       nonce,
		Sign:        Sign(appSecret, appKey, thirdUserID, ts, nonce),
		DeviceKey:   deviceKey,
		MeasureMode: measureMode,
		Sandbox:     sandbox,
	}, nil
}

// escape is url.QueryEscape with spaces as %20, so JavaScript's decodeURIComponent and Go's form decoding agree.
func escape(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

// URL builds the plugin page address with parameters in a fixed order so the same Launch always yields the same string.
func (l Launch) URL() string {
	var b strings.Builder
	b.WriteString(urlPrefix)
	for i, kv := range [...][2]string{
		{"appKey", l.AppKey},
		{"thirdUserId", l.ThirdUserID},
		{"userProfile", l.UserProfile},
		{"timestamp", l.Timestamp},
		{"nonce", l.Nonce},
		{"sign", l.Sign},
		{"deviceKey", l.DeviceKey},
		{"measureMode", l.MeasureMode},
	} {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(kv[0])
		b.WriteByte('=')
		b.WriteString(escape(kv[1]))
	}
	if l.Sandbox {
		b.WriteString("&env=sandbox")
	}
	return b.String()
}

// ErrLaunchURL means the string is not a well-formed plugin launch address.
var ErrLaunchURL = errors.New("plugin: malformed launch URL")

// ParseLaunchURL lets the platform and tests read a launch back; it checks shape only, Verify checks trust.
func ParseLaunchURL(s string) (Launch, error) {
	u, err := url.Parse(s)
	if err != nil {
		return Launch{}, fmt.Errorf("%w: %v", ErrLaunchURL, err)
	}
	if u.Scheme != URLScheme || u.Host != URLHost || u.Path != URLPath || u.Opaque != "" || u.User != nil || u.Fragment != "" {
		return Launch{}, fmt.Errorf("%w: want %s", ErrLaunchURL, strings.TrimSuffix(urlPrefix, "?"))
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return Launch{}, fmt.Errorf("%w: %v", ErrLaunchURL, err)
	}
	var l Launch
	for _, f := range [...]struct {
		name string
		dst  *string
	}{
		{"appKey", &l.AppKey},
		{"thirdUserId", &l.ThirdUserID},
		{"userProfile", &l.UserProfile},
		{"timestamp", &l.Timestamp},
		{"nonce", &l.Nonce},
		{"sign", &l.Sign},
		{"deviceKey", &l.DeviceKey},
		{"measureMode", &l.MeasureMode},
	} {
		v := q[f.name]
		switch {
		case len(v) == 0 || v[0] == "":
			return Launch{}, fmt.Errorf("%w: %w", ErrLaunchURL, FieldError{f.name, "required"})
		case len(v) > 1:
			return Launch{}, fmt.Errorf("%w: %w", ErrLaunchURL, FieldError{f.name, "given more than once"})
		}
		*f.dst = v[0]
	}
	switch env := q["env"]; {
	case len(env) == 0:
	case len(env) == 1 && env[0] == "sandbox":
		l.Sandbox = true
	default:
		return Launch{}, fmt.Errorf("%w: %w", ErrLaunchURL, FieldError{"env", "only a single env=sandbox is allowed"})
	}
	return l, nil
}

// Verify is the platform's one trust check (time, nonce shape, sign, device/mode, decryption, profile rules); nonce replay is left to the caller.
func (l Launch) Verify(appSecret string, now time.Time) (Profile, error) {
	if err := CheckTimestamp(l.Timestamp, now); err != nil {
		return Profile{}, err
	}
	if err := checkNonce(l.Nonce); err != nil {
		return Profile{}, err
	}
	if !VerifySign(appSecret, l.AppKey, l.ThirdUserID, l.Timestamp, l.Nonce, l.Sign) {
		return Profile{}, ErrSign
	}
	if _, err := ReportType(l.DeviceKey, l.MeasureMode); err != nil {
		return Profile{}, err
	}
	p, err := DecryptProfile(appSecret, l.AppKey, l.ThirdUserID, l.UserProfile)
	if err != nil {
		return Profile{}, err
	}
	if err := p.validateAt(l.DeviceKey, now); err != nil {
		return Profile{}, err
	}
	return p, nil
}
