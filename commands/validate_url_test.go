package commands

import (
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
)

// A URL field holds a URI (format: uri): ASCII only, no spaces or controls,
// so what the platform stores is what a client checking the format accepts.
func TestURLRuleRefusesNonASCII(t *testing.T) {
	for _, s := range []string{"https://example.com/a.png", "https://example.com/%E5%A4%B4.png?x=1#f"} {
		v := &domain.ValidationError{}
		rules{v: v}.url("avatar", s, 500)
		if v.Err() != nil {
			t.Errorf("%q refused: %v", s, v.Err())
		}
	}
	for _, s := range []string{"https://example.com/头像.png", "https://例子.com/a.png", "https://example.com/a b.png", "https://example.com/\x7f", "ftp://example.com/a"} {
		v := &domain.ValidationError{}
		rules{v: v}.url("avatar", s, 500)
		thenInvalid(t, v.Err(), "avatar")
	}
}
