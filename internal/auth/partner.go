package auth

import (
	"errors"
	"net/http"
	"strings"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// Partner authenticates the partner routes the spec signs with scheme M
// (channel users, orders, verify-use, benefit cards, service providers,
// the webhook partner routes): by scheme M as the spec says, or by scheme
// H, an addition the spec does not forbid. Scheme H signs the method, the
// path with its query and a nonce, so it needs neither scheme M's route
// binding nor its one-signature-per-second constraint.
//
// A request is scheme H when it carries a non-blank X-App-Key; X-App-Id and
// the other scheme M headers are then ignored. X-App-Key decides because
// scheme M has no such header: a spec-faithful scheme M client never sends
// it, so its presence is an unambiguous choice of scheme H, and a request
// carrying both is judged by the stronger scheme only (it can never pass
// on a scheme M signature when its scheme H signature fails).
//
// A scheme H failure on these routes answers the route's documented 401
// HTTP_401 (with scheme H's message), not the report pull's
// MISSING_APP_KEY/INVALID_SIGNATURE codes, so a partner's per-route error
// handling holds whichever scheme it signs with; a source out of failure
// budget gets HTTP_429 as under scheme M. Scheme H requests count against
// the same per-app rate limit as scheme M ones.
type Partner struct {
	M SchemeM
	H SchemeH
}

// IsSchemeH reports whether a request on a partner route is signed with
// scheme H (it carries X-App-Key); see Partner.
func IsSchemeH(r *http.Request) bool {
	return strings.TrimSpace(r.Header.Get("X-App-Key")) != ""
}

// SignatureM is a scheme M request's signature as lower-case hex (the
// scheme accepts either case, so the case must not name another request).
func SignatureM(r *http.Request) string {
	return strings.ToLower(strings.TrimSpace(r.Header.Get("X-Signature")))
}

// Verify returns the calling app, or the route's refusal.
func (p Partner) Verify(r *http.Request, body []byte) (domain.App, error) {
	if IsSchemeH(r) {
		return p.verifyH(r, body)
	}
	return p.M.Verify(r, body)
}

// VerifyLater is Verify leaving a scheme M signature's binding to the
// caller (see SchemeM.VerifyLater); a scheme H request has none.
func (p Partner) VerifyLater(r *http.Request, body []byte) (domain.App, *PendingBinding, error) {
	if IsSchemeH(r) {
		app, err := p.verifyH(r, body)
		return app, nil, err
	}
	return p.M.VerifyLater(r, body)
}

// VerifyLaterTake is VerifyLater leaving also a scheme M request's
// rate-limit renewal to the caller (see SchemeM.VerifyLaterTake); a scheme
// H request has neither.
func (p Partner) VerifyLaterTake(r *http.Request, body []byte) (domain.App, *PendingBinding, *PendingTake, error) {
	if IsSchemeH(r) {
		app, err := p.verifyH(r, body)
		return app, nil, nil, err
	}
	return p.M.VerifyLaterTake(r, body)
}

func (p Partner) verifyH(r *http.Request, body []byte) (domain.App, error) {
	if p.H.Apps == nil || p.H.Nonces == nil {
		// A node without scheme H wiring refuses rather than guessing.
		return domain.App{}, httpapi.ErrUnauthorized
	}
	app, err := p.H.Verify(r, body)
	if err != nil {
		return domain.App{}, asSchemeMRoute(err)
	}
	if err := p.M.limit(r, app); err != nil {
		return domain.App{}, err
	}
	return app, nil
}

// asSchemeMRoute maps a scheme H refusal to the codes of a scheme M route:
// 401 becomes HTTP_401 and a codeless 429 HTTP_429; the message and
// headers stay. Authorisation refusals (403) are the same on every route.
func asSchemeMRoute(err error) error {
	var p *httpapi.Problem
	if !errors.As(err, &p) {
		return err
	}
	switch {
	case p.Status == http.StatusUnauthorized:
		c := *p
		c.Code = httpapi.ErrUnauthorized.Code
		return &c
	case p.Status == http.StatusTooManyRequests && p.Code == "":
		c := *p
		c.Code = "HTTP_429"
		return &c
	}
	return err
}

// VerifyLaterAtHead is VerifyLater confirming a scheme M request's app at
// the head its binding's statement reads (see SchemeM.VerifyLaterAtHead);
// a scheme H request has no binding and is decided at once.
func (p Partner) VerifyLaterAtHead(r *http.Request, body []byte) (domain.App, *PendingBinding, error) {
	if IsSchemeH(r) {
		app, err := p.verifyH(r, body)
		return app, nil, err
	}
	return p.M.VerifyLaterAtHead(r, body)
}

// VerifyLaterTakeAtHead is VerifyLaterTake confirming a scheme M
// request's app at the head its statement reads (see
// SchemeM.VerifyLaterTakeAtHead); a scheme H request is decided at once.
func (p Partner) VerifyLaterTakeAtHead(r *http.Request, body []byte) (domain.App, *PendingBinding, *PendingTake, error) {
	if IsSchemeH(r) {
		app, err := p.verifyH(r, body)
		return app, nil, nil, err
	}
	return p.M.VerifyLaterTakeAtHead(r, body)
}
