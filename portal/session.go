package portal

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/auth"
)

// Sessions are stateless cookies sealed (AES-256-GCM) with a key derived
// from the master key, so any node sharing the stores opens any node's
// cookie, plus a server-side check on the write side: a developer session
// is valid only while its developer stream records it started and not
// ended (sign-out, sign-out everywhere and password changes end sessions
// on every node at once); an operator session likewise only while its
// operator's session stream (commands.OperatorSessions) records it open,
// and while the operator is not revoked (and, for the bootstrap token,
// while the token is the same).
// Every visitor has a session (anonymous until sign-in), which carries the
// CSRF secret and flash notices; sign-in replaces it with a fresh one.

// CookieName is the portal's session cookie (Path=/portal/, HttpOnly,
// SameSite=Lax, Secure unless Config.InsecureCookies).
const CookieName = "portal_session"

// refreshAfter is how stale Seen may get before the cookie is re-issued
// (the idle clock's resolution).
const refreshAfter = time.Minute

// session is the sealed cookie's content.
type session struct {
	SID    string  `json:"s"`           // random; its SHA-256 is what the log records
	Kind   string  `json:"k,omitempty"` // "", kindDeveloper or kindOperator
	ID     int64   `json:"i,omitempty"` // developer or operator id
	Token  string  `json:"o,omitempty"` // operator: keyed fingerprint of the token signed in with
	Issued int64   `json:"t"`           // unix seconds of sign-in (or creation)
	Seen   int64   `json:"l"`           // unix seconds of the last request
	Flash  []Flash `json:"f,omitempty"`

	dirty bool // re-issue the cookie
}

const (
	kindDeveloper = "developer"
	kindOperator  = "operator"
)

// Identity is who a request is from: a developer, an operator, or nobody.
type Identity struct {
	Developer *commands.Developer
	Operator  *auth.Operator
}

type identityKey struct{}
type sessionKey struct{}

func identityFrom(ctx context.Context) Identity {
	id, _ := ctx.Value(identityKey{}).(Identity)
	return id
}

func sessionFrom(ctx context.Context) *session {
	s, _ := ctx.Value(sessionKey{}).(*session)
	return s
}

// SignedInDeveloper returns the request's developer, as the developer's
// stream says now (status, review reason, email), if one is signed in.
func SignedInDeveloper(r *http.Request) (commands.Developer, bool) {
	id := identityFrom(r.Context())
	if id.Developer == nil {
		return commands.Developer{}, false
	}
	return *id.Developer, true
}

// SignedInOperator returns the request's operator, if one is signed in.
func SignedInOperator(r *http.Request) (auth.Operator, bool) {
	id := identityFrom(r.Context())
	if id.Operator == nil {
		return auth.Operator{}, false
	}
	return *id.Operator, true
}

func (s *Server) aead() cipher.AEAD {
	block, err := aes.NewCipher(s.derive("portal session cookie v1"))
	if err != nil {
		panic(err) // a 32-byte key always makes a cipher
	}
	g, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return g
}

// derive makes a purpose-bound subkey of the session key.
func (s *Server) derive(purpose string) []byte {
	m := hmac.New(sha256.New, s.cfg.SessionKey)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

func (s *Server) seal(sess *session) string {
	plain, _ := json.Marshal(sess)
	g := s.aead()
	nonce := make([]byte, g.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(g.Seal(nonce, nonce, plain, []byte(CookieName)))
}

func (s *Server) open(value string) (*session, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(value)
	g := s.aead()
	if err != nil || len(raw) < g.NonceSize() {
		return nil, false
	}
	plain, err := g.Open(nil, raw[:g.NonceSize()], raw[g.NonceSize():], []byte(CookieName))
	if err != nil {
		return nil, false
	}
	var sess session
	if json.Unmarshal(plain, &sess) != nil || sess.SID == "" {
		return nil, false
	}
	return &sess, true
}

func randomID() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *Server) newSession() *session {
	now := s.Now().Unix()
	return &session{SID: randomID(), Issued: now, Seen: now, dirty: true}
}

// loadSession opens the cookie, checks expiry and revocation, and resolves
// the identity; a missing, forged, expired or revoked session becomes a
// fresh anonymous one. The cookie is (re-)issued here, before any handler
// writes, when it changed or its idle clock needs moving.
func (s *Server) loadSession(w http.ResponseWriter, r *http.Request) (*session, Identity) {
	now := s.Now()
	var sess *session
	if c, err := r.Cookie(CookieName); err == nil {
		sess, _ = s.open(c.Value)
	}
	expired := false
	if sess != nil {
		idle := now.Sub(time.Unix(sess.Seen, 0))
		age := now.Sub(time.Unix(sess.Issued, 0))
		if sess.Kind != "" && (idle > s.cfg.SessionIdle || age > s.cfg.SessionMax) {
			sess, expired = nil, true
		}
	}
	if sess == nil {
		sess = s.newSession()
		if expired {
			sess.Flash = []Flash{{Kind: "info", Message: "Your session expired. Sign in again."}}
		}
	}
	id, ok := s.resolve(r.Context(), sess)
	if !ok {
		sess = s.newSession()
		sess.Flash = []Flash{{Kind: "info", Message: "You were signed out. Sign in again."}}
	}
	if now.Sub(time.Unix(sess.Seen, 0)) >= refreshAfter {
		sess.Seen, sess.dirty = now.Unix(), true
	}
	if sess.dirty {
		s.writeCookie(w, sess)
	}
	return sess, id
}

// resolve turns a session into its identity; false: it names someone who
// may no longer use it (ended session, revoked operator).
func (s *Server) resolve(ctx context.Context, sess *session) (Identity, bool) {
	switch sess.Kind {
	case kindDeveloper:
		dev, err := s.Developers.Load(ctx, sess.ID)
		if err != nil || !dev.SessionOpen(commands.HashSession(sess.SID)) {
			if err != nil && err != domain.ErrDeveloperNotFound {
				s.Log.Error("portal: load developer session", "developer_id", sess.ID, "err", err)
			}
			return Identity{}, false
		}
		return Identity{Developer: &dev}, true
	case kindOperator:
		op, ok := s.operatorByFingerprint(sess.ID, sess.Token)
		if !ok {
			return Identity{}, false
		}
		open, err := s.OperatorSessions.Open(ctx, sess.ID, commands.HashSession(sess.SID))
		if err != nil {
			s.Log.Error("portal: load operator session", "operator_id", sess.ID, "err", err)
		}
		if !open {
			return Identity{}, false
		}
		return Identity{Operator: &op}, true
	}
	return Identity{}, true
}

func (s *Server) writeCookie(w http.ResponseWriter, sess *session) {
	sess.dirty = false
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: s.seal(sess), Path: Prefix,
		HttpOnly: true, Secure: !s.cfg.InsecureCookies, SameSite: http.SameSiteLaxMode,
		MaxAge: int(s.cfg.SessionMax.Seconds()),
	})
}

// replaceSession issues a fresh session (new id: no fixation) for the
// identity signing in, keeping any flash notices.
func (s *Server) replaceSession(w http.ResponseWriter, r *http.Request, kind string, id int64, token string) *session {
	old := sessionFrom(r.Context())
	sess := s.newSession()
	sess.Kind, sess.ID, sess.Token = kind, id, token
	if old != nil {
		sess.Flash = old.Flash
	}
	s.writeCookie(w, sess)
	*old = *sess // later renders in this request use the new CSRF secret
	return sess
}

func (s *Server) setFlash(w http.ResponseWriter, r *http.Request, flash ...Flash) {
	sess := sessionFrom(r.Context())
	if sess == nil {
		return
	}
	sess.Flash = append(sess.Flash, flash...)
	s.writeCookie(w, sess)
}

// takeFlash returns the pending notices and clears them from the cookie.
func (s *Server) takeFlash(w http.ResponseWriter, r *http.Request) []Flash {
	sess := sessionFrom(r.Context())
	if sess == nil || len(sess.Flash) == 0 {
		return nil
	}
	out := sess.Flash
	sess.Flash = nil
	s.writeCookie(w, sess)
	return out
}

// operatorFingerprint keys a token's hash, so the cookie names which token
// signed in without carrying the token or its plain digest.
func (s *Server) operatorFingerprint(token string) string {
	m := hmac.New(sha256.New, s.derive("portal operator token"))
	m.Write([]byte(domain.HashToken(token)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// operatorByFingerprint finds the live operator a session names: a named
// operator not revoked, or the bootstrap token while it is unchanged.
func (s *Server) operatorByFingerprint(id int64, fp string) (auth.Operator, bool) {
	if id == 0 {
		if s.Admin.Token == "" || subtle.ConstantTimeCompare([]byte(fp), []byte(s.operatorFingerprint(s.Admin.Token))) != 1 {
			return auth.Operator{}, false
		}
		return auth.Operator{Name: "bootstrap", Role: auth.RoleAdmin}, true
	}
	if s.Operators == nil {
		return auth.Operator{}, false
	}
	op, ok := s.Operators.ByID(id)
	if !ok || op.Revoked {
		return auth.Operator{}, false
	}
	return auth.Operator{ID: op.OperatorID, Name: op.Name, Role: op.Role}, true
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
