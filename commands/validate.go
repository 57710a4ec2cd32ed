package commands

import (
	"net/mail"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/healthtech/partner-open-platform/domain"
)

var (
	mobilePattern = regexp.MustCompile(`^1[3-9][0-9]{9}$`)
	genders       = set("male", "female", "unknown")
	bloodTypes    = set("A", "B", "AB", "O", "unknown")
	relationships = set("SELF", "SPOUSE", "FATHER", "MOTHER", "SON", "DAUGHTER", "GRANDFATHER", "GRANDMOTHER", "BROTHER", "SISTER", "OTHER")
)

func set(vs ...string) map[string]bool {
	m := make(map[string]bool, len(vs))
	for _, v := range vs {
		m[v] = true
	}
	return m
}

// rules checks field values against the spec, collecting every problem.
type rules struct {
	v     *domain.ValidationError
	today string // Y-m-d in the platform's time zone
}

func newRules(now time.Time, loc *time.Location) rules {
	return rules{v: &domain.ValidationError{}, today: now.In(loc).Format(time.DateOnly)}
}

func (r rules) required(field, s string) bool {
	if strings.TrimSpace(s) == "" {
		r.v.Add(field, "is required")
		return false
	}
	return true
}

func (r rules) maxLen(field, s string, n int) {
	if utf8.RuneCountInString(s) > n {
		r.v.Add(field, "must be at most "+itoa(n)+" characters")
	}
}

func (r rules) oneOf(field, s string, allowed map[string]bool, list string) {
	if !allowed[s] {
		r.v.Add(field, "must be one of "+list)
	}
}

func (r rules) mobile(field, s string) {
	if !mobilePattern.MatchString(s) {
		r.v.Add(field, "must be a mainland 11-digit mobile number")
	}
}

// date checks Y-m-d; strictlyPast requires a date before today, else not after today.
func (r rules) date(field, s string, strictlyPast bool) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil || t.Format(time.DateOnly) != s {
		r.v.Add(field, "must be a date in the form Y-m-d")
		return
	}
	if strictlyPast && s >= r.today {
		r.v.Add(field, "must be earlier than today")
	} else if !strictlyPast && s > r.today {
		r.v.Add(field, "must not be in the future")
	}
}

func (r rules) email(field, s string) {
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || len(s) > 254 {
		r.v.Add(field, "must be an e-mail address")
	}
}

func (r rules) url(field, s string, max int) {
	if len(s) > max {
		r.v.Add(field, "must be at most "+itoa(max)+" characters")
		return
	}
	// A URI (the document's format: uri) is ASCII without spaces or
	// controls: other characters must be percent-encoded, so a client that
	// checks the format accepts every URL the platform stores.
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			r.v.Add(field, "must be an http or https URL of ASCII characters (percent-encode others)")
			return
		}
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		r.v.Add(field, "must be an http or https URL")
	}
}

func (r rules) between(field string, n, lo, hi int64) {
	if n < lo || n > hi {
		r.v.Add(field, "must be between "+itoa(int(lo))+" and "+itoa(int(hi)))
	}
}

func (r rules) notNull(field string, null bool) bool {
	if null {
		r.v.Add(field, "must not be null")
		return false
	}
	return true
}

func itoa(n int) string { return strconv.Itoa(n) }
