package portal

import (
	"strings"
	"testing"
)

func TestSafeNextKeepsRedirectsInsideThePortal(t *testing.T) {
	const fallback = "/portal/"
	for _, tc := range []struct{ next, want string }{
		// kept
		{"/portal/", "/portal/"},
		{"/portal", "/portal/"},
		{"/portal/apps", "/portal/apps"},
		{"/portal/apps/12/endpoints", "/portal/apps/12/endpoints"},
		{"/portal/ops/developers/", "/portal/ops/developers/"},
		{"/portal/apps?x=1#f", "/portal/apps"},
		{"/portal/./apps/../apps", "/portal/apps"},
		{"%2Fportal%2Fapps", "/portal/apps"},
		{"/portal/a%20b", "/portal/a%20b"},
		{"/portal//apps", "/portal/apps"},
		{`/portal/\apps`, "/portal/apps"},
		// dropped
		{"", fallback},
		{"/portal/..%2F%5Cevil.example", fallback},
		{"/portal/../%5Cevil.example", fallback},
		{`/portal/..\evil.example`, fallback},
		{`/portal/..\\evil.example`, fallback},
		{"/portal/%2e%2e/%2e%2e//evil.example", fallback},
		{"/portal/%252e%252e%252f%252fevil.example", fallback},
		{"/portal/%25252e%25252e%25252fevil", fallback},
		{"/portal/..", fallback},
		{"/portal/../admin", fallback},
		{"//evil.example", fallback},
		{"///evil.example/portal/", fallback},
		{`/\evil.example`, fallback},
		{`\\evil.example\portal\`, fallback},
		{"https://evil.example/portal/", fallback},
		{"http:/portal/", fallback},
		{"javascript:alert(1)//portal/", fallback},
		{"portal/apps", fallback},
		{"/portalx/apps", fallback},
		{"/portal\x00/apps", fallback},
		{"/portal/%0d%0aSet-Cookie:x=1", fallback},
		{"/portal/\tapps", fallback},
		{"/portal/\u0085apps", fallback},
		{"/portal/%ff", fallback},
		{"/portal/%zz", fallback},
		{"/other", fallback},
	} {
		if got := safeNext(tc.next, fallback); got != tc.want {
			t.Errorf("safeNext(%q) = %q, want %q", tc.next, got, tc.want)
		}
	}
	if got := safeNext("//evil.example", ""); got != "" {
		t.Errorf("no fallback: %q", got)
	}
}

// FuzzSafeNext: whatever next is, the redirect target is a path under the
// portal that no browser reads as another host.
func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"/portal/", "/portal/..%2F%5Cevil.example", `/portal/..\evil`, "//evil", "/portal/%252e%252e/",
		"/portal/a/b/../../..", "/portal/%5c%5cevil", "https://x/portal/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) {
		got := safeNext(next, "/portal/")
		if !strings.HasPrefix(got, "/portal/") || strings.Contains(got, "//") || strings.Contains(got, `\`) {
			t.Fatalf("safeNext(%q) = %q", next, got)
		}
		if again := safeNext(got, "/portal/"); again != got {
			t.Fatalf("safeNext(%q) = %q, but that reads back as %q", next, got, again)
		}
	})
}
