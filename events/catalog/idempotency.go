package catalog

import "time"

// Idempotency-Key records. One stream per (app, key) holds generations of
// claimed → completed (or released); none of them is partner-visible, so the
// webhook dispatcher and the projections ignore them.

// IdempotencyClaimed reserves an app's key for one request (method, path and
// the SHA-256 of its body) before that request changes anything; appending it
// with an expected revision is what lets only one of several concurrent
// requests with the key run.
type IdempotencyClaimed struct {
	AppID      int64     `json:"app_id"`
	Method     string    `json:"method"`
	Path       string    `json:"path"`
	BodySHA256 string    `json:"body_sha256"`
	ClaimedAt  time.Time `json:"claimed_at"`
}

// EventType names the event in the log.
func (IdempotencyClaimed) EventType() string { return "idempotency.claimed" }

// IdempotencyCompleted stores the answer of the claimed request so a retry
// with the key gets the same status and body bytes. The body is sealed,
// because answers may carry personal data that the log, the admin history
// and the analytics feed must not show in clear: with the data key of the
// channel user it is about ("dk1:<key id>:..."), so an erasure shreds it,
// or with the master key when it is about no user.
type IdempotencyCompleted struct {
	AppID       int64     `json:"app_id"`
	Status      int       `json:"status"`
	ContentType string    `json:"content_type,omitempty"`
	SealedBody  string    `json:"sealed_body"`
	CompletedAt time.Time `json:"completed_at"`
}

// EventType names the event in the log.
func (IdempotencyCompleted) EventType() string { return "idempotency.completed" }

// IdempotencyReleased frees a key whose request ended without a result worth
// replaying (a 5xx or a concurrency conflict), so a retry runs it again.
type IdempotencyReleased struct {
	AppID      int64     `json:"app_id"`
	Status     int       `json:"status"`
	Code       string    `json:"code,omitempty"`
	ReleasedAt time.Time `json:"released_at"`
}

// EventType names the event in the log.
func (IdempotencyReleased) EventType() string { return "idempotency.released" }
