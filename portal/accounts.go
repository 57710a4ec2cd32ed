package portal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
)

func init() {
	addRoutes(func(s *Server) {
		s.Public("GET /portal/{$}", s.home)
		s.Public("GET /portal/signup", s.signUpPage)
		s.Public("POST /portal/signup", s.signUp)
		s.Public("GET /portal/signin", s.signInPage)
		s.Public("POST /portal/signin", s.signIn)
		s.Developer("POST /portal/signout", s.signOut)
		s.Public("GET /portal/password/forgot", s.forgotPage)
		s.Public("POST /portal/password/forgot", s.forgot)
		s.Public("GET /portal/password/reset", s.resetPage)
		s.Public("POST /portal/password/reset", s.reset)
	})
}

func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	id := identityFrom(r.Context())
	switch {
	case id.Developer != nil:
		s.Render(w, r, http.StatusOK, "dashboard.html", nil)
	case id.Operator != nil:
		http.Redirect(w, r, "/portal/ops/developers", http.StatusSeeOther)
	default:
		s.Render(w, r, http.StatusOK, "index.html", nil)
	}
}

type accountForm struct {
	Email       string
	Next        string
	Errors      map[string][]string
	MinPassword int
	// sign-in page: the lockout policy, stated without saying whether an
	// address has an account
	LockoutFailures int
	LockoutMinutes  int
}

func (s *Server) form(r *http.Request) accountForm {
	return accountForm{MinPassword: commands.MinPasswordLength, Next: safeNext(r.FormValue("next"), ""),
		LockoutFailures: s.cfg.LockoutFailures, LockoutMinutes: int(s.cfg.LockoutPeriod.Minutes())}
}

func (s *Server) signUpPage(w http.ResponseWriter, r *http.Request) {
	s.Render(w, r, http.StatusOK, "signup.html", s.form(r))
}

// signUp answers the same page, at once, whether or not the address
// already has an account, so neither the page nor its timing says who has
// one: after the form's own checks, the sign-up is background work
// (RunMailWork) that mails a new account a welcome and the owner of a
// taken address a notice that someone tried (with a reset link). Nobody is
// signed in here; the new developer signs in next.
func (s *Server) signUp(w http.ResponseWriter, r *http.Request) {
	f := s.form(r)
	f.Email = r.PostFormValue("email")
	if ok, _ := s.allowAddress(r); !ok {
		s.ErrorPage(w, r, http.StatusTooManyRequests, "Too many attempts from your address. Wait a minute and try again.")
		return
	}
	password := r.PostFormValue("password")
	norm, err := commands.CheckSignUp(f.Email, password)
	if f.Errors = FieldErrors(err); f.Errors != nil {
		s.Render(w, r, http.StatusBadRequest, "signup.html", f)
		return
	}
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	rid := RequestID(w, r)
	if err := s.later("sign-up", func(ctx context.Context) error { return s.completeSignUp(ctx, norm, password, rid) }); err != nil {
		s.ErrorPage(w, r, http.StatusTooManyRequests, "Too many requests right now. Wait a minute and try again.")
		return
	}
	s.Render(w, r, http.StatusOK, "signup_sent.html", nil)
}

// completeSignUp opens the account, or tells the owner of a taken address.
func (s *Server) completeSignUp(ctx context.Context, email, password, requestID string) error {
	id, _, err := s.Developers.SignUp(ctx, email, password, requestID)
	switch {
	case errors.Is(err, domain.ErrEmailTaken):
		return s.sendSignUpAttempt(ctx, email, requestID)
	case err != nil:
		return err
	}
	return s.sendWelcome(ctx, id, email, requestID)
}

func (s *Server) startDeveloperSession(w http.ResponseWriter, r *http.Request, id int64) error {
	sess := s.replaceSession(w, r, kindDeveloper, id, "")
	_, err := s.Developers.StartSession(r.Context(), id, commands.HashSession(sess.SID), RequestID(w, r))
	return err
}

func (s *Server) signInPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := SignedInDeveloper(r); ok {
		http.Redirect(w, r, "/portal/", http.StatusSeeOther)
		return
	}
	s.Render(w, r, http.StatusOK, "signin.html", s.form(r))
}

// lockedMessage says an account is locked without saying whether the
// address has one (unknown addresses lock alike).
func (s *Server) lockedMessage() string {
	return fmt.Sprintf("Too many failed sign-ins for this account. It is locked for %d minutes; try again later or reset your password.",
		int(s.cfg.LockoutPeriod.Minutes()))
}

func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	f := s.form(r)
	f.Email = r.PostFormValue("email")
	if ok, err := s.allowAddress(r); err != nil {
		s.Fail(w, r, err)
		return
	} else if !ok {
		s.Render(w, r, http.StatusTooManyRequests, "signin.html", withFlash(r, f, "Too many sign-in attempts from your address. Wait a minute and try again."))
		return
	}
	account := accountKey(f.Email)
	if locked, err := s.locked(r.Context(), account); err != nil {
		s.Fail(w, r, err)
		return
	} else if locked {
		s.Render(w, r, http.StatusTooManyRequests, "signin.html", withFlash(r, f, s.lockedMessage()))
		return
	}
	dev, err := s.Developers.Authenticate(r.Context(), f.Email, r.PostFormValue("password"))
	if errors.Is(err, domain.ErrBadCredentials) {
		nowLocked, lerr := s.failed(r.Context(), account)
		if lerr != nil {
			s.Fail(w, r, lerr)
			return
		}
		msg := "Email or password is wrong."
		if nowLocked {
			msg = s.lockedMessage()
		}
		s.Render(w, r, http.StatusUnauthorized, "signin.html", withFlash(r, f, msg))
		return
	}
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	if err := s.startDeveloperSession(w, r, dev.ID); err != nil {
		s.Fail(w, r, err)
		return
	}
	s.Redirect(w, r, safeNext(f.Next, "/portal/"))
}

// withFlash shows an error notice on a re-rendered form.
func withFlash(r *http.Request, f accountForm, msg string) accountForm {
	if sess := sessionFrom(r.Context()); sess != nil {
		sess.Flash = append(sess.Flash, Flash{Kind: "error", Message: msg})
	}
	return f
}

func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	dev, _ := SignedInDeveloper(r)
	sess := sessionFrom(r.Context())
	all := r.PostFormValue("everywhere") != ""
	if _, err := s.Developers.EndSession(r.Context(), dev.ID, commands.HashSession(sess.SID), all, RequestID(w, r)); err != nil {
		s.Fail(w, r, err)
		return
	}
	s.replaceSession(w, r, "", 0, "")
	msg := "You are signed out."
	if all {
		msg = "You are signed out on every device."
	}
	s.Redirect(w, r, "/portal/signin", Flash{Kind: "info", Message: msg})
}

func (s *Server) forgotPage(w http.ResponseWriter, r *http.Request) {
	s.Render(w, r, http.StatusOK, "forgot.html", map[string]any{"Sent": false})
}

// forgot answers the same page, at once, whether or not the address has an
// account: the lookup, the reset token and the mail are background work
// (RunMailWork), so neither the answer nor its timing depends on the address.
func (s *Server) forgot(w http.ResponseWriter, r *http.Request) {
	if ok, _ := s.allowAddress(r); !ok {
		s.ErrorPage(w, r, http.StatusTooManyRequests, "Too many requests from your address. Wait a minute and try again.")
		return
	}
	email := r.PostFormValue("email")
	if _, err := commands.NormaliseEmail(email); err != nil {
		// The form's own check, whatever the address: says nothing about accounts.
		s.Render(w, r, http.StatusOK, "forgot.html", map[string]any{"Sent": true, "TTLMinutes": resetTTLMinutes()})
		return
	}
	rid := RequestID(w, r)
	if err := s.later("password reset", func(ctx context.Context) error { return s.sendReset(ctx, email, rid) }); err != nil {
		s.ErrorPage(w, r, http.StatusTooManyRequests, "Too many requests right now. Wait a minute and try again.")
		return
	}
	s.Render(w, r, http.StatusOK, "forgot.html", map[string]any{"Sent": true, "TTLMinutes": resetTTLMinutes()})
}

func (s *Server) resetPage(w http.ResponseWriter, r *http.Request) {
	s.Render(w, r, http.StatusOK, "reset.html", map[string]any{"Token": r.URL.Query().Get("token"), "MinPassword": commands.MinPasswordLength, "Errors": map[string][]string(nil)})
}

func (s *Server) reset(w http.ResponseWriter, r *http.Request) {
	token := r.PostFormValue("token")
	if _, err := s.Developers.ResetPassword(r.Context(), token, r.PostFormValue("password"), RequestID(w, r)); err != nil {
		if fe := FieldErrors(err); fe != nil {
			s.Render(w, r, http.StatusBadRequest, "reset.html", map[string]any{"Token": token, "MinPassword": commands.MinPasswordLength, "Errors": fe})
			return
		}
		s.Fail(w, r, err)
		return
	}
	s.Redirect(w, r, "/portal/signin", Flash{Kind: "info", Message: "Your password is changed and every session was signed out. Sign in with the new password."})
}

// Sign-in limits. Every attempt takes a token from its client address's
// bucket (AddressLimit a minute). Each failure takes one from the
// account's bucket (LockoutFailures per LockoutPeriod); the failure that
// empties it takes the account's lock token (one per LockoutPeriod), and
// while that token is missing the account is locked: no password is
// checked, and the page says so. Keys are the normalised address as typed,
// so unknown addresses lock exactly like real ones. With Postgres the
// buckets are shared by every node.

func accountKey(email string) string {
	if norm, err := commands.NormaliseEmail(email); err == nil {
		return "email:" + norm
	}
	return "email:invalid"
}

func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (s *Server) allowAddress(r *http.Request) (bool, error) {
	if s.Limits.Address == nil {
		return true, nil
	}
	g, err := s.Limits.Address.Take(r.Context(), "addr:"+clientAddress(r), 1, 0)
	return g.Granted == 1, err
}

func (s *Server) locked(ctx context.Context, account string) (bool, error) {
	if s.Limits.Lock == nil {
		return false, nil
	}
	g, err := s.Limits.Lock.Take(ctx, account, 0, 0)
	return g.Tokens < 1, err
}

// failed records a failed sign-in; true: the account is now locked.
func (s *Server) failed(ctx context.Context, account string) (bool, error) {
	if s.Limits.Account == nil || s.Limits.Lock == nil {
		return false, nil
	}
	g, err := s.Limits.Account.Take(ctx, account, 1, 0)
	if err != nil {
		return false, err
	}
	if g.Granted == 1 && g.Tokens >= 1 {
		return false, nil
	}
	_, err = s.Limits.Lock.Take(ctx, account, 1, 0)
	return err == nil, err
}
