package httpapi

import (
	"strings"
	"unicode/utf8"
)

// MaskPhone keeps the first 3 and last 4 characters, as the spec shows phones.
func MaskPhone(p string) string {
	if len(p) < 8 {
		return strings.Repeat("*", len(p))
	}
	return p[:3] + strings.Repeat("*", len(p)-7) + p[len(p)-4:]
}

// MaskCard keeps the first 4 and last 4 characters of a card number.
func MaskCard(n string) string {
	if len(n) <= 8 {
		return strings.Repeat("*", len(n))
	}
	return n[:4] + strings.Repeat("*", len(n)-8) + n[len(n)-4:]
}

// MaskName keeps a name's first character.
func MaskName(n string) string {
	c := utf8.RuneCountInString(n)
	if c <= 1 {
		return "*"
	}
	r, _ := utf8.DecodeRuneInString(n)
	return string(r) + strings.Repeat("*", c-1)
}
