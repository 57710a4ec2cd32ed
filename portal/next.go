package portal

import (
	"net/url"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxNextDecodes bounds how many layers of percent-encoding safeNext peels
// off; a value still encoded after that is refused rather than guessed at.
const maxNextDecodes = 3

// safeNext keeps a post-sign-in redirect inside the portal: next is read
// the way the most lenient browser would read it (every layer of
// percent-encoding decoded, backslashes as slashes, dot segments resolved),
// and only a path that then still lies under Prefix is kept, re-encoded;
// anything else (another origin, a scheme-relative "//host", "/\host",
// "/portal/../x", control characters, invalid UTF-8) gives fallback. The
// query and fragment are dropped. The answer never holds "//" or a
// backslash, so no browser can read it as another host.
func safeNext(next, fallback string) string {
	p := next
	for i := 0; strings.Contains(p, "%"); i++ {
		if i == maxNextDecodes {
			return fallback
		}
		d, err := url.PathUnescape(p)
		if err != nil {
			return fallback
		}
		p = d
	}
	if p == "" || !utf8.ValidString(p) || strings.IndexFunc(p, unicode.IsControl) >= 0 {
		return fallback
	}
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		p = p[:i]
	}
	p = strings.ReplaceAll(p, `\`, "/")
	if !strings.HasPrefix(p, "/") {
		return fallback
	}
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	if clean+"/" == Prefix {
		clean = Prefix
	}
	if !strings.HasPrefix(clean, Prefix) {
		return fallback
	}
	out := (&url.URL{Path: clean}).EscapedPath()
	if strings.Contains(out, "//") || strings.Contains(out, `\`) {
		return fallback
	}
	return out
}
