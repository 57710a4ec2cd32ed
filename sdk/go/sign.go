package partneropen

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// SignM is the scheme M X-Signature (channel users, orders, benefit cards,
// webhooks admin): hex MD5 of app key, timestamp, app secret and body.
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

// SignH is the scheme H X-Signature (report pull, sandbox mock): hex
// HMAC-SHA-256 of StringToSignH keyed with the app secret; uri is the path
// with its query exactly as requested.
func SignH(appSecret, method, uri, timestamp, nonce string, body []byte) string {
	m := hmac.New(sha256.New, []byte(appSecret))
	m.Write([]byte(StringToSignH(method, uri, timestamp, nonce, body)))
	return hex.EncodeToString(m.Sum(nil))
}
