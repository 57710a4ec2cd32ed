package commandapi

import (
	"bytes"
	"net/http"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

func (a *API) createApp(c *call) error {
	var cmd commands.CreateApp
	if err := c.decode(func(o *httpapi.Object) {
		cmd = commands.CreateApp{
			Name: o.RequiredString("name"), WebhookURL: o.String("webhook_url").Value,
			WebhookEvents: o.Strings("webhook_events"), Environment: o.String("environment").Value,
			Scopes: o.Strings("scopes"),
		}
	}); err != nil {
		return err
	}
	creds, err := a.Apps.Create(c.r.Context(), cmd, c.meta)
	if err != nil {
		return err
	}
	if err := a.waitApps(c.r.Context(), creds.Position); err != nil {
		return err
	}
	httpapi.OK(c.w, http.StatusCreated, map[string]any{
		"app_id": creds.AppID, "app_key": creds.AppKey, "app_secret": creds.AppSecret,
		"webhook_secret": creds.WebhookSecret, "environment": creds.Environment, "scopes": creds.Scopes,
	})
	return nil
}

func (a *API) rotateSecret(c *call) error {
	ids, err := c.ids("appId")
	if err != nil {
		return err
	}
	creds, err := a.Apps.RotateSecret(c.r.Context(), ids[0], c.meta)
	if err != nil {
		return err
	}
	if err := a.waitApps(c.r.Context(), creds.Position); err != nil {
		return err
	}
	httpapi.OK(c.w, http.StatusOK, map[string]any{"app_id": creds.AppID, "app_secret": creds.AppSecret})
	return nil
}

func (a *API) appRoutes() []Route {
	return []Route{
		{Method: "POST", Path: "/admin/v1/apps/:appId/suspend", Handle: a.admin(a.suspendApp)},
		{Method: "POST", Path: "/admin/v1/apps/:appId/resume", Handle: a.admin(a.resumeApp)},
		{Method: "PUT", Path: "/admin/v1/apps/:appId/authentication", Handle: a.admin(a.setAuthentication)},
		{Method: "POST", Path: "/admin/v1/apps/:appId/webhook-secret/rotate", Handle: a.admin(a.rotateWebhookSecret(adminApp))},
		{Method: "POST", Path: "/admin/v1/apps/:appId/webhook-secret/activate", Handle: a.admin(a.activateWebhookSecret(adminApp))},
		{Method: "POST", Path: "/open/v1/webhooks/secret/rotate", Handle: a.partner(a.rotateWebhookSecret(callingApp))},
		{Method: "POST", Path: "/open/v1/webhooks/secret/activate", Handle: a.partner(a.activateWebhookSecret(callingApp))},
	}
}

// adminApp is the app an operator route names in its path.
func adminApp(c *call) (int64, error) {
	ids, err := c.ids("appId")
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// callingApp is the app a partner route acts for: the caller itself.
func callingApp(c *call) (int64, error) { return c.app.AppID, nil }

func (a *API) suspendApp(c *call) error {
	id, err := adminApp(c)
	if err != nil {
		return err
	}
	var reason string
	if len(bytes.TrimSpace(c.body)) > 0 { // the body is optional
		if err := c.decode(func(o *httpapi.Object) { reason = o.String("reason").Value }); err != nil {
			return err
		}
	}
	pos, err := a.Apps.Suspend(c.r.Context(), id, reason, c.meta)
	if err != nil {
		return err
	}
	if err := a.waitApps(c.r.Context(), pos); err != nil {
		return err
	}
	httpapi.OK(c.w, http.StatusOK, map[string]any{"app_id": id, "suspended": true})
	return nil
}

// setAuthentication sets whether the app must sign every partner route
// with scheme H (require_scheme_h, a required boolean).
func (a *API) setAuthentication(c *call) error {
	id, err := adminApp(c)
	if err != nil {
		return err
	}
	var require domain.Field[bool]
	if err := c.decode(func(o *httpapi.Object) { require = o.Bool("require_scheme_h") }); err != nil {
		return err
	}
	if !require.Set || require.Null {
		v := &domain.ValidationError{}
		v.Add("require_scheme_h", "is required (true or false)")
		return v
	}
	pos, err := a.Apps.SetAuthentication(c.r.Context(), id, require.Value, c.meta)
	if err != nil {
		return err
	}
	if err := a.waitApps(c.r.Context(), pos); err != nil {
		return err
	}
	httpapi.OK(c.w, http.StatusOK, map[string]any{"app_id": id, "require_scheme_h": require.Value})
	return nil
}

func (a *API) resumeApp(c *call) error {
	id, err := adminApp(c)
	if err != nil {
		return err
	}
	pos, err := a.Apps.Resume(c.r.Context(), id, c.meta)
	if err != nil {
		return err
	}
	if err := a.waitApps(c.r.Context(), pos); err != nil {
		return err
	}
	httpapi.OK(c.w, http.StatusOK, map[string]any{"app_id": id, "suspended": false})
	return nil
}

func (a *API) rotateWebhookSecret(target func(*call) (int64, error)) func(*call) error {
	return func(c *call) error {
		id, err := target(c)
		if err != nil {
			return err
		}
		creds, err := a.Apps.RotateWebhookSecret(c.r.Context(), id, c.meta)
		if err != nil {
			return err
		}
		if err := a.waitApps(c.r.Context(), creds.Position); err != nil {
			return err
		}
		c.w.Header().Set("Cache-Control", "no-store")
		httpapi.OK(c.w, http.StatusOK, map[string]any{"app_id": id, "pending_webhook_secret": creds.WebhookSecret})
		return nil
	}
}

func (a *API) activateWebhookSecret(target func(*call) (int64, error)) func(*call) error {
	return func(c *call) error {
		id, err := target(c)
		if err != nil {
			return err
		}
		pos, err := a.Apps.ActivateWebhookSecret(c.r.Context(), id, c.meta)
		if err != nil {
			return err
		}
		if err := a.waitApps(c.r.Context(), pos); err != nil {
			return err
		}
		httpapi.OK(c.w, http.StatusOK, map[string]any{"app_id": id, "activated": true})
		return nil
	}
}
