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
	WebhookSecret string
	WebhookURL    string
	WebhookEvents []string
	Environment   string
	Scopes        []string // none declared: every scope
	// SandboxAppID and ProductionAppID link the two apps of one partner after review.
	SandboxAppID    int64
	ProductionAppID int64
	Review          string // "", approved, rejected
	CreatedAt       time.Time
	UpdatedAt       time.Time
}
