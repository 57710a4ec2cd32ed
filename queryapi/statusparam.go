package queryapi

import (
	"net/http"
	"slices"
	"strings"

	"github.com/healthtech/partner-open-platform/domain"
)

// statusParam reads a list's optional status filter: "" when absent, one of
// allowed otherwise. Any other value is refused as every enumerated query
// parameter is: 422 VALIDATION_ERROR on the field status, naming the
// values it accepts in allowed's order.
func statusParam(r *http.Request, allowed []string) (string, error) {
	status := r.URL.Query().Get("status")
	if status != "" && !slices.Contains(allowed, status) {
		v := &domain.ValidationError{}
		v.Add("status", "must be one of "+strings.Join(allowed, ", "))
		return "", v
	}
	return status, nil
}
