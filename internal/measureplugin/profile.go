package measureplugin

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// KDF and cipher parameters of userProfile v1; changing any of them is a new, incompatible version.
const (
	kdfSalt   = "partner-open-platform/plugin"
	kdfInfo   = "userProfile v1"
	keySize   = 32 // AES-256
	ivSize    = 12 // GCM standard nonce
	tagSize   = 16 // GCM full-length tag
	minSealed = ivSize + tagSize
)

// ErrProfileFormat means userProfile is not standard padded base64 or is shorter than IV plus tag.
var ErrProfileFormat = errors.New("plugin: userProfile is not base64(IV || ciphertext || tag)")

// ErrProfileAuth means the GCM tag did not verify: wrong appSecret, wrong appKey/thirdUserId, or tampering.
var ErrProfileAuth = errors.New("plugin: userProfile failed authentication")

// ErrProfileJSON means the decrypted plaintext is not a JSON object of the Profile shape.
var ErrProfileJSON = errors.New("plugin: userProfile plaintext is not a valid profile JSON object")

// Profile is the userProfile plaintext; zero values mean "not given" and are omitted from the JSON.
type Profile struct {
	Phone     string `json:"phone,omitempty"`      // mainland mobile, 11 digits; enables platform_user_id binding
	Gender    string `json:"gender,omitempty"`     // male, female or unknown
	BirthDate string `json:"birth_date,omitempty"` // Y-m-d
	Height    int    `json:"height,omitempty"`     // centimetres
	Weight    int    `json:"weight,omitempty"`     // kilograms × 100 (6550 = 65.50 kg)
	Name      string `json:"name,omitempty"`       // display name
	Metadata  string `json:"metadata,omitempty"`   // echoed as metadata in plugin.report.ready
}

// profileKey derives the AES key so the raw appSecret is never used directly as a cipher key.
func profileKey(appSecret string) ([]byte, error) {
	return hkdf.Key(sha256.New, []byte(appSecret), []byte(kdfSalt), kdfInfo, keySize)
}

// profileAAD binds a ciphertext to one app and one user so it cannot be replayed for another.
func profileAAD(appKey, thirdUserID string) []byte {
	return []byte(appKey + "|" + thirdUserID)
}

func profileAEAD(appSecret string) (cipher.AEAD, error) {
	key, err := profileKey(appSecret)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// marshalProfile writes compact JSON without HTML escaping so other languages' output looks the same.
func marshalProfile(p Profile) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// EncryptProfile is what a host server runs so the profile reaches the plugin unreadable and bound to this user; it does not validate fields (NewLaunch does).
func EncryptProfile(appSecret, appKey, thirdUserID string, p Profile) (string, error) {
	iv := make([]byte, ivSize)
	if _, err := rand.Read(iv); err != nil {
		return "", err
	}
	return encryptWithIV(appSecret, appKey, thirdUserID, p, iv)
}

// encryptWithIV is EncryptProfile with a caller-chosen IV, for deterministic test vectors only.
func encryptWithIV(appSecret, appKey, thirdUserID string, p Profile, iv []byte) (string, error) {
	if len(iv) != ivSize {
		return "", fmt.Errorf("plugin: IV must be %d bytes, got %d", ivSize, len(iv))
	}
	plain, err := marshalProfile(p)
	if err != nil {
		return "", err
	}
	aead, err := profileAEAD(appSecret)
	if err != nil {
		return "", err
	}
	out := make([]byte, 0, ivSize+len(plain)+tagSize)
	out = append(out, iv...)
	out = aead.Seal(out, iv, plain, profileAAD(appKey, thirdUserID))
	return base64.StdEncoding.EncodeToString(out), nil
}

// DecryptProfile is the platform's inverse of EncryptProfile; every failure wraps one of ErrProfileFormat, ErrProfileAuth or ErrProfileJSON.
func DecryptProfile(appSecret, appKey, thirdUserID, userProfile string) (Profile, error) {
	raw, err := base64.StdEncoding.Strict().DecodeString(userProfile)
	if err != nil {
		return Profile{}, fmt.Errorf("%w: %v", ErrProfileFormat, err)
	}
	if len(raw) < minSealed {
		return Profile{}, fmt.Errorf("%w: %d bytes, need at least %d", ErrProfileFormat, len(raw), minSealed)
	}
	aead, err := profileAEAD(appSecret)
	if err != nil {
		return Profile{}, err
	}
	plain, err := aead.Open(nil, raw[:ivSize], raw[ivSize:], profileAAD(appKey, thirdUserID))
	if err != nil {
		return Profile{}, ErrProfileAuth
	}
	trimmed := bytes.TrimLeft(plain, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Profile{}, fmt.Errorf("%w: not an object", ErrProfileJSON)
	}
	var p Profile
	if err := json.Unmarshal(plain, &p); err != nil {
		return Profile{}, fmt.Errorf("%w: %v", ErrProfileJSON, err)
	}
	return p, nil
}
