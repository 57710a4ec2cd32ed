package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/julienschmidt/httprouter"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
)

// Route is one endpoint for the node's router.
type Route struct {
	Method, Path string
	Handle       httprouter.Handle
}

// PathID parses a positive integer path parameter, answering VALIDATION_ERROR otherwise.
func PathID(ps httprouter.Params, name string, allowZero bool) (int64, error) {
	n, err := strconv.ParseInt(ps.ByName(name), 10, 64)
	if err != nil || n < 0 || (n == 0 && !allowZero) || n >= 1<<53 {
		v := &domain.ValidationError{}
		v.Add(name, "must be a positive integer")
		return 0, v
	}
	return n, nil
}

// ParseTime accepts ISO 8601 with offset, or without one in the platform's zone.
func ParseTime(s string, loc *time.Location) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04:05.999999999", time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// IntParam reads a non-negative integer query parameter, at most max when max > 0.
func IntParam(r *http.Request, name string, def, max int64) (int64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || (max > 0 && n > max) {
		msg := "must be a non-negative integer"
		if max > 0 {
			msg += " up to " + strconv.FormatInt(max, 10)
		}
		v := &domain.ValidationError{}
		v.Add(name, msg)
		return 0, v
	}
	return n, nil
}

// FormatCursor renders a log position as the opaque cursor partners page with.
func FormatCursor(p events.Position) string { return fmt.Sprintf("%d-%d", p.Commit, p.Prepare) }

// ParseCursor reads a cursor; the empty cursor is the start of the log.
func ParseCursor(s string) (events.Position, bool) {
	if s == "" {
		return events.Position{}, true
	}
	c, p, ok := strings.Cut(s, "-")
	if !ok {
		return events.Position{}, false
	}
	commit, err1 := strconv.ParseUint(c, 10, 64)
	prepare, err2 := strconv.ParseUint(p, 10, 64)
	return events.Position{Commit: commit, Prepare: prepare}, err1 == nil && err2 == nil
}

// DeliveryFilter reads the delivery-log query parameters shared by operators and partners.
func DeliveryFilter(r *http.Request, loc *time.Location) (domain.DeliveryFilter, error) {
	q := r.URL.Query()
	v := &domain.ValidationError{}
	f := domain.DeliveryFilter{Status: q.Get("status"), EventType: q.Get("event")}
	switch f.Status {
	case "", domain.DeliveryPending, domain.DeliveryRetrying, domain.DeliveryDelivered,
		domain.DeliveryAbandoned, domain.DeliveryDeadLetter, domain.DeliverySkipped:
	default:
		v.Add("status", "must be one of pending, retrying, delivered, abandoned, dead_letter, skipped")
	}
	for _, b := range []struct {
		name string
		dst  *time.Time
	}{{"from", &f.From}, {"to", &f.To}} {
		if s := q.Get(b.name); s != "" {
			t, ok := ParseTime(s, loc)
			if !ok {
				v.Add(b.name, "must be an ISO 8601 date-time")
			}
			*b.dst = t
		}
	}
	after, ok := ParseCursor(q.Get("after"))
	if !ok {
		v.Add("after", "must be a cursor returned by this API")
	}
	f.After = after
	limit, err := Limit(r, 100, 1000)
	if err != nil {
		return f, err
	}
	f.Limit = int(limit)
	if s := q.Get("app_id"); s != "" {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id <= 0 {
			v.Add("app_id", "must be a positive integer")
		}
		f.AppID = id
	}
	if s := q.Get("endpoint_id"); s != "" {
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id < 0 || id >= 1<<53 {
			v.Add("endpoint_id", "must be an endpoint id (0: the default endpoint)")
		}
		f.EndpointID = &id
	}
	return f, v.Err()
}

// Limit reads the "limit" query parameter: 1 to max, def when absent.
func Limit(r *http.Request, def, max int64) (int64, error) {
	n, err := IntParam(r, "limit", def, max)
	if err == nil && n == 0 {
		v := &domain.ValidationError{}
		v.Add("limit", "must be between 1 and "+strconv.FormatInt(max, 10))
		return 0, v
	}
	return n, err
}

// CheckParams refuses path and query parameters that are not valid UTF-8 or
// hold U+0000, as a body's strings are refused: 422 VALIDATION_ERROR on the
// parameter. No partner sends such text, and the Postgres read models cannot
// even compare it (they answered 500 where the memory ones said not found).
//
// A request whose parameters are clean allocates nothing here (every
// partner request passes through it): the error is made only when one is
// not, and a request without a query string has none to parse.
func CheckParams(r *http.Request, ps httprouter.Params) error {
	var v *domain.ValidationError
	refuse := func(field string) {
		if v == nil {
			v = &domain.ValidationError{}
		}
		v.Add(field, textRule)
	}
	for _, p := range ps {
		if !cleanText(p.Value) {
			refuse(p.Key)
		}
	}
	if r.URL.RawQuery != "" {
		for name, values := range r.URL.Query() {
			for _, s := range values {
				if !cleanText(name) || !cleanText(s) {
					refuse(strings.ToValidUTF8(name, "\uFFFD"))
					break
				}
			}
		}
	}
	if v == nil {
		return nil
	}
	return v
}

const textRule = "must be valid UTF-8 without U+0000"

func cleanText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }
