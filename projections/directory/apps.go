// Package directory holds the in-memory directories the edges authenticate
// and authorise against: apps (with their keys, tokens, uploaders and
// webhook endpoints), operators and developer accounts (with the portal's
// mail outbox). Every node keeps them in memory, in every mode: they are
// few, read on every request, and hold secrets that belong in memory rather
// than in a read-model database. Each is a projector of the log, journaled
// (projections.Journal) so a start reads back only its events.
package directory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Opener decrypts sealed secrets; the master-key sealer implements it.
type Opener interface {
	Open(sealed string) (string, error)
}

// Apps is the in-memory app directory every node keeps, in every mode:
// apps are few, read on every request, and hold secrets that belong in
// memory rather than in a read-model database.
type Apps struct {
	opener Opener

	mu        sync.RWMutex
	pos       events.Position
	byID      map[int64]*domain.App
	byKey     map[string]int64
	tokens    map[string]token // by SHA-256 of the access token
	issued    int              // tokens issued since the last prune
	uploaders map[string]Uploader
}

type token struct {
	appID   int64
	scope   string
	expires time.Time
	revoked bool
}

// Uploader is a reporting side with its own ingestion credential.
type Uploader struct {
	UploaderID int64
	Name       string
}

// NewApps builds an empty directory that opens secrets with opener.
func NewApps(opener Opener) *Apps {
	return &Apps{opener: opener, byID: map[int64]*domain.App{}, byKey: map[string]int64{}, tokens: map[string]token{}, uploaders: map[string]Uploader{}}
}

// Name is the checkpoint name of the projection.
func (*Apps) Name() string { return "apps" }

// appTypes are the events the directory applies; the runner skips (and
// neither decrypts nor decodes) the rest of the log, which is most of it.
var appTypes = typeSet(&catalog.AppCreated{}, &catalog.AppSecretRotated{}, &catalog.AppScopesDeclared{}, &catalog.AppReviewed{},
	&catalog.TokenIssued{}, &catalog.TokenRevoked{}, &catalog.UploaderRegistered{}, &catalog.AppWebhookConfigured{},
	&catalog.AppSuspended{}, &catalog.AppResumed{}, &catalog.AppAuthenticationSet{}, &catalog.AppWebhookSecretIssued{}, &catalog.AppWebhookSecretActivated{},
	&catalog.AppReviewRequested{}, &catalog.AppProductionRevealed{},
	&catalog.AppWebhookEndpointAdded{}, &catalog.AppWebhookEndpointUpdated{}, &catalog.AppWebhookEndpointDisabled{},
	&catalog.AppWebhookEndpointEnabled{}, &catalog.AppWebhookEndpointRemoved{}, &catalog.AppWebhookEndpointSecretIssued{},
	&catalog.AppWebhookEndpointSecretActivated{}, &catalog.AppWebhookEndpointDescribed{})

// Handles reports whether the directory applies events of this type.
func (*Apps) Handles(eventType string) bool { return appTypes[eventType] }

// Checkpoint is held in memory: the directory is rebuilt at every start.
func (a *Apps) Checkpoint(context.Context) (events.Position, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.pos, nil
}

// Reset forgets every app.
func (a *Apps) Reset(context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pos, a.byID, a.byKey, a.tokens, a.uploaders = events.Position{}, map[int64]*domain.App{}, map[string]int64{}, map[string]token{}, map[string]Uploader{}
	return nil
}

// Apply updates the directory from app events.
func (a *Apps) Apply(_ context.Context, batch []events.Envelope, pos events.Position) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, env := range batch {
		if err := a.applyOne(env.Payload, env.Metadata.OccurredAt.UTC()); err != nil {
			return err
		}
		if p, ok := env.Payload.(*catalog.AppReviewed); ok {
			// Who decided is in the envelope, not the payload.
			a.change(p.AppID, env.Metadata.OccurredAt.UTC(), func(next *domain.App) {
				next.ReviewedBy, next.ReviewedAt = strings.Clone(env.Metadata.Actor), env.Metadata.OccurredAt.UTC()
			})
		}
	}
	a.pos = pos
	return nil
}

// applyOne applies one event that occurred at at: the events carrying
// sealed secrets, then tokens and uploaders, then the plain changes of
// an app, then endpoints.
func (a *Apps) applyOne(payload events.Payload, at time.Time) error {
	switch p := payload.(type) {
	case *catalog.AppCreated:
		return a.create(p, at)
	case *catalog.AppSecretRotated:
		return a.rotateSecret(p, at)
	case *catalog.AppWebhookSecretIssued:
		return a.issueWebhookSecret(p, at)
	case *catalog.AppProductionRevealed:
		return a.reveal(p, at)
	}
	if a.applyCredential(payload, at) || a.applyAppChange(payload, at) {
		return nil
	}
	return a.applyEndpoint(payload, at)
}

// create adds an app with its opened secrets.
func (a *Apps) create(p *catalog.AppCreated, at time.Time) error {
	secret, err := a.opener.Open(p.SealedAppSecret)
	if err != nil {
		return fmt.Errorf("app %d: %w", p.AppID, err)
	}
	hook, err := a.opener.Open(p.SealedWebhookSecret)
	if err != nil {
		return fmt.Errorf("app %d: %w", p.AppID, err)
	}
	a.byID[p.AppID] = &domain.App{
		AppID: p.AppID, Name: p.Name, AppKey: p.AppKey, AppSecret: secret, WebhookSecret: hook,
		WebhookURL: p.WebhookURL, WebhookEvents: p.WebhookEvents, Environment: p.Environment,
		Scopes: p.Scopes, SandboxAppID: p.SandboxAppID, DeveloperID: p.DeveloperID, Purpose: p.Purpose,
		CreatedAt: at, UpdatedAt: at,
	}
	a.byKey[p.AppKey] = p.AppID
	return nil
}

// rotateSecret gives a known app its new secret and revokes the app's
// tokens.
func (a *Apps) rotateSecret(p *catalog.AppSecretRotated, at time.Time) error {
	app, ok := a.byID[p.AppID]
	if !ok {
		return nil
	}
	secret, err := a.opener.Open(p.SealedAppSecret)
	if err != nil {
		return fmt.Errorf("app %d: %w", p.AppID, err)
	}
	next := *app
	next.AppSecret, next.UpdatedAt = secret, at
	a.byID[p.AppID] = &next
	// A token was granted against the old secret: a rotation
	// (often because the secret leaked) ends every token of the
	// app issued before it, on every node as each applies the
	// rotation, rather than leaving them live until they expire.
	for h, t := range a.tokens {
		if t.appID == p.AppID && !t.revoked {
			t.revoked = true
			a.tokens[h] = t
		}
	}
	return nil
}

// issueWebhookSecret gives a known app its pending webhook secret.
func (a *Apps) issueWebhookSecret(p *catalog.AppWebhookSecretIssued, at time.Time) error {
	app, ok := a.byID[p.AppID]
	if !ok {
		return nil
	}
	pending, err := a.opener.Open(p.SealedPendingWebhookSecret)
	if err != nil {
		return fmt.Errorf("app %d: %w", p.AppID, err)
	}
	next := *app
	next.PendingWebhookSecret, next.UpdatedAt = pending, at
	a.byID[p.AppID] = &next
	return nil
}

// applyCredential applies token and uploader events; it reports whether
// payload was one.
func (a *Apps) applyCredential(payload events.Payload, at time.Time) bool {
	switch p := payload.(type) {
	case *catalog.TokenIssued:
		a.tokens[p.TokenHash] = token{appID: p.AppID, scope: p.Scope, expires: p.ExpiresAt}
		a.pruneTokens(at)
	case *catalog.TokenRevoked:
		if t, ok := a.tokens[p.TokenHash]; ok {
			t.revoked = true
			a.tokens[p.TokenHash] = t
		}
	case *catalog.UploaderRegistered:
		a.uploaders[p.TokenHash] = Uploader{UploaderID: p.UploaderID, Name: p.Name}
	default:
		return false
	}
	return true
}

// applyAppChange applies the events that change fields of a known app
// (an unknown app is ignored); it reports whether payload was one.
func (a *Apps) applyAppChange(payload events.Payload, at time.Time) bool {
	switch p := payload.(type) {
	case *catalog.AppScopesDeclared:
		a.change(p.AppID, at, func(next *domain.App) { next.Scopes = p.Scopes })
	case *catalog.AppReviewed:
		a.change(p.AppID, at, func(next *domain.App) {
			next.Review, next.ProductionAppID = "rejected", p.ProductionAppID
			next.ReviewNotes, next.PluginAppID, next.ReviewRequested = p.Notes, p.PluginAppID, false
			if p.Approved {
				next.Review = "approved"
			}
		})
	case *catalog.AppReviewRequested:
		a.change(p.AppID, at, func(next *domain.App) {
			next.ReviewRequested, next.HostAppID, next.Review, next.ReviewNotes = true, p.HostAppID, "", ""
		})
	case *catalog.AppWebhookConfigured:
		a.change(p.AppID, at, func(next *domain.App) { next.WebhookURL, next.WebhookEvents = p.WebhookURL, p.WebhookEvents })
	case *catalog.AppSuspended:
		a.change(p.AppID, at, func(next *domain.App) { next.Suspended, next.SuspensionReason = true, p.Reason })
	case *catalog.AppResumed:
		a.change(p.AppID, at, func(next *domain.App) { next.Suspended, next.SuspensionReason = false, "" })
	case *catalog.AppAuthenticationSet:
		a.change(p.AppID, at, func(next *domain.App) { next.RequireSchemeH = p.RequireSchemeH })
	case *catalog.AppWebhookSecretActivated:
		// Activation without a pending secret changes nothing.
		if app, ok := a.byID[p.AppID]; ok && app.PendingWebhookSecret != "" {
			a.change(p.AppID, at, func(next *domain.App) {
				next.WebhookSecret, next.PendingWebhookSecret = app.PendingWebhookSecret, ""
			})
		}
	default:
		return false
	}
	return true
}

// change replaces a known app by an edited copy updated at at (readers
// may hold the old one); an unknown app is left alone.
func (a *Apps) change(id int64, at time.Time, edit func(next *domain.App)) {
	app, ok := a.byID[id]
	if !ok {
		return
	}
	next := *app
	edit(&next)
	next.UpdatedAt = at
	a.byID[id] = &next
}

// reveal retires the sandbox app and gives its production app the
// re-issued secrets.
func (a *Apps) reveal(p *catalog.AppProductionRevealed, at time.Time) error {
	if app, ok := a.byID[p.AppID]; ok {
		next := *app
		next.ProductionRevealed, next.Retired, next.UpdatedAt = true, true, at
		a.byID[p.AppID] = &next
	}
	prod, ok := a.byID[p.ProductionAppID]
	if !ok {
		return nil
	}
	secret, err := a.opener.Open(p.SealedAppSecret)
	if err != nil {
		return fmt.Errorf("app %d: %w", p.ProductionAppID, err)
	}
	hook, err := a.opener.Open(p.SealedWebhookSecret)
	if err != nil {
		return fmt.Errorf("app %d: %w", p.ProductionAppID, err)
	}
	next := *prod
	next.AppSecret, next.WebhookSecret, next.UpdatedAt = secret, hook, at
	a.byID[p.ProductionAppID] = &next
	return nil
}

// ByDeveloper lists a portal developer's apps ordered by id (none for 0:
// operators' apps belong to no developer).
func (a *Apps) ByDeveloper(developerID int64) []domain.App {
	if developerID == 0 {
		return nil
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	var out []domain.App
	for _, app := range a.byID {
		if app.DeveloperID == developerID {
			out = append(out, *app)
		}
	}
	slices.SortFunc(out, func(x, y domain.App) int { return cmp.Compare(x.AppID, y.AppID) })
	return out
}

// ReviewRequests lists the sandbox apps whose review request awaits an
// operator's decision, oldest request first by app id.
func (a *Apps) ReviewRequests() []domain.App {
	a.mu.RLock()
	defer a.mu.RUnlock()
	var out []domain.App
	for _, app := range a.byID {
		if app.ReviewRequested {
			out = append(out, *app)
		}
	}
	slices.SortFunc(out, func(x, y domain.App) int { return cmp.Compare(x.AppID, y.AppID) })
	return out
}

// ByID finds an app by its numeric id.
func (a *Apps) ByID(id int64) (domain.App, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	app, ok := a.byID[id]
	if !ok {
		return domain.App{}, false
	}
	return *app, true
}

// ByKey finds an app by its app key.
func (a *Apps) ByKey(key string) (domain.App, bool) {
	a.mu.RLock()
	id, ok := a.byKey[key]
	a.mu.RUnlock()
	if !ok {
		return domain.App{}, false
	}
	return a.ByID(id)
}

// List returns every app ordered by id.
func (a *Apps) List() []domain.App {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := make([]domain.App, 0, len(a.byID))
	for _, app := range a.byID {
		out = append(out, *app)
	}
	slices.SortFunc(out, func(x, y domain.App) int { return int(x.AppID - y.AppID) })
	return out
}

// pruneTokens drops tokens that expired an hour before now, every 1024
// issues, keeping the directory about as small as the set of live tokens.
func (a *Apps) pruneTokens(now time.Time) {
	if a.issued++; a.issued < 1024 {
		return
	}
	a.issued = 0
	for h, t := range a.tokens {
		if t.expires.Before(now.Add(-time.Hour)) {
			delete(a.tokens, h)
		}
	}
}

// Token finds the app of a live access token by its SHA-256.
func (a *Apps) Token(hash string, now time.Time) (appID int64, scope string, ok bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	t, found := a.tokens[hash]
	if !found || t.revoked || !now.Before(t.expires) {
		return 0, "", false
	}
	return t.appID, t.scope, true
}

// Uploader finds a reporting side by the SHA-256 of its token.
func (a *Apps) Uploader(hash string) (Uploader, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	u, ok := a.uploaders[hash]
	return u, ok
}

func typeSet(ps ...events.Payload) map[string]bool {
	m := make(map[string]bool, len(ps))
	for _, p := range ps {
		m[p.EventType()] = true
	}
	return m
}
