package commands

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/secrets"
)

// Environments an app can live in; sandbox apps may use the sandbox mock routes.
const (
	EnvSandbox    = "sandbox"
	EnvProduction = "production"
)

// appState is what app decisions need.
type appState struct {
	exists        bool
	appID         int64
	name          string
	environment   string
	webhookURL    string
	webhookEvents []string
	scopes        []string
	reviewed      bool
}

func (s *appState) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.AppCreated:
		s.exists, s.appID, s.name, s.environment = true, p.AppID, p.Name, p.Environment
		s.webhookURL, s.webhookEvents, s.scopes = p.WebhookURL, p.WebhookEvents, p.Scopes
	case *catalog.AppScopesDeclared:
		s.scopes = p.Scopes
	case *catalog.AppReviewed:
		s.reviewed = true
	case *catalog.AppWebhookConfigured:
		s.webhookURL, s.webhookEvents = p.WebhookURL, p.WebhookEvents
	}
}

// WebhookURLCheck vets a webhook URL when it is configured; the webhook
// package supplies one that refuses internal targets.
type WebhookURLCheck func(ctx context.Context, raw string) error

// Apps handles operator commands on partner applications.
type Apps struct {
	streams
	ids      *Allocator
	sealer   *secrets.Sealer
	checkURL WebhookURLCheck
}

// NewApps builds the app command handler.
func NewApps(store events.Store, reg *events.Registry, ids *Allocator, sealer *secrets.Sealer, check WebhookURLCheck) *Apps {
	return &Apps{streams: streams{store, reg}, ids: ids, sealer: sealer, checkURL: check}
}

// CreateApp is the operator's request for a new partner application.
type CreateApp struct {
	Name          string
	WebhookURL    string
	WebhookEvents []string
	Environment   string
	Scopes        []string // none declared: every scope
}

// Credentials are shown once, at creation or rotation, and never again.
type Credentials struct {
	AppID         int64
	AppKey        string
	AppSecret     string
	WebhookSecret string
	Environment   string
	Position      events.Position
}

var eventPattern = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*(\.\*)?$`)

func (a *Apps) validate(ctx context.Context, c *CreateApp) error {
	v := &domain.ValidationError{}
	if c.Name == "" {
		v.Add("name", "is required")
	} else if utf8.RuneCountInString(c.Name) > 64 {
		v.Add("name", "must be at most 64 characters")
	}
	if c.Environment == "" {
		c.Environment = EnvSandbox
	}
	if c.Environment != EnvSandbox && c.Environment != EnvProduction {
		v.Add("environment", "must be sandbox or production")
	}
	if c.WebhookURL != "" {
		if err := validateWebhookURL(ctx, c.WebhookURL, a.checkURL); err != nil {
			v.Add("webhook_url", err.Error())
		}
	}
	for i, e := range c.WebhookEvents {
		if !eventPattern.MatchString(e) {
			v.Add(fmt.Sprintf("webhook_events[%d]", i), "must be an event name such as user.profile.updated or a prefix wildcard such as health.report.*")
		}
	}
	validateScopes(c.Scopes, v)
	return v.Err()
}

func validateWebhookURL(ctx context.Context, raw string, check WebhookURLCheck) error {
	if len(raw) > 500 {
		return fmt.Errorf("must be at most 500 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return fmt.Errorf("must be an absolute URL")
	}
	if check != nil {
		return check(ctx, raw)
	}
	if u.Scheme != "https" {
		return fmt.Errorf("must use https")
	}
	return nil
}

// Create registers a new app with fresh credentials.
func (a *Apps) Create(ctx context.Context, c CreateApp, meta Meta) (Credentials, error) {
	if err := a.validate(ctx, &c); err != nil {
		return Credentials{}, err
	}
	id, err := a.ids.Next(ctx, KindApp)
	if err != nil {
		return Credentials{}, err
	}
	return a.create(ctx, id, c, 0, meta)
}

// create appends the new app's creation with fresh credentials.
func (a *Apps) create(ctx context.Context, id int64, c CreateApp, sandboxAppID int64, meta Meta) (Credentials, error) {
	creds := Credentials{
		AppID:         id,
		AppKey:        secrets.Random("ak_", 12),
		AppSecret:     secrets.Random("as_", 24),
		WebhookSecret: secrets.Random("whsec_", 24),
		Environment:   c.Environment,
	}
	sealedApp, err := a.sealer.Seal(creds.AppSecret)
	if err != nil {
		return Credentials{}, err
	}
	sealedHook, err := a.sealer.Seal(creds.WebhookSecret)
	if err != nil {
		return Credentials{}, err
	}
	meta.AppID = id
	res, err := a.append(ctx, domain.AppStream(id), 0, meta, catalog.AppCreated{
		AppID: id, Name: c.Name, AppKey: creds.AppKey,
		SealedAppSecret: sealedApp, SealedWebhookSecret: sealedHook,
		WebhookURL: c.WebhookURL, WebhookEvents: c.WebhookEvents, Environment: c.Environment, Scopes: c.Scopes, SandboxAppID: sandboxAppID,
	})
	if err != nil {
		return Credentials{}, fmt.Errorf("create app: %w", err)
	}
	creds.Position = res.Position
	return creds, nil
}

// RotateSecret issues a new app secret; the old one stops working as soon
// as the node's app directory has applied the event.
func (a *Apps) RotateSecret(ctx context.Context, appID int64, meta Meta) (Credentials, error) {
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var st appState
		version, _, err := a.load(ctx, domain.AppStream(appID), st.apply)
		if err != nil {
			return Credentials{}, err
		}
		if !st.exists {
			return Credentials{}, domain.ErrAppNotFound
		}
		secret := secrets.Random("as_", 24)
		sealed, err := a.sealer.Seal(secret)
		if err != nil {
			return Credentials{}, err
		}
		meta.AppID = appID
		res, err := a.append(ctx, domain.AppStream(appID), version, meta, catalog.AppSecretRotated{AppID: appID, SealedAppSecret: sealed})
		if events.IsConflict(err) {
			continue
		}
		if err != nil {
			return Credentials{}, fmt.Errorf("rotate secret: %w", err)
		}
		return Credentials{AppID: appID, AppSecret: secret, Position: res.Position}, nil
	}
	return Credentials{}, domain.ErrContention
}

// WebhookSettings is an operator's change to where and which webhooks an app receives.
type WebhookSettings struct {
	URL    domain.Field[string]
	Events domain.Field[[]string]
}

// ConfigureWebhook changes an app's webhook URL and subscription; fields not
// sent keep their value, and an empty URL stops deliveries (events still
// reach the app's feed).
func (a *Apps) ConfigureWebhook(ctx context.Context, appID int64, s WebhookSettings, meta Meta) (events.Position, error) {
	v := &domain.ValidationError{}
	if u := s.URL.Ptr(); u != nil && *u != "" {
		if err := validateWebhookURL(ctx, *u, a.checkURL); err != nil {
			v.Add("webhook_url", err.Error())
		}
	}
	for i, e := range s.Events.Value {
		if !eventPattern.MatchString(e) {
			v.Add(fmt.Sprintf("webhook_events[%d]", i), "must be an event name such as user.profile.updated or a prefix wildcard such as health.report.*")
		}
	}
	if err := v.Err(); err != nil {
		return events.Position{}, err
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var st appState
		version, pos, err := a.load(ctx, domain.AppStream(appID), st.apply)
		if err != nil {
			return events.Position{}, err
		}
		if !st.exists {
			return events.Position{}, domain.ErrAppNotFound
		}
		next := catalog.AppWebhookConfigured{AppID: appID, WebhookURL: st.webhookURL, WebhookEvents: st.webhookEvents}
		if s.URL.Set {
			next.WebhookURL = s.URL.Value
		}
		if s.Events.Set {
			next.WebhookEvents = s.Events.Value
		}
		if next.WebhookURL == st.webhookURL && slices.Equal(next.WebhookEvents, st.webhookEvents) {
			return pos, nil
		}
		meta.AppID = appID
		res, err := a.append(ctx, domain.AppStream(appID), version, meta, next)
		if events.IsConflict(err) {
			continue
		}
		return res.Position, err
	}
	return events.Position{}, domain.ErrContention
}

// Scopes an app can declare; each partner route needs one.
var Scopes = []string{"channel_users", "orders", "health_reports", "daily_report", "webhooks", "benefits", "plugin"}

func validateScopes(scopes []string, v *domain.ValidationError) {
	for i, s := range scopes {
		if !slices.Contains(Scopes, s) {
			v.Add(fmt.Sprintf("scopes[%d]", i), "must be one of "+strings.Join(Scopes, ", "))
		}
	}
}

// DeclareScopes records the API scopes an app may use (least privilege).
func (a *Apps) DeclareScopes(ctx context.Context, appID int64, scopes []string, meta Meta) (events.Position, error) {
	v := &domain.ValidationError{}
	validateScopes(scopes, v)
	if err := v.Err(); err != nil {
		return events.Position{}, err
	}
	scopes = slices.Clone(scopes)
	slices.Sort(scopes)
	scopes = slices.Compact(scopes)
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var st appState
		version, _, err := a.load(ctx, domain.AppStream(appID), st.apply)
		if err != nil {
			return events.Position{}, err
		}
		if !st.exists {
			return events.Position{}, domain.ErrAppNotFound
		}
		meta.AppID = appID
		res, err := a.append(ctx, domain.AppStream(appID), version, meta, catalog.AppScopesDeclared{AppID: appID, Scopes: scopes})
		if events.IsConflict(err) {
			continue
		}
		return res.Position, err
	}
	return events.Position{}, domain.ErrContention
}

// Review decides a sandbox app's onboarding review. Approval creates the
// production app (its own id and credentials, environment production,
// same name, webhook settings and scopes); the sandbox app keeps working,
// in the sandbox only.
func (a *Apps) Review(ctx context.Context, appID int64, approve bool, notes string, meta Meta) (Credentials, error) {
	if len([]rune(notes)) > 500 {
		v := &domain.ValidationError{}
		v.Add("notes", "must be at most 500 characters")
		return Credentials{}, v
	}
	var st appState
	version, _, err := a.load(ctx, domain.AppStream(appID), st.apply)
	if err != nil {
		return Credentials{}, err
	}
	if !st.exists {
		return Credentials{}, domain.ErrAppNotFound
	}
	if st.environment != EnvSandbox || st.reviewed {
		return Credentials{}, domain.ErrAppReviewed
	}
	meta.AppID = appID
	if !approve {
		res, err := a.append(ctx, domain.AppStream(appID), version, meta, catalog.AppReviewed{AppID: appID, Notes: notes})
		if events.IsConflict(err) {
			return Credentials{}, domain.ErrAppReviewed
		}
		return Credentials{AppID: appID, Position: res.Position}, err
	}
	// Claim the review first, so two approvals cannot create two production apps.
	prodID, err := a.ids.Next(ctx, KindApp)
	if err != nil {
		return Credentials{}, err
	}
	if _, err := a.append(ctx, domain.AppStream(appID), version, meta, catalog.AppReviewed{AppID: appID, Approved: true, Notes: notes, ProductionAppID: prodID}); events.IsConflict(err) {
		return Credentials{}, domain.ErrAppReviewed
	} else if err != nil {
		return Credentials{}, err
	}
	return a.create(ctx, prodID, CreateApp{Name: st.name, WebhookURL: st.webhookURL, WebhookEvents: st.webhookEvents, Environment: EnvProduction, Scopes: st.scopes}, appID, meta)
}
