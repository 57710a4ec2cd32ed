package queryapi

import (
	"net/http"
	"strings"
	"testing"
)

// An admin list's status filter accepts its own statuses only: anything
// else is a 422 VALIDATION_ERROR on the field status that names the
// accepted values, and the list is not read.
func TestAdminListStatusFilter(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		name, path, accepted string
	}{
		{"developers", "/admin/v1/developers", "pending_review, approved, rejected"},
		{"outbox", "/admin/v1/outbox", "queued, retrying, sent, failed"},
		{"orders", "/admin/v1/orders", "PENDING_REVIEW, APPROVED, REJECTED, PARTIALLY_SHIPPED, SHIPPED"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, bad := range []string{"lost", "Approved", "approved,rejected", "%20"} {
				r := h.get(c.path+"?status="+bad, asAdmin)
				expect(t, c.name+" status="+bad, r, http.StatusUnprocessableEntity, "VALIDATION_ERROR")
				if !strings.Contains(string(r.Raw), `"status"`) || !strings.Contains(string(r.Raw), "must be one of "+c.accepted) {
					t.Fatalf("%s status=%s: the refusal does not name the field and its values: %s", c.name, bad, r.Raw)
				}
			}
			if r := h.get(c.path+"?status=lost", nil); r.Status != http.StatusUnauthorized {
				t.Fatalf("%s: an unauthenticated request is refused before its filter is read: %d %s", c.name, r.Status, r.Raw)
			}
		})
	}
	for _, ok := range []string{"/admin/v1/developers", "/admin/v1/developers?status=", "/admin/v1/developers?status=pending_review", "/admin/v1/outbox?status=failed"} {
		expect(t, ok, h.get(ok, asAdmin), http.StatusOK, "0")
	}
}
