package auth

import (
	"crypto/subtle"
	"net/http"
	"strconv"
	"strings"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// Operator roles: what a named operator may do (see Permit).
const (
	// RoleAdmin may do everything except reveal personal data, which is the
	// auditor's alone (separation of duties).
	RoleAdmin = "admin"
	// RoleAuditor reads everything, reveals personal data with a reason,
	// lists the audit facts, and writes nothing.
	RoleAuditor = "auditor"
	// RoleSupport reads (redacted) and runs operational writes: webhook
	// resends, projection rebuilds, order review and shipping.
	RoleSupport = "support"
)

// Roles lists the roles an operator can be given.
var Roles = []string{RoleAdmin, RoleAuditor, RoleSupport}

// BootstrapActor is the actor of calls made with the bootstrap token
// (PLATFORM_ADMIN_TOKEN or data/admin.token), which acts as role admin.
const BootstrapActor = "operator:bootstrap"

// Operator is who made an admin call: a named operator, or the bootstrap
// token (ID 0).
type Operator struct {
	ID   int64
	Name string
	Role string
}

// Actor is the operator as event metadata and audit facts name it.
func (o Operator) Actor() string {
	if o.ID == 0 {
		return BootstrapActor
	}
	return "operator:" + strconv.FormatInt(o.ID, 10)
}

// OperatorDirectory finds a live (not revoked) named operator by the
// SHA-256 of its token (domain.HashToken).
type OperatorDirectory interface {
	OperatorByTokenHash(hash string) (Operator, bool)
}

// Admin authenticates operators: the bootstrap token, or a named
// operator's token looked up by its hash; then it authorises the route for
// the operator's role (Permit).
type Admin struct {
	Token     string
	Operators OperatorDirectory // nil: the bootstrap token only
}

// Operator returns the calling operator once it is authenticated (else
// httpapi.ErrAdmin, 401 HTTP_401; why goes to the access log only) and its
// role allows the request's method and path (else domain.ErrRoleForbidden,
// 403 ROLE_FORBIDDEN).
func (a Admin) Operator(r *http.Request) (Operator, error) {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		httpapi.NoteFrom(r.Context()).Reason = missingOr(r.Header.Get("Authorization"), "missing_token", "not_bearer")
		return Operator{}, httpapi.ErrAdmin
	}
	got = strings.TrimSpace(got)
	var op Operator
	switch {
	case got == "":
		httpapi.NoteFrom(r.Context()).Reason = "missing_token"
		return Operator{}, httpapi.ErrAdmin
	case a.Token != "" && subtle.ConstantTimeCompare([]byte(got), []byte(a.Token)) == 1:
		op = Operator{Name: "bootstrap", Role: RoleAdmin}
	default:
		found := false
		if a.Operators != nil {
			// The directory is keyed by the token's SHA-256, so the lookup
			// compares digests, never the token itself.
			op, found = a.Operators.OperatorByTokenHash(domain.HashToken(got))
		}
		if !found {
			httpapi.NoteFrom(r.Context()).Reason = "bad_token"
			return Operator{}, httpapi.ErrAdmin
		}
	}
	if err := Permit(op.Role, r.Method, r.URL.Path); err != nil {
		return Operator{}, err
	}
	return op, nil
}

// Verify is Operator for callers that need only the yes or no.
func (a Admin) Verify(r *http.Request) error {
	_, err := a.Operator(r)
	return err
}

// supportWrites are the operational writes the support role may make.
var supportWrites = []struct{ method, prefix, suffix string }{
	{"POST", "/admin/v1/deliveries/", "/resend"},
	{"POST", "/admin/v1/apps/", "/deliveries/resend"},
	{"POST", "/admin/v1/projections/", "/rebuild"},
	{"POST", "/admin/v1/orders/", "/approve"},
	{"POST", "/admin/v1/orders/", "/reject"},
	{"POST", "/admin/v1/orders/", "/ship"},
}

// Permit is the role table (README, "Operators and roles"):
//
//	route                                     admin  support  auditor
//	/admin/v1/operators (any method)          yes    no       no
//	GET /admin/v1/audit                       yes    no       yes
//	GET /admin/v1/outbox (reset links)        yes    no       no
//	other GET (reads; personal data redacted) yes    yes      yes
//	resends, rebuilds, order review and ship  yes    yes      no
//	POST /admin/v1/keys/rotate                yes    no       no
//	any other write (channel-user erasure...) yes    no       no
//
// Revealing personal data is decided by the read itself: auditors only.
func Permit(role, method, path string) error {
	if role == RoleAdmin {
		return nil
	}
	if role != RoleSupport && role != RoleAuditor {
		return domain.ErrRoleForbidden
	}
	switch {
	case path == "/admin/v1/operators" || strings.HasPrefix(path, "/admin/v1/operators/"):
		return domain.ErrRoleForbidden
	case path == "/admin/v1/outbox":
		return domain.ErrRoleForbidden
	case path == "/admin/v1/audit":
		if role == RoleAuditor && (method == http.MethodGet || method == http.MethodHead) {
			return nil
		}
		return domain.ErrRoleForbidden
	case method == http.MethodGet || method == http.MethodHead:
		return nil
	case role == RoleSupport:
		for _, w := range supportWrites {
			if method == w.method && strings.HasPrefix(path, w.prefix) && strings.HasSuffix(path, w.suffix) && len(path) > len(w.prefix)+len(w.suffix) {
				return nil
			}
		}
	}
	return domain.ErrRoleForbidden
}
