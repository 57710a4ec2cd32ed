package commandapi

import (
	"net/http"
	"time"

	"github.com/healthtech/partner-open-platform/commands"
	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/internal/httpapi"
)

// A partner's webhook endpoints, by API: the same commands as the
// developer portal's endpoint pages (commands.Apps), so the URL vetting,
// the limit of domain.MaxEndpoints and the secret rotation are one
// behaviour. The default endpoint (id 0: the app's webhook_url, signed
// with the app's webhook secret) is listed and changed like the others.
// The reads answer from the app directory this node authenticates with,
// after it has caught up with the app's last write. Another app's
// endpoint answers 404 WEBHOOK_ENDPOINT_NOT_FOUND like a missing one.

func (a *API) endpointRoutes() []Route {
	return []Route{
		{Method: "GET", Path: "/open/v1/webhooks/endpoints", Handle: a.partner(a.listEndpoints)},
		{Method: "POST", Path: "/open/v1/webhooks/endpoints", Handle: a.partner(a.createEndpoint)},
		{Method: "GET", Path: "/open/v1/webhooks/endpoints/:endpointId", Handle: a.partner(a.getEndpoint)},
		{Method: "PATCH", Path: "/open/v1/webhooks/endpoints/:endpointId", Handle: a.partner(a.changeEndpoint)},
		{Method: "DELETE", Path: "/open/v1/webhooks/endpoints/:endpointId", Handle: a.partner(a.deleteEndpoint)},
		{Method: "POST", Path: "/open/v1/webhooks/endpoints/:endpointId/secret/rotate", Handle: a.partner(a.rotateEndpointSecret)},
		{Method: "POST", Path: "/open/v1/webhooks/endpoints/:endpointId/secret/activate", Handle: a.partner(a.activateEndpointSecret)},
		{Method: "POST", Path: "/open/v1/webhooks/endpoints/:endpointId/test", Handle: a.partner(a.testEndpoint)},
	}
}

// endpointJSON is an endpoint as the API shows it: never a secret, only
// which one signs (signing_secret) and whether a rotated one waits.
type endpointJSON struct {
	EndpointID    int64    `json:"endpoint_id"`
	Default       bool     `json:"default"`
	URL           string   `json:"url"`
	Events        []string `json:"events"`
	Enabled       bool     `json:"enabled"`
	SigningSecret string   `json:"signing_secret"`
	PendingSecret bool     `json:"pending_secret"`
	CreatedAt     string   `json:"created_at"`
	UpdatedAt     string   `json:"updated_at"`
	Description   string   `json:"description"`
}

// Which secret signs an endpoint's deliveries: the default endpoint's is
// the app's webhook secret (shown at app creation), an added endpoint's
// its own (shown when it was added).
const (
	signedByApp      = "app_webhook_secret"
	signedByEndpoint = "endpoint_secret"
)

func (a *API) endpointView(e domain.Endpoint) endpointJSON {
	v := endpointJSON{EndpointID: e.EndpointID, Default: e.EndpointID == domain.DefaultEndpointID, URL: e.URL,
		Events: e.Events, Enabled: !e.Disabled, SigningSecret: signedByEndpoint, PendingSecret: e.PendingSecret != "",
		CreatedAt: a.isoTime(e.CreatedAt), UpdatedAt: a.isoTime(e.UpdatedAt), Description: e.Description}
	if v.Default {
		v.SigningSecret = signedByApp
	}
	if v.Events == nil {
		v.Events = []string{}
	}
	return v
}

func (a *API) isoTime(t time.Time) string {
	loc := a.Location
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format(time.RFC3339)
}

// endpointID is the path's endpoint id: 0 (the default endpoint) or a
// positive integer below 2^53.
func endpointID(c *call) (int64, error) {
	return httpapi.PathID(c.ps, "endpointId", true)
}

// currentApp is the calling app as this node's directory holds it once
// the directory has applied the app's last write (read your writes).
func (a *API) currentApp(c *call) (domain.App, error) {
	ctx := c.r.Context()
	target, err := a.Watermarks.Target(ctx, c.app.AppID, true)
	if err != nil {
		return domain.App{}, err
	}
	if !target.IsZero() {
		if err := a.waitApps(ctx, target); err != nil {
			return domain.App{}, err
		}
	}
	app, ok := a.SchemeM.Apps.ByID(c.app.AppID)
	if !ok {
		return domain.App{}, domain.ErrAppNotFound
	}
	return app, nil
}

func (a *API) listEndpoints(c *call) error {
	app, err := a.currentApp(c)
	if err != nil {
		return err
	}
	list := make([]endpointJSON, 0, domain.MaxEndpoints)
	for _, e := range app.WebhookEndpoints() {
		list = append(list, a.endpointView(e))
	}
	httpapi.OK(c.w, http.StatusOK, map[string]any{"endpoints": list, "max_endpoints": domain.MaxEndpoints})
	return nil
}

func (a *API) getEndpoint(c *call) error {
	id, err := endpointID(c)
	if err != nil {
		return err
	}
	app, err := a.currentApp(c)
	if err != nil {
		return err
	}
	e, ok := app.Endpoint(id)
	if !ok || e.URL == "" {
		return domain.ErrEndpointNotFound
	}
	httpapi.OK(c.w, http.StatusOK, a.endpointView(e))
	return nil
}

// answerEndpoint answers an endpoint as the directory holds it after the
// write at pos.
func (a *API) answerEndpoint(c *call, id int64, status int, extra map[string]any) error {
	app, err := a.currentApp(c)
	if err != nil {
		return err
	}
	e, ok := app.Endpoint(id)
	if !ok {
		return domain.ErrEndpointNotFound
	}
	v := a.endpointView(e)
	if extra == nil {
		httpapi.OK(c.w, status, v)
		return nil
	}
	out := map[string]any{"endpoint_id": v.EndpointID, "default": v.Default, "url": v.URL, "events": v.Events,
		"enabled": v.Enabled, "signing_secret": v.SigningSecret, "pending_secret": v.PendingSecret,
		"created_at": v.CreatedAt, "updated_at": v.UpdatedAt, "description": v.Description}
	for k, x := range extra {
		out[k] = x
	}
	httpapi.OK(c.w, status, out)
	return nil
}

func (a *API) createEndpoint(c *call) error {
	var in commands.EndpointInput
	enabled := true
	if err := c.decode(func(o *httpapi.Object) {
		in.URL = o.RequiredString("url")
		in.Events = o.Strings("events")
		in.Description = o.String("description").Value
		if f := o.Bool("enabled"); f.Set && !f.Null {
			enabled = f.Value
		}
	}); err != nil {
		return err
	}
	created, err := a.Apps.AddEndpointWithState(c.r.Context(), c.app.AppID, in, enabled, c.meta)
	if err != nil {
		return err
	}
	c.config.Watermarks.Wrote(c.app.AppID, created.Position)
	c.w.Header().Set("Cache-Control", "no-store")
	return a.answerEndpoint(c, created.EndpointID, http.StatusCreated, map[string]any{"webhook_secret": created.WebhookSecret})
}

func (a *API) changeEndpoint(c *call) error {
	id, err := endpointID(c)
	if err != nil {
		return err
	}
	var ch commands.EndpointChange
	if err := c.decode(func(o *httpapi.Object) {
		ch.Settings.URL = o.String("url")
		if o.Has("events") {
			ch.Settings.Events = domain.Val(o.Strings("events"))
		}
		ch.Enabled = o.Bool("enabled")
		ch.Description = o.String("description")
	}); err != nil {
		return err
	}
	pos, err := a.Apps.ChangeEndpoint(c.r.Context(), c.app.AppID, id, ch, c.meta)
	if err != nil {
		return err
	}
	c.config.Watermarks.Wrote(c.app.AppID, pos)
	return a.answerEndpoint(c, id, http.StatusOK, nil)
}

func (a *API) deleteEndpoint(c *call) error {
	id, err := endpointID(c)
	if err != nil {
		return err
	}
	if err := c.claim(); err != nil {
		return err
	}
	pos, err := a.Apps.RemoveEndpoint(c.r.Context(), c.app.AppID, id, c.meta)
	if err != nil {
		return err
	}
	c.answer(pos, false, nil)
	return nil
}

func (a *API) rotateEndpointSecret(c *call) error {
	id, err := endpointID(c)
	if err != nil {
		return err
	}
	if err := c.claim(); err != nil {
		return err
	}
	secret, pos, err := a.Apps.RotateEndpointSecret(c.r.Context(), c.app.AppID, id, c.meta)
	if err != nil {
		return err
	}
	c.config.Watermarks.Wrote(c.app.AppID, pos)
	c.w.Header().Set("Cache-Control", "no-store")
	return a.answerEndpoint(c, id, http.StatusOK, map[string]any{"pending_webhook_secret": secret})
}

func (a *API) activateEndpointSecret(c *call) error {
	id, err := endpointID(c)
	if err != nil {
		return err
	}
	if err := c.claim(); err != nil {
		return err
	}
	pos, err := a.Apps.ActivateEndpointSecret(c.r.Context(), c.app.AppID, id, c.meta)
	if err != nil {
		return err
	}
	c.config.Watermarks.Wrote(c.app.AppID, pos)
	return a.answerEndpoint(c, id, http.StatusOK, nil)
}

func (a *API) testEndpoint(c *call) error {
	id, err := endpointID(c)
	if err != nil {
		return err
	}
	if err := c.claim(); err != nil {
		return err
	}
	pos, err := a.Apps.SendTestEvent(c.r.Context(), c.app.AppID, id, c.meta)
	if err != nil {
		return err
	}
	c.config.Watermarks.Wrote(c.app.AppID, pos)
	httpapi.OK(c.w, http.StatusAccepted, map[string]any{"endpoint_id": id, "event": domain.TestEvent, "queued": true})
	return nil
}
