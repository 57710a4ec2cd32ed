package doclinks

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's top directory, seen from this package.
const root = "../.."

var (
	linkPattern    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingPattern = regexp.MustCompile("(?m)^#{1,6} +(.+?) *#*$")
	fencePattern   = regexp.MustCompile("(?ms)^```.*?^```")
)

// documents lists the Markdown files the check covers.
func documents(t *testing.T) []string {
	var docs []string
	for _, pattern := range []string{"*.md", "docs/*.md", "docs/*/*.md", "sdk/*/README.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, m...)
	}
	if len(docs) < 3 {
		t.Fatalf("found only %d documents under %s: is the package where it should be?", len(docs), root)
	}
	return docs
}

// slug is the anchor GitHub gives a heading: lower case, punctuation other
// than '-' and '_' dropped, spaces turned into '-'.
func slug(heading string) string {
	heading = regexp.MustCompile("`|\\*\\*|\\[|\\]\\([^)]*\\)").ReplaceAllString(heading, "")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the heading anchors of a Markdown file, duplicates numbered as
// GitHub numbers them.
func anchors(text string) map[string]bool {
	text = fencePattern.ReplaceAllString(text, "")
	out, seen := map[string]bool{}, map[string]int{}
	for _, m := range headingPattern.FindAllStringSubmatch(text, -1) {
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestRelativeLinksResolve fails on every relative link of a document that
// names a file or a heading the repository does not have. Links that leave
// the repository (the shared spec beside it) and absolute URLs are not
// checked: a clean clone has neither.
func TestRelativeLinksResolve(t *testing.T) {
	top, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, doc := range documents(t) {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		text := fencePattern.ReplaceAllString(string(raw), "")
		for _, m := range linkPattern.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`).MatchString(target) {
				continue // http:, https:, mailto:
			}
			path, frag, _ := strings.Cut(target, "#")
			file := doc
			if path != "" {
				file = filepath.Join(filepath.Dir(doc), path)
			}
			abs, err := filepath.Abs(file)
			if err != nil {
				t.Fatal(err)
			}
			if abs != top && !strings.HasPrefix(abs, top+string(filepath.Separator)) {
				continue // outside the repository
			}
			docAbs, _ := filepath.Abs(doc)
			rel, _ := filepath.Rel(top, docAbs)
			checked++
			info, err := os.Stat(abs)
			if err != nil {
				t.Errorf("%s: link %q: %s does not exist", rel, target, strings.TrimPrefix(abs, top+"/"))
				continue
			}
			if frag == "" || info.IsDir() || !strings.HasSuffix(abs, ".md") {
				continue
			}
			body, err := os.ReadFile(abs)
			if err != nil {
				t.Fatal(err)
			}
			if !anchors(string(body))[frag] {
				t.Errorf("%s: link %q: %s has no heading with anchor #%s", rel, target, strings.TrimPrefix(abs, top+"/"), frag)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link was checked")
	}
}

// TestSlug holds the anchor rule to GitHub's on the headings the documents use.
func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Scheme M: route binding and its grace": "scheme-m-route-binding-and-its-grace",
		"channel_user_id":                       "channel_user_id",
		"Idempotency keys":                      "idempotency-keys",
		"Several nodes: what they share":        "several-nodes-what-they-share",
		"`PLATFORM_X` and **bold**":             "platform_x-and-bold",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
	a := anchors("# A\n\n## A\n\n```\n# not a heading\n```\n")
	if !a["a"] || !a["a-1"] || a["not-a-heading"] {
		t.Errorf("anchors = %v, want a and a-1 only", a)
	}
}
