package portaltest

import (
	"regexp"
	"testing"
)

// stripTags gives what the regular expression it stands for gives.
func FuzzStripTags(f *testing.F) {
	for _, s := range []string{"", "a", "<b>x</b>", "<>", "a<>b", "<<a>>", "x<y", "x>y", "<a\nb>c", "<<>", "<><b>", "1 < 2 > 0"} {
		f.Add(s)
	}
	re := regexp.MustCompile(`<[^>]+>`)
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := stripTags(s, " "), re.ReplaceAllString(s, " "); got != want {
			t.Fatalf("stripTags(%q) = %q, the expression gives %q", s, got, want)
		}
	})
}
