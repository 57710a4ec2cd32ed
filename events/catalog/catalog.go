// Package catalog lists every domain event the platform records. Commands
// write these payloads; projections, the webhook dispatcher and auditors read
// them. The type names are stable wire names: never rename one, add a new
// schema version with an upcaster instead.
package catalog

import (
	"time"

	"github.com/healthtech/partner-open-platform/events"
)

// Registry returns a registry holding every payload type of the catalog.
func Registry() *events.Registry {
	r := events.NewRegistry()
	r.MustRegister(1, schemaOne...)
	r.MustRegister(1, developerEvents...)
	registerAppScopes(r)
	registerCodecs(r)
	return r
}

// schemaOne lists the payload types registered at schema version 1.
var schemaOne = []events.Payload{
	IDBlockReserved{},
	AppSecretRotated{}, AppWebhookConfigured{},
	ChannelUserBound{}, UserRegistered{}, UserProfileUpdated{},
	FamilyGroupUpserted{}, FamilyGroupDissolved{},
	FamilyMemberCreated{}, FamilyMemberUpdated{}, FamilyMemberDeleted{},
	DeliveryCreated{}, DeliveryAttempted{}, DeliveryResendRequested{},
	ReportCreated{}, ReportUpdated{}, ReportViewed{}, ReportKeyClaimed{}, UploaderRegistered{},
	TokenIssued{}, TokenRevoked{},
	PluginNonceClaimed{}, PluginSessionOpened{}, PluginMeasurementRecorded{}, PluginMeasurementAnalyzed{},
	GoodsCreated{}, GoodsUpdated{}, GoodsActivation{}, OrderKeyClaimed{}, OrderCreated{}, OrderReviewed{}, OrderShipped{},
	AppReviewed{}, ProviderRegistered{}, ProviderReviewed{}, ProviderItemsConfigured{},
	BenefitItemCreated{}, BenefitItemStatusChanged{}, CardIssued{}, BenefitFulfilled{}, FulfillmentRated{},
	CardBatchPlanned{}, CardBatchRenumbered{}, CardBatchCompleted{},
	AppSuspended{}, AppResumed{}, AppAuthenticationSet{}, AppWebhookSecretIssued{}, AppWebhookSecretActivated{},
	IdempotencyClaimed{}, IdempotencyCompleted{}, IdempotencyReleased{},
	OperatorCreated{}, OperatorRevoked{}, AccessAudited{},
	UserErased{}, ChannelUserUnbound{}, ErasureAcknowledged{},
	AppReviewRequested{}, AppProductionRevealed{},
	AppWebhookEndpointAdded{}, AppWebhookEndpointUpdated{}, AppWebhookEndpointDisabled{}, AppWebhookEndpointEnabled{},
	AppWebhookEndpointRemoved{}, AppWebhookEndpointSecretIssued{}, AppWebhookEndpointSecretActivated{}, AppWebhookTestRequested{},
	AppWebhookEndpointDescribed{},
	WebhookReplayRequested{}, WebhookReplayProgressed{}, WebhookReplayCompleted{}, WebhookReplayCanceled{},
	AppSandboxEventTriggered{},
}

// Payloads lists one value of every payload type the registry holds, so
// tables kept per event type (the personal-field registry) can be checked
// to cover them all.
func Payloads() []events.Payload {
	all := append(append([]events.Payload(nil), schemaOne...), AppCreated{}, AppScopesDeclared{})
	return append(all, developerEvents...)
}

// IDBlockReserved claims a block of platform ids of one kind for one writer,
// so ids are unique and never reused across processes and restarts.
type IDBlockReserved struct {
	Kind  string `json:"kind"`
	First int64  `json:"first"`
	Last  int64  `json:"last"`
}

// EventType names the event in the log.
func (IDBlockReserved) EventType() string { return "ids.block_reserved" }

// AppCreated registers a partner application. Secrets are sealed with the
// master key; the clear values never enter the log.
type AppCreated struct {
	AppID               int64    `json:"app_id"`
	Name                string   `json:"name"`
	AppKey              string   `json:"app_key"`
	SealedAppSecret     string   `json:"sealed_app_secret"`
	SealedWebhookSecret string   `json:"sealed_webhook_secret"`
	WebhookURL          string   `json:"webhook_url,omitempty"`
	WebhookEvents       []string `json:"webhook_events,omitempty"`
	Environment         string   `json:"environment"`
	Scopes              []string `json:"scopes,omitempty"`
	// SandboxAppID links a production app to the sandbox app whose review created it.
	SandboxAppID int64 `json:"sandbox_app_id,omitempty"`
	// DeveloperID is the portal developer who owns the app; 0 for apps an
	// operator created through the admin API (earlier history has none).
	DeveloperID int64 `json:"developer_id,omitempty"`
	// Purpose is what the developer declared the app is for, read at review.
	Purpose string `json:"purpose,omitempty"`
}

// EventType names the event in the log.
func (AppCreated) EventType() string { return "app.created" }

// AppSecretRotated replaces an app's signing secret.
type AppSecretRotated struct {
	AppID           int64  `json:"app_id"`
	SealedAppSecret string `json:"sealed_app_secret"`
}

// EventType names the event in the log.
func (AppSecretRotated) EventType() string { return "app.secret_rotated" }

// AppWebhookConfigured changes where and which webhooks an app receives.
type AppWebhookConfigured struct {
	AppID         int64    `json:"app_id"`
	WebhookURL    string   `json:"webhook_url"`
	WebhookEvents []string `json:"webhook_events"`
}

// EventType names the event in the log.
func (AppWebhookConfigured) EventType() string { return "app.webhook_configured" }

// ChannelUserBound claims (app_id, channel_user_id) for one open_user_id; it
// is the first event of its binding stream (named after a keyed hash of the
// pair, domain.Pseudonyms), which makes the pair unique. The id itself is a
// personal field, sealed with the user's data key.
type ChannelUserBound struct {
	AppID         int64  `json:"app_id"`
	ChannelUserID string `json:"channel_user_id"`
	OpenUserID    int64  `json:"open_user_id"`
}

// EventType names the event in the log.
func (ChannelUserBound) EventType() string { return "channel_user.bound" }

// Profile is a channel user's basic information as last written.
type Profile struct {
	Name      string  `json:"name"`
	Nickname  *string `json:"nickname"`
	Gender    string  `json:"gender"`
	Avatar    *string `json:"avatar"`
	Phone     *string `json:"phone"`
	Email     *string `json:"email"`
	BirthDate *string `json:"birth_date"`
}

// UserRegistered opens a user's stream with the profile given at registration.
// Binding names the user's binding stream (a keyed hash, not the id), so an
// erasure finds it after the user's channel_user_id reads as null; events
// written before hashed names have none and bind under
// domain.LegacyBindingStream.
type UserRegistered struct {
	AppID         int64     `json:"app_id"`
	OpenUserID    int64     `json:"open_user_id"`
	ChannelUserID string    `json:"channel_user_id"`
	Profile       Profile   `json:"profile"`
	RegisteredAt  time.Time `json:"registered_at"`
	Binding       string    `json:"binding,omitempty"`
}

// EventType names the event in the log.
func (UserRegistered) EventType() string { return "user.registered" }

// UserProfileUpdated records a PATCH: which fields were sent and the profile after it.
type UserProfileUpdated struct {
	ChannelUserID string   `json:"channel_user_id"`
	OpenUserID    int64    `json:"open_user_id"`
	Changed       []string `json:"changed"`
	Profile       Profile  `json:"profile"`
}

// EventType names the event in the log.
func (UserProfileUpdated) EventType() string { return "user.profile.updated" }

// FamilyGroupUpserted records a group created or renamed; the spec names
// both cases user.family_group.created, and Created tells them apart.
type FamilyGroupUpserted struct {
	ChannelUserID string `json:"channel_user_id"`
	OpenUserID    int64  `json:"open_user_id"`
	FamilyGroupID int64  `json:"family_group_id"`
	AppGroupID    int64  `json:"app_group_id"`
	Name          string `json:"name"`
	Created       bool   `json:"created"`
}

// EventType names the event in the log.
func (FamilyGroupUpserted) EventType() string { return "user.family_group.created" }

// FamilyGroupDissolved records an irreversible dissolution and the members it soft-deleted.
type FamilyGroupDissolved struct {
	ChannelUserID    string  `json:"channel_user_id"`
	OpenUserID       int64   `json:"open_user_id"`
	FamilyGroupID    int64   `json:"family_group_id"`
	AppGroupID       int64   `json:"app_group_id"`
	DeletedMemberIDs []int64 `json:"deleted_member_ids"`
}

// EventType names the event in the log.
func (FamilyGroupDissolved) EventType() string { return "user.family_group.deleted" }

// Member is a family member's state as written by the event that carries it.
type Member struct {
	MemberID      int64   `json:"member_id"`
	AppUserID     string  `json:"app_user_id"`
	AppGroupID    int64   `json:"app_group_id"`
	FamilyGroupID int64   `json:"family_group_id"`
	Name          string  `json:"name"`
	Relationship  string  `json:"relationship"`
	Gender        *string `json:"gender"`
	BirthDate     *string `json:"birth_date"`
	Phone         *string `json:"phone"`
	IDType        *string `json:"id_type"`
	IDNumber      *string `json:"id_number"`
	Height        *int64  `json:"height"`
	Weight        *int64  `json:"weight"`
	BloodType     *string `json:"blood_type"`
	IsDefault     bool    `json:"is_default"`
}

// FamilyMemberCreated records a new member.
type FamilyMemberCreated struct {
	ChannelUserID string `json:"channel_user_id"`
	OpenUserID    int64  `json:"open_user_id"`
	Member        Member `json:"member"`
}

// EventType names the event in the log.
func (FamilyMemberCreated) EventType() string { return "user.family_member.created" }

// FamilyMemberUpdated records a member after an upsert changed it.
type FamilyMemberUpdated struct {
	ChannelUserID string   `json:"channel_user_id"`
	OpenUserID    int64    `json:"open_user_id"`
	Changed       []string `json:"changed"`
	Member        Member   `json:"member"`
}

// EventType names the event in the log.
func (FamilyMemberUpdated) EventType() string { return "user.family_member.updated" }

// FamilyMemberDeleted records a soft delete through the delete call.
type FamilyMemberDeleted struct {
	ChannelUserID string `json:"channel_user_id"`
	OpenUserID    int64  `json:"open_user_id"`
	MemberID      int64  `json:"member_id"`
	AppUserID     string `json:"app_user_id"`
	FamilyGroupID int64  `json:"family_group_id"`
}

// EventType names the event in the log.
func (FamilyMemberDeleted) EventType() string { return "user.family_member.deleted" }

// DeliveryCreated fixes a webhook's id and body bytes for every attempt to
// come; it opens the stream delivery-<id>, whose id derives from the app and
// the source event, so a duplicated source event cannot create a second one.
type DeliveryCreated struct {
	DeliveryID     string          `json:"delivery_id"`
	AppID          int64           `json:"app_id"`
	Event          string          `json:"event"`
	SourceEventID  string          `json:"source_event_id"`
	SourceStream   string          `json:"source_stream"`
	SourcePosition events.Position `json:"source_position"`
	// SourceRecordedAt is when the source event was appended, for the
	// append-to-first-attempt latency.
	SourceRecordedAt time.Time `json:"source_recorded_at"`
	Body             string    `json:"body"`
	// EndpointID is the app's endpoint the delivery goes to; absent (0)
	// for the default endpoint, so its deliveries keep the bytes they had
	// before apps had several endpoints.
	EndpointID int64 `json:"endpoint_id,omitempty"`
	// Deliver is false when the app had no webhook URL or no matching
	// subscription: the event is then only in the app's feed.
	Deliver bool `json:"deliver"`
	// DeadLetter marks plugin events, which go to the dead-letter list when
	// their retries are exhausted.
	DeadLetter bool `json:"dead_letter"`
}

// EventType names the event in the log.
func (DeliveryCreated) EventType() string { return "webhook.delivery.created" }

// DeliveryAttempted records one POST and what follows from it.
type DeliveryAttempted struct {
	DeliveryID string    `json:"delivery_id"`
	Attempt    int       `json:"attempt"`
	At         time.Time `json:"at"`
	URL        string    `json:"url"`
	StatusCode int       `json:"status_code,omitempty"`
	LatencyMS  int64     `json:"latency_ms"`
	Error      string    `json:"error,omitempty"`
	// ErrorClass is the stable class of a failure (domain.ErrorClass*),
	// absent on success and on events recorded before classes existed,
	// whose class is derived from Error and StatusCode when read.
	ErrorClass    string     `json:"error_class,omitempty"`
	Outcome       string     `json:"outcome"` // delivered, retry, abandoned, dead_letter, refused
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	// ResponseExcerpt is the start of the receiver's answer (at most
	// ExcerptBytes, valid UTF-8), for the delivery log. It is a personal
	// field: a receiver may echo the body, so it is sealed with the key of
	// the person the delivery is about (OpenUserID) and erased with them.
	ResponseExcerpt string `json:"response_excerpt,omitempty"`
	// OpenUserID and SourceStream name whose data the delivery carries (as
	// DeliveryCreated's do), so the excerpt is sealed with the same data
	// key as the body; both are set only with an excerpt.
	OpenUserID   int64  `json:"open_user_id,omitempty"`
	SourceStream string `json:"source_stream,omitempty"`
}

// ExcerptBytes bounds DeliveryAttempted.ResponseExcerpt.
const ExcerptBytes = 256

// EventType names the event in the log.
func (DeliveryAttempted) EventType() string { return "webhook.delivery.attempted" }

// DeliveryResendRequested puts a delivery back in the queue with a fresh retry schedule.
type DeliveryResendRequested struct {
	DeliveryID  string    `json:"delivery_id"`
	RequestedBy string    `json:"requested_by"`
	At          time.Time `json:"at"`
}

// EventType names the event in the log.
func (DeliveryResendRequested) EventType() string { return "webhook.delivery.resend_requested" }
