package catalog

import (
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// Developer account events of the developer portal: a developer's stream
// (domain.DeveloperStream) holds sign-up, sessions, password changes and the
// qualification review; an email-keyed stream (domain.DeveloperEmailStream)
// holds the one claim that makes an address belong to one account. The
// password hash is sealed with the master key and the email is a personal
// field (sealed per developer), so the log never holds either in clear.

// Developer review statuses: a new account is pending until an operator decides.
const (
	DeveloperPending  = "pending_review"
	DeveloperApproved = "approved"
	DeveloperRejected = "rejected"
)

// developerEvents are registered at schema version 1 beside schemaOne.
var developerEvents = []events.Payload{
	DeveloperEmailClaimed{}, DeveloperSignedUp{}, DeveloperSignedIn{}, DeveloperSignedOut{},
	DeveloperPasswordResetRequested{}, DeveloperPasswordChanged{}, DeveloperReviewed{},
	MailQueued{}, MailSent{}, MailFailed{}, MailKeyed{}, MailKeysStarted{},
	OperatorPortalSignedIn{}, OperatorPortalSignedOut{},
}

// DeveloperEmailClaimed makes a normalised email address belong to one
// developer; the stream is named by a keyed hash of the address, so the
// claim is found by address without a read model and the name reveals
// nothing.
type DeveloperEmailClaimed struct {
	DeveloperID int64 `json:"developer_id"`
}

// EventType names the event in the log.
func (DeveloperEmailClaimed) EventType() string { return "developer.email_claimed" }

// DeveloperSignedUp opens a developer account, pending review.
type DeveloperSignedUp struct {
	DeveloperID int64  `json:"developer_id"`
	Email       string `json:"email"` // personal: sealed with the developer's data key
	// SealedPasswordHash is the argon2id hash (PHC string) sealed with the master key.
	SealedPasswordHash string `json:"sealed_password_hash"`
}

// EventType names the event in the log.
func (DeveloperSignedUp) EventType() string { return "developer.signed_up" }

// DeveloperSignedIn starts one portal session; only the SHA-256 of the
// session id enters the log, so the log cannot be used to sign in.
type DeveloperSignedIn struct {
	DeveloperID int64  `json:"developer_id"`
	SessionHash string `json:"session_hash"`
}

// EventType names the event in the log.
func (DeveloperSignedIn) EventType() string { return "developer.signed_in" }

// DeveloperSignedOut ends one session (SessionHash), or every session of
// the developer when All is set.
type DeveloperSignedOut struct {
	DeveloperID int64  `json:"developer_id"`
	SessionHash string `json:"session_hash,omitempty"`
	All         bool   `json:"all,omitempty"`
}

// EventType names the event in the log.
func (DeveloperSignedOut) EventType() string { return "developer.signed_out" }

// DeveloperPasswordResetRequested records a single-use reset token by its
// SHA-256 and its expiry; the token itself only travels in the mail.
type DeveloperPasswordResetRequested struct {
	DeveloperID int64     `json:"developer_id"`
	TokenHash   string    `json:"token_hash"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// EventType names the event in the log.
func (DeveloperPasswordResetRequested) EventType() string {
	return "developer.password_reset_requested"
}

// DeveloperPasswordChanged replaces the password hash and ends every
// session; ResetTokenHash names the reset token it used up, if any.
type DeveloperPasswordChanged struct {
	DeveloperID        int64  `json:"developer_id"`
	SealedPasswordHash string `json:"sealed_password_hash"`
	ResetTokenHash     string `json:"reset_token_hash,omitempty"`
}

// EventType names the event in the log.
func (DeveloperPasswordChanged) EventType() string { return "developer.password_changed" }

// DeveloperReviewed is an operator's qualification decision with its reason.
type DeveloperReviewed struct {
	DeveloperID int64  `json:"developer_id"`
	Status      string `json:"status"` // approved or rejected
	Reason      string `json:"reason"`
}

// EventType names the event in the log.
func (DeveloperReviewed) EventType() string { return "developer.reviewed" }

// MailQueued is one outgoing message in its own stream (domain.MailStream);
// recipient and body are personal fields, sealed with the message's data
// key, since a body may carry a reset token.
type MailQueued struct {
	MailID      int64  `json:"mail_id"`
	DeveloperID int64  `json:"developer_id,omitempty"`
	To          string `json:"to"`
	Subject     string `json:"subject"`
	Body        string `json:"body"`
}

// EventType names the event in the log.
func (MailQueued) EventType() string { return "mail.queued" }

// MailKeyed claims a mail key (domain.MailKeyStream) for one message: a
// mail queued for a fact (a review decision's event id) is queued once,
// however often the fact is handled again (a replay of the log, a restart,
// two nodes at once).
type MailKeyed struct {
	Key    string `json:"key"`
	MailID int64  `json:"mail_id"`
}

// EventType names the event in the log.
func (MailKeyed) EventType() string { return "mail.keyed" }

// MailKeysStarted records where in the log a kind of keyed mail begins
// (domain.MailKeysStartStream): facts at or before After were in the log
// before the mails came from them and are not mailed.
type MailKeysStarted struct {
	Kind  string          `json:"kind"`
	After events.Position `json:"after"`
}

// EventType names the event in the log.
func (MailKeysStarted) EventType() string { return "mail.keys_started" }

// MailSent records that the SMTP server accepted the message.
type MailSent struct {
	MailID int64 `json:"mail_id"`
}

// EventType names the event in the log.
func (MailSent) EventType() string { return "mail.sent" }

// MailFailed records one failed attempt to send; Final says no more
// attempts follow (the message stays readable in the outbox).
type MailFailed struct {
	MailID  int64  `json:"mail_id"`
	Attempt int    `json:"attempt"`
	Error   string `json:"error"`
	Final   bool   `json:"final,omitempty"`
}

// EventType names the event in the log.
func (MailFailed) EventType() string { return "mail.failed" }
