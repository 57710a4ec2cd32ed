package projections

import (
	"context"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/events/subscribe"
)

// AuditFact is the read model of one audit fact: who read which personal or
// health data, or erased whom, when and why; its lists are empty, never nil, when read. Seq numbers the facts in log order (1, 2, 3...),
// the cursor of the audit listing; a rebuild numbers them the same.
type AuditFact struct {
	Seq      int64
	EventID  string // the audit.access_recorded event
	Actor    string
	Action   string
	Subjects []string
	EventIDs []string
	ReportID int64
	AppID    int64
	Reason   string
	At       time.Time
}

// AuditFilter selects audit facts: by actor, by action (e.g. user.erased),
// by subject (a stream the fact names), by app (the fact's AppID), by time (From inclusive, To
// exclusive; zero means open), after a cursor (Seq), at most Limit
// (default 100, at most 1000).
type AuditFilter struct {
	Actor   string
	Action  string
	Subject string
	App     int64
	From    time.Time
	To      time.Time
	After   int64
	Limit   int
}

// AuditTx is the part of a read-model transaction the audit projector writes.
type AuditTx interface {
	// AddAuditFact appends a fact with the next Seq (the fact's Seq is ignored);
	// a fact whose EventID is already present is not added again.
	AddAuditFact(ctx context.Context, f AuditFact) error
}

// AuditStore is the audit read model's port: the audit projector writes through
// UpdateAudit, the audit listing reads through AuditFacts.
type AuditStore interface {
	Checkpoints
	// UpdateAudit runs fn in one transaction with the named checkpoint.
	UpdateAudit(ctx context.Context, projection string, pos events.Position, fn func(AuditTx) error) error
	// AuditFacts lists the facts the filter selects, ordered by Seq.
	AuditFacts(ctx context.Context, f AuditFilter) ([]AuditFact, error)
}

// AuditProjector projects audit facts.
func AuditProjector(s AuditStore) subscribe.Projector {
	types := append([]events.Payload{&catalog.AccessAudited{}, &catalog.UserErased{}, &catalog.ErasureAcknowledged{}}, DeveloperAuditedTypes...)
	types = append(types, ReplayAuditedTypes...)
	return projector(ReadModelAudit, s, s.UpdateAudit, applyAudit, types...)
}

// DeveloperAuditedTypes are the event types a developer's portal action
// can append: each such event whose actor is "developer:<id>" becomes an
// audit fact (Action: the event type, Subjects: its stream), as does every
// developer.* event whatever its actor (an operator's review, a reset
// request), so GET /admin/v1/audit lists what developers did. A portal
// page that appends a new event type adds it here.
var DeveloperAuditedTypes = []events.Payload{
	&catalog.DeveloperSignedUp{}, &catalog.DeveloperSignedIn{}, &catalog.DeveloperSignedOut{},
	&catalog.DeveloperPasswordResetRequested{}, &catalog.DeveloperPasswordChanged{}, &catalog.DeveloperReviewed{},
	&catalog.AppCreated{}, &catalog.AppSecretRotated{}, &catalog.AppWebhookConfigured{}, &catalog.AppScopesDeclared{},
	&catalog.AppReviewed{}, &catalog.AppWebhookSecretIssued{}, &catalog.AppWebhookSecretActivated{},
	&catalog.ProviderRegistered{}, &catalog.DeliveryResendRequested{},
	&catalog.AppReviewRequested{}, &catalog.AppProductionRevealed{},
	&catalog.AppWebhookEndpointAdded{}, &catalog.AppWebhookEndpointUpdated{}, &catalog.AppWebhookEndpointDisabled{},
	&catalog.AppWebhookEndpointEnabled{}, &catalog.AppWebhookEndpointRemoved{}, &catalog.AppWebhookEndpointSecretIssued{},
	&catalog.AppWebhookEndpointSecretActivated{}, &catalog.AppWebhookTestRequested{},
	&catalog.AppWebhookEndpointDescribed{},
}

// developerFact is the audit fact of a developer's action (ok false: the
// event is not one; see DeveloperAuditedTypes).
func developerFact(env events.Envelope) (AuditFact, bool) {
	actor := env.Metadata.Actor
	if !strings.HasPrefix(actor, "developer:") && !strings.HasPrefix(env.Type, "developer.") {
		return AuditFact{}, false
	}
	return AuditFact{
		EventID: env.ID, Actor: actor, Action: env.Type, Subjects: []string{env.Stream}, EventIDs: []string{env.ID},
		AppID: env.Metadata.AppID, At: env.Metadata.OccurredAt.UTC().Truncate(time.Microsecond),
	}, true
}

// ErasureAction is the action of an erasure's audit fact: the event type.
var ErasureAction = (catalog.UserErased{}).EventType()

// erasureFact is the audit fact of an erasure: who erased whom (the user's
// stream, the subject an auditor filters by), when and why. The erased
// person's channel_user_id is not copied: it is the partner's identifier of
// that person.
func erasureFact(env events.Envelope, p *catalog.UserErased) AuditFact {
	actor := p.ErasedBy
	if actor == "" {
		actor = env.Metadata.Actor
	}
	at := p.ErasedAt
	if at.IsZero() {
		at = env.Metadata.OccurredAt
	}
	return AuditFact{
		EventID: env.ID, Actor: actor, Action: ErasureAction, Subjects: []string{domain.UserStream(p.OpenUserID)},
		EventIDs: []string{env.ID}, AppID: p.AppID, Reason: p.Reason, At: at.UTC().Truncate(time.Microsecond),
	}
}

// ErasureAcknowledgedAction is the action of the fact that the app holding
// an erased person acknowledged the erasure: the event type.
var ErasureAcknowledgedAction = (catalog.ErasureAcknowledged{}).EventType()

// erasureAckFact is the audit fact of an app's acknowledgement of an
// erasure: the app (its actor), the person's stream, when.
func erasureAckFact(env events.Envelope, p *catalog.ErasureAcknowledged) AuditFact {
	actor := p.AcknowledgedBy
	if actor == "" {
		actor = env.Metadata.Actor
	}
	at := p.AcknowledgedAt
	if at.IsZero() {
		at = env.Metadata.OccurredAt
	}
	return AuditFact{
		EventID: env.ID, Actor: actor, Action: ErasureAcknowledgedAction, Subjects: []string{domain.UserStream(p.OpenUserID)},
		EventIDs: []string{env.ID}, AppID: p.AppID, At: at.UTC().Truncate(time.Microsecond),
	}
}

// ReplayAuditedTypes are a webhook replay's request and end: each is an
// audit fact whoever the actor (the partner's API call, its portal action,
// the runner's completion), so an auditor sees what was sent again, when
// and at whose request.
var ReplayAuditedTypes = []events.Payload{
	&catalog.WebhookReplayRequested{}, &catalog.WebhookReplayCompleted{}, &catalog.WebhookReplayCanceled{},
}

// replayFact is the audit fact of a replay's request, completion or cancel
// (ok false: the event is none of them).
func replayFact(env events.Envelope) (AuditFact, bool) {
	var appID int64
	switch p := env.Payload.(type) {
	case *catalog.WebhookReplayRequested:
		appID = p.AppID
	case *catalog.WebhookReplayCompleted:
		appID = p.AppID
	case *catalog.WebhookReplayCanceled:
		appID = p.AppID
	default:
		return AuditFact{}, false
	}
	return AuditFact{
		EventID: env.ID, Actor: env.Metadata.Actor, Action: env.Type, Subjects: []string{env.Stream}, EventIDs: []string{env.ID},
		AppID: appID, At: env.Metadata.OccurredAt.UTC().Truncate(time.Microsecond),
	}, true
}

func applyAudit(ctx context.Context, tx AuditTx, env events.Envelope) error {
	if f, ok := replayFact(env); ok {
		return tx.AddAuditFact(ctx, f)
	}
	switch e := env.Payload.(type) {
	case *catalog.UserErased:
		return tx.AddAuditFact(ctx, erasureFact(env, e))
	case *catalog.ErasureAcknowledged:
		return tx.AddAuditFact(ctx, erasureAckFact(env, e))
	}
	p, ok := env.Payload.(*catalog.AccessAudited)
	if !ok {
		if f, ok := developerFact(env); ok {
			return tx.AddAuditFact(ctx, f)
		}
		return nil
	}
	at := p.At
	if at.IsZero() {
		at = env.Metadata.OccurredAt
	}
	return tx.AddAuditFact(ctx, AuditFact{
		EventID: env.ID, Actor: p.Actor, Action: p.Action, Subjects: p.Subjects, EventIDs: p.EventIDs,
		ReportID: p.ReportID, AppID: p.AppID, Reason: p.Reason, At: at.UTC().Truncate(time.Microsecond),
	})
}

// AuditLimit is the page size of an audit listing: def when limit is not
// positive, at most 1000.
func AuditLimit(limit int) int {
	switch {
	case limit <= 0:
		return 100
	case limit > 1000:
		return 1000
	}
	return limit
}
