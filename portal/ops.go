package portal

import (
	"crypto/subtle"
	"net/http"
	"strconv"
	"strings"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/auth"
)

func init() {
	addRoutes(func(s *Server) {
		s.Public("GET /portal/ops/signin", s.opsSignInPage)
		s.Public("POST /portal/ops/signin", s.opsSignIn)
		s.Operator("POST /portal/ops/signout", s.opsSignOut)
		s.Operator("GET /portal/ops/{$}", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/portal/ops/developers", http.StatusSeeOther)
		})
		s.Operator("GET /portal/ops/developers", s.opsDevelopers)
		s.Operator("POST /portal/ops/developers/{id}/review", s.opsReview)
		s.Operator("GET /portal/ops/outbox", s.opsOutbox)
	})
}

// operatorByToken authenticates an operator token like the admin API does:
// the bootstrap token, or a live named operator found by its token's hash.
func (s *Server) operatorByToken(token string) (auth.Operator, bool) {
	token = strings.TrimSpace(token)
	if token == "" {
		return auth.Operator{}, false
	}
	if s.Admin.Token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.Admin.Token)) == 1 {
		return auth.Operator{Name: "bootstrap", Role: auth.RoleAdmin}, true
	}
	if s.Admin.Operators == nil {
		return auth.Operator{}, false
	}
	return s.Admin.Operators.OperatorByTokenHash(domain.HashToken(token))
}

func (s *Server) opsSignInPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := SignedInOperator(r); ok {
		http.Redirect(w, r, "/portal/ops/developers", http.StatusSeeOther)
		return
	}
	s.Render(w, r, http.StatusOK, "ops_signin.html", map[string]any{"Next": safeNext(r.FormValue("next"), "")})
}

func (s *Server) opsSignIn(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.PostFormValue("next"), "/portal/ops/developers")
	if ok, _ := s.allowAddress(r); !ok {
		s.ErrorPage(w, r, http.StatusTooManyRequests, "Too many sign-in attempts from your address. Wait a minute and try again.")
		return
	}
	token := r.PostFormValue("token")
	op, ok := s.operatorByToken(token)
	if !ok {
		if sess := sessionFrom(r.Context()); sess != nil {
			sess.Flash = append(sess.Flash, Flash{Kind: "error", Message: "That operator token is not valid."})
		}
		s.Render(w, r, http.StatusUnauthorized, "ops_signin.html", map[string]any{"Next": next})
		return
	}
	sess := s.replaceSession(w, r, kindOperator, op.ID, s.operatorFingerprint(token))
	if _, err := s.OperatorSessions.Start(r.Context(), op.ID, commands.HashSession(sess.SID),
		commands.Meta{Actor: op.Actor(), RequestID: RequestID(w, r)}); err != nil {
		s.Fail(w, r, err)
		return
	}
	s.Redirect(w, r, next)
}

// opsSignOut ends the session on the server (every node), not only in
// this browser: a copy of the cookie is worth nothing afterwards.
func (s *Server) opsSignOut(w http.ResponseWriter, r *http.Request) {
	op, _ := SignedInOperator(r)
	sess := sessionFrom(r.Context())
	if _, err := s.OperatorSessions.End(r.Context(), op.ID, commands.HashSession(sess.SID), false, Meta(w, r)); err != nil {
		s.Fail(w, r, err)
		return
	}
	s.replaceSession(w, r, "", 0, "")
	s.Redirect(w, r, "/portal/ops/signin", Flash{Kind: "info", Message: "You are signed out."})
}

// requireAdmin refuses operators whose role may not make portal reviews
// or read the outbox (reset links): admins only, like the admin API's writes.
func (s *Server) requireAdmin(w http.ResponseWriter, r *http.Request) bool {
	op, _ := SignedInOperator(r)
	if op.Role != auth.RoleAdmin {
		s.Fail(w, r, domain.ErrRoleForbidden)
		return false
	}
	return true
}

func (s *Server) opsDevelopers(w http.ResponseWriter, r *http.Request) {
	status := r.URL.Query().Get("status")
	switch status {
	case "":
		status = catalog.DeveloperPending
	case "all", catalog.DeveloperPending, catalog.DeveloperApproved, catalog.DeveloperRejected:
	default:
		s.ErrorPage(w, r, http.StatusBadRequest, "Unknown status filter.")
		return
	}
	filter := status
	if filter == "all" {
		filter = ""
	}
	s.Render(w, r, http.StatusOK, "ops_developers.html", map[string]any{"Status": status, "Developers": s.Directory.List(filter)})
}

// opsReview takes a developer's qualification decision through the same
// command as POST /admin/v1/developers/{id}/review (the same role table);
// the developer's mail comes from the decision's event (DecisionMails).
func (s *Server) opsReview(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.NotFound(w, r)
		return
	}
	if err := mayReview(r, "/admin/v1/developers/"+strconv.FormatInt(id, 10)+"/review"); err != nil {
		s.Fail(w, r, err)
		return
	}
	decision := r.PostFormValue("decision")
	pos, err := s.Developers.Review(r.Context(), id, decision, r.PostFormValue("reason"), Meta(w, r))
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.waitDirectory(r.Context(), pos)
	s.Redirect(w, r, "/portal/ops/developers?status=all", Flash{Kind: "info", Message: "Developer " + strconv.FormatInt(id, 10) + ": " + decision + "."})
}

func (s *Server) opsOutbox(w http.ResponseWriter, r *http.Request) {
	if !s.requireAdmin(w, r) {
		return
	}
	s.Render(w, r, http.StatusOK, "ops_outbox.html", map[string]any{"SMTP": s.cfg.SMTP, "Mail": s.Directory.Outbox(false)})
}
