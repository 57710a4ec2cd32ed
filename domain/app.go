package domain

import "time"

// App is a partner application as authentication and webhooks need it,
// secrets included: the app directory keeps it in memory and never
// serialises it. It lives here so that the HTTP edges can authenticate
// without importing the read side.
type App struct {
	AppID         int64
	Name          string
	AppKey        string
	AppSecret     string
	WebhookSecret string // the active secret: the one that signs
	// PendingWebhookSecret is issued by a rotation and signs nothing until
	// it is activated, so the partner can install it first.
	PendingWebhookSecret string
	WebhookURL           string
	WebhookEvents        []string
	// WebhookDisabled pauses the default endpoint (the app-level URL)
	// without forgetting its URL.
	WebhookDisabled bool
	// WebhookDescription is the default endpoint's description.
	WebhookDescription string
	// Endpoints are the webhook endpoints added beside the default one,
	// ordered by id; each has its own URL, subscription and secret.
	Endpoints   []Endpoint
	Environment string
	Scopes      []string // granted API scopes; empty grants none
	// Suspended apps are refused on every partner route (ErrAppSuspended)
	// and their webhooks wait until the app is resumed.
	Suspended        bool
	SuspensionReason string
	// RequireSchemeH refuses scheme M on every partner route: the app
	// signs with scheme H only (the default, false, accepts both).
	RequireSchemeH bool
	// SandboxAppID and ProductionAppID link the two apps of one partner after review.
	SandboxAppID    int64
	ProductionAppID int64
	Review          string // "", approved, rejected
	// ReviewNotes are the operator's words with the last decision;
	// ReviewedBy and ReviewedAt say which operator decided it, and when.
	ReviewNotes string
	ReviewedBy  string
	ReviewedAt  time.Time
	// DeveloperID is the portal developer who owns the app (0: created by an
	// operator); the portal shows an app to its developer only.
	DeveloperID int64
	Purpose     string
	// ReviewRequested is set while a developer's review request awaits a
	// decision; HostAppID is the host mini-program the request named.
	ReviewRequested bool
	HostAppID       string
	// PluginAppID is issued by the approval of a host-plugin integration.
	PluginAppID string
	// ProductionRevealed is set on a sandbox app once its developer took the
	// production credentials; the sandbox app is then Retired: its
	// credentials are refused like an unknown app's.
	ProductionRevealed bool
	Retired            bool
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

// Scopes an app can declare; each partner route needs one.
var Scopes = []string{"channel_users", "orders", "health_reports", "daily_report", "webhooks", "benefits", "plugin"}

// DefaultScopes are granted to an app created (or re-declared) without
// naming scopes: the data exchange of a channel integration (users, orders,
// report pull, webhook log and feed). daily_report (a second credential,
// OAuth tokens), benefits (verify-use consumes value) and plugin (the
// sandbox mock of a host-plugin integration) must be asked for.
var DefaultScopes = []string{"channel_users", "health_reports", "orders", "webhooks"}
