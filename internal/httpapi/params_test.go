package httpapi_test

import (
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
	"github.com/julienschmidt/httprouter"
)

// CheckParams refuses a path or query parameter that is not clean text,
// naming it, and costs a clean request (every partner request is one)
// no allocation.
func TestCheckParams(t *testing.T) {
	clean := httptest.NewRequest("GET", "/open/v1/channel/users/12", nil)
	ps := httprouter.Params{{Key: "openUserId", Value: "12"}}
	if err := httpapi.CheckParams(clean, ps); err != nil {
		t.Fatalf("clean request: %v", err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = httpapi.CheckParams(clean, ps) }); n != 0 {
		t.Fatalf("a clean request allocates %.0f objects, want 0", n)
	}
	withQuery := httptest.NewRequest("GET", "/open/v1/channel/users/0?channel_user_id=c-1&updated_after=2026-01-01T00:00:00Z", nil)
	if err := httpapi.CheckParams(withQuery, ps); err != nil {
		t.Fatalf("clean query: %v", err)
	}
	bad := httptest.NewRequest("GET", "/open/v1/channel/users/0?channel_user_id=a%00b", nil)
	var v *domain.ValidationError
	if err := httpapi.CheckParams(bad, httprouter.Params{{Key: "openUserId", Value: "\xff"}}); !errors.As(err, &v) ||
		len(v.Fields["openUserId"]) != 1 || len(v.Fields["channel_user_id"]) != 1 || len(v.Fields) != 2 {
		t.Fatalf("bad path and query parameters: %v", err)
	}
}
