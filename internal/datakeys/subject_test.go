package datakeys_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/internal/datakeys"
)

// subjectPattern is the rule ErrInvalidSubject states, as the regexp
// ValidSubject used to be.
var subjectPattern = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$`)

// FuzzValidSubject: the hand-written check accepts exactly what the
// pattern does.
func FuzzValidSubject(f *testing.F) {
	for _, s := range []string{"", "user-1", ".x", "a.b", "x/y", "é", "readmodels-snapshot-1", strings.Repeat("a", 128), strings.Repeat("a", 129), "a\n", "_", "-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := datakeys.ValidSubject(s), subjectPattern.MatchString(s); got != want {
			t.Fatalf("ValidSubject(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}
