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

// postContext is the context of one POST: ctx (which ends at no time of
// its own) ending at budget (zero: none) or, when it ends first, at the
// client's timeout counted from now, as Do applies it; deadline is then
// the client's (zero otherwise). One context with the earlier of the two
// deadlines ends the POST when a child of a budget's context would, and
// spares it the child's registration with its parent (a map and the
// parent's done channel, made for every POST).
func postContext(ctx context.Context, budget time.Time, timeout time.Duration) (_ context.Context, deadline time.Time, cancel context.CancelFunc) {
	end := budget
	if timeout > 0 {
		if t := time.Now().Add(timeout); end.IsZero() || t.Before(end) {
			end, deadline = t, t
		}
	}
	if end.IsZero() {
		return ctx, time.Time{}, func() {}
	}
	ctx, cancel = context.WithDeadline(ctx, end)
	return ctx, deadline, cancel
}

// roundTrip sends req (a POST whose context carries postContext's
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
