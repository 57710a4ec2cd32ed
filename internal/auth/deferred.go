package auth

import (
	"crypto/md5"
	"crypto/subtle"
	"net/http"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// DeferredDirectory is a CheckedDirectory whose hits can be confirmed
// current after the caller acted on them, at a head the caller read in a
// round trip it makes anyway (VerifyLaterAtHead): a signed write's claim
// on Postgres reads the log's head in its own statement, so the write needs
// no head read of its own to be decided on a directory at least as new as
// its arrival.
type DeferredDirectory interface {
	CheckedDirectory
	// ByIDDeferred is ByIDChecked except that a hit comes back at once;
	// current says whether it is already known current (no confirmation
	// needed). A miss is confirmed as ByIDChecked confirms it (current).
	ByIDDeferred(id int64) (app domain.App, ok, current bool, err error)
	// ByIDHeld is the entry as the directory holds it now, without waiting.
	ByIDHeld(id int64) (domain.App, bool)
	// ConfirmAt returns once the directory has applied the log up to head,
	// which a statement sent at sent read; an error says it could not
	// (the entry is then decided on as held, as a hit that could not be
	// confirmed is).
	ConfirmAt(head events.Position, sent time.Time) error
	// Confirm is ConfirmAt with a head read of its own, for a hit looked
	// up at since.
	Confirm(since time.Time) error
}

// deferredApp is a scheme M request that passed on an app entry not yet
// known current: what is needed to judge it again once it is.
type deferredApp struct {
	dir   DeferredDirectory
	id    int64
	since time.Time // when the entry was looked up
	got   [md5.Size]byte
	ts    string
	body  []byte
	r     *http.Request
}

// verdictM is what an app's entry says of a scheme M request whose
// headers and signature parsed.
type verdictM struct {
	err     error
	reason  string // the access log's reason, "" for none
	counted bool   // a failed attempt (spends failure budget)
	// afterBinding: refused once the signature is bound (the app was
	// suspended or lacks the route's scope: the caller proved it holds
	// the secret, so a replay elsewhere is still judged by the binding).
	afterBinding bool
}

// judgeM judges a scheme M request on the app's entry: known, its
// signature, its scheme, and whether the app may call the route.
func judgeM(r *http.Request, app domain.App, known bool, unconfirmed error, got *[md5.Size]byte, ts string, body []byte) verdictM {
	if unconfirmed != nil {
		// Not the partner's failure: its app may exist, this node lags.
		return verdictM{err: unconfirmed, reason: "directory_unconfirmed"}
	}
	if !known {
		return verdictM{err: httpapi.ErrUnauthorized, reason: "unknown_app", counted: true}
	}
	want := signMSum(app.AppKey, ts, app.AppSecret, body)
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return verdictM{err: httpapi.ErrUnauthorized, reason: "bad_signature", counted: true}
	}
	if app.RequireSchemeH {
		// Said only to a caller that proved it holds the secret; not a
		// failed attempt, so it spends no failure budget.
		return verdictM{err: ErrSchemeHRequired, reason: "scheme_h_required"}
	}
	if err := Allowed(app, ScopeOf(r.URL.Path)); err != nil {
		return verdictM{err: err, afterBinding: true}
	}
	return verdictM{}
}

// CheckAt is Check for a binding recorded by a statement, sent at sent,
// that also read the log's head: a request VerifyLaterAtHead passed on an
// app entry not known current is first judged again on the entry as of
// that head (the refusal it then gets, if any, is the answer).
func (p *PendingBinding) CheckAt(bound string, head events.Position, sent time.Time) error {
	if err := p.confirm(head, sent, true); err != nil {
		return err
	}
	return p.Check(bound)
}

// confirm judges the request again, once, on its app's entry confirmed
// current: at head (atHead, read by a statement sent at sent) or after a
// head read of the directory's own. A confirmation that fails decides on
// the entry as held, as a hit that could not be confirmed does.
func (p *PendingBinding) confirm(head events.Position, sent time.Time, atHead bool) error {
	d := p.deferred
	if d == nil {
		return nil
	}
	p.deferred = nil
	if atHead {
		_ = d.dir.ConfirmAt(head, sent)
	} else {
		_ = d.dir.Confirm(d.since)
	}
	app, known := d.dir.ByIDHeld(d.id)
	v := judgeM(d.r, app, known, nil, &d.got, d.ts, d.body)
	if v.err != nil && v.reason != "" {
		p.g.fail(v.reason, v.counted)
	}
	return v.err
}
