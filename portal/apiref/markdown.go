package apiref

import (
	"html"
	"html/template"
	"regexp"
	"strconv"
	"strings"
)

// Markdown renders the small subset of Markdown the OpenAPI descriptions
// use (paragraphs, `code`, **bold**, *emphasis*, [links](#x), bullet lists
// and pipe tables) as HTML.
// Every piece of source text is escaped before any tag is added, so a
// description can never inject markup into the portal.
func Markdown(src string) template.HTML {
	src = strings.TrimSpace(strings.ReplaceAll(src, "\r\n", "\n"))
	if src == "" {
		return ""
	}
	var b strings.Builder
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); {
		line := strings.TrimSpace(lines[i])
		switch {
		case line == "":
			i++
		case strings.HasPrefix(line, "|"):
			var rows [][]string
			for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
				cells := strings.Split(strings.Trim(strings.TrimSpace(lines[i]), "|"), "|")
				if isRule(cells) {
					continue
				}
				rows = append(rows, cells)
			}
			b.WriteString("<table class=\"md\">")
			for r, cells := range rows {
				tag := "td"
				if r == 0 {
					tag = "th"
				}
				b.WriteString("<tr>")
				for _, c := range cells {
					b.WriteString("<" + tag + ">" + inline(strings.TrimSpace(c)) + "</" + tag + ">")
				}
				b.WriteString("</tr>")
			}
			b.WriteString("</table>")
		case isItem(line) || ordinal(line) > 0:
			list := "ul"
			if ordinal(line) > 0 {
				list = "ol"
			}
			b.WriteString("<" + list + ">")
			for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
				l := strings.TrimSpace(lines[i])
				if n := ordinal(l); isItem(l) || n > 0 {
					if !strings.HasSuffix(b.String(), "<"+list+">") {
						b.WriteString("</li>")
					}
					if n == 0 {
						n = 2
					}
					b.WriteString("<li>" + inline(strings.TrimSpace(l[n:])))
				} else {
					b.WriteString(" " + inline(l))
				}
				i++
			}
			b.WriteString("</li></" + list + ">")
		default:
			var para []string
			for ; i < len(lines); i++ {
				l := strings.TrimSpace(lines[i])
				if l == "" || strings.HasPrefix(l, "|") || isItem(l) || ordinal(l) > 0 {
					break
				}
				para = append(para, l)
			}
			b.WriteString("<p>" + inline(strings.Join(para, " ")) + "</p>")
		}
	}
	return template.HTML(b.String()) //nolint:gosec // every text piece went through html.EscapeString in inline
}

func isItem(l string) bool { return strings.HasPrefix(l, "- ") || strings.HasPrefix(l, "* ") }

// ordinal is the length of a "12. " prefix of an ordered-list item, or 0.
func ordinal(l string) int {
	i := 0
	for i < len(l) && l[i] >= '0' && l[i] <= '9' {
		i++
	}
	if i == 0 || i > 3 || !strings.HasPrefix(l[i:], ". ") {
		return 0
	}
	return i + 2
}

func isRule(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(strings.TrimSpace(c), "-:") != "" {
			return false
		}
	}
	return true
}

// inline escapes text and marks up `code` spans, then **bold**, *emphasis*
// and [text](url) links outside them; bold and links may enclose code
// spans ("**without a `code`**"). Unmatched markers stay as text.
func inline(s string) string {
	var codes []string
	var b strings.Builder
	parts := strings.Split(s, "`")
	for i, p := range parts {
		if i%2 == 1 && i < len(parts)-1 {
			b.WriteString("\x00" + strconv.Itoa(len(codes)) + "\x00")
			codes = append(codes, "<code>"+html.EscapeString(p)+"</code>")
			continue
		}
		if i%2 == 1 { // an unmatched backtick stays as text
			p = "`" + p
		}
		b.WriteString(html.EscapeString(strings.ReplaceAll(p, "\x00", "")))
	}
	out := boldRE.ReplaceAllString(b.String(), "<strong>$1</strong>")
	out = emRE.ReplaceAllString(out, "$1<em>$2</em>")
	out = linkRE.ReplaceAllStringFunc(out, func(m string) string {
		sub := linkRE.FindStringSubmatch(m)
		text, href := sub[1], sub[2]
		if strings.TrimSpace(text) == "" || !(strings.HasPrefix(href, "https://") || strings.HasPrefix(href, "http://") ||
			strings.HasPrefix(href, "#") || strings.HasPrefix(href, "/")) {
			return m
		}
		return `<a href="` + href + `">` + text + `</a>`
	})
	return codeRE.ReplaceAllStringFunc(out, func(m string) string {
		n, _ := strconv.Atoi(strings.Trim(m, "\x00"))
		return codes[n]
	})
}

var (
	boldRE = regexp.MustCompile(`\*\*([^*\s](?:[^*]*[^*\s])?)\*\*`)
	// A single star opens emphasis only after a space or start and before
	// a word, so wildcards such as health.report.* stay as they are.
	emRE   = regexp.MustCompile(`(^|[\s(])\*([A-Za-z0-9][^*]*?[A-Za-z0-9.)]|[A-Za-z0-9])\*`)
	linkRE = regexp.MustCompile(`\[([^\]\x00]+)\]\(([^)\s"<>]+)\)`)
	codeRE = regexp.MustCompile("\x00[0-9]+\x00")
)

// briefLimit is the length above which a parameter's or field's
// description shows its first sentence and keeps the rest behind "More":
// a shared parameter such as Idempotency-Key has a page-long description
// that would otherwise repeat under every write.
const briefLimit = 400

// Brief renders a description whole when it is short, else as its first
// sentence (head) and the remainder (rest), both Markdown.
func Brief(src string) (head, rest template.HTML) {
	src = strings.TrimSpace(strings.ReplaceAll(src, "\r\n", "\n"))
	if len(src) <= briefLimit {
		return Markdown(src), ""
	}
	cut := sentenceEnd(src)
	if cut <= 0 || cut >= len(src)-1 {
		return Markdown(src), ""
	}
	return Markdown(src[:cut]), Markdown(src[cut:])
}

// sentenceEnd is the index just after the first sentence of the first
// paragraph (a full stop followed by a space or line end, outside a code
// span and not in "e.g."/"i.e."), or 0.
func sentenceEnd(s string) int {
	inCode := false
	for i := 0; i < len(s)-1; i++ {
		switch s[i] {
		case '`':
			inCode = !inCode
		case '\n':
			if !inCode && i+1 < len(s) && s[i+1] == '\n' {
				return i
			}
		case '.':
			if inCode || (s[i+1] != ' ' && s[i+1] != '\n') {
				continue
			}
			if i >= 3 && (s[i-3:i] == "e.g" || s[i-3:i] == "i.e") {
				continue
			}
			return i + 1
		}
	}
	return 0
}
