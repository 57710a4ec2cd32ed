package apiref_test

import (
	"strings"
	"testing"

	"github.com/healthtech/partner-open-platform/portal/apiref"
)

// The descriptions' inline markup renders as HTML, never as literal
// markers, and what is not markup (wildcards, a lone star, unsafe links)
// stays text.
func TestInlineMarkup(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"answers `404` **without a `code`** (do not retry)", "answers <code>404</code> <strong>without a <code>code</code></strong> (do not retry)"},
		{"the user's *current* mapping", "the user&#39;s <em>current</em> mapping"},
		{"subscribe to health.report.* or *", "subscribe to health.report.* or *"},
		{"see [the spec](https://example.com/a?b=1&c=2) and [signing](#signing)", `see <a href="https://example.com/a?b=1&amp;c=2">the spec</a> and <a href="#signing">signing</a>`},
		{"no [script](javascript:alert(1)) and no [](#empty)", "no [script](javascript:alert(1)) and no [](#empty)"},
		{"**Repeated `third_order_id`.** Then", "<strong>Repeated <code>third_order_id</code>.</strong> Then"},
		{"<b>escaped</b> `<i>`", "&lt;b&gt;escaped&lt;/b&gt; <code>&lt;i&gt;</code>"},
	} {
		got := strings.TrimSpace(string(apiref.Markdown(c.in)))
		got = strings.TrimSuffix(strings.TrimPrefix(got, "<p>"), "</p>")
		if got != c.want {
			t.Errorf("%q:\n got %s\nwant %s", c.in, got, c.want)
		}
	}
}

// A long description shows its first sentence and keeps the rest behind
// "More"; a short one, and a full stop inside code or "e.g.", is not cut.
func TestBrief(t *testing.T) {
	long := "Makes the write safe to retry, e.g. after a timeout; see `a. b`. " + strings.Repeat("More words here. ", 30)
	head, rest := apiref.Brief(long)
	if string(head) != "<p>Makes the write safe to retry, e.g. after a timeout; see <code>a. b</code>.</p>" {
		t.Errorf("head %s", head)
	}
	if !strings.HasPrefix(string(rest), "<p>More words here.") {
		t.Errorf("rest %.60s", rest)
	}
	if head, rest := apiref.Brief("Short. Two sentences."); string(head) != "<p>Short. Two sentences.</p>" || rest != "" {
		t.Errorf("short: %s / %s", head, rest)
	}
}
