package webhooks

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/webhooks/targets"
)

// A POST of the delivery client (targets.Guard.Client: no redirect
// followed, no cookie jar) is sent through its Transport alone, with what
// http.Client.Do adds for such a client done here: its timeout as the
// request's deadline (unless the context ends first), the error wrapped
// as Do wraps it, and a redirect's Location checked as Do checks it
// before asking the policy. Do's other work for every request (a copy of
// the headers and of the request kept for redirects, a closure and a
// timer wrapper per request) served only redirects and cookies, which
// this client never has; it was a tenth of a bare POST's CPU
// (BenchmarkPostFloor). Any other client (tests' httptest clients,
// which follow redirects) goes through Do.

// direct says whether a POST to target may skip http.Client.Do: the
// client's policies are the delivery client's and the URL carries no
// user info (Do would add a basic Authorization header from it).
func (d *Dispatcher) direct(target string) bool {
	return d.Client.Transport != nil && targets.FollowsNoRedirects(d.Client) && !strings.Contains(target, "@")
}

// clientTimeout ends the running phase of c (a POST's, which ends at the
// attempt's budget) at the client's timeout counted from now, as Do
// applies it, when that comes first; deadline is then the client's (zero
// otherwise), for roundTrip to tell Do's timeout from the budget's.
func (c *attemptContext) clientTimeout(timeout time.Duration) (deadline time.Time) {
	if timeout <= 0 {
		return time.Time{}
	}
	t := time.Now().Add(timeout)
	if budget, ok := c.Deadline(); ok && !t.Before(budget) {
		return time.Time{}
	}
	c.narrow(t)
	return t
}

// roundTrip sends req (a POST whose context carries clientTimeout's
// deadline) through rt and answers what http.Client.Do of a client that
// follows no redirect would: the same response, or an error of the same
// text and kinds.
func roundTrip(rt http.RoundTripper, req *http.Request, deadline time.Time) (*http.Response, error) {
	res, err := rt.RoundTrip(req)
	if err != nil {
		if tlsErr, ok := err.(tls.RecordHeaderError); ok && string(tlsErr.RecordHeader[:]) == "HTTP/" {
			err = http.ErrSchemeMismatch
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			err = &clientTimeoutError{err.Error() + " (Client.Timeout exceeded while awaiting headers)"}
		}
		return nil, postError(req.URL, err)
	}
	if isRedirect(res.StatusCode) {
		// Do resolves the Location before its policy refuses to follow
		// it, and fails the request when it cannot.
		if loc := res.Header.Get("Location"); loc != "" {
			if _, perr := req.URL.Parse(loc); perr != nil {
				res.Body.Close()
				return nil, postError(req.URL, fmt.Errorf("failed to parse Location header %q: %v", loc, perr))
			}
		}
	}
	return res, nil
}

// isRedirect is the statuses Do treats as redirects for a POST whose body
// it can send again.
func isRedirect(status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// postError wraps err as Do does for a POST to u.
func postError(u *url.URL, err error) error {
	s := u.String()
	if _, ok := u.User.Password(); ok {
		s = strings.Replace(s, u.User.String()+"@", u.User.Username()+":***@", 1)
	}
	return &url.Error{Op: "Post", URL: s, Err: err}
}

// clientTimeoutError is Do's error when its timeout ended the request: a
// net.Error that timed out and is context.DeadlineExceeded.
type clientTimeoutError struct{ err string }

func (e *clientTimeoutError) Error() string   { return e.err }
func (e *clientTimeoutError) Timeout() bool   { return true }
func (e *clientTimeoutError) Temporary() bool { return true }
func (e *clientTimeoutError) Is(err error) bool {
	return err == context.DeadlineExceeded
}
