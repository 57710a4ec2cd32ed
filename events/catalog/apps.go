package catalog

import (
	"encoding/json"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
)

// registerAppScopes registers the scope-carrying app events at schema 2.
// Schema 1 (before least privilege) read "no scopes" as "every scope"; the
// upcaster keeps that meaning for history, so apps created or re-declared
// then keep working, with the grant written out. From schema 2 on, the
// command writes the granted scopes explicitly (the default set when none
// are named), and an empty list grants none.
func registerAppScopes(r *events.Registry) {
	r.MustRegister(2, AppCreated{}, AppScopesDeclared{})
	r.RegisterUpcaster(AppCreated{}.EventType(), 1, everyScopeWhenNone)
	r.RegisterUpcaster(AppScopesDeclared{}.EventType(), 1, everyScopeWhenNone)
}

// everyScopeWhenNone rewrites a schema-1 app event whose scopes are absent
// or empty to name every scope, which is what it granted when written.
func everyScopeWhenNone(data json.RawMessage) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, err
	}
	var scopes []string
	if raw, ok := fields["scopes"]; ok {
		if err := json.Unmarshal(raw, &scopes); err != nil {
			return nil, err
		}
	}
	if len(scopes) > 0 {
		return data, nil
	}
	all, err := json.Marshal(domain.Scopes)
	if err != nil {
		return nil, err
	}
	fields["scopes"] = all
	return json.Marshal(fields)
}

// AppSuspended records an operator's suspension of an app: its partner
// calls are refused and its webhooks wait until it is resumed.
type AppSuspended struct {
	AppID  int64  `json:"app_id"`
	Reason string `json:"reason"`
}

// EventType names the event in the log.
func (AppSuspended) EventType() string { return "app.suspended" }

// AppResumed lifts a suspension; waiting webhooks go out again.
type AppResumed struct {
	AppID int64 `json:"app_id"`
}

// EventType names the event in the log.
func (AppResumed) EventType() string { return "app.resumed" }

// AppAuthenticationSet records which signatures an app's partner routes
// accept: with RequireSchemeH, scheme H only; without, scheme M (the
// spec's default) or scheme H.
type AppAuthenticationSet struct {
	AppID          int64 `json:"app_id"`
	RequireSchemeH bool  `json:"require_scheme_h"`
}

// EventType names the event in the log.
func (AppAuthenticationSet) EventType() string { return "app.authentication_set" }

// AppWebhookSecretIssued issues a pending webhook secret, sealed with the
// master key; the active secret keeps signing until activation.
type AppWebhookSecretIssued struct {
	AppID                      int64  `json:"app_id"`
	SealedPendingWebhookSecret string `json:"sealed_pending_webhook_secret"`
}

// EventType names the event in the log.
func (AppWebhookSecretIssued) EventType() string { return "app.webhook_secret_issued" }

// AppWebhookSecretActivated makes the pending webhook secret the one that
// signs; the previous secret stops signing.
type AppWebhookSecretActivated struct {
	AppID int64 `json:"app_id"`
}

// EventType names the event in the log.
func (AppWebhookSecretActivated) EventType() string { return "app.webhook_secret_activated" }
