package portal

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
)

// CSRF: every session (anonymous ones too) has a token, a keyed hash of its
// random id, so it changes at sign-in and cannot be computed without the
// session key. Every request other than GET and HEAD must carry it, in the
// form field CSRFField (the "csrf" template partial writes it) or the
// header CSRFHeader (for the portal's own scripts); ServeHTTP refuses
// anything else with 403 before any handler runs, so nothing is appended.
// A request whose Origin names another site is refused too.

// CSRFField is the form field carrying the token.
const CSRFField = "csrf_token"

// CSRFHeader carries the token on script requests.
const CSRFHeader = "X-CSRF-Token"

func (s *Server) csrfToken(sess *session) string {
	m := hmac.New(sha256.New, s.derive("portal csrf"))
	m.Write([]byte(sess.SID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *Server) csrfOK(r *http.Request, sess *session) bool {
	if origin := r.Header.Get("Origin"); origin != "" && origin != "null" {
		u, err := url.Parse(origin)
		if err != nil || u.Host != r.Host {
			return false
		}
	}
	got := r.Header.Get(CSRFHeader)
	if got == "" {
		got = r.PostFormValue(CSRFField)
	}
	want := s.csrfToken(sess)
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
