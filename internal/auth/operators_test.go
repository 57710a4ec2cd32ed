package auth_test

import (
	"errors"
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/auth"
)

// The role table of the README, row by row.
func TestPermitFollowsTheRoleTable(t *testing.T) {
	cases := []struct {
		method, path            string
		admin, support, auditor bool
	}{
		{"POST", "/admin/v1/operators", true, false, false},
		{"GET", "/admin/v1/operators", true, false, false},
		{"POST", "/admin/v1/operators/3/revoke", true, false, false},
		{"GET", "/admin/v1/audit", true, false, true},
		{"GET", "/admin/v1/history", true, true, true},
		{"GET", "/admin/v1/apps/1", true, true, true},
		{"POST", "/admin/v1/deliveries/d-1/resend", true, true, false},
		{"POST", "/admin/v1/apps/1/deliveries/resend", true, true, false},
		{"POST", "/admin/v1/projections/users/rebuild", true, true, false},
		{"POST", "/admin/v1/orders/O1/ship", true, true, false},
		{"POST", "/admin/v1/apps", true, false, false},
		{"POST", "/admin/v1/apps/1/rotate-secret", true, false, false},
		{"PATCH", "/admin/v1/apps/1", true, false, false},
		{"POST", "/admin/v1/health-reports", true, false, false},
		{"POST", "/admin/v1/deliveries//resend", true, false, false},
	}
	for _, c := range cases {
		for role, want := range map[string]bool{auth.RoleAdmin: c.admin, auth.RoleSupport: c.support, auth.RoleAuditor: c.auditor} {
			err := auth.Permit(role, c.method, c.path)
			if (err == nil) != want || (err != nil && !errors.Is(err, domain.ErrRoleForbidden)) {
				t.Errorf("%s %s as %s: %v, want allowed=%v", c.method, c.path, role, err, want)
			}
		}
	}
	if auth.Permit("root", "GET", "/admin/v1/apps") == nil {
		t.Error("an unknown role was allowed")
	}
}
