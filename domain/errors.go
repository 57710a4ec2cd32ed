package domain

import (
	"errors"
	"sort"
	"strings"
)

// Domain errors. The HTTP edge maps each to the spec's code in one table
// (internal/httpapi); decisions and queries return them wrapped with %w.
var (
	ErrUserNotFound        = errors.New("user not found")
	ErrFamilyGroupNotFound = errors.New("family group not found")
	ErrMemberNotFound      = errors.New("family member not found")
	ErrInvalidAppGroupID   = errors.New("family member refers to an app_group_id not in family_groups")
	ErrAppNotFound         = errors.New("app not found")
	// ErrContention means the aggregate kept changing under us; the caller may retry.
	ErrContention = errors.New("too many concurrent writes to the same resource, retry")
	// ErrAppReviewed refuses a review of an app that is not a sandbox app awaiting one.
	ErrAppReviewed = errors.New("only a sandbox app awaiting review can be reviewed")
	// ErrAppSuspended refuses a correctly authenticated call of an app an operator suspended.
	ErrAppSuspended = errors.New("the app is suspended")
	// ErrAppNotApproved refuses revealing production credentials of an app
	// whose production review was not approved.
	ErrAppNotApproved = errors.New("the app's production review was not approved")
	// ErrProductionRevealed refuses a second reveal: production credentials are shown once.
	ErrProductionRevealed = errors.New("the production credentials were already revealed")
	// ErrReviewNotRequestable refuses a review request of a production app or
	// of an app already approved.
	ErrReviewNotRequestable = errors.New("only a sandbox app not yet approved can request a review")
	// ErrNoPendingWebhookSecret refuses activating a webhook secret that was never issued.
	ErrNoPendingWebhookSecret = errors.New("no pending webhook secret to activate")
)

// Operator errors.
var (
	// ErrRoleForbidden refuses an authenticated operator whose role does not allow the route.
	ErrRoleForbidden = errors.New("the operator's role does not allow this")
	// ErrOperatorNotFound answers an operator id that was never created.
	ErrOperatorNotFound = errors.New("operator not found")
)

// Benefit-card errors.
var (
	ErrCardNotFound          = errors.New("card not found")
	ErrCardExpired           = errors.New("card expired")
	ErrBenefitItemInactive   = errors.New("benefit item suspended or not activated")
	ErrNoRemainingQuota      = errors.New("remaining quantity too low")
	ErrProviderUnauthorized  = errors.New("service provider may not verify this item")
	ErrDuplicateFulfillment  = errors.New("same benefit verified again within the cooldown")
	ErrBenefitItemNotFound   = errors.New("benefit item not found")
	ErrProviderNotFound      = errors.New("service provider not found")
	ErrCardNumberTaken       = errors.New("card number already issued")
	ErrFulfillmentNotFound   = errors.New("fulfillment record not found")
	ErrAlreadyRated          = errors.New("fulfillment already rated")
	ErrProviderAlreadyReview = errors.New("service provider already reviewed")
)

// Order errors.
var (
	ErrGoodsNotFound        = errors.New("goods not found")
	ErrGoodsCodeTaken       = errors.New("goods code already exists")
	ErrOrderNotFound        = errors.New("order not found")
	ErrDuplicateThirdOrder  = errors.New("third_order_id already used for a different order")
	ErrIllegalTransition    = errors.New("illegal order state transition")
	ErrShipmentDoesNotMatch = errors.New("shipment does not match the order's items")
)

// Plugin errors.
var (
	ErrPluginAuth      = errors.New("plugin launch parameters failed verification")
	ErrNonceUsed       = errors.New("plugin launch nonce already used")
	ErrSessionNotFound = errors.New("measurement session not found")
	ErrSessionExpired  = errors.New("measurement session expired")
	ErrSandboxOnly     = errors.New("only sandbox apps may use the sandbox mock")
)

// Report errors.
var (
	// ErrUserNotBound refuses a report for a user no app registered.
	ErrUserNotBound = errors.New("the user is not bound to any app")
	// ErrReportNotFound is a report that does not exist or that the caller may not see.
	ErrReportNotFound = errors.New("report not found")
	// ErrDuplicateReportKey refuses a request_report_id the uploader already used for another user's report.
	ErrDuplicateReportKey = errors.New("request_report_id already used for a different user's report")
)

// Idempotency-key errors.
var (
	// ErrIdempotencyKeyReused refuses a key the app already used for another method, path or body.
	ErrIdempotencyKeyReused = errors.New("idempotency key already used for a different request")
	// ErrIdempotencyKeyInProgress answers a retry while the first request with its key is still running.
	ErrIdempotencyKeyInProgress = errors.New("a request with this idempotency key is still in progress")
)

// ErrEventTypeNotFound is a webhook event type the catalog does not list.
var ErrEventTypeNotFound = errors.New("event type not found")

// ErrDeliveryNotFound is a webhook delivery that does not exist or belongs to another app.
var ErrDeliveryNotFound = errors.New("delivery not found")

// ErrDeliveryErased refuses a resend of a delivery whose payload was erased
// with the person it was about: it is never sent again, so accepting the
// resend would promise a delivery that cannot happen.
var ErrDeliveryErased = errors.New("delivery erased")

// ValidationError lists every bad field of a request, keyed by field path
// (user.phone, family_members[0].height), so a partner fixes them in one go.
type ValidationError struct {
	Fields map[string][]string
}

// Add records a problem with one field.
func (v *ValidationError) Add(field, msg string) {
	if v.Fields == nil {
		v.Fields = map[string][]string{}
	}
	v.Fields[field] = append(v.Fields[field], msg)
}

// Empty reports whether no problem was recorded.
func (v *ValidationError) Empty() bool { return v == nil || len(v.Fields) == 0 }

// Err returns v as an error, or nil when nothing was recorded.
func (v *ValidationError) Err() error {
	if v.Empty() {
		return nil
	}
	return v
}

func (v *ValidationError) Error() string {
	keys := make([]string, 0, len(v.Fields))
	for k := range v.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+": "+strings.Join(v.Fields[k], "; "))
	}
	return "validation failed: " + strings.Join(parts, ", ")
}

// Has reports whether a problem is already recorded for the field.
func (v *ValidationError) Has(field string) bool {
	if v == nil {
		return false
	}
	_, ok := v.Fields[field]
	return ok
}

// Developer account errors of the developer portal.
var (
	// ErrEmailTaken refuses a sign-up with an address another account has.
	ErrEmailTaken = errors.New("an account with this email already exists")
	// ErrBadCredentials answers a sign-in whose email or password is wrong,
	// without saying which.
	ErrBadCredentials = errors.New("email or password is wrong")
	// ErrDeveloperNotFound answers a developer id that was never created.
	ErrDeveloperNotFound = errors.New("developer not found")
	// ErrResetTokenInvalid refuses a password-reset token that is unknown,
	// used or expired, without saying which.
	ErrResetTokenInvalid = errors.New("the reset link is invalid or has expired")
	// ErrDeveloperReviewed refuses a review that repeats the current decision.
	ErrDeveloperReviewed = errors.New("the developer already has this review decision")
	// ErrMailNotFound answers a mail id that was never queued.
	ErrMailNotFound = errors.New("mail not found")
)
