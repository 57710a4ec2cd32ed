// Package httpapi is the HTTP edge shared by the command and query APIs: the
// spec's response envelope, the one table mapping errors to codes and
// statuses, request ids, body limits and a JSON decoder that reports fields.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
)

// Envelope is the spec's common response body.
type Envelope struct {
	Success   bool                `json:"success"`
	Code      any                 `json:"code,omitempty"` // absent only where the spec shows no code
	Message   string              `json:"message"`
	Data      any                 `json:"data,omitempty"`
	Errors    map[string][]string `json:"errors,omitempty"`
	Timestamp string              `json:"timestamp"`
}

// Clock is read for the envelope timestamp; tests may replace it.
var Clock = time.Now

// WriteJSON writes any JSON body with a status.
func WriteJSON(w http.ResponseWriter, status int, body any) {
	noteCode(w, body)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if out, ok := encodeVerbatim(body); ok {
		w.WriteHeader(status)
		_, _ = w.Write(out)
		return
	}
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(body)
}

// noteCode hands an error body's code to the access log (through the
// writer Instrument installs): the envelope's string code, or an RFC 6749
// body's "error".
func noteCode(w http.ResponseWriter, body any) {
	n, ok := w.(interface{ noteCode(string) })
	if !ok {
		return
	}
	switch b := body.(type) {
	case Envelope:
		if c, ok := b.Code.(string); ok {
			n.noteCode(c)
		}
	case map[string]string:
		if c := b["error"]; c != "" {
			n.noteCode(c)
		}
	}
}

// OK writes a success envelope; data nil omits the data field.
func OK(w http.ResponseWriter, status int, data any) {
	WriteJSON(w, status, Envelope{Success: true, Code: 0, Message: "ok", Data: data, Timestamp: Clock().Format(time.RFC3339)})
}

// Fail writes an error envelope with an explicit code; "" leaves the code
// out, as the spec shows for the report pull's 404 and 429.
func Fail(w http.ResponseWriter, status int, code, message string) {
	env := Envelope{Success: false, Message: message, Timestamp: Clock().Format(time.RFC3339)}
	if code != "" {
		env.Code = code
	}
	WriteJSON(w, status, env)
}

// Problem is an error that already knows its HTTP status and code, for
// edge-only failures (authentication, body size, malformed JSON).
type Problem struct {
	Status  int
	Code    string
	Message string
	Headers map[string]string
}

func (p *Problem) Error() string { return p.Code + ": " + p.Message }

// Problems raised by the edge itself.
var (
	ErrUnauthorized = &Problem{Status: http.StatusUnauthorized, Code: "HTTP_401", Message: "signature verification failed or unknown app"}
	ErrTooLarge     = &Problem{Status: http.StatusRequestEntityTooLarge, Code: "PAYLOAD_TOO_LARGE", Message: "request body exceeds 1 MiB"}
	ErrMalformed    = &Problem{Status: http.StatusBadRequest, Code: "HTTP_400", Message: "request body is not a JSON object"}
	ErrNotFound     = &Problem{Status: http.StatusNotFound, Code: "NOT_FOUND", Message: "no such route"}
	ErrMethod       = &Problem{Status: http.StatusMethodNotAllowed, Code: "METHOD_NOT_ALLOWED", Message: "method not allowed on this route"}
	ErrAdmin        = &Problem{Status: http.StatusUnauthorized, Code: "HTTP_401", Message: "admin token missing or wrong"}
	ErrURITooLong   = &Problem{Status: http.StatusRequestURITooLong, Code: "URI_TOO_LONG", Message: "request line exceeds 8 KiB"}
)

// codes is the one table from domain errors to the spec's codes.
var codes = []struct {
	err     error
	status  int
	code    string
	message string
}{
	{domain.ErrUserNotFound, http.StatusNotFound, "USER_NOT_FOUND", "user not found"},
	{domain.ErrFamilyGroupNotFound, http.StatusNotFound, "FAMILY_GROUP_NOT_FOUND", "family group not found"},
	{domain.ErrMemberNotFound, http.StatusNotFound, "FAMILY_MEMBER_NOT_FOUND", "family member not found"},
	{domain.ErrInvalidAppGroupID, http.StatusUnprocessableEntity, "INVALID_APP_GROUP_ID", "a family member refers to an app_group_id that is not in family_groups"},
	{domain.ErrAppNotFound, http.StatusNotFound, "APP_NOT_FOUND", "app not found"},
	{domain.ErrAppSuspended, http.StatusForbidden, "APP_SUSPENDED", "the app is suspended by the platform operator; contact the operator"},
	{domain.ErrRoleForbidden, http.StatusForbidden, "ROLE_FORBIDDEN", "the operator's role does not allow this route or action"},
	{domain.ErrOperatorNotFound, http.StatusNotFound, "OPERATOR_NOT_FOUND", "operator not found"},
	{domain.ErrNoPendingWebhookSecret, http.StatusConflict, "NO_PENDING_WEBHOOK_SECRET", "no pending webhook secret to activate; rotate first"},
	{domain.ErrDeliveryNotFound, http.StatusNotFound, "DELIVERY_NOT_FOUND", "delivery not found"},
	{domain.ErrEventTypeNotFound, http.StatusNotFound, "EVENT_TYPE_NOT_FOUND", "event type not found (GET /open/v1/event-types lists them)"},
	{domain.ErrEndpointNotFound, http.StatusNotFound, "WEBHOOK_ENDPOINT_NOT_FOUND", "webhook endpoint not found"},
	{domain.ErrTooManyEndpoints, http.StatusConflict, "TOO_MANY_WEBHOOK_ENDPOINTS", "the app already has the maximum number of webhook endpoints (10)"},
	{domain.ErrEndpointDisabled, http.StatusConflict, "WEBHOOK_ENDPOINT_DISABLED", "the webhook endpoint is disabled; enable it first"},
	{domain.ErrReplayNotFound, http.StatusNotFound, "REPLAY_NOT_FOUND", "webhook replay not found"},
	{domain.ErrReplayFinished, http.StatusConflict, "REPLAY_FINISHED", "the webhook replay already completed; nothing to cancel"},
	{domain.ErrDeliveryErased, http.StatusGone, "DELIVERY_ERASED", "the delivery's user was erased: its payload is gone and it is never sent again"},
	{domain.ErrErasureNotFound, http.StatusNotFound, "ERASURE_NOT_FOUND", "erasure not found: no erased person of this app has this open_user_id"},
	{domain.ErrUserNotBound, http.StatusUnprocessableEntity, "USER_NOT_BOUND", "the user is not bound to an app; register the user through the channel-user API first"},
	{domain.ErrReportNotFound, http.StatusNotFound, "REPORT_NOT_FOUND", "report not found"},
	{domain.ErrDuplicateReportKey, http.StatusConflict, "DUPLICATE_REQUEST_REPORT_ID", "request_report_id was already used for a different user's report"},
	{domain.ErrNonceUsed, http.StatusUnauthorized, "NONCE_ALREADY_USED", "this launch nonce was already used; build new launch parameters"},
	{domain.ErrPluginAuth, http.StatusUnauthorized, "INVALID_SIGNATURE", "launch parameters failed verification (app key, timestamp, nonce, sign or userProfile)"},
	{domain.ErrSessionNotFound, http.StatusNotFound, "SESSION_NOT_FOUND", "measurement session not found"},
	{domain.ErrSessionExpired, http.StatusGone, "SESSION_EXPIRED", "measurement session expired; launch the plugin again"},
	{domain.ErrSandboxOnly, http.StatusForbidden, "SANDBOX_ONLY", "this route is only for sandbox apps"},
	{domain.ErrGoodsNotFound, http.StatusNotFound, "GOODS_NOT_FOUND", "goods_code unknown (or withdrawn from sale)"},
	{domain.ErrGoodsCodeTaken, http.StatusConflict, "GOODS_CODE_EXISTS", "goods_code already exists"},
	{domain.ErrOrderNotFound, http.StatusNotFound, "ORDER_NOT_FOUND", "order not found"},
	{domain.ErrDuplicateThirdOrder, http.StatusConflict, "DUPLICATE_THIRD_ORDER_ID", "third_order_id was already used for a different order"},
	{domain.ErrIllegalTransition, http.StatusConflict, "ILLEGAL_TRANSITION", "the order's state does not allow this"},
	{domain.ErrShipmentDoesNotMatch, http.StatusUnprocessableEntity, "SHIPMENT_MISMATCH", "the shipment does not match the order's items"},
	{domain.ErrCardNotFound, http.StatusNotFound, "CARD_NOT_FOUND", "card (or the benefit item on it) not found"},
	{domain.ErrCardExpired, http.StatusUnprocessableEntity, "CARD_EXPIRED", "card expired"},
	{domain.ErrBenefitItemInactive, http.StatusUnprocessableEntity, "BENEFIT_ITEM_INACTIVE", "benefit item suspended or not activated"},
	{domain.ErrNoRemainingQuota, http.StatusUnprocessableEntity, "NO_REMAINING_QUOTA", "remaining quantity too low"},
	{domain.ErrProviderUnauthorized, http.StatusForbidden, "SERVICE_PROVIDER_UNAUTHORIZED", "the service provider may not do this"},
	{domain.ErrDuplicateFulfillment, http.StatusUnprocessableEntity, "DUPLICATE_FULFILLMENT", "this benefit was just verified; wait for the cooldown"},
	{domain.ErrBenefitItemNotFound, http.StatusNotFound, "BENEFIT_ITEM_NOT_FOUND", "benefit item not found"},
	{domain.ErrProviderNotFound, http.StatusNotFound, "PROVIDER_NOT_FOUND", "service provider not found"},
	{domain.ErrCardNumberTaken, http.StatusConflict, "CARD_NUMBER_EXISTS", "card number already issued"},
	{domain.ErrFulfillmentNotFound, http.StatusNotFound, "FULFILLMENT_NOT_FOUND", "fulfillment record not found"},
	{domain.ErrAlreadyRated, http.StatusConflict, "ALREADY_RATED", "this fulfillment was already rated"},
	{domain.ErrProviderAlreadyReview, http.StatusConflict, "ALREADY_REVIEWED", "already reviewed"},
	{domain.ErrAppReviewed, http.StatusConflict, "ALREADY_REVIEWED", "only a sandbox app awaiting review can be reviewed"},
	{domain.ErrDeveloperNotFound, http.StatusNotFound, "DEVELOPER_NOT_FOUND", "developer not found"},
	{domain.ErrDeveloperReviewed, http.StatusConflict, "ALREADY_REVIEWED", "the developer already has this decision with this reason; a different decision (or reason) replaces it"},
	{domain.ErrIdempotencyKeyReused, http.StatusUnprocessableEntity, "IDEMPOTENCY_KEY_REUSED", "this Idempotency-Key was already used with a different method, path or body; use a new key for a new request"},
	{domain.ErrIdempotencyKeyInProgress, http.StatusConflict, "IDEMPOTENCY_KEY_IN_PROGRESS", "a request with this Idempotency-Key is still being processed; retry after Retry-After seconds"},
	{domain.ErrContention, http.StatusConflict, "CONCURRENT_MODIFICATION", "the resource changed concurrently; retry the request"},
	{context.DeadlineExceeded, http.StatusServiceUnavailable, "HTTP_503", "the platform is busy; retry shortly"},
}

// Error writes err as an envelope, choosing status and code from the table;
// anything unknown is a logged 500 that reveals nothing internal.
func Error(w http.ResponseWriter, r *http.Request, err error) {
	var p *Problem
	if errors.As(err, &p) {
		for k, v := range p.Headers {
			w.Header().Set(k, v)
		}
		Fail(w, p.Status, p.Code, p.Message)
		return
	}
	var v *domain.ValidationError
	if errors.As(err, &v) {
		WriteJSON(w, http.StatusUnprocessableEntity, Envelope{
			Code: "VALIDATION_ERROR", Message: "one or more fields are invalid", Errors: v.Fields, Timestamp: Clock().Format(time.RFC3339),
		})
		return
	}
	for _, c := range codes {
		if errors.Is(err, c.err) {
			Fail(w, c.status, c.code, c.message)
			return
		}
	}
	Logger(r.Context()).Error("request failed", "err", err)
	Fail(w, http.StatusInternalServerError, "HTTP_500", "internal error; the request id identifies it in our logs")
}

// Logger returns the request-scoped logger, or the default one.
func Logger(ctx context.Context) *slog.Logger {
	if s, ok := ctx.Value(noteKey{}).(*requestScope); ok {
		return s.logger()
	}
	return slog.Default()
}
