package catalog

import "time"

// OperatorCreated gives a named operator a role and a bearer token; only the
// token's SHA-256 enters the log, so the log cannot be used to sign in.
type OperatorCreated struct {
	OperatorID int64  `json:"operator_id"`
	Name       string `json:"name"`
	Role       string `json:"role"` // admin, auditor, support
	TokenHash  string `json:"token_hash"`
}

// EventType names the event in the log.
func (OperatorCreated) EventType() string { return "operator.created" }

// OperatorRevoked ends an operator's token for good; the stream stays for the audit trail.
type OperatorRevoked struct {
	OperatorID int64 `json:"operator_id"`
}

// EventType names the event in the log.
func (OperatorRevoked) EventType() string { return "operator.revoked" }

// OperatorPortalSignedIn starts one operator portal session (in
// domain.OperatorSessionsStream; OperatorID 0 is the bootstrap token);
// only the SHA-256 of the session id enters the log.
type OperatorPortalSignedIn struct {
	OperatorID  int64  `json:"operator_id"`
	SessionHash string `json:"session_hash"`
}

// EventType names the event in the log.
func (OperatorPortalSignedIn) EventType() string { return "operator.portal_signed_in" }

// OperatorPortalSignedOut ends one operator portal session, or all of the
// operator's sessions when All is set.
type OperatorPortalSignedOut struct {
	OperatorID  int64  `json:"operator_id"`
	SessionHash string `json:"session_hash,omitempty"`
	All         bool   `json:"all,omitempty"`
}

// EventType names the event in the log.
func (OperatorPortalSignedOut) EventType() string { return "operator.portal_signed_out" }

// Audited actions: what an audit fact records.
const (
	AuditRevealHistory = "reveal.history" // an auditor read a stream's history with personal fields in clear
	AuditRevealEvents  = "reveal.events"  // an auditor read a page of the global log in clear
	AuditReportPull    = "report.pull"    // a partner pulled a health report through its own API
	AuditRevealOrders  = "reveal.orders"  // an auditor read orders (detail or list) with receiver fields in clear
	AuditRevealCard    = "reveal.card"    // an auditor read a benefit card with holder fields in clear
	// an auditor read a webhook delivery with its body's personal fields and the receiver's answers in clear
	AuditRevealDelivery = "reveal.delivery"
	// an auditor read service providers with their contacts in clear
	AuditRevealProviders = "reveal.providers"
)

// AccessAudited is an audit fact: who (Actor, an operator or an app) read
// which personal or health data (Subjects: streams; EventIDs: the events
// whose personal fields were shown; ReportID for a report pull), when (At)
// and why (Reason, required for reveals). It lives in the actor's audit
// stream (domain.AuditStream) and feeds the audit read model.
type AccessAudited struct {
	Actor    string    `json:"actor"`
	Action   string    `json:"action"`
	Subjects []string  `json:"subjects"`
	EventIDs []string  `json:"event_ids,omitempty"`
	ReportID int64     `json:"report_id,omitempty"`
	AppID    int64     `json:"app_id,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	At       time.Time `json:"at"`
}

// EventType names the event in the log.
func (AccessAudited) EventType() string { return "audit.access_recorded" }
