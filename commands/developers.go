package commands

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"net/mail"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// KindDeveloper is the id sequence of developer accounts; KindMail of outgoing mails.
const (
	KindDeveloper = "developer"
	KindMail      = "mail"
)

// Password rules: long enough to resist guessing, short enough that a hash
// request cannot be made expensive by a huge body.
const (
	MinPasswordLength = 10
	MaxPasswordLength = 256
)

// ResetTokenTTL is how long a password-reset link stays valid.
const ResetTokenTTL = time.Hour

// abandonedClaim is how old an email claim whose account was never written
// (a crash between the two appends) must be before a new sign-up may take
// the address over.
const abandonedClaim = time.Minute

// DeveloperActor is the actor of a developer's own actions in event
// metadata and the audit trail.
func DeveloperActor(id int64) string { return "developer:" + strconv.FormatInt(id, 10) }

// Developers is the developer-account aggregate of the developer portal: sign-up with a
// unique email (an email-keyed claim stream decides uniqueness on the write
// side), password verification, portal sessions, password reset and the
// qualification review.
type Developers struct {
	streams
	ids      *Allocator
	sealer   *secrets.Sealer
	emailKey []byte
	hash     *hasher
	now      func() time.Time
	// cache keeps loaded accounts, so the session check on every portal
	// request reads only the events appended since (a developer's stream
	// grows by one event per sign-in).
	cache *aggregateCache[*Developer]
	// dummy is a hash verified for unknown addresses, so a sign-in takes as
	// long whether or not the account exists; made at its first use, so
	// start-up does not pay for it.
	dummyOnce sync.Once
	dummy     string
}

// NewDevelopers builds the developer commands; emailKey keys the hash that
// names email claim streams (derive it from the master key, so every node
// names them alike).
func NewDevelopers(store events.Store, reg *events.Registry, ids *Allocator, sealer *secrets.Sealer, emailKey []byte, params PasswordParams, now func() time.Time) *Developers {
	return &Developers{streams: streams{store, reg}, ids: ids, sealer: sealer, emailKey: emailKey, hash: newHasher(params), now: now,
		cache: newAggregateCache(func() *Developer { return &Developer{} }, DefaultAggregateCache)}
}

// dummyHash is a hash of a random password with the current costs.
func (d *Developers) dummyHash(ctx context.Context) string {
	d.dummyOnce.Do(func() {
		h, err := d.hash.hash(context.WithoutCancel(ctx), secrets.Random("", 16))
		if err != nil { // never: the context cannot be cancelled here
			h = "$argon2id$"
		}
		d.dummy = h
	})
	return d.dummy
}

// Developer is a developer account as its stream decides it.
type Developer struct {
	ID        int64
	Email     string
	Status    string // catalog.DeveloperPending, DeveloperApproved or DeveloperRejected
	Reason    string // the latest review's reason
	CreatedAt time.Time
	// sealedHash is the sealed password hash.
	sealedHash string
	// sessions are the open sessions by the SHA-256 of their id, with their start.
	sessions sessionSet
	// resets are the reset requests since the last password change, by token hash.
	resets map[string]resetRequest
}

type resetRequest struct {
	expires time.Time
}

// Approved says the developer passed qualification review (and may create apps).
func (d Developer) Approved() bool { return d.Status == catalog.DeveloperApproved }

// SessionOpen says the session whose id hashes to hash was started and not ended.
func (d Developer) SessionOpen(hash string) bool { return d.sessions.open(hash) }

// clone copies an account so a decision never touches the cached one.
func (d *Developer) clone() *Developer {
	c := *d
	c.sessions = maps.Clone(d.sessions)
	c.resets = make(map[string]resetRequest, len(d.resets))
	for k, v := range d.resets {
		c.resets[k] = v
	}
	return &c
}

func (d *Developer) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.DeveloperSignedUp:
		d.ID, d.Email, d.Status, d.sealedHash = p.DeveloperID, p.Email, catalog.DeveloperPending, p.SealedPasswordHash
		d.CreatedAt = env.Metadata.OccurredAt
		d.sessions, d.resets = sessionSet{}, map[string]resetRequest{}
	case *catalog.DeveloperSignedIn:
		d.sessions.start(p.SessionHash, env.Metadata.OccurredAt)
	case *catalog.DeveloperSignedOut:
		d.sessions.end(p.SessionHash, p.All)
	case *catalog.DeveloperPasswordResetRequested:
		d.resets[p.TokenHash] = resetRequest{expires: p.ExpiresAt}
	case *catalog.DeveloperPasswordChanged:
		// A new password ends every session and every reset link asked
		// for before it, not only the one it used: an older link sitting
		// in a mailbox must not undo the change.
		d.sealedHash = p.SealedPasswordHash
		d.sessions = sessionSet{}
		d.resets = map[string]resetRequest{}
	case *catalog.DeveloperReviewed:
		d.Status, d.Reason = p.Status, p.Reason
	}
}

// NormaliseEmail trims and lower-cases an address (the portal treats
// addresses case-insensitively, local part included, so "A@x.org" and
// "a@x.org" are one account) and checks it is one plain address.
func NormaliseEmail(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	v := &domain.ValidationError{}
	if s == "" {
		v.Add("email", "is required")
		return "", v.Err()
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" || len(s) > 254 || !strings.Contains(s[strings.LastIndexByte(s, '@')+1:], ".") {
		v.Add("email", "must be an email address like name@example.com")
		return "", v.Err()
	}
	return s, nil
}

func checkPassword(password string) error {
	v := &domain.ValidationError{}
	switch n := utf8.RuneCountInString(password); {
	case n < MinPasswordLength:
		v.Add("password", fmt.Sprintf("must be at least %d characters", MinPasswordLength))
	case len(password) > MaxPasswordLength:
		v.Add("password", fmt.Sprintf("must be at most %d bytes", MaxPasswordLength))
	case !utf8.ValidString(password) || strings.IndexFunc(password, unicode.IsControl) >= 0:
		v.Add("password", "must not contain control characters")
	}
	return v.Err()
}

// emailStream names the claim stream of a normalised address.
func (d *Developers) emailStream(email string) string {
	m := hmac.New(sha256.New, d.emailKey)
	m.Write([]byte(email))
	return domain.DeveloperEmailStream(hex.EncodeToString(m.Sum(nil)[:20]))
}

// claim is an email stream's current owner.
type claim struct {
	developerID int64
	at          time.Time
}

func (d *Developers) loadClaim(ctx context.Context, email string) (claim, uint64, error) {
	var c claim
	v, _, err := d.load(ctx, d.emailStream(email), func(env events.Envelope) {
		if p, ok := env.Payload.(*catalog.DeveloperEmailClaimed); ok {
			c = claim{p.DeveloperID, env.Metadata.OccurredAt}
		}
	})
	return c, v, err
}

// CheckSignUp validates a sign-up's email and password as SignUp does,
// without looking anything up, and returns the normalised address.
func CheckSignUp(email, password string) (string, error) {
	email, err := NormaliseEmail(email)
	v := &domain.ValidationError{}
	if ve, ok := err.(*domain.ValidationError); ok {
		v = ve
	} else if err != nil {
		return "", err
	}
	if err := checkPassword(password); err != nil {
		for f, msgs := range err.(*domain.ValidationError).Fields {
			for _, m := range msgs {
				v.Add(f, m)
			}
		}
	}
	return email, v.Err()
}

// SignUp opens a pending account for email with password and returns its
// id. The address is claimed first (no-stream on its claim stream), so two
// concurrent sign-ups of one address on any nodes yield one account and
// domain.ErrEmailTaken. Bad input appends nothing.
func (d *Developers) SignUp(ctx context.Context, email, password, requestID string) (int64, events.Position, error) {
	email, err := CheckSignUp(email, password)
	if err != nil {
		return 0, events.Position{}, err
	}
	c, version, err := d.loadClaim(ctx, email)
	if err != nil {
		return 0, events.Position{}, err
	}
	if version > 0 {
		// The address is taken unless its account was never written (a
		// crash between the claim and the account) and the claim is old.
		if taken, err := d.claimLive(ctx, c); err != nil || taken {
			if err == nil {
				// The same hashing work as a new account's, so how long a
				// sign-up takes does not tell whether the address has one.
				if _, err := d.hash.hash(ctx, password); err != nil {
					return 0, events.Position{}, err
				}
			}
			return 0, events.Position{}, cmpErr(err, domain.ErrEmailTaken)
		}
	}
	phc, err := d.hash.hash(ctx, password)
	if err != nil {
		return 0, events.Position{}, err
	}
	sealed, err := d.sealer.Seal(phc)
	if err != nil {
		return 0, events.Position{}, err
	}
	id, err := d.ids.Next(ctx, KindDeveloper)
	if err != nil {
		return 0, events.Position{}, err
	}
	meta := Meta{Actor: DeveloperActor(id), RequestID: requestID}
	if _, err := d.append(ctx, d.emailStream(email), version, meta, catalog.DeveloperEmailClaimed{DeveloperID: id}); err != nil {
		if events.IsConflict(err) {
			return 0, events.Position{}, domain.ErrEmailTaken
		}
		return 0, events.Position{}, fmt.Errorf("claim email: %w", err)
	}
	res, err := d.append(ctx, domain.DeveloperStream(id), 0, meta,
		catalog.DeveloperSignedUp{DeveloperID: id, Email: email, SealedPasswordHash: sealed})
	if err != nil {
		return 0, events.Position{}, fmt.Errorf("sign up developer %d: %w", id, err)
	}
	return id, res.Position, nil
}

func cmpErr(err, otherwise error) error {
	if err != nil {
		return err
	}
	return otherwise
}

// claimLive says a claim's account exists, or the claim is too recent to
// be taken as abandoned.
func (d *Developers) claimLive(ctx context.Context, c claim) (bool, error) {
	recs, err := d.store.ReadStream(ctx, domain.DeveloperStream(c.developerID), 0, 1)
	if err != nil {
		return false, fmt.Errorf("load developer %d: %w", c.developerID, err)
	}
	return len(recs) > 0 || d.now().Sub(c.at) < abandonedClaim, nil
}

// Load returns a developer's account; an unknown id is domain.ErrDeveloperNotFound.
func (d *Developers) Load(ctx context.Context, id int64) (Developer, error) {
	dev, _, err := d.loadDev(ctx, id)
	return dev, err
}

func (d *Developers) loadDev(ctx context.Context, id int64) (Developer, uint64, error) {
	st, v, _, err := d.cache.load(ctx, d.streams, domain.DeveloperStream(id))
	if err != nil {
		return Developer{}, 0, err
	}
	dev := *st
	if dev.ID == 0 {
		return Developer{}, 0, domain.ErrDeveloperNotFound
	}
	return dev, v, nil
}

// findByEmail returns the account holding a normalised address.
func (d *Developers) findByEmail(ctx context.Context, email string) (Developer, uint64, error) {
	c, version, err := d.loadClaim(ctx, email)
	if err != nil {
		return Developer{}, 0, err
	}
	if version == 0 {
		return Developer{}, 0, domain.ErrDeveloperNotFound
	}
	return d.loadDev(ctx, c.developerID)
}

// Authenticate checks an email and password and returns the account; a
// wrong password or an unknown address is domain.ErrBadCredentials, after
// the same hashing work either way.
func (d *Developers) Authenticate(ctx context.Context, email, password string) (Developer, error) {
	norm, err := NormaliseEmail(email)
	if err != nil || len(password) > MaxPasswordLength {
		_, _ = d.hash.verify(ctx, d.dummyHash(ctx), password[:min(len(password), MaxPasswordLength)])
		return Developer{}, domain.ErrBadCredentials
	}
	dev, _, err := d.findByEmail(ctx, norm)
	var phc string
	if err == nil {
		if phc, err = d.sealer.Open(dev.sealedHash); err != nil {
			return Developer{}, fmt.Errorf("open password hash of developer %d: %w", dev.ID, err)
		}
	} else if err != domain.ErrDeveloperNotFound {
		return Developer{}, err
	} else {
		phc = d.dummyHash(ctx)
	}
	ok, verr := d.hash.verify(ctx, phc, password)
	if verr != nil && err == nil {
		return Developer{}, fmt.Errorf("verify password: %w", verr)
	}
	if err != nil || !ok {
		return Developer{}, domain.ErrBadCredentials
	}
	return dev, nil
}

// HashSession is the SHA-256 (hex) of a session id, as the log records it.
func HashSession(sessionID string) string {
	sum := sha256.Sum256([]byte(sessionID))
	return hex.EncodeToString(sum[:])
}

// StartSession records a new session of the developer (by the hash of its id).
func (d *Developers) StartSession(ctx context.Context, id int64, sessionHash, requestID string) (events.Position, error) {
	meta := Meta{Actor: DeveloperActor(id), RequestID: requestID}
	res, err := d.appendAny(ctx, domain.DeveloperStream(id), meta, catalog.DeveloperSignedIn{DeveloperID: id, SessionHash: sessionHash})
	return res.Position, err
}

// EndSession ends one session, or every session of the developer when all is set.
func (d *Developers) EndSession(ctx context.Context, id int64, sessionHash string, all bool, requestID string) (events.Position, error) {
	if all {
		sessionHash = ""
	}
	meta := Meta{Actor: DeveloperActor(id), RequestID: requestID}
	res, err := d.appendAny(ctx, domain.DeveloperStream(id), meta, catalog.DeveloperSignedOut{DeveloperID: id, SessionHash: sessionHash, All: all})
	return res.Position, err
}

// appendAny appends facts that never conflict with a decision (sessions
// start and end whatever else happened), to an existing developer stream.
func (d *Developers) appendAny(ctx context.Context, stream string, meta Meta, p events.Payload) (events.AppendResult, error) {
	ev, err := d.reg.Encode(p, meta.events())
	if err != nil {
		return events.AppendResult{}, err
	}
	return d.store.Append(ctx, stream, events.Any(), ev)
}

// RequestReset records a single-use reset token for the account holding
// email and returns it with the account's id; an unknown address returns
// ("", 0, nil), so the caller answers alike either way. The token names
// its account ("<id>.<random>"), so its use finds the stream without a
// read model; only its SHA-256 enters the log.
func (d *Developers) RequestReset(ctx context.Context, email, requestID string) (string, int64, error) {
	norm, err := NormaliseEmail(email)
	if err != nil {
		return "", 0, err
	}
	dev, _, err := d.findByEmail(ctx, norm)
	if err == domain.ErrDeveloperNotFound {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	token := strconv.FormatInt(dev.ID, 10) + "." + base64.RawURLEncoding.EncodeToString(raw)
	meta := Meta{Actor: "portal:password-reset", RequestID: requestID}
	_, err = d.appendAny(ctx, domain.DeveloperStream(dev.ID), meta, catalog.DeveloperPasswordResetRequested{
		DeveloperID: dev.ID, TokenHash: domain.HashToken(token), ExpiresAt: d.now().Add(ResetTokenTTL).UTC()})
	if err != nil {
		return "", 0, err
	}
	return token, dev.ID, nil
}

// ResetPassword sets a new password with a reset token and ends every
// session; an unknown, used or expired token is domain.ErrResetTokenInvalid.
// Two uses of one token at once: the append at the loaded revision lets
// exactly one win.
func (d *Developers) ResetPassword(ctx context.Context, token, password, requestID string) (int64, error) {
	if err := checkPassword(password); err != nil {
		return 0, err
	}
	idText, _, ok := strings.Cut(token, ".")
	id, err := strconv.ParseInt(idText, 10, 64)
	if !ok || err != nil || id <= 0 {
		return 0, domain.ErrResetTokenInvalid
	}
	th := domain.HashToken(token)
	meta := Meta{Actor: DeveloperActor(id), RequestID: requestID}
	// A conflict means something happened meanwhile: the shell decides
	// again on the new state (a second use of the token is refused there).
	if _, err := execute(ctx, d.streams, readBack[*Developer]{d.cache}, domain.DeveloperStream(id), &meta, func(dev *Developer) ([]events.Payload, error) {
		if dev.ID == 0 {
			return nil, domain.ErrResetTokenInvalid
		}
		// Checked before the costly hashing, and again by the decision.
		if err := resetUsable(dev, th, d.now()); err != nil {
			return nil, err
		}
		phc, err := d.hash.hash(ctx, password)
		if err != nil {
			return nil, err
		}
		sealed, err := d.sealer.Seal(phc)
		if err != nil {
			return nil, err
		}
		return decideResetPassword(dev, th, sealed, d.now())
	}); err != nil {
		return 0, err
	}
	return id, nil
}

// resetUsable says whether a reset token (by its hash) may still set a
// password: asked for since the last password change, unused, unexpired.
// It is checked before the costly hashing, and again by the decision.
func resetUsable(dev *Developer, tokenHash string, now time.Time) error {
	if r, ok := dev.resets[tokenHash]; !ok || !now.Before(r.expires) {
		return domain.ErrResetTokenInvalid
	}
	return nil
}

// decideResetPassword sets the sealed new password with a reset token. The
// change it decides ends every session and every outstanding reset token
// of the account (apply), so one use of any link retires all of them.
func decideResetPassword(dev *Developer, tokenHash, sealedHash string, now time.Time) ([]events.Payload, error) {
	if dev.ID == 0 {
		return nil, domain.ErrResetTokenInvalid
	}
	if err := resetUsable(dev, tokenHash, now); err != nil {
		return nil, err
	}
	return []events.Payload{catalog.DeveloperPasswordChanged{DeveloperID: dev.ID, SealedPasswordHash: sealedHash, ResetTokenHash: tokenHash}}, nil
}

// Review records an operator's qualification decision (approved or
// rejected; a rejection needs a reason). Repeating the current decision is
// domain.ErrDeveloperReviewed and appends nothing.
func (d *Developers) Review(ctx context.Context, id int64, status, reason string, meta Meta) (events.Position, error) {
	reason = strings.TrimSpace(reason)
	v := &domain.ValidationError{}
	if status != catalog.DeveloperApproved && status != catalog.DeveloperRejected {
		v.Add("decision", "must be approved or rejected")
	}
	if status == catalog.DeveloperRejected && reason == "" {
		v.Add("reason", "is required when rejecting")
	}
	if utf8.RuneCountInString(reason) > 500 || strings.IndexFunc(reason, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\r' }) >= 0 {
		v.Add("reason", "must be at most 500 characters of text")
	}
	if err := v.Err(); err != nil {
		return events.Position{}, err
	}
	return execute(ctx, d.streams, readBack[*Developer]{d.cache}, domain.DeveloperStream(id), &meta, func(dev *Developer) ([]events.Payload, error) {
		return decideReview(dev, status, reason)
	})
}

// decideReview records a qualification decision that differs from the
// current one.
func decideReview(dev *Developer, status, reason string) ([]events.Payload, error) {
	if dev.ID == 0 {
		return nil, domain.ErrDeveloperNotFound
	}
	if dev.Status == status && dev.Reason == reason {
		return nil, domain.ErrDeveloperReviewed
	}
	return []events.Payload{catalog.DeveloperReviewed{DeveloperID: dev.ID, Status: status, Reason: reason}}, nil
}
