package catalog

import "time"

// UserErased records that an operator erased a channel user (the right
// to erasure): the user's data key was destroyed before it was appended, so
// every personal field of theirs in the log now reads as null, and the read
// models drop the user. It holds who, when and why, and no personal data:
// Reason is the operator's note (a ticket number, "PIPL request"), which the
// admin API documents must not quote personal data. ChannelUserID is
// never written (the partner's id of the person must not outlive them);
// events written before keep it, and admin reads redact it.
type UserErased struct {
	AppID         int64     `json:"app_id"`
	OpenUserID    int64     `json:"open_user_id"`
	ChannelUserID string    `json:"channel_user_id,omitempty"`
	Reason        string    `json:"reason"`
	ErasedBy      string    `json:"erased_by"`
	ErasedAt      time.Time `json:"erased_at"`
}

// EventType names the event in the log.
func (UserErased) EventType() string { return "user.erased" }

// ChannelUserUnbound frees a binding stream after its user was erased, so
// the partner's channel_user_id can be registered again, as a new person
// with a new open_user_id. ChannelUserID is never written (the stream's
// name is a keyed hash of it); events written before keep it, and admin
// reads redact it.
type ChannelUserUnbound struct {
	AppID         int64  `json:"app_id"`
	ChannelUserID string `json:"channel_user_id,omitempty"`
	OpenUserID    int64  `json:"open_user_id"`
}

// EventType names the event in the log.
func (ChannelUserUnbound) EventType() string { return "channel_user.unbound" }

// ErasureAcknowledged records that the app holding an erased person
// confirmed it received the user.erased webhook and erased its own copies
// (GDPR Art. 19): an audit fact on the person's stream. It names the app
// and the person by their platform ids only.
type ErasureAcknowledged struct {
	AppID          int64     `json:"app_id"`
	OpenUserID     int64     `json:"open_user_id"`
	AcknowledgedBy string    `json:"acknowledged_by"`
	AcknowledgedAt time.Time `json:"acknowledged_at"`
}

// EventType names the event in the log.
func (ErasureAcknowledged) EventType() string { return "user.erasure_acknowledged" }
