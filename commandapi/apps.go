package commandapi

import (
	"net/http"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

func (a *API) createApp(c *call) error {
	var cmd commands.CreateApp
	if err := c.decode(func(o *httpapi.Object) {
		cmd = commands.CreateApp{
			Name: o.RequiredString("name"), WebhookURL: o.String("webhook_url").Value,
			WebhookEvents: o.Strings("webhook_events"), Environment: o.String("environment").Value,
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
		"webhook_secret": creds.WebhookSecret, "environment": creds.Environment,
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
