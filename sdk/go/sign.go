package partneropen

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// SignM is the scheme M X-Signature (the spec's scheme for channel users,
// orders, benefit cards and the webhook routes; the client signs it under
// WithScheme(SchemeM)): hex MD5 of app key, timestamp, app secret and body.
func SignM(appKey, timestamp, appSecret string, body []byte) string {
	h := md5.New()
	h.Write([]byte(appKey))
	h.Write([]byte(timestamp))
	h.Write([]byte(appSecret))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// StringToSignH is scheme H's signString, exposed so a failed signature
// can be debugged against the platform's.
func StringToSignH(method, uri, timestamp, nonce string, body []byte) string {
	sum := sha256.Sum256(body)
	return strings.ToUpper(method) + "\n" + uri + "\n" + timestamp + "\n" + nonce + "\n" + hex.EncodeToString(sum[:])
}

// SignH is the scheme H X-Signature (every partner route; the client's default): hex
// HMAC-SHA-256 of StringToSignH keyed with the app secret; uri is the path
// with its query exactly as requested.
func SignH(appSecret, method, uri, timestamp, nonce string, body []byte) string {
	m := hmac.New(sha256.New, []byte(appSecret))
	m.Write([]byte(StringToSignH(method, uri, timestamp, nonce, body)))
	return hex.EncodeToString(m.Sum(nil))
}
