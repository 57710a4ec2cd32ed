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
	exists          bool
	appID           int64
	name            string
	environment     string
	webhookURL      string
	webhookEvents   []string
	scopes          []string
	reviewed        bool // decided and not re-requested since: not reviewable
	suspended       bool
	pendingHook     bool // a rotated webhook secret awaits activation
	appKey          string
	developerID     int64
	purpose         string
	requested       bool   // a review request awaits a decision
	hostAppID       string // the host mini-program's app id of the last request
	requireH        bool   // partner routes accept scheme H only
	approved        bool
	production      int64  // the production app an approval created
	revealed        bool   // the developer took the production credentials
	hookDisabled    bool   // the default endpoint is disabled
	hookDescription string // the default endpoint's description
	endpoints       map[int64]*endpointState
}

func (s *appState) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.AppCreated:
		s.exists, s.appID, s.name, s.environment = true, p.AppID, p.Name, p.Environment
		s.webhookURL, s.webhookEvents, s.scopes = p.WebhookURL, p.WebhookEvents, p.Scopes
		s.appKey, s.developerID, s.purpose = p.AppKey, p.DeveloperID, p.Purpose
	case *catalog.AppScopesDeclared:
		s.scopes = p.Scopes
	case *catalog.AppReviewed:
		s.reviewed, s.requested = true, false
		s.approved, s.production = p.Approved, p.ProductionAppID
	case *catalog.AppReviewRequested:
		s.reviewed, s.requested, s.hostAppID = false, true, p.HostAppID
	case *catalog.AppProductionRevealed:
		s.revealed = true
	case *catalog.AppWebhookConfigured:
		s.webhookURL, s.webhookEvents = p.WebhookURL, p.WebhookEvents
	case *catalog.AppSuspended:
		s.suspended = true
	case *catalog.AppResumed:
		s.suspended = false
	case *catalog.AppAuthenticationSet:
		s.requireH = p.RequireSchemeH
	case *catalog.AppWebhookSecretIssued:
		s.pendingHook = true
	case *catalog.AppWebhookSecretActivated:
		s.pendingHook = false
	default:
		s.applyEndpoint(env)
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
	Scopes        []string // none named: domain.DefaultScopes
	// DeveloperID is the portal developer creating the app (0: an operator).
	DeveloperID int64
	// Purpose says what the app is for; required when a developer creates it.
	Purpose string
}

// Credentials are shown once, at creation or rotation, and never again.
type Credentials struct {
	AppID         int64
	AppKey        string
	AppSecret     string
	WebhookSecret string
	Environment   string
	Scopes        []string // granted at creation
	// PluginAppID is issued by an approval whose request named a host
	// mini-program; the host's manifest declares it.
	PluginAppID string
	Position    events.Position
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
	c.Purpose = strings.TrimSpace(c.Purpose)
	if c.DeveloperID != 0 && c.Purpose == "" {
		v.Add("purpose", "is required")
	} else if utf8.RuneCountInString(c.Purpose) > 500 {
		v.Add("purpose", "must be at most 500 characters")
	}
	validateScopes(c.Scopes, v)
	c.Scopes = grantedScopes(c.Scopes)
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

// newApp is an app's creation with everything decided outside: its id,
// key, sealed secrets and, for a production app, the sandbox app it came from.
type newApp struct {
	ID                  int64
	App                 CreateApp // validated
	AppKey              string
	SealedAppSecret     string
	SealedWebhookSecret string
	SandboxAppID        int64
}

// decideCreateApp creates an app under a fresh id (its stream is new).
func decideCreateApp(c newApp) []events.Payload {
	return []events.Payload{catalog.AppCreated{
		AppID: c.ID, Name: c.App.Name, AppKey: c.AppKey,
		SealedAppSecret: c.SealedAppSecret, SealedWebhookSecret: c.SealedWebhookSecret,
		WebhookURL: c.App.WebhookURL, WebhookEvents: c.App.WebhookEvents, Environment: c.App.Environment, Scopes: c.App.Scopes, SandboxAppID: c.SandboxAppID,
		DeveloperID: c.App.DeveloperID, Purpose: c.App.Purpose,
	}}
}

// create appends the new app's creation with fresh credentials.
func (a *Apps) create(ctx context.Context, id int64, c CreateApp, sandboxAppID int64, meta Meta) (Credentials, error) {
	creds := Credentials{
		AppID:         id,
		AppKey:        secrets.Random("ak_", 12),
		AppSecret:     secrets.Random("as_", 24),
		WebhookSecret: secrets.Random("whsec_", 24),
		Environment:   c.Environment,
		Scopes:        c.Scopes,
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
	res, err := a.append(ctx, domain.AppStream(id), 0, meta, decideCreateApp(newApp{
		ID: id, App: c, AppKey: creds.AppKey, SealedAppSecret: sealedApp, SealedWebhookSecret: sealedHook, SandboxAppID: sandboxAppID,
	})...)
	if err != nil {
		return Credentials{}, fmt.Errorf("create app: %w", err)
	}
	creds.Position = res.Position
	return creds, nil
}

// found refuses an app that does not exist.
func (s *appState) found() error {
	if !s.exists {
		return domain.ErrAppNotFound
	}
	return nil
}

// decideRotateSecret replaces the app secret with the sealed new one.
func decideRotateSecret(st *appState, sealed string) (events.Payload, error) {
	if err := st.found(); err != nil {
		return nil, err
	}
	return catalog.AppSecretRotated{AppID: st.appID, SealedAppSecret: sealed}, nil
}

// RotateSecret issues a new app secret; the old one stops working as soon
// as the node's app directory has applied the event.
func (a *Apps) RotateSecret(ctx context.Context, appID int64, meta Meta) (Credentials, error) {
	secret := secrets.Random("as_", 24)
	sealed, err := a.sealer.Seal(secret)
	if err != nil {
		return Credentials{}, err
	}
	pos, err := a.decide(ctx, appID, meta, func(st *appState) (events.Payload, error) { return decideRotateSecret(st, sealed) })
	if err != nil {
		return Credentials{}, err
	}
	return Credentials{AppID: appID, AppSecret: secret, Position: pos}, nil
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
	return a.decide(ctx, appID, meta, func(st *appState) (events.Payload, error) { return decideConfigureWebhook(st, s) })
}

// decideConfigureWebhook records the webhook URL and subscription after the
// change; fields not sent keep their value, and no difference decides nothing.
func decideConfigureWebhook(st *appState, s WebhookSettings) (events.Payload, error) {
	if err := st.found(); err != nil {
		return nil, err
	}
	next := catalog.AppWebhookConfigured{AppID: st.appID, WebhookURL: st.webhookURL, WebhookEvents: st.webhookEvents}
	if s.URL.Set {
		next.WebhookURL = s.URL.Value
	}
	if s.Events.Set {
		next.WebhookEvents = s.Events.Value
	}
	if next.WebhookURL == st.webhookURL && slices.Equal(next.WebhookEvents, st.webhookEvents) {
		return nil, nil
	}
	return next, nil
}

func validateScopes(scopes []string, v *domain.ValidationError) {
	for i, s := range scopes {
		if !slices.Contains(domain.Scopes, s) {
			v.Add(fmt.Sprintf("scopes[%d]", i), "must be one of "+strings.Join(domain.Scopes, ", "))
		}
	}
}

// grantedScopes is what a declaration grants: the named scopes, sorted and
// without duplicates, or the default set when none are named.
func grantedScopes(scopes []string) []string {
	if len(scopes) == 0 {
		return slices.Clone(domain.DefaultScopes)
	}
	scopes = slices.Clone(scopes)
	slices.Sort(scopes)
	return slices.Compact(scopes)
}

// DeclareScopes replaces the API scopes an app may use (least privilege):
// exactly the named ones, or the default set when none are named. It
// returns the granted scopes.
func (a *Apps) DeclareScopes(ctx context.Context, appID int64, scopes []string, meta Meta) ([]string, events.Position, error) {
	v := &domain.ValidationError{}
	validateScopes(scopes, v)
	if err := v.Err(); err != nil {
		return nil, events.Position{}, err
	}
	scopes = grantedScopes(scopes)
	pos, err := a.decide(ctx, appID, meta, func(st *appState) (events.Payload, error) { return decideDeclareScopes(st, scopes) })
	return scopes, pos, err
}

// decideDeclareScopes grants exactly the scopes (as grantedScopes made
// them); the same grant again decides nothing.
func decideDeclareScopes(st *appState, scopes []string) (events.Payload, error) {
	if err := st.found(); err != nil {
		return nil, err
	}
	if slices.Equal(st.scopes, scopes) {
		return nil, nil
	}
	return catalog.AppScopesDeclared{AppID: st.appID, Scopes: scopes}, nil
}

// decide runs decision on an app's stream through the command shell:
// decision gives the event to append (nil: nothing changes, answering the
// stream's position; the decision refuses a missing app).
func (a *Apps) decide(ctx context.Context, appID int64, meta Meta, decision func(*appState) (events.Payload, error)) (events.Position, error) {
	meta.AppID = appID
	return execute(ctx, a.streams, replay[*appState]{func() *appState { return &appState{} }}, domain.AppStream(appID), &meta, func(st *appState) ([]events.Payload, error) {
		ev, err := decision(st)
		if ev == nil || err != nil {
			return nil, err
		}
		return []events.Payload{ev}, nil
	})
}

// Suspend refuses the app's partner calls and holds its webhooks until it
// is resumed. Suspending a suspended app changes nothing (the first reason
// stands).
func (a *Apps) Suspend(ctx context.Context, appID int64, reason string, meta Meta) (events.Position, error) {
	reason = strings.TrimSpace(reason)
	if utf8.RuneCountInString(reason) > 500 {
		v := &domain.ValidationError{}
		v.Add("reason", "must be at most 500 characters")
		return events.Position{}, v
	}
	return a.decide(ctx, appID, meta, func(st *appState) (events.Payload, error) { return decideSuspend(st, reason) })
}

// decideSuspend suspends an app; a suspended app keeps its first reason.
func decideSuspend(st *appState, reason string) (events.Payload, error) {
	if err := st.found(); err != nil || st.suspended {
		return nil, err
	}
	return catalog.AppSuspended{AppID: st.appID, Reason: reason}, nil
}

// Resume lifts a suspension: calls are accepted again and held webhooks go
// out. Resuming an app that is not suspended changes nothing.
func (a *Apps) Resume(ctx context.Context, appID int64, meta Meta) (events.Position, error) {
	return a.decide(ctx, appID, meta, decideResume)
}

// decideResume lifts a suspension; an app not suspended decides nothing.
func decideResume(st *appState) (events.Payload, error) {
	if err := st.found(); err != nil || !st.suspended {
		return nil, err
	}
	return catalog.AppResumed{AppID: st.appID}, nil
}

// SetAuthentication sets whether the app's partner routes accept scheme H
// only (require) or scheme M and scheme H (the spec's default). Setting
// what holds already changes nothing.
func (a *Apps) SetAuthentication(ctx context.Context, appID int64, require bool, meta Meta) (events.Position, error) {
	return a.decide(ctx, appID, meta, func(st *appState) (events.Payload, error) { return decideAuthentication(st, require) })
}

// decideAuthentication records a change of the app's accepted schemes.
func decideAuthentication(st *appState, require bool) (events.Payload, error) {
	if err := st.found(); err != nil || st.requireH == require {
		return nil, err
	}
	return catalog.AppAuthenticationSet{AppID: st.appID, RequireSchemeH: require}, nil
}

// RotateWebhookSecret issues a new pending webhook secret, returned once.
// The active secret keeps signing until ActivateWebhookSecret, so the
// partner installs the new one first; rotating again replaces the pending
// secret (a lost one can be re-issued).
func (a *Apps) RotateWebhookSecret(ctx context.Context, appID int64, meta Meta) (Credentials, error) {
	secret := secrets.Random("whsec_", 24)
	sealed, err := a.sealer.Seal(secret)
	if err != nil {
		return Credentials{}, err
	}
	pos, err := a.decide(ctx, appID, meta, func(st *appState) (events.Payload, error) { return decideRotateWebhookSecret(st, sealed) })
	if err != nil {
		return Credentials{}, err
	}
	return Credentials{AppID: appID, WebhookSecret: secret, Position: pos}, nil
}

// decideRotateWebhookSecret records the sealed new secret as pending,
// replacing any pending one.
func decideRotateWebhookSecret(st *appState, sealed string) (events.Payload, error) {
	if err := st.found(); err != nil {
		return nil, err
	}
	return catalog.AppWebhookSecretIssued{AppID: st.appID, SealedPendingWebhookSecret: sealed}, nil
}

// ActivateWebhookSecret makes the pending webhook secret the one that
// signs; the previous one stops signing. Without a pending secret it
// answers ErrNoPendingWebhookSecret.
func (a *Apps) ActivateWebhookSecret(ctx context.Context, appID int64, meta Meta) (events.Position, error) {
	return a.decide(ctx, appID, meta, decideActivateWebhookSecret)
}

// decideActivateWebhookSecret makes the pending secret the signing one.
func decideActivateWebhookSecret(st *appState) (events.Payload, error) {
	if err := st.found(); err != nil {
		return nil, err
	}
	if !st.pendingHook {
		return nil, domain.ErrNoPendingWebhookSecret
	}
	return catalog.AppWebhookSecretActivated{AppID: st.appID}, nil
}

// Review decides a sandbox app's onboarding review. Approval creates the
// production app (its own id and credentials, environment production,
// same name, webhook settings, scopes, developer and purpose) and, when
// the review request named a host mini-program, issues a plugin app id.
// The sandbox app keeps working until its developer reveals the
// production credentials (RevealProduction), which retires it.
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
	c := reviewApp{Approve: approve, Notes: notes}
	if approve && st.exists && st.environment == EnvSandbox && !st.reviewed {
		// The production app's id, allocated before the review is decided.
		if c.ProductionAppID, err = a.ids.Next(ctx, KindApp); err != nil {
			return Credentials{}, err
		}
		if st.hostAppID != "" {
			n, err := a.ids.Next(ctx, KindPluginApp)
			if err != nil {
				return Credentials{}, err
			}
			c.PluginAppID = PluginAppID(n)
		}
	}
	ev, err := decideReviewApp(&st, c)
	if err != nil {
		return Credentials{}, err
	}
	meta.AppID = appID
	// The review is claimed first (at the loaded revision), so two approvals
	// cannot create two production apps.
	res, err := a.append(ctx, domain.AppStream(appID), version, meta, ev)
	if events.IsConflict(err) {
		return Credentials{}, domain.ErrAppReviewed
	} else if err != nil {
		return Credentials{}, err
	}
	if !approve {
		return Credentials{AppID: appID, Position: res.Position}, nil
	}
	creds, err := a.create(ctx, c.ProductionAppID, CreateApp{Name: st.name, WebhookURL: st.webhookURL, WebhookEvents: st.webhookEvents,
		Environment: EnvProduction, Scopes: st.scopes, DeveloperID: st.developerID, Purpose: st.purpose}, appID, meta)
	creds.PluginAppID = c.PluginAppID
	return creds, err
}

// PluginAppID formats the n-th issued plugin app id: a prefix that says
// what it is, then the number, so it cannot be mistaken for an app id.
func PluginAppID(n int64) string { return fmt.Sprintf("plg%010d", n) }

// reviewApp is an onboarding review with the production app's id allocated
// up front (when approving).
type reviewApp struct {
	Approve         bool
	Notes           string
	ProductionAppID int64
	PluginAppID     string // issued when the request named a host mini-program
}

// decideReviewApp decides the review of a sandbox app awaiting it; the
// production app itself is created by decideCreateApp.
func decideReviewApp(st *appState, c reviewApp) (events.Payload, error) {
	if err := st.found(); err != nil {
		return nil, err
	}
	if st.environment != EnvSandbox || st.reviewed {
		return nil, domain.ErrAppReviewed
	}
	if !c.Approve {
		return catalog.AppReviewed{AppID: st.appID, Notes: c.Notes}, nil
	}
	return catalog.AppReviewed{AppID: st.appID, Approved: true, Notes: c.Notes, ProductionAppID: c.ProductionAppID, PluginAppID: c.PluginAppID}, nil
}

// hostAppPattern is what a host mini-program's app id may look like: the
// hosts' ids (such as wx plus 16 hex digits) are short and plain.
var hostAppPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// RequestReview records a developer's request for the production review of
// a sandbox app, with the host mini-program's app id for a host-plugin
// integration ("" for none). A rejected app may ask again; asking again
// while a request waits replaces its host app id (the same one decides
// nothing).
func (a *Apps) RequestReview(ctx context.Context, appID int64, hostAppID string, meta Meta) (events.Position, error) {
	hostAppID = strings.TrimSpace(hostAppID)
	if hostAppID != "" && !hostAppPattern.MatchString(hostAppID) {
		v := &domain.ValidationError{}
		v.Add("host_app_id", "must be 1 to 64 letters, digits, _ or -")
		return events.Position{}, v
	}
	return a.decide(ctx, appID, meta, func(st *appState) (events.Payload, error) { return decideRequestReview(st, hostAppID) })
}

// decideRequestReview asks for the review of a sandbox app not yet approved.
func decideRequestReview(st *appState, hostAppID string) (events.Payload, error) {
	if err := st.found(); err != nil {
		return nil, err
	}
	if st.environment != EnvSandbox || st.approved {
		return nil, domain.ErrReviewNotRequestable
	}
	if st.requested && st.hostAppID == hostAppID {
		return nil, nil
	}
	return catalog.AppReviewRequested{AppID: st.appID, HostAppID: hostAppID}, nil
}

// RevealProduction hands the developer the production credentials of an
// approved sandbox app, once: it re-issues the production app's secrets
// (so only this showing holds the live ones: not the operator who approved,
// not a log) and retires the sandbox app, whose credentials are refused
// from then on ("production credentials replace the sandbox ones"). The
// reveal is one event on the sandbox app's stream at its loaded revision,
// so of two concurrent reveals, on any nodes, one wins and the other is
// refused with ErrProductionRevealed.
func (a *Apps) RevealProduction(ctx context.Context, sandboxAppID int64, meta Meta) (Credentials, error) {
	secret, hook := secrets.Random("as_", 24), secrets.Random("whsec_", 24)
	sealedApp, err := a.sealer.Seal(secret)
	if err != nil {
		return Credentials{}, err
	}
	sealedHook, err := a.sealer.Seal(hook)
	if err != nil {
		return Credentials{}, err
	}
	var prod int64
	pos, err := a.decide(ctx, sandboxAppID, meta, func(st *appState) (events.Payload, error) {
		prod = st.production
		return decideRevealProduction(st, sealedApp, sealedHook)
	})
	if err != nil {
		return Credentials{}, err
	}
	var pst appState
	if _, _, err := a.load(ctx, domain.AppStream(prod), pst.apply); err != nil {
		return Credentials{}, err
	}
	return Credentials{AppID: prod, AppKey: pst.appKey, AppSecret: secret, WebhookSecret: hook,
		Environment: EnvProduction, Scopes: pst.scopes, Position: pos}, nil
}

// decideRevealProduction reveals an approved sandbox app's production
// credentials once.
func decideRevealProduction(st *appState, sealedApp, sealedHook string) (events.Payload, error) {
	if err := st.found(); err != nil {
		return nil, err
	}
	if !st.approved || st.production == 0 {
		return nil, domain.ErrAppNotApproved
	}
	if st.revealed {
		return nil, domain.ErrProductionRevealed
	}
	return catalog.AppProductionRevealed{AppID: st.appID, ProductionAppID: st.production,
		SealedAppSecret: sealedApp, SealedWebhookSecret: sealedHook}, nil
}
